#!/usr/bin/env bash
# Make sure an OpenCL device is visible to clayout: if none is, install PoCL
# (a CPU OpenCL driver) through apt-get when we may, else say how and go on
# with the host engine.
set -u
py=${1:-python3}
if "$py" -c "import sys, clayout.engine as e; sys.exit(0 if e.opencl_devices() else 1)"; then
    exit 0
fi
install="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "No OpenCL device found: installing PoCL (pocl-opencl-icd)."
    sh -c "$install" >/dev/null || exit 1
elif command -v apt-get >/dev/null && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    echo "No OpenCL device found: installing PoCL (pocl-opencl-icd) with sudo."
    sudo sh -c "$install" >/dev/null || exit 1
else
    echo "No OpenCL device found, and no permission to install one."
    echo "Install an OpenCL driver (e.g. 'sudo apt-get install pocl-opencl-icd');"
    echo "until then clayout runs everything on the host engine."
    exit 0
fi
"$py" -c "import clayout.engine as e; print('OpenCL devices:', [d.name for d in e.opencl_devices()])"
