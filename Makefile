# `make demo` and `make test` work from a fresh clone: they make a virtual
# environment, install clayout into it, make sure an OpenCL device exists
# (installing PoCL when none does and we may), then run.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python

.PHONY: demo test torch onednn onednn-diff test-pocl test-pocl-gpu test-intel test-onednn test-sycl fuzz bench bench-sycl weights opencl intel-opencl sycl spirv-tools info clean ptx gcn gpusim gpusim-plugin

demo: opencl
	$(PY) examples/quickstart.py

# The suite runs on two OpenCL implementations: PoCL, with the device's own
# strategy (CPU kernels) and then, for the reorder, shuffle and benchdnn
# tests, with the GPU kernels forced (tiled transposes, striped vectors), so
# both families stay exact; then all of it on Intel's OpenCL CPU runtime
# (another compiler and runtime: nothing may rest on one driver's habits);
# last, the reorder, shuffle, quantization and benchdnn tests on the SYCL
# engine (dpctl) over Intel's runtime, whose device engine is then SYCL.
# Every pass runs the randomized sweep (tests/test_sweep.py): its own seeded
# problems, checked byte for byte against tests/reference.py on the device
# and the host, their kernels also built for the strategy the pass does not
# run. CLAYOUT_SWEEP_PROBLEMS sets how many: by default 500 on PoCL, 800 on
# Intel's runtime and on SYCL, about 0.1 s each, 4.5 minutes over the four
# passes; `make fuzz` runs thousands.
GPU_STRATEGY_TESTS = tests/test_reorder_*.py tests/test_shuffle.py tests/test_benchdnn.py \
  tests/test_sweep.py tests/test_quantize_sweep.py
SYCL_TESTS = tests/test_reorder_types.py tests/test_reorder_layouts.py \
  tests/test_reorder_attributes.py tests/test_reorder_gpu_shapes.py \
  tests/test_reorder_property.py tests/test_reorder_special_values.py \
  tests/test_reorder_nibbles.py tests/test_nibble_tile.py tests/test_reorder_api.py \
  tests/test_shuffle.py \
  tests/test_grouped_quant.py tests/test_packed_types.py tests/test_small_types.py \
  tests/test_compensation.py tests/test_runtime_dims.py tests/test_sycl.py \
  tests/test_benchdnn.py::test_onednn_batch_files_pass tests/test_sweep.py \
  tests/test_tiers.py tests/test_disk_cache.py tests/test_dlpack.py tests/test_arrays_in_out.py \
  tests/test_quantize_sweep.py

# The passes are independent: two run at a time (the tests are mostly one
# Python thread each), each pass's output printed whole when it ends. The
# Intel pass is the longest on a Xeon (about 11 minutes on CI's 2 cores;
# PoCL's, from a cold start, on an AMD EPYC: 12 minutes), so the
# differential suite against oneDNN (about 3.5 of them) is a pass of its own,
# and the list is in an order that keeps the two slots about even: Intel;
# PoCL, SYCL, oneDNN; then the GPU strategy on PoCL in whichever frees first.
TEST_PASSES = test-intel test-pocl test-sycl test-onednn test-pocl-gpu

test: opencl intel-opencl sycl spirv-tools onednn torch gpusim-plugin
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(TEST_PASSES)

# The PoCL passes keep no program binaries (CLAYOUT_CACHE=off; the cache's
# own tests use folders of their own): PoCL compiles every kernel of a
# program to machine code when asked for its binary, which more than doubled
# the PoCL pass's time from a cold start on an AMD EPYC (150 sweep problems:
# 15 s without, 40 s with). The Intel and SYCL passes keep the default.
test-pocl:
	CLAYOUT_CACHE=off CLAYOUT_TEST_PLATFORM=pocl $(PY) -m pytest -q -p no:cacheprovider
test-pocl-gpu:
	CLAYOUT_CACHE=off CLAYOUT_TEST_PLATFORM=pocl CLAYOUT_STRATEGY=gpu $(PY) -m pytest -q -p no:cacheprovider $(GPU_STRATEGY_TESTS)
test-intel:
	CLAYOUT_TEST_PLATFORM=intel $(PY) -m pytest -q -p no:cacheprovider --ignore=tests/test_onednn.py
test-onednn:
	CLAYOUT_TEST_PLATFORM=intel $(PY) -m pytest -q -p no:cacheprovider tests/test_onednn.py
test-sycl:
	CLAYOUT_TEST_PLATFORM=sycl $(PY) -m pytest -q -p no:cacheprovider $(SYCL_TESTS)

# The sweeps alone, long: FUZZ_PROBLEMS reorder and shuffle problems and
# FUZZ_QUANTIZE_PROBLEMS quantize ones (tests/test_quantize_sweep.py) on each
# implementation with each strategy (PoCL, Intel's runtime and SYCL; CPU and
# GPU kernels), one run after another, from a new seed each time, printed at
# the start and the end (FUZZ_SEED=N runs those problems again). A failure
# prints the command that reruns its problem alone.
FUZZ_PROBLEMS ?= 3000
FUZZ_QUANTIZE_PROBLEMS ?= 500
FUZZ_SEED ?= $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
FUZZ_SEED := $(FUZZ_SEED)
FUZZ_RUNS ?= pocl:cpu pocl:gpu intel:cpu intel:gpu sycl:cpu sycl:gpu

fuzz: opencl intel-opencl sycl
	@echo "make fuzz: seed $(FUZZ_SEED), $(FUZZ_PROBLEMS) reorder and $(FUZZ_QUANTIZE_PROBLEMS) quantize problems per run"
	@status=0; for run in $(FUZZ_RUNS); do \
	  echo "== $$run (seed $(FUZZ_SEED))"; \
	  CLAYOUT_TEST_PLATFORM=$${run%:*} CLAYOUT_STRATEGY=$${run#*:} \
	  CLAYOUT_SWEEP_SEED=$(FUZZ_SEED) CLAYOUT_SWEEP_PROBLEMS=$(FUZZ_PROBLEMS) \
	  CLAYOUT_QUANTIZE_SWEEP_PROBLEMS=$(FUZZ_QUANTIZE_PROBLEMS) \
	  $(PY) -m pytest -q -p no:cacheprovider tests/test_sweep.py tests/test_quantize_sweep.py \
	  || status=1; \
	done; echo "make fuzz: seed $(FUZZ_SEED) (FUZZ_SEED=$(FUZZ_SEED) runs it again)"; \
	exit $$status

# The differential suite against oneDNN at full size (tests/test_onednn.py):
# ONEDNN_PROBLEMS random problems from seed ONEDNN_SEED (a new one each time
# unless given) and every problem of every batch file; `make test` runs a
# share of both (its test-onednn pass).
ONEDNN_PROBLEMS ?= 10000
ONEDNN_SEED ?= $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
ONEDNN_SEED := $(ONEDNN_SEED)

onednn-diff: onednn
	@echo "make onednn-diff: seed $(ONEDNN_SEED), $(ONEDNN_PROBLEMS) random problems"
	CLAYOUT_TEST_PLATFORM=intel CLAYOUT_ONEDNN_PROBLEMS=$(ONEDNN_PROBLEMS) \
	  CLAYOUT_ONEDNN_SEED=$(ONEDNN_SEED) CLAYOUT_ONEDNN_BATCH_STEP=1 \
	  $(PY) -m pytest -q -p no:cacheprovider -s tests/test_onednn.py

# Intel's OpenCL CPU runtime from PyPI into the virtual environment, and the
# ICD folders that pick PoCL, Intel's runtime or both (OCL_ICD_VENDORS).
ICD_FOLDERS = $(VENV)/etc/OpenCL/clayout

intel-opencl: opencl
	@bash scripts/ensure_intel_opencl.sh $(PY)

# oneDNN itself (the onednn extra), for the tests and benchmarks that compare
# clayout with it (tests/dnnl.py); its CPU engine runs on Intel's runtime.
onednn: intel-opencl
	@bash scripts/ensure_onednn.sh $(PY)

# The SYCL engine's extra (dpctl) and Intel's SYCL runtime, of the same
# release as the OpenCL runtime above.
sycl: intel-opencl $(VENV)/sycl-installed

$(VENV)/sycl-installed: $(VENV)/installed
	$(PY) -m pip install -q -e '.[sycl]' 'intel-sycl-rt==2026.*'
	touch $@

# PyTorch's CPU build, for the DLPack tests and docs (tests/test_dlpack.py,
# docs/arrays.md) only: installed where this machine keeps its wheel
# (/opt/wheels; PyPI's plain `torch` is a CUDA build of several GB), else
# those tests skip (PyTorch is no dependency, and no device).
TORCH_WHEEL = $(firstword $(wildcard /opt/wheels/torch-2.13.0+cpu-cp311-*.whl))
torch: $(VENV)/torch-installed

$(VENV)/torch-installed: $(VENV)/installed
	$(if $(TORCH_WHEEL),$(PY) -m pip install -q '$(TORCH_WHEEL)',@echo "no PyTorch CPU wheel in /opt/wheels: the PyTorch tests skip")
	touch $@

# clang-15 and llvm-spirv-15 (Debian): the SYCL engine builds SPIR-V with
# them for Level Zero queues; the tests build it for Intel's CPU runtime.
spirv-tools:
	@bash scripts/ensure_spirv_tools.sh

# What clayout sees on both implementations.
info: opencl intel-opencl
	OCL_ICD_VENDORS=$(abspath $(ICD_FOLDERS))/all $(PY) -m clayout info

# Every kernel the reorder and shuffle tests build, with each strategy,
# compiled for NVIDIA sm_90 by clang's NVPTX target and ptxas: failures,
# registers, spills (the target fails on any) and the share of 16-byte
# global loads and stores. Needs clang-15, libclc-15 and ptxas (not in CI).
PTX_TESTS ?= tests/test_reorder_*.py tests/test_shuffle.py
PTX_FLAGS ?=

ptx: opencl
	@bash scripts/ensure_ptx_tools.sh
	$(PY) scripts/ptx_check.py --tests $(PTX_TESTS) $(PTX_FLAGS)

# The same kernels compiled for AMD gfx90a (MI200) by clang's AMDGPU target
# with ROCm's device libraries: failures, VGPRs, scratch (the target fails on
# any: spills or private arrays in memory) and the share of 16-byte
# (dwordx4) global loads and stores. Needs clang-15 and rocm-device-libs,
# both installed when we may (not in CI).
GCN_TESTS ?= tests/test_reorder_*.py tests/test_shuffle.py
GCN_FLAGS ?=

gcn: opencl
	@bash scripts/ensure_gcn_tools.sh
	$(PY) scripts/gcn_check.py --tests $(GCN_TESTS) $(GCN_FLAGS)

# The GPU strategy's memory traffic without a GPU: its kernels on small
# shapes under Oclgrind with the gpusim plugin (built from the shared
# gpu-offline folder, which installs Oclgrind's headers), failing when a
# case moves fewer bytes per warp instruction, or wastes more sectors or
# local-memory banks, than issue 22 allows (benchmarks/gpusim_check.py).
GPUSIM_DIR ?= ../shared/gpu-offline

gpusim: opencl gpusim-plugin
	$(PY) benchmarks/gpusim_check.py --gpusim $(GPUSIM_DIR)

# Built once before the passes, which run two at a time: two builds at once
# (both passes start with tests/test_access.py) fought over apt's lock and
# failed one pass's gpusim tests.
gpusim-plugin:
	@command -v g++ >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null; }
	@if [ -f $(GPUSIM_DIR)/build.sh ]; then bash $(GPUSIM_DIR)/build.sh; \
	else echo "no $(GPUSIM_DIR)/build.sh: the gpusim tests skip (or fail under CI)"; fi

# Each table runs with both kernel strategies; their numbers go to
# benchmarks/results/*.json and plot.py draws the reorder and shuffle ones
# into benchmarks/ratio_to_copy.png. bench_onednn.py then times clayout
# against oneDNN's CPU engine, clayout on Intel's OpenCL CPU runtime and on
# PoCL, with the CPU strategy alone: it is the one clayout picks on a CPU,
# where oneDNN's CPU engine is its peer.
RESULTS = benchmarks/results

bench: opencl intel-opencl onednn $(VENV)/bench-installed
	mkdir -p $(RESULTS)
	for s in cpu gpu; do \
	  CLAYOUT_STRATEGY=$$s $(PY) benchmarks/bench_reorder.py --json $(RESULTS)/reorder_$$s.json && \
	  CLAYOUT_STRATEGY=$$s $(PY) benchmarks/bench_shuffle.py --json $(RESULTS)/shuffle_$$s.json \
	  || exit 1; \
	done
	$(PY) benchmarks/bench_transfer.py
	for p in pocl intel; do \
	  OCL_ICD_VENDORS=$(abspath $(ICD_FOLDERS))/$$p $(PY) benchmarks/bench_quantize.py \
	    --json $(RESULTS)/quantize_$$p.json || exit 1; \
	done
	$(PY) benchmarks/bench_runtime_dims.py
	$(PY) benchmarks/bench_cross_engine.py
	$(PY) benchmarks/bench_overhead.py
	$(PY) benchmarks/bench_startup.py
	for p in intel pocl; do \
	  $(PY) benchmarks/bench_onednn.py --platform $$p --json $(RESULTS)/onednn_$$p.json || exit 1; \
	done
	$(PY) benchmarks/plot.py $(RESULTS)/reorder_*.json $(RESULTS)/shuffle_*.json \
	  -o benchmarks/ratio_to_copy.png

# The SYCL engine against the OpenCL engine, the same kernels on Intel's
# OpenCL CPU runtime (both engines on it).
bench-sycl: sycl
	mkdir -p $(RESULTS)
	cd benchmarks && OCL_ICD_VENDORS=$(abspath $(ICD_FOLDERS))/intel ../$(PY) bench_sycl.py \
	  --json results/sycl_vs_opencl_intel.json

# matplotlib, for the plot only (the [bench] extra).
$(VENV)/bench-installed: $(VENV)/installed
	$(PY) -m pip install -q -e '.[bench]'
	touch $@

# examples/quantize_weights.py runs on a real model's weights: silero-vad's
# (MIT), taken from its wheel alone (--no-deps: the wheel asks for torch,
# which nothing here needs) and checked against the hash of this version's file.
# safetensors reads them (the [weights] extra). Nothing but PyPI; a second run
# does nothing.
WEIGHTS         = examples/weights
SILERO_VERSION  = 6.2.3
SILERO_FILE     = silero_vad/data/silero_vad_16k.safetensors
SILERO_SHA256   = c59271c284ae9c8335d795d60e0bfdb71aaaceec578d9bd9ffc1b8153c319ea1

weights: $(WEIGHTS)/silero_vad_16k.safetensors $(VENV)/weights-installed

$(WEIGHTS)/silero_vad_16k.safetensors: | $(VENV)/installed  # a new venv fetches nothing again
	rm -rf $(WEIGHTS)/wheel && mkdir -p $(WEIGHTS)/wheel
	$(PY) -m pip download -q --no-deps silero-vad==$(SILERO_VERSION) -d $(WEIGHTS)/wheel
	$(PY) -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
	  $(WEIGHTS)/wheel/silero_vad-$(SILERO_VERSION)-py3-none-any.whl $(SILERO_FILE) $@.part
	echo "$(SILERO_SHA256)  $@.part" | sha256sum -c --quiet -
	rm -rf $(WEIGHTS)/wheel
	mv $@.part $@

$(VENV)/weights-installed: $(VENV)/installed
	$(PY) -m pip install -q -e '.[weights]'
	touch $@

opencl: $(VENV)/installed
	@bash scripts/ensure_opencl.sh $(PY)

$(VENV)/installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
