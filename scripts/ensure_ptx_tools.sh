#!/usr/bin/env bash
# Make sure `make ptx` has its tools: clang-15 (comes with PoCL), libclc's
# NVPTX built-ins (libclc-15) and NVIDIA's ptxas. The first two are installed
# through apt-get when we may (root, or sudo without a password), as
# ensure_opencl.sh does; ptxas comes with NVIDIA's CUDA toolkit and is only
# looked for. Exits 1, saying what is missing, when something still is.
set -u
libclc=${LIBCLC_NVPTX:-/usr/lib/clc/nvptx64--nvidiacl.bc}
packages=""
command -v "${CLANG:-clang-15}" >/dev/null || packages=" clang-15"
[ -f "$libclc" ] || packages="$packages libclc-15"
if [ -n "$packages" ]; then
    install="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$packages"
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "Installing$packages."
        sh -c "$install" >/dev/null
    elif command -v apt-get >/dev/null && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        echo "Installing$packages with sudo."
        sudo sh -c "$install" >/dev/null
    fi
fi
missing=""
command -v "${CLANG:-clang-15}" >/dev/null || missing="$missing ${CLANG:-clang-15} (apt-get install clang-15);"
[ -f "$libclc" ] || missing="$missing $libclc (apt-get install libclc-15);"
command -v "${PTXAS:-ptxas}" >/dev/null || missing="$missing ${PTXAS:-ptxas} (NVIDIA's CUDA toolkit; put it on PATH or set PTXAS);"
if [ -n "$missing" ]; then
    echo "make ptx needs:$missing"
    exit 1
fi
