"""python -m clayout info: devices, profiles, the default engine, what runs where."""
import os
import subprocess
import sys

import pytest

import clayout as cly
from clayout import info
from clayout.engine import opencl_devices


def run_module(*args, **env):
    return subprocess.run([sys.executable, "-m", "clayout", *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **env))


def test_info_lists_each_device_its_profile_and_what_runs_there(cl_engine):
    done = run_module("info")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"clayout {cly.__version__} ")
    for device in opencl_devices():
        assert device.name.strip() in out
        assert device.platform.name.strip() in out
    profile = cl_engine.profile
    assert f"strategy {profile.strategy} (kind {profile.kind}" in out
    assert f"local memory {profile.local_mem // 1024} KiB" in out
    assert f"Engine() picks: {cly.Engine()!r}" in out
    # The table, per device and for the host: each problem's implementation.
    device_part, host_part = out.split("\non host:\n")
    assert "f32 7 dims, reversed" in device_part
    assert "host:numpy (7 dims: OpenCL kernels serve up to 6)" in device_part
    assert device_part.count("ocl:generated") == 5
    assert host_part.count("host:numpy") == 6 and "ocl:" not in host_part


def test_info_shows_a_forced_strategy(cl_engine):
    done = run_module("info", CLAYOUT_STRATEGY="gpu")
    assert done.returncode == 0, done.stderr
    assert "CLAYOUT_STRATEGY='gpu'" in done.stdout
    assert "strategy gpu (kind" in done.stdout
    if cl_engine.profile.kind != "gpu":
        assert "forced by CLAYOUT_STRATEGY" in done.stdout


def test_info_without_a_driver_says_so(monkeypatch):
    # As if no ICD were installed: both the report and Engine() see no device.
    monkeypatch.setattr(info, "opencl_devices", lambda: [])
    monkeypatch.setattr("clayout.engine.opencl_devices", lambda: [])
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    text = info.report()
    assert "OpenCL: no platform or device found" in text
    assert "Engine() picks: <Engine host>" in text
    assert text.split("\non host:\n")[1].count("host:numpy") == 6


def test_info_with_no_icd_exits_cleanly(tmp_path):
    # ocl-icd (Debian's loader) reads drivers from OCL_ICD_VENDORS: empty, none.
    done = run_module("info", OCL_ICD_VENDORS=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "OpenCL: no platform or device found" in done.stdout
    assert "Engine() picks: <Engine host>" in done.stdout


def test_info_lists_both_implementations_when_both_are_installed():
    """scripts/ensure_intel_opencl.sh (make test) writes an ICD folder naming
    PoCL and Intel's runtime; info run with it shows both, each with what
    runs there."""
    folder = os.path.join(sys.prefix, "etc", "OpenCL", "clayout", "all")
    if not os.path.isdir(folder):
        message = "no ICD folder for both implementations (bash scripts/ensure_intel_opencl.sh)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires it", pytrace=False)
        pytest.skip(message)
    done = run_module("info", OCL_ICD_VENDORS=folder)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"OCL_ICD_VENDORS={folder!r}" in out
    for name in ("Portable Computing Language", "Intel(R) OpenCL"):
        assert name in out.split("Engine() picks")[0]
    assert out.split("What runs where")[1].count("\non [") == 2  # a table per device


def test_unknown_command_prints_usage():
    done = run_module("bogus")
    assert done.returncode == 2 and "usage: python -m clayout info" in done.stderr
    done = run_module()
    assert done.returncode == 2 and "usage" in done.stderr
