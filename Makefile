# `make demo` and `make test` work from a fresh clone: they make a virtual
# environment, install clayout into it, make sure an OpenCL device exists
# (installing PoCL when none does and we may), then run.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python

.PHONY: demo test bench opencl clean

demo: opencl
	$(PY) examples/quickstart.py

# The suite runs with the device's own strategy (CPU kernels on PoCL); the
# reorder, shuffle and benchdnn tests then run again with the GPU kernels
# forced (tiled transposes, striped vectors), so both families stay exact.
GPU_STRATEGY_TESTS = tests/test_reorder_*.py tests/test_shuffle.py tests/test_benchdnn.py

test: opencl
	$(PY) -m pytest -q
	CLAYOUT_STRATEGY=gpu $(PY) -m pytest -q $(GPU_STRATEGY_TESTS)

bench: opencl
	$(PY) benchmarks/bench_reorder.py
	$(PY) benchmarks/bench_shuffle.py
	$(PY) benchmarks/bench_transfer.py

opencl: $(VENV)/installed
	@bash scripts/ensure_opencl.sh $(PY)

$(VENV)/installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
