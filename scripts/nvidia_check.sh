#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, as one script for a lent GPU machine
# (see docs/gpu.md): the benchmarks first (each case timed in turns with the
# device's own float4 copy), then the test suite on NVIDIA's OpenCL driver.
# Run from the project's root on that machine, after
#   bash ../shared/gpu/fetch-wheels.sh     (here: prepares .whl/)
# as:  bash scripts/nvidia_check.sh OUTDIR
# Logs and JSON results go to OUTDIR. NVIDIA's driver leaves the kernel
# strategy to the device profile (a GPU: the GPU strategy).
set -o pipefail
out=${1:?usage: nvidia_check.sh OUTDIR}
mkdir -p "$out"
# shellcheck disable=SC1091
source .whl/on-device.sh || exit 1
nvidia-smi -L
export PYTHONUNBUFFERED=1 CLAYOUT_CACHE=${CLAYOUT_CACHE:-/tmp/clayout-cache}
# Budgets in seconds (BENCH_S, SHUFFLE_S, QUANTIZE_S, FIRST_S, TESTS_S), so
# the whole run ends inside a lease's command limit of 600 s: by default
# 120 + 60 + 60 + 120 + 180. At e2f771d the whole suite took 280 s on an H200.
bench_s=${BENCH_S:-120}
tests_s=${TESTS_S:-180}
# Kernels timed by their profiling events (--kernel-time): a whole call of a
# small case is mostly host work on a GPU (28-60 us against 13-20 us of copy
# on the H200), which says nothing of the kernel.
timeout "$bench_s" python3 benchmarks/bench_reorder.py --repeats 7 --kernel-time \
  --json "$out/reorder_nvidia.json" 2>&1 | tee "$out/bench_reorder.log"
timeout "${SHUFFLE_S:-60}" python3 benchmarks/bench_shuffle.py --repeats 7 --kernel-time \
  --json "$out/shuffle_nvidia.json" 2>&1 | tee "$out/bench_shuffle.log"
timeout "${QUANTIZE_S:-60}" python3 benchmarks/bench_quantize.py --repeats 7 --kernel-time \
  --json "$out/quantize_nvidia.json" 2>&1 | tee "$out/bench_quantize.log"
# The files that exercise the GPU strategy's kernels run first, in a pytest
# of their own (given before their folder, pytest would merge them into its
# order), so a run cut short by its budget has checked them. Oclgrind,
# oneDNN, SYCL, SPIR-V and the offline GPU tools are not on that machine, so
# their files would only skip.
first="tests/test_reorder_gpu_shapes.py tests/test_sweep.py tests/test_quantize_sweep.py
  tests/test_quantize.py tests/test_grouped_quant.py tests/test_reorder_layouts.py
  tests/test_reorder_types.py tests/test_small_types.py tests/test_reorder_nibbles.py
  tests/test_nibble_transpose.py tests/test_packed_types.py tests/test_narrow_vectors.py
  tests/test_reorder_special_values.py tests/test_shuffle.py tests/test_reorder_property.py"
skip="--ignore=tests/test_oclgrind.py --ignore=tests/test_onednn.py --ignore=tests/test_sycl.py
  --ignore=tests/test_spirv.py --ignore=tests/test_access.py --ignore=tests/test_gcn_dump.py
  --ignore=tests/test_ptx_dump.py"
rest="$skip $(for f in $first; do printf -- '--ignore=%s ' "$f"; done)"
# pytest-xdist spreads the tests over the machine's cores; the persistent
# kernel cache is shared, which its atomic writes allow. SIGINT at the time
# limit still prints pytest's summary of what failed; the junit files have
# each failure's message.
timeout -s INT "${FIRST_S:-120}" python3 -m pytest -q -p no:cacheprovider -n 14 --tb=line -rfE \
  --junitxml="$out/junit_first.xml" $first > "$out/tests_first.log" 2>&1
tail -n 30 "$out/tests_first.log"
timeout -s INT "$tests_s" python3 -m pytest -q -p no:cacheprovider -n 14 --tb=line -rfE \
  --junitxml="$out/junit.xml" tests $rest > "$out/tests.log" 2>&1
tail -n 60 "$out/tests.log"
