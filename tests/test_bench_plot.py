"""The benchmarks' --json output and plot.py's reading of it (no timing asserted).

The JSON-to-bars step needs no matplotlib; only drawing the PNG does (the
optional [bench] extra), and that one test is skipped, saying so, without it.
"""
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).parents[1] / "benchmarks"


def load_plot():
    spec = importlib.util.spec_from_file_location("bench_plot", BENCH / "plot.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


plot = load_plot()


def bench_json(script, tmp_path, *extra):
    out = tmp_path / f"{script}.json"
    done = subprocess.run([sys.executable, str(BENCH / script), "--repeats", "1",
                           "--shapes", "1x32x4x4", "--json", str(out), *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, json.loads(out.read_text())


def test_reorder_json_holds_every_case_it_printed(cl_engine, tmp_path):
    path, doc = bench_json("bench_reorder.py", tmp_path, "--only", "nChw16c")
    assert doc["script"] == "reorder" and doc["strategy"] == cl_engine.profile.strategy
    assert doc["device"] == cl_engine.profile.name and doc["copy_gbps"] > 0
    assert [r["case"] for r in doc["rows"]] == [
        "nchw->nChw16c 1x32x4x4", "nChw16c->nchw 1x32x4x4",
        "nchw->s8 nChw16c per-channel 1x32x4x4", "s8 nChw16c->nchw per-channel 1x32x4x4"]
    for row in doc["rows"]:
        assert row["impl"] == "ocl:generated" and row["seconds"] > 0 and row["gbps"] > 0
        assert row["share_of_copy"] > 0 and row["numpy_seconds"] > 0
    bars, devices = plot.load([path])
    assert devices == [cl_engine.profile.name]
    assert [(b.case, b.strategy, b.impl) for b in bars] == [
        ("reorder: " + r["case"], doc["strategy"], "ocl:generated") for r in doc["rows"]]
    assert [b.share for b in bars] == [r["share_of_copy"] for r in doc["rows"]]


def test_shuffle_json_names_the_shape_and_leaves_out_cases_not_run(cl_engine, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("CLAYOUT_STRATEGY", "gpu")
    _, doc = bench_json("bench_shuffle.py", tmp_path, "--groups", "4,3")
    assert doc["script"] == "shuffle" and doc["strategy"] == "gpu"
    # Group 3 does not divide 32: printed as not run, absent from the numbers.
    assert [r["case"] for r in doc["rows"]] == [
        "nchw group 4 1x32x4x4", "nhwc group 4 1x32x4x4", "nChw16c group 4 1x32x4x4"]


def document(strategy, rows, script="reorder"):
    return {"script": script, "strategy": strategy, "device": "dev", "engine": "<Engine>",
            "rows": [{"case": c, "impl": i, "share_of_copy": s} for c, i, s in rows]}


def test_bars_per_case_and_strategy(tmp_path):
    cpu, gpu = tmp_path / "cpu.json", tmp_path / "gpu.json"
    cpu.write_text(json.dumps(document("cpu", [("a", "ocl:generated", 0.5),
                                               ("b", "host:numpy (7 dims: ...)", 0.1),
                                               ("c", "ocl:generated", None)])))
    gpu.write_text(json.dumps(document("gpu", [("a", "ocl:generated", 0.25),
                                               ("b", "ocl:copy", 1.0)])))
    bars, devices = plot.load([cpu, gpu])
    assert devices == ["dev"]
    # A row without a share (not timed against the copy) has no bar.
    assert [(b.case, b.series, b.share) for b in bars] == [
        ("reorder: a", "cpu strategy, ocl:generated", 0.5),
        ("reorder: b", "cpu strategy, host:numpy", 0.1),
        ("reorder: a", "gpu strategy, ocl:generated", 0.25),
        ("reorder: b", "gpu strategy, ocl:copy", 1.0)]
    cases, strategies, series, positions = plot.layout(bars)
    assert cases == ["reorder: a", "reorder: b"] and strategies == ["cpu", "gpu"]
    assert len(series) == 4
    # The first case on top; in each case the cpu bar above the gpu one, apart.
    (ya_cpu, h), (yb_cpu, _), (ya_gpu, _), (yb_gpu, _) = positions
    assert ya_cpu > yb_cpu and ya_cpu > ya_gpu and yb_cpu > yb_gpu
    assert ya_cpu - ya_gpu >= h and abs(ya_cpu - yb_cpu - 1) < 1e-9


def test_a_file_that_is_not_a_result_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="bad.json: not a benchmark --json result"):
        plot.load([bad])


def test_draws_a_png(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib absent: it comes with the optional [bench] extra only")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document("cpu", [("a", "ocl:generated", 0.5)])))
    out = tmp_path / "plot.png"
    plot.main([str(path), "-o", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 1000
