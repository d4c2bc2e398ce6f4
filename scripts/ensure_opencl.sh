#!/usr/bin/env bash
# Make sure an OpenCL device is visible to clayout, and that Oclgrind (a
# simulated device the tests run kernels on to catch out-of-bounds accesses
# and races; it is run as `oclgrind python ...`, never registered as an
# ICD) is there: install what is missing, PoCL (a CPU OpenCL driver) and
# oclgrind, through apt-get when we may, else say how and go on.
set -u
py=${1:-python3}
packages=""
if ! "$py" -c "import sys, clayout.engine as e; sys.exit(0 if e.opencl_devices() else 1)"; then
    echo "No OpenCL device found: PoCL (pocl-opencl-icd) is needed."
    packages=" pocl-opencl-icd"
fi
if ! command -v oclgrind >/dev/null; then
    echo "Oclgrind is not installed: oclgrind is needed for the kernel bounds test."
    packages="$packages oclgrind"
fi
[ -z "$packages" ] && exit 0
source "$(dirname "$0")/apt_install.sh"
apt_install $packages
case $? in
    1) exit 1 ;;
    2) echo "No permission to install$packages: install them (e.g. 'sudo apt-get install"
       echo "$packages'); until then clayout runs on the host engine (without an OpenCL device), and"
       echo "the Oclgrind test is skipped (it fails under CI=true)."
       exit 0 ;;
esac
"$py" -c "import clayout.engine as e; print('OpenCL devices:', [d.name for d in e.opencl_devices()])"
command -v oclgrind >/dev/null && echo "$(oclgrind --version 2>&1 | grep -m1 Oclgrind)"
