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
    source "$(dirname "$0")/apt_install.sh"
    apt_install $packages
fi
missing=""
command -v "${CLANG:-clang-15}" >/dev/null || missing="$missing ${CLANG:-clang-15} (apt-get install clang-15);"
[ -f "$libclc" ] || missing="$missing $libclc (apt-get install libclc-15);"
command -v "${PTXAS:-ptxas}" >/dev/null || missing="$missing ${PTXAS:-ptxas} (NVIDIA's CUDA toolkit; put it on PATH or set PTXAS);"
if [ -n "$missing" ]; then
    echo "make ptx needs:$missing"
    exit 1
fi
