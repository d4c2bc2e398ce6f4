"""The benchmark scripts run end to end on a tiny shape (no timing is asserted)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).parents[1] / "benchmarks"


@pytest.mark.parametrize("script, extra, cases", [
    ("bench_reorder.py", ["--weights", "32x32x3x3"],
     ["device copy kernel", "nchw->nhwc 1x32x4x4", "nChw16c->nchw", "f32->s8 scale", "f32->f16",
      "nchw->s8 nChw16c per-channel", "s8 nChw16c->nchw per-channel", "bf16 nhwc->nchw",
      "oihw->OIhw4i16o4i 32x32x3x3", "oihw->OIhw16i16o 32x32x3x3"]),
    ("bench_shuffle.py", [], ["device copy kernel", "nchw group 4", "nChw16c group 4",
                              "group_size 3 must be"]),
    ("bench_quantize.py", ["--shapes", "16x256"], ["device copy kernel", "u4 1x128 asymmetric",
                                                   "MXFP4", "f16 u4 1x128 asymmetric",
                                                   "bf16 u4 1x128 asymmetric"]),
    ("bench_transfer.py", [], ["pyopencl MB/s", "from_numpy nchw 1x32x4x4",
                               "to_numpy nChw16c 1x32x4x4", "write nhwc 1x32x4x4",
                               "read nchw 1x32x4x4"]),
    ("bench_cross_engine.py", [], ["device copy kernel", "f32 nchw->nChw16c 1x32x4x4",
                                   "cross:cpu2gpu upload+ocl:generated",
                                   "cross:gpu2cpu download+host:numpy", "cross:cpu2gpu upload ",
                                   "device/host"]),
    ("bench_runtime_dims.py", [], ["device copy kernel", "nchw->nhwc, c fixed", "nchw->nChw16c",
                                   "ocl:runtime", "runtime / baked",
                                   "0 during the 50 executions"]),
])
def test_benchmark_prints_every_case(cl_engine, script, extra, cases):
    done = subprocess.run([sys.executable, str(BENCH / script), "--repeats", "1",
                           "--shapes", "1x32x4x4", *extra], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for case in cases:
        assert case in done.stdout, done.stdout


@pytest.mark.parametrize("script, extra", [
    ("bench_reorder.py", ["--shapes", "1x32x8x8", "--only", "nchw->nhwc"]),
    ("bench_quantize.py", ["--shapes", "64x1024"]),
])
def test_kernel_time_times_the_kernels_by_their_events(cl_engine, tmp_path, script, extra):
    """--kernel-time: clayout's kernel and the copy timed by profiling events
    (a GPU's small cases are launch-bound as whole calls); the JSON says so."""
    out = tmp_path / "k.json"
    done = subprocess.run([sys.executable, str(BENCH / script), "--repeats", "2", *extra,
                           "--kernel-time", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "timing kernels (profiling events)" in done.stdout, done.stdout
    document = json.loads(out.read_text())
    assert document["timing"] == "kernel" and document["rows"], document
    assert document["timed_as_calls"] == [], document  # every case had its counters
    assert all(row["seconds"] > 0 and row["share_of_copy"] for row in document["rows"])


def test_overhead_benchmark_prints_every_row(cl_engine, tmp_path):
    out = tmp_path / "overhead.json"
    done = subprocess.run([sys.executable, str(BENCH / "bench_overhead.py"), "--count", "20",
                           "--repeats", "1", "--json", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for row in ["(a) creation on descriptors seen before",
                "reorder f32 nchw->s8 nChw16c per-channel scales (values at creation)",
                "reorder f32 nchw->nhwc", "shuffle f32 nchw axis 1 group 4",
                "host engine: reorder", "upload of 64 float scales",
                "(b) first creation of a new shape", "new shape: cold build",
                "new shape: from pyopencl's disk cache",
                "(c) execute", "execute: per-channel reorder, values at creation",
                "64 scales from NumPy at execute", "pyopencl: enqueue_nd_range_kernel"]:
        assert row in done.stdout, done.stdout
    # Creations on descriptors seen before build and plan nothing.
    assert done.stdout.count("0 builds, 0 plans made") >= 5, done.stdout
    rows = json.loads(out.read_text())["rows"]
    assert {row["table"] for row in rows} == {"creation", "build", "execute"}
    assert all(row.get("us", row.get("ms", 0)) > 0 for row in rows)


#: bench_onednn.py's exit status when oneDNN cannot be loaded (a skip).
ONEDNN_UNAVAILABLE = 77


@pytest.mark.needs_intel  # oneDNN's CPU engine runs on Intel's runtime: CI's Intel pass
def test_onednn_benchmark_prints_every_row(tmp_path):
    out = tmp_path / "onednn.json"
    done = subprocess.run([sys.executable, str(BENCH / "bench_onednn.py"), "--platform", "intel",
                           "--repeats", "1", "--row-seconds", "0", "--shapes", "1x32x4x4",
                           "--weights", "32x32x3x3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode == ONEDNN_UNAVAILABLE:
        if os.environ.get("CI"):
            pytest.fail(f"{done.stderr.strip()} -- CI requires oneDNN (make onednn)",
                        pytrace=False)
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr
    for case in ["clayout on Intel(R) OpenCL against oneDNN", "nchw->nhwc 1x32x4x4",
                 "oihw->OIhw8i8o 32x32x3x3", "goihw->gOIhw16i16o 2x16x16x3x3",
                 "goihw->Goihw16g depthwise 64x1x1x3x3", "shuffle nChw16c group 4 1x272x4x4",
                 "u4->f16 1x32 groups 4096x4096", "clayout/oneDNN"]:
        assert case in done.stdout, done.stdout
    document = json.loads(out.read_text())
    assert document["platform"] == "Intel(R) OpenCL" and document["onednn"]
    measured = [row for row in document["rows"] if "skipped" not in row]
    assert len(measured) >= 20, done.stdout
    # every layout-only row gave oneDNN's bytes (the script stops otherwise)
    assert all(row["over_onednn"] > 0 and row["check"] for row in measured)
