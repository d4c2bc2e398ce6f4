"""python -m clayout tune and the tuning tables the planner reads."""
import json
import logging
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import clayout as cly
from clayout import tuning_table
from clayout.gpu.families import FAMILIES, family_of
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_TUNING, GPU_TUNING
from clayout.gpu.shapes import shape_names
from clayout.problem import Problem
from clayout.tune import candidates


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty user cache, no CLAYOUT_TUNING, no table read before."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CLAYOUT_TUNING", raising=False)
    monkeypatch.setattr(tuning_table, "_LOADED", {})
    monkeypatch.setattr(tuning_table, "_WARNED", set())
    return tmp_path


def _md(dims, tag, dt="f32"):
    return cly.MemoryDesc(dims, dt, tag=tag)


def test_each_problem_has_one_family():
    dims, w = (2, 32, 5, 5), (32, 32, 3, 3)
    cases = {
        "convert": Problem("reorder", _md(dims, "nchw"), _md(dims, "nchw", "s8")),
        "transpose": Problem("reorder", _md(dims, "nchw"), _md(dims, "nhwc")),
        "blocked": Problem("reorder", _md(dims, "nChw16c"), _md(dims, "nchw", "bf16")),
        "weights": Problem("reorder", _md(w, "oihw"), _md(w, "OIhw4i16o4i")),
        "shuffle": Problem("shuffle", _md(dims, "nchw"), _md(dims, "nchw"), shuffle=(1, 4)),
    }
    assert set(cases) == set(FAMILIES)
    for family, problem in cases.items():
        assert family_of(problem) == family
    # Blocked to blocked with the same blocks is a conversion.
    assert family_of(Problem("reorder", _md(dims, "nChw16c"), _md(dims, "nChw16c", "f16"))) \
        == "convert"


def _table(engine, families, **fields):
    identity = tuning_table.Identity.of(engine.device)
    data = {"format": tuning_table.FORMAT, "clayout": cly.__version__,
            "platform": identity.platform, "device": identity.device,
            "driver": identity.driver, "tuned": "2026-11-25T00:00:00Z", "families": families}
    data.update(fields)
    return identity, data


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f) if not isinstance(data, str) else f.write(data)


def test_a_tuned_table_decides_the_plan_of_its_family_only(cl_engine, cache):
    transpose = {"strategy": "cpu", "tuning": {"block_sizes": [4]}, "ratio": 0.9,
                 "default_ratio": 0.5, "candidates": 3}
    identity, data = _table(cl_engine, {"transpose": transpose})
    path = tuning_table.save(identity, data["families"], data["tuned"])
    assert path.startswith(str(cache)) and os.listdir(os.path.dirname(path)) == [
        os.path.basename(path)]  # written whole, no part file left
    engine = cly.Engine("opencl", context=cl_engine.context)  # a new engine reads it
    assert engine.profile.tuned and engine.profile.tuned[0][0] == "transpose"
    dims = (2, 64, 8, 8)
    problem = Problem("reorder", _md(dims, "nchw"), _md(dims, "nhwc"))
    r = cly.Reorder(problem.src_md, problem.dst_md, engine=engine)
    untuned = replace(engine.profile, tuned=())
    tuned = replace(untuned, strategy="cpu", tuning=replace(CPU_TUNING, block_sizes=(4,)))
    assert r._implementation.plan == plan_kernel(problem, tuned)
    assert r._implementation.plan != plan_kernel(problem, untuned.with_strategy("cpu"))
    src = cly.Memory.from_numpy(problem.src_md, engine, np.arange(2 * 64 * 64, dtype=np.float32)
                                .reshape(dims))
    dst = cly.Memory(problem.dst_md, engine)
    r.execute(cly.Stream(engine), src, dst).wait()
    assert np.array_equal(dst.to_numpy(), src.to_numpy())
    # Another family plans as without a table.
    other = Problem("reorder", _md(dims, "nchw"), _md(dims, "nChw16c"))
    r2 = cly.Reorder(other.src_md, other.dst_md, engine=engine)
    assert r2._implementation.plan == plan_kernel(other, untuned)


def test_clayout_tuning_off_and_path(cl_engine, cache, tmp_path, monkeypatch):
    identity, data = _table(cl_engine, {"weights": {"strategy": "cpu", "tuning": {
        "work_group": 64}}})
    elsewhere = str(tmp_path / "mine.json")
    _write(elsewhere, data)
    monkeypatch.setenv("CLAYOUT_TUNING", elsewhere)
    assert cly.Engine("opencl", context=cl_engine.context).profile.tuned[0][0] == "weights"
    tuning_table.save(identity, {"transpose": {"strategy": "cpu", "tuning": {}}}, "now")
    monkeypatch.setenv("CLAYOUT_TUNING", "off")
    assert cly.Engine("opencl", context=cl_engine.context).profile.tuned == ()
    monkeypatch.delenv("CLAYOUT_TUNING")
    assert cly.Engine("opencl", context=cl_engine.context).profile.tuned[0][0] == "transpose"


@pytest.mark.parametrize("why, change", [
    ("corrupt", "{ not json"),
    ("format", {"format": 99}),
    ("clayout version", {"clayout": "0.0.1"}),
    ("driver version", {"driver": "an older driver"}),
    ("another device", {"device": "some other device"}),
    ("unknown family", {"families": {"everything": {"strategy": "cpu", "tuning": {}}}}),
    ("unknown parameter", {"families": {"convert": {"strategy": "cpu",
                                                    "tuning": {"warp_speed": 9}}}}),
    ("bad value", {"families": {"convert": {"strategy": "cpu",
                                            "tuning": {"work_group": -4}}}}),
    ("bad strategy", {"families": {"convert": {"strategy": "fast", "tuning": {}}}}),
    ("misspelt shape", {"families": {"convert": {"strategy": "cpu",
                                                 "tuning": {"skip_shapes": ["unroled"]}}}}),
    ("other strategy's shape", {"families": {"convert": {"strategy": "cpu",
                                                         "tuning": {"skip_shapes": ["tiled"]}}}}),
])
def test_a_bad_table_is_logged_once_and_the_defaults_are_used(cl_engine, cache, caplog,
                                                              why, change):
    identity, data = _table(cl_engine, {"convert": {"strategy": "cpu", "tuning": {}}})
    path = tuning_table.table_path(identity)
    _write(path, change if isinstance(change, str) else {**data, **change})
    caplog.set_level(logging.WARNING, logger="clayout")
    for _ in range(3):
        engine = cly.Engine("opencl", context=cl_engine.context)
        assert engine.profile.tuned == ()
        md = _md((2, 16, 4, 4), "nchw")
        cly.reorder(cly.Memory.from_numpy(md, engine, np.ones(md.dims, np.float32)),
                    cly.Memory(_md(md.dims, "nhwc"), engine))
    warnings = [r.getMessage() for r in caplog.records if "tuning table" in r.getMessage()]
    assert len(warnings) == 1 and path in warnings[0] and "defaults" in warnings[0]


_EXACT_DIMS = {"convert": (2, 24, 7, 9), "transpose": (2, 40, 7, 9), "blocked": (2, 40, 7, 9),
               "weights": (40, 24, 3, 3), "shuffle": (2, 48, 5, 7)}


def _problem_of(family, dims):
    if family == "convert":
        return _md(dims, "nchw"), _md(dims, "nchw", "s8"), cly.Attr(src_scales=0.5)
    if family == "transpose":
        return _md(dims, "nchw"), _md(dims, "nhwc"), None
    if family == "blocked":
        return _md(dims, "nchw"), _md(dims, "nChw16c"), None
    if family == "weights":
        return _md(dims, "oihw"), _md(dims, "OIhw4i16o4i"), None
    return _md(dims, "nChw16c"), None, None


def _expected(family, values):
    if family == "convert":  # oneDNN: scale, round half to even, saturate
        return np.clip(np.rint(values.astype(np.float64) * 0.5), -128, 127).astype(np.int8)
    if family == "shuffle":  # group 4 along axis 1: dst c = u + v * C/4 takes src u * 4 + v
        c = values.shape[1]
        order = [(j % (c // 4)) * 4 + j // (c // 4) for j in range(c)]
        return values[:, order]
    return values


@pytest.mark.parametrize("family", FAMILIES)
def test_every_candidate_the_tuner_may_pick_is_exact(cl_engine, family):
    """Each strategy's candidates, the deliberately bad ones included
    (blocks of 4 or 16, small work-groups and tiles, 8-byte vectors),
    against an independent reference."""
    dims = _EXACT_DIMS[family]
    src_md, dst_md, attr = _problem_of(family, dims)
    values = np.random.default_rng(3).uniform(-300, 300, dims).astype(np.float32)
    want = _expected(family, values)
    base = replace(cl_engine.profile, tuned=(), forced=False)
    src = cly.Memory.from_numpy(src_md, cl_engine, values)
    plans = set()
    for strategy in ("cpu", "gpu"):
        extra = [replace(CPU_TUNING, block_sizes=(16,), work_group=16)] if strategy == "cpu" \
            else [replace(GPU_TUNING, vector_bytes=8, narrow_bytes=8, tile_bytes=4 << 10)]
        for tuning in candidates(strategy, quick=False) + extra:
            engine = cly.Engine("opencl", context=cl_engine.context)
            engine.profile = replace(base, strategy=strategy, tuning=tuning)
            if family == "shuffle":
                primitive = cly.Shuffle(src_md, 1, 4, engine=engine)
            else:
                primitive = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
            plan = primitive._implementation.plan
            if plan in plans:
                continue
            plans.add(plan)
            dst = cly.Memory(primitive.dst_md, cl_engine)
            primitive.execute(cly.Stream(engine), src, dst).wait()
            assert np.array_equal(dst.to_numpy(), want), (strategy, tuning)
    assert len(plans) >= 3  # the candidates do make different kernels


def _run(*args, env):
    return subprocess.run([sys.executable, "-m", "clayout", *args], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, **env))


def test_tune_writes_a_table_that_info_shows_and_one_family_at_a_time(cl_engine, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path), "CLAYOUT_TUNING": ""}
    done = _run("tune", "--quick", "--only", "transpose", "--repeats", "2", env=env)
    assert done.returncode == 0, done.stderr
    assert "[1/1] transpose" in done.stdout and "best" in done.stdout
    (path,) = (tmp_path / "clayout" / "tuning").glob("*.json")
    data = json.loads(path.read_text())
    assert set(data["families"]) == {"transpose"}
    item = data["families"]["transpose"]
    assert 0 < item["ratio"] and item["ratio"] >= item["default_ratio"] > 0
    done = _run("tune", "--quick", "--only", "shuffle", "--repeats", "2", env=env)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(path.read_text())["families"]) == {"transpose", "shuffle"}
    info = _run("info", env=env)
    assert f"tuning: {path}" in info.stdout and "  transpose: " in info.stdout
    assert "share of copy" in info.stdout
    off = _run("info", env=dict(env, CLAYOUT_TUNING="off"))
    assert "tuning: off" in off.stdout


def test_tune_refuses_unknown_families_and_devices():
    done = _run("tune", "--only", "everything", env={})
    assert done.returncode == 2 and "invalid choice" in done.stderr
    done = _run("tune", "--device", "no such platform", env={"CLAYOUT_TUNING": "off"})
    assert done.returncode != 0 and "Traceback" not in done.stderr


def test_the_shipped_tables_load(cache):
    paths = tuning_table.shipped_tables()
    assert paths, "clayout ships tuning tables for the devices it was tuned on"
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        identity = tuning_table.Identity(data["platform"], data["device"], data["driver"])
        assert os.path.basename(path) == identity.file_name
        table = tuning_table.load(identity)  # no user table: the shipped one
        assert table is not None and table.path == path
        assert {family for family, _, _ in table.tuned} == set(data["families"])


def test_the_candidates_are_the_kernel_shapes():
    """Each strategy's candidates pass over each shape but the last in turn
    (Tuning.skip_shapes), and a plan made with a shape passed over comes
    from the next shape that serves; the last shape is never passed over."""
    from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
    from clayout.gpu.shapes import SHAPES

    for strategy in ("cpu", "gpu"):
        names = [shape.name for shape in SHAPES[strategy]]
        skipped = {t.skip_shapes for t in candidates(strategy, quick=True)}
        assert skipped == {()} | {(name,) for name in names[:-1]}
    w = (256, 256, 3, 3)
    weights = Problem("reorder", _md(w, "oihw"), _md(w, "OIhw4i16o4i"))
    nibbles = Problem("reorder", _md((64, 64), "ab", "s4"), _md((64, 64), "ba", "s4"))
    wanted = [(CPU_PROFILE, weights, (), "unrolled"),
              (CPU_PROFILE, weights, ("unrolled",), "runs"),
              (CPU_PROFILE, weights, ("unrolled", "runs"), "runs"),  # never the last
              (CPU_PROFILE, nibbles, (), "nibble_tile"),
              (CPU_PROFILE, nibbles, ("nibble_tile",), "nibble_transpose"),
              (CPU_PROFILE, nibbles, ("nibble_transpose",), "nibble_tile"),
              (CPU_PROFILE, nibbles, ("nibble_tile", "nibble_transpose"), "unrolled"),
              (GPU_PROFILE, nibbles, (), "nibble_transpose"),
              (GPU_PROFILE, nibbles, ("nibble_transpose",), "striped")]
    for profile, problem, skip, shape in wanted:
        tuned = replace(profile, tuning=replace(profile.tuning, skip_shapes=skip))
        assert plan_kernel(problem, tuned).shape == shape, (profile.name, skip)


def test_a_table_names_the_shapes_it_skips():
    tuning = CPU_TUNING.changed({"skip_shapes": ["unrolled"]})
    assert tuning.skip_shapes == ("unrolled",)
    assert tuning.changes(CPU_TUNING) == {"skip_shapes": ["unrolled"]}
    for bad in ([1], "unrolled", [""]):
        with pytest.raises(ValueError, match="skip_shapes"):
            CPU_TUNING.changed({"skip_shapes": bad})
    # A misspelt shape would skip nothing: refused, with the names there are.
    with pytest.raises(ValueError, match=r"unknown kernel shape\(s\) \['unroled'\].*'runs'"):
        CPU_TUNING.changed({"skip_shapes": ["unroled"]}, shape_names("cpu"))
    with pytest.raises(ValueError, match=r"\['tiled'\]"):  # a GPU-strategy shape
        CPU_TUNING.changed({"skip_shapes": ["tiled"]}, shape_names("cpu"))
    assert GPU_TUNING.changed({"skip_shapes": ["tiled"]},
                              shape_names("gpu")).skip_shapes == ("tiled",)
    assert CPU_TUNING.changed({"nibble_grid": [8, 4]}).nibble_grid == (8, 4)
    assert CPU_TUNING.changed({"nibble_pack_grid": [2, 8]}).nibble_pack_grid == (2, 8)
    for name, bad in (("nibble_grid", [16]), ("nibble_grid", [8, 4, 2]),
                      ("nibble_pack_grid", [16]),
                      ("nibble_block_sizes", [4]), ("nibble_block_sizes", [16, 32])):
        with pytest.raises(ValueError, match=name):
            CPU_TUNING.changed({name: bad})
