#!/usr/bin/env bash
# Intel's OpenCL runtime for x86 CPUs, a second OpenCL implementation beside
# PoCL for the tests: installed from PyPI (intel-opencl-rt) into the virtual
# environment of the Python given, never system-wide. Its wheel's own ICD
# file names a path on Intel's build machine, so ICD folders are written in
# the environment instead, for OCL_ICD_VENDORS:
#   <venv>/etc/OpenCL/clayout/intel   Intel's runtime alone
#   <venv>/etc/OpenCL/clayout/pocl    PoCL alone (the system's ICD file)
#   <venv>/etc/OpenCL/clayout/all     both
# The tests pick one with CLAYOUT_TEST_PLATFORM=intel|pocl (tests/conftest.py).
set -eu
py=${1:-.venv/bin/python}
prefix=$("$py" -c 'import sys; print(sys.prefix)')
lib="$prefix/lib/libintelocl.so"
icd="$prefix/etc/OpenCL/clayout"
loads() {  # does Intel's runtime load, alone, from its ICD folder?
    [ -e "$lib" ] || return 1
    mkdir -p "$icd/intel" && echo "$lib" > "$icd/intel/intel.icd"
    OCL_ICD_VENDORS="$icd/intel" "$py" -c "
import sys, pyopencl as cl
sys.exit(0 if any(p.name == 'Intel(R) OpenCL' for p in cl.get_platforms()) else 1)" 2>/dev/null
}
if ! loads; then
    # intel-cmplr-lib-rt: the compiler's math libraries libintelocl.so links
    # to (libimf, libsvml, libintlc), which intel-opencl-rt does not require.
    echo "Installing Intel's OpenCL CPU runtime (intel-opencl-rt) into $prefix."
    log="$prefix/intel-opencl-rt-install.log"
    "$py" -m pip install -q 'intel-opencl-rt==2026.*' 'intel-cmplr-lib-rt==2026.*' >"$log" 2>&1 \
        || tail -20 "$log"
fi
if ! loads; then
    echo "Intel's OpenCL runtime could not be installed or loaded: the tests run on PoCL alone."
    [ -e "$lib" ] && ldd "$lib" | grep "not found"
    [ -n "${CI:-}" ] && { echo "CI requires Intel's runtime."; exit 1; }
    exit 0
fi
rm -rf "$icd/pocl" "$icd/all" && mkdir -p "$icd/pocl" "$icd/all"
cp "$icd/intel/intel.icd" "$icd/all/"
for f in /etc/OpenCL/vendors/pocl*.icd; do
    [ -e "$f" ] && cp "$f" "$icd/pocl/" && cp "$f" "$icd/all/"
done
OCL_ICD_VENDORS="$icd/all" "$py" -c "
import pyopencl as cl
print('OpenCL platforms in $icd/all:', [p.name for p in cl.get_platforms()])"
