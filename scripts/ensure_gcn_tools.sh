#!/usr/bin/env bash
# Make sure `make gcn` has its tools: clang-15 (comes with PoCL) and ROCm's
# device libraries for amdgcn (Debian's rocm-device-libs: the OpenCL
# built-ins as bitcode, which clang links with --rocm-device-lib-path). Both
# are installed through apt-get when we may (root, or sudo without a
# password), as ensure_opencl.sh does. The bitcode folder is looked for where
# scripts/gcn_check.py looks: $ROCM_DEVICE_LIB_PATH alone when it is set, else
# the package's own files (dpkg -L), then ROCm's usual folders. Exits 1,
# saying what is missing, when something still is; else prints the folder.
set -u
find_bitcode() {
    local dir
    if [ -n "${ROCM_DEVICE_LIB_PATH:-}" ]; then  # given: that folder or none
        [ -f "$ROCM_DEVICE_LIB_PATH/ocml.bc" ] && echo "$ROCM_DEVICE_LIB_PATH"
        return
    fi
    for dir in $(dpkg -L rocm-device-libs 2>/dev/null | grep '/amdgcn/bitcode$') \
               /usr/lib/*/amdgcn/bitcode /usr/lib/amdgcn/bitcode /opt/rocm*/amdgcn/bitcode \
               /opt/rocm*/lib/llvm/lib/clang/*/lib/amdgcn/bitcode; do
        if [ -f "$dir/ocml.bc" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}
packages=""
command -v "${CLANG:-clang-15}" >/dev/null || packages=" clang-15"
[ -n "${ROCM_DEVICE_LIB_PATH:-}" ] || find_bitcode >/dev/null || packages="$packages rocm-device-libs"
if [ -n "$packages" ]; then
    source "$(dirname "$0")/apt_install.sh"
    apt_install $packages
fi
missing=""
command -v "${CLANG:-clang-15}" >/dev/null || missing="$missing ${CLANG:-clang-15} (apt-get install clang-15);"
bitcode=$(find_bitcode) || missing="$missing amdgcn/bitcode with ocml.bc (apt-get install rocm-device-libs, or set ROCM_DEVICE_LIB_PATH);"
if [ -n "$missing" ]; then
    echo "make gcn needs:$missing"
    exit 1
fi
echo "make gcn: clang $(command -v "${CLANG:-clang-15}"), device libraries in $bitcode"
