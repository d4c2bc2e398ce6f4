#!/usr/bin/env bash
# Make sure clayout can compile its kernels to SPIR-V (clayout/gpu/spirv.py,
# tests/test_spirv.py): clang-15 and llvm-spirv-15, of one LLVM release. They
# are installed through apt-get when either is missing and we may (root, or
# sudo without a password), as ensure_ptx_tools.sh does. CLAYOUT_CLANG and
# CLAYOUT_LLVM_SPIRV name other tools instead; those are only looked for.
# When something is still missing: exits 1 under CI=true, else warns (the
# SPIR-V tests are then skipped) and exits 0.
set -u
clang=${CLAYOUT_CLANG:-clang-15}
spirv=${CLAYOUT_LLVM_SPIRV:-llvm-spirv-15}
packages=""
[ -z "${CLAYOUT_CLANG:-}" ] && ! command -v clang-15 >/dev/null && packages=" clang-15"
[ -z "${CLAYOUT_LLVM_SPIRV:-}" ] && ! command -v llvm-spirv-15 >/dev/null \
    && packages="$packages llvm-spirv-15"
if [ -n "$packages" ]; then
    source "$(dirname "$0")/apt_install.sh"
    apt_install $packages
    [ $? = 2 ] && echo "Cannot install$packages here (needs apt-get as root, or sudo without a password)."
fi
missing=""
command -v "$clang" >/dev/null || missing="$missing $clang (apt-get install clang-15, or set CLAYOUT_CLANG);"
command -v "$spirv" >/dev/null || missing="$missing $spirv (apt-get install llvm-spirv-15, or set CLAYOUT_LLVM_SPIRV);"
if [ -n "$missing" ]; then
    echo "SPIR-V kernels need:$missing"
    [ -n "${CI:-}" ] && { echo "CI requires them."; exit 1; }
    echo "Warning: the SPIR-V tests will be skipped."
    exit 0
fi
echo "SPIR-V tools: $(command -v "$clang") and $(command -v "$spirv")."
