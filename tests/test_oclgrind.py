"""Oclgrind, a simulated OpenCL device that reports out-of-bounds accesses and
data races, runs kernels that write into windows of guarded buffers (see
oclgrind/bounds_check.py). CI installs it; elsewhere the test is skipped
without it."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parent / "oclgrind" / "bounds_check.py"


def test_kernels_stay_inside_their_destination():
    oclgrind = shutil.which("oclgrind")
    if oclgrind is None:
        message = "oclgrind is not installed (apt-get install oclgrind)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires it", pytrace=False)
        pytest.skip(message)
    done = subprocess.run([oclgrind, "--data-races", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Oclgrind" in done.stderr and done.stdout.split() == ["ok", "6"]
    for report in ("Invalid read", "Invalid write", "data race", "Uninitialized"):
        assert report not in done.stderr, done.stderr[-3000:]
