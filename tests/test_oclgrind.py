"""Oclgrind, a simulated OpenCL device that reports out-of-bounds accesses and
data races, runs kernels that write into windows of guarded buffers (see
oclgrind/bounds_check.py). CI installs it; elsewhere the test is skipped
without it."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parent / "oclgrind" / "bounds_check.py"
GPU_CASES = pathlib.Path(__file__).parent / "oclgrind" / "gpu_cases.py"


def test_gpu_strategy_kernels_have_no_race_and_stay_in_bounds(oclgrind):
    """The GPU strategy's kernels (tiled transposes with barriers, staging
    shuffles, striped vectors, nibble transposes, Quantize's groups met in
    local memory) on Oclgrind's simulated device: any
    diagnostic on stderr (a data race, an out-of-bounds access, a barrier
    not reached by all) fails the test."""
    env = dict(os.environ, CLAYOUT_STRATEGY="gpu")
    done = subprocess.run([oclgrind, "--data-races", sys.executable, str(GPU_CASES)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr[-3000:]
    words = done.stdout.split()
    cases = GPU_CASES.read_text().count("\n    Case(")  # every case ran
    assert cases >= 45 and words[:2] == ["ok", str(cases)] and int(words[3]) >= 30 \
        and "Oclgrind" in done.stdout, done.stdout
    # then nibble transposes and Quantize's coalesced kernel, into guarded buffers
    assert done.stdout.splitlines()[-1] == "nibbles 4 quantize 6", done.stdout


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
def test_kernels_stay_inside_their_destination(oclgrind, strategy):
    env = dict(os.environ, CLAYOUT_STRATEGY=strategy)
    done = subprocess.run([oclgrind, "--data-races", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Oclgrind" in done.stderr and done.stdout.split() == ["ok", "20"]
    for report in ("Invalid read", "Invalid write", "data race", "Uninitialized"):
        assert report not in done.stderr, done.stderr[-3000:]


QUANTIZE_CPU_CASES = pathlib.Path(__file__).parent / "oclgrind" / "quantize_cpu_cases.py"


def test_cpu_strategy_quantize_kernels_under_oclgrind(oclgrind):
    """Quantize's CPU-strategy kernels (the vector kernel on f32, f16 and
    bf16 sources, the loop kernel) on Oclgrind's simulated device, into
    guarded buffers, against the tests' own reference: any diagnostic on
    stderr (an out-of-bounds access, a data race) fails."""
    env = dict(os.environ, CLAYOUT_STRATEGY="cpu")
    done = subprocess.run([oclgrind, "--data-races", sys.executable, str(QUANTIZE_CPU_CASES)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr[-3000:]
    spec = importlib.util.spec_from_file_location("quantize_cpu_cases", QUANTIZE_CPU_CASES)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # its cases: every one must have run
    cases = len(script.CASES) + len(script.HALF_CASES)
    assert cases >= 9 and done.stdout.split()[:2] == ["ok", str(cases)] \
        and "Oclgrind" in done.stdout, done.stdout
