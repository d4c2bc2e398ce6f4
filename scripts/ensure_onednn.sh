#!/usr/bin/env bash
# oneDNN for the tests and the benchmarks only (the `onednn` extra: never a
# run-time dependency of clayout): its library and headers from PyPI into
# the virtual environment of the Python given. tests/dnnl.py binds its C
# API with ctypes; its CPU engine runs on SYCL over Intel's OpenCL CPU
# runtime (make intel-opencl), so it loads from the `intel` ICD folder.
set -eu
py=${1:-.venv/bin/python}
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=$("$py" -c 'import sys; print(sys.prefix)')
loads() {  # does oneDNN load and make its CPU engine?
    OCL_ICD_VENDORS="$prefix/etc/OpenCL/clayout/intel" "$py" -c "
import sys; sys.path.insert(0, '$here/tests')
import dnnl; print('oneDNN', dnnl.onednn().version, 'loads (tests/dnnl.py)')" 2>&1
}
if ! loads >/dev/null; then
    echo "Installing oneDNN (the onednn extra) into $prefix."
    log="$prefix/onednn-install.log"
    "$py" -m pip install -q -e "$here[onednn]" >"$log" 2>&1 || tail -20 "$log"
fi
if ! out=$(loads); then
    echo "oneDNN could not be installed or loaded: the tests that compare with it fail under CI."
    echo "$out" | tail -5
    [ -n "${CI:-}" ] && { echo "CI requires oneDNN."; exit 1; }
    exit 0
fi
echo "$out"
