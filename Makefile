# `make demo` and `make test` work from a fresh clone: they make a virtual
# environment, install clayout into it, make sure an OpenCL device exists
# (installing PoCL when none does and we may), then run.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python

.PHONY: demo test bench opencl clean

demo: opencl
	$(PY) examples/quickstart.py

test: opencl
	$(PY) -m pytest -q

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
