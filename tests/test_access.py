"""The access report (gpu/access.py) against gpusim, and what it shows.

The report replays a plan's memory accesses; gpusim (../shared/gpu-offline,
an Oclgrind plugin) watches the real kernel's. Under Oclgrind, small cases
of both strategies run with the plugin, and the report of the plan each
primitive actually ran must give gpusim's five figures within 5%: its
first work-group's replay on shapes whose work-groups are all alike, and
every work-group's on shapes with tails and padding. This file is also the
script run under Oclgrind (``python tests/test_access.py OUT_DIR``).
"""
import dataclasses
import fcntl
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import clayout as cly
from clayout.gpu.access import (Access, LaneAccess, _warp_accesses, access_report,
                                lane_accesses, work_groups)
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.problem import Problem

ROOT = pathlib.Path(__file__).resolve().parents[1]
GPUSIM = ROOT.parent / "shared" / "gpu-offline"
TOLERANCE = 0.05
FIGURES = ("ld B/wi", "st B/wi", "ld eff", "st eff", "lds conf")

# ---------------------------------------------------------------------------
# The cases run under gpusim: name, (src type, tag), (dst type, tag), dims,
# attribute, shuffle group, and whether every work-group is alike (then the
# first one's replay is checked too, else only every work-group's).
CASES = [
    ("f32 nchw->nhwc", ("f32", "nchw"), ("f32", "nhwc"), (2, 64, 16, 16), None, None, True),
    ("f32 nhwc->nchw", ("f32", "nhwc"), ("f32", "nchw"), (2, 64, 16, 16), None, None, True),
    ("f32 nchw->nChw16c", ("f32", "nchw"), ("f32", "nChw16c"), (2, 64, 16, 16), None, None,
     True),
    ("f32 nChw16c->nchw", ("f32", "nChw16c"), ("f32", "nchw"), (2, 64, 16, 16), None, None,
     True),
    ("s8 nchw->nhwc", ("s8", "nchw"), ("s8", "nhwc"), (2, 128, 16, 16), None, None, True),
    ("weights oihw->OIhw4i16o4i", ("f32", "oihw"), ("f32", "OIhw4i16o4i"), (64, 64, 3, 3), None,
     None, True),
    ("f32 nchw->s8 nChw16c per-channel", ("f32", "nchw"), ("s8", "nChw16c"), (2, 64, 16, 16),
     "per-channel", None, True),
    ("s8 nChw16c->f32 nchw per-channel", ("s8", "nChw16c"), ("f32", "nchw"), (2, 64, 16, 16),
     "per-channel", None, True),
    ("f32->s8 scale", ("f32", "nchw"), ("s8", "nchw"), (2, 64, 16, 16), "scale", None, True),
    ("f32->f16", ("f32", "nchw"), ("f16", "nchw"), (2, 64, 16, 16), None, None, True),
    ("u4->f16 1x32 groups + zero points", ("u4", "ab"), ("f16", "ab"), (256, 512), "groups",
     None, True),
    ("shuffle nChw16c C=272 g4", ("f32", "nChw16c"), ("f32", "nChw16c"), (1, 272, 8, 8), None, 4,
     True),
    # Tails, padding, nibble passes, a sum, the old value's zero point.
    ("f32 nchw->nhwc 3x37x9x7", ("f32", "nchw"), ("f32", "nhwc"), (3, 37, 9, 7), None, None,
     False),
    ("f32 nchw->nChw16c C=20", ("f32", "nchw"), ("f32", "nChw16c"), (2, 20, 8, 8), None, None,
     False),
    ("f32 nchw->f16 nChw16c C=20 scale", ("f32", "nchw"), ("f16", "nChw16c"), (2, 20, 8, 8),
     "scale", None, False),
    ("f32->u4 33x37", ("f32", "ab"), ("u4", "ab"), (33, 37), None, None, False),
    ("f32 nchw->s8 nhwc sum + per-channel dst zero point", ("f32", "nchw"), ("s8", "nhwc"),
     (2, 64, 16, 16), "sum", None, False),
    ("shuffle nChw16c C=48 g3", ("f32", "nChw16c"), ("f32", "nChw16c"), (1, 48, 8, 8), None, 3,
     False),
    # Unrolled runs consecutive in the source (one vector load each) and
    # a transpose that loads whole source lines (3 channels x 96 pixels).
    ("weights hwio->OIhw16i16o", ("f32", "hwio"), ("f32", "OIhw16i16o"), (32, 32, 3, 3), None,
     None, False),
    ("f32 nchw->nhwc C=3", ("f32", "nchw"), ("f32", "nhwc"), (2, 3, 32, 32), None, None, False),
    # Run transposes: 16x16 tiles over oihw's hw x i and back.
    ("weights oihw->OIhw16i16o", ("f32", "oihw"), ("f32", "OIhw16i16o"), (32, 32, 3, 3), None,
     None, False),
    ("weights OIhw8i8o->oihw bf16", ("bf16", "OIhw8i8o"), ("f32", "oihw"), (16, 16, 3, 3), None,
     None, False),
    ("weights oihw->IOhw16o16i", ("f32", "oihw"), ("f32", "IOhw16o16i"), (32, 32, 3, 3), None,
     None, False),  # rows overlapping in the source, the last cut short
    # A block of two pixels: whole lines of nChw8c's 34 planes.
    ("shuffle nChw8c C=272 g4", ("f32", "nChw8c"), ("f32", "nChw8c"), (1, 272, 4, 4), None, 4,
     False),
]


def case_attr(kind, src_dt, dims):
    if kind == "scale":
        return cly.Attr(src_scales=0.5)
    if kind == "per-channel":
        return cly.Attr(src_scales=cly.Scales(np.linspace(0.5, 2, dims[1], dtype=np.float32),
                                              mask=2))
    if kind == "sum":
        zero_points = cly.ZeroPoints(np.arange(dims[1], dtype=np.int32) % 3, mask=2)
        return cly.Attr(sum_beta=0.5, dst_zero_points=zero_points)
    if kind == "groups":
        count = dims[0] * dims[1] // 32
        scales = cly.Scales(np.linspace(0.5, 2, count).astype(np.float16), mask=3,
                            groups=(1, 32), data_type="f16")
        zero_points = cly.ZeroPoints(np.arange(count, dtype=np.int32) % 16, mask=3,
                                     groups=(1, 32), data_type="u4")
        return cly.Attr(src_scales=scales, src_zero_points=zero_points)
    return None


def run_cases(out: pathlib.Path) -> None:
    """Under Oclgrind with the plugin: run every case, its launches into
    OUT/<n>.jsonl, and write the report of the plan each primitive ran
    (first work-group and every one) into OUT/reports.json."""
    engine = cly.Engine("opencl")
    stream = cly.Stream(engine)
    reports = {}
    os.environ["GPUSIM_OUT"] = str(out / "other.jsonl")  # uploads, zero fills
    for n, (name, (sdt, stag), (ddt, dtag), dims, kind, group, _) in enumerate(CASES):
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
        if group:
            primitive = cly.Shuffle(src_md, 1, group, engine=engine)
        else:
            primitive = cly.Reorder(src_md, dst_md, attr=case_attr(kind, sdt, dims),
                                    engine=engine)
        values = np.zeros(dims, src_md.dtype.numpy)
        src, dst = cly.Memory.from_numpy(src_md, engine, values), cly.Memory(dst_md, engine)
        stream.wait()
        implementation = primitive._implementation
        plan, local = implementation.plan, implementation.kernel.ndrange()[1][0]
        os.environ["GPUSIM_OUT"] = str(out / f"{n}.jsonl")
        primitive.execute(stream, src, dst)
        stream.wait()
        os.environ["GPUSIM_OUT"] = str(out / "other.jsonl")
        every = range(work_groups(plan, local))
        reports[name] = dict(
            kernel=plan.name, impl=primitive.impl,
            kind="tiled" if plan.tile else "block" if plan.block else "striped",
            first=access_report(plan, local).figures(),
            every=access_report(plan, local, every).figures())
    (out / "reports.json").write_text(json.dumps(reports))


# ---------------------------------------------------------------------------
# Running the cases under gpusim.

def _gpusim_library() -> str | None:
    """libgpusim.so where gpusim.py keeps it, built by build.sh when missing."""
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    library = os.path.join(cache, "gpusim", "libgpusim.so")
    os.makedirs(os.path.dirname(library), exist_ok=True)
    # One build at a time: passes run side by side (make test), and two
    # builds fight over apt's lock.
    with open(library + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(library) and (GPUSIM / "build.sh").exists():
            done = subprocess.run(["bash", str(GPUSIM / "build.sh")], capture_output=True,
                                  text=True, timeout=600)
            if done.returncode == 0 and done.stdout.strip():
                library = done.stdout.strip().splitlines()[-1]
    return library if os.path.exists(library) else None


@pytest.fixture(scope="module")
def gpusim(oclgrind):
    """(oclgrind, libgpusim.so, gpusim.py as a module). Skipped when gpusim
    or its plugin is missing, except under CI, where that fails."""
    library = _gpusim_library() if (GPUSIM / "gpusim.py").exists() else None
    if library is None:
        message = f"gpusim or its plugin is missing ({GPUSIM}, build.sh)"
        if os.environ.get("CI"):
            pytest.fail(message + " -- CI requires it", pytrace=False)
        pytest.skip(message)
    spec = importlib.util.spec_from_file_location("gpusim", GPUSIM / "gpusim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return oclgrind, library, module


@pytest.fixture(scope="module")
def measured(gpusim):
    """strategy -> case name -> (gpusim's figures, the report's)."""
    oclgrind, library, module = gpusim
    results = {}
    for strategy in ("gpu", "cpu"):
        with tempfile.TemporaryDirectory() as folder:
            out = pathlib.Path(folder)
            env = dict(os.environ, CLAYOUT_STRATEGY=strategy, OCLGRIND_PLUGINS=library)
            done = subprocess.run([oclgrind, sys.executable, __file__, str(out)], env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
            reports = json.loads((out / "reports.json").read_text())
            results[strategy] = {}
            for n, (name, *_) in enumerate(CASES):
                rows = [json.loads(line) for line in (out / f"{n}.jsonl").read_text().splitlines()
                        if line.strip()]
                rows = [r for r in rows if r["kernel"].startswith(reports[name]["kernel"])]
                results[strategy][name] = (_figures(module, rows), reports[name])
    return results


def _figures(module, rows) -> dict:
    """gpusim's figures over a kernel's launches (a two-pass one has two)."""
    assert rows, "the kernel did not run"
    total = {part: {key: sum(r[part][key] for r in rows) for key in rows[0][part]}
             for part in ("load", "store", "lds")}
    ld_eff, st_eff, conflicts, _ = module.metrics(total)
    return {"ld B/wi": total["load"]["bytes"] / max(total["load"]["warp_instructions"], 1),
            "st B/wi": total["store"]["bytes"] / max(total["store"]["warp_instructions"], 1),
            "ld eff": ld_eff, "st eff": st_eff, "lds conf": conflicts}


def _close(report: dict, simulated: dict) -> list[str]:
    return [f"{name}: report {report[name]:.3f}, gpusim {simulated[name]:.3f}"
            for name in FIGURES
            if abs(report[name] - simulated[name]) > TOLERANCE * abs(simulated[name])]


@pytest.mark.parametrize("strategy", ["gpu", "cpu"])
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_the_report_agrees_with_gpusim(measured, strategy, case):
    name, alike = case[0], case[-1]
    simulated, report = measured[strategy][name]
    assert report["impl"] == "ocl:generated"
    assert not _close(report["every"], simulated), _close(report["every"], simulated)
    if alike:  # what explain prints: the first work-group
        assert not _close(report["first"], simulated), _close(report["first"], simulated)


def test_the_cases_cover_both_strategies_kernels(measured):
    """The comparisons above are of every kernel family: tiled and striped
    under the GPU strategy, register transposes and runs under the CPU one."""
    kinds = {strategy: {report["kind"] for _, report in cases.values()}
             for strategy, cases in measured.items()}
    assert kinds == {"gpu": {"tiled", "striped"}, "cpu": {"block", "striped"}}


# ---------------------------------------------------------------------------
# The counting rule, by hand.

def _lanes(name, addresses, size=4, local=False, lanes=None):
    return [LaneAccess(name, local, 0, lane, address, size)
            for lane, address in zip(lanes or range(len(addresses)), addresses)]


def _count(trace):
    return {a.instruction: a for a in _warp_accesses(trace)}


def test_sectors_are_counted_from_the_addresses():
    """32 floats in a row fill 4 sectors; 64 bytes apart, 32 sectors for
    the bytes of 4; 16 bytes off, 5 sectors; lanes reading one float, one
    sector of 4 bytes."""
    got = _count(_lanes("dense", [4 * n for n in range(32)])
                 + _lanes("spread", [64 * n for n in range(32)])
                 + _lanes("shifted", [16 + 4 * n for n in range(32)])
                 + _lanes("same", [8] * 32))
    assert {name: (a.bytes, a.units, a.ideal) for name, a in got.items()} == {
        "dense": (128, 4, 4), "spread": (128, 32, 4), "shifted": (128, 5, 4),
        "same": (4, 1, 1)}
    assert got["spread"].efficiency == 4 / 32 and got["same"].bytes_per_instruction == 4


def test_bank_conflicts_are_counted_from_the_words():
    """A column of a 32x32 float tile: 32 words on one bank; with a spare
    word per row, 32 banks; 32 bytes in 8 words, one wavefront."""
    got = _count(_lanes("column", [128 * n for n in range(32)], local=True)
                 + _lanes("padded", [132 * n for n in range(32)], local=True)
                 + _lanes("bytes", range(32), size=1, local=True))
    assert {name: (a.units, a.ideal) for name, a in got.items()} == {
        "column": (32, 1), "padded": (1, 1), "bytes": (1, 1)}
    assert got["column"].conflicts == 32


def test_warps_are_32_lanes_and_a_lane_that_skips_falls_out_of_step():
    """Lanes 0-63 each load 2 floats (2 runs): 4 warp-level accesses. When
    lane 1 skips its first run, its second lands in the first access of
    its warp, as gpusim groups them: still 4, one of them with a hole."""
    full = [a for run in range(2) for a in _lanes("x", [256 * run + 4 * n for n in range(64)])]
    assert _count(full)["x"].warp_instructions == 4
    skipped = [a for a in full if not (a.lane == 1 and a.address < 256)]
    counted = _count(skipped)["x"]
    assert (counted.warp_instructions, counted.bytes) == (4, 64 * 2 * 4 - 4)
    assert counted.units == 4 * 4 + 1  # lane 1's second float, in another sector


def test_a_report_sums_gpusims_way():
    accesses = (Access("load src", False, 16, 2, 1024, 40, 32),
                Access("load src_scales", False, 4, 2, 8, 2, 2),
                Access("store dst", False, 16, 4, 2048, 64, 64),
                Access("store tile", True, 4, 8, 1024, 16, 8))
    from clayout.gpu.access import Report
    figures = Report(accesses, 256, (0,)).figures()
    assert figures == {"ld B/wi": 1032 / 4, "st B/wi": 512, "ld eff": 34 / 42, "st eff": 1.0,
                       "lds conf": 2.0}


# ---------------------------------------------------------------------------
# What the report shows about the plans (stand-in profiles, no device).

BIG = (8, 256, 56, 56)
REORDERS = [  # the benchmark rows of benchmarks/bench_reorder.py and bench_shuffle.py
    ("f32", "nchw", "f32", "nhwc", None, BIG),
    ("f32", "nhwc", "f32", "nchw", None, BIG),
    ("f32", "nchw", "f32", "nChw16c", None, BIG),
    ("f32", "nChw16c", "f32", "nchw", None, BIG),
    ("bf16", "nhwc", "bf16", "nchw", None, BIG),
    ("f32", "nchw", "f16", "nchw", None, BIG),
    ("f32", "nchw", "s8", "nchw", "scale", BIG),
    ("f32", "nchw", "s8", "nChw16c", "per-channel", BIG),
    ("s8", "nChw16c", "f32", "nchw", "per-channel", BIG),
    ("f32", "oihw", "f32", "OIhw4i16o4i", None, (256, 256, 3, 3)),
    ("f32", "oihw", "f32", "OIhw16i16o", None, (512, 512, 3, 3)),
]
SHUFFLES = [((32, 256, 56, 56), "nchw", 4), ((32, 256, 56, 56), "nChw16c", 4),
            ((1, 272, 56, 56), "nChw16c", 4)]


def reorder_problem(sdt, stag, ddt, dtag, kind, dims):
    return Problem("reorder", cly.MemoryDesc(dims, sdt, tag=stag),
                   cly.MemoryDesc(dims, ddt, tag=dtag), case_attr(kind, sdt, dims))


def shuffle_problem(dims, tag, group):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    return Problem("shuffle", md, md, None, (1, group))


PROBLEMS = ([pytest.param(reorder_problem(*case), id=f"{case[1]}-{case[3]}-{case[2]}-{case[4]}")
             for case in REORDERS] +
            [pytest.param(shuffle_problem(*case), id=f"shuffle-{case[0][1]}-{case[1]}-g{case[2]}")
             for case in SHUFFLES])


@pytest.mark.parametrize("problem", PROBLEMS)
def test_gpu_strategy_loads_and_stores_whole_sectors(problem):
    report = access_report(plan_kernel(problem, GPU_PROFILE))
    assert {a.instruction for a in report.accesses} >= {"load src", "store dst"}
    assert report.load_efficiency >= 0.8 and report.store_efficiency >= 0.8, report.figures()


@pytest.mark.parametrize("problem", [p for p in PROBLEMS if "oihw" in p.id
                                     or "shuffle-272-nChw16c" in p.id])
def test_cpu_strategy_runs_per_work_item_waste_sectors(problem):
    """PoCL's plans give each work-item its own run (here without unrolled
    blocks, whose neighbours read neighbouring source elements): a warp's
    32 neighbours then read or write 32 runs apart. The report must see it."""
    profile = dataclasses.replace(CPU_PROFILE, tuning=dataclasses.replace(
        CPU_PROFILE.tuning, unroll_elements=1))
    report = access_report(plan_kernel(problem, profile))
    assert min(report.load_efficiency, report.store_efficiency) <= 0.25, report.figures()


def test_vectors_are_one_access_of_their_width():
    problem = reorder_problem("f32", "nchw", "f16", "nchw", None, BIG)
    plan = plan_kernel(problem, GPU_PROFILE)
    widths = {a.instruction: a.width for a in access_report(plan).accesses}
    assert widths == {"load src": 4 * plan.vec, "store dst": 2 * plan.vec}


def test_a_work_group_size_below_one_is_refused():
    plan = plan_kernel(reorder_problem("f32", "nchw", "f16", "nchw", None, BIG), GPU_PROFILE)
    with pytest.raises(cly.InvalidArgumentError, match="work-group size 0"):
        access_report(plan, 0)


@pytest.mark.parametrize("dst_dims, offsets", [
    ((2, 16, 6, 8), (0, 0, 0, 0)), ((2, 16, 6, 12), (0, 0, 0, 4)), ((2, 16, 6, 10), (0, 0, 0, 2)),
    ((2, 20, 6, 8), (0, 4, 0, 0)), ((3, 16, 6, 8), (1, 0, 0, 0)), ((2, 16, 7, 8), (0, 0, 1, 0))])
@pytest.mark.parametrize("dt", ["f16", "s8", "f32"])
def test_a_plan_claims_aligned_vectors_only_when_every_vector_is(dst_dims, offsets, dt):
    """Typed vector accesses fault on a GPU when misaligned: wherever a plan
    says ``aligned``, every vector every work-item moves must start on its
    own size (and where it does not say so, some vector does not)."""
    dims = (2, 16, 6, 8)
    window = cly.MemoryDesc(dst_dims, dt).submemory(dims, offsets)
    plan = plan_kernel(Problem("reorder", cly.MemoryDesc(dims, "f32"), window), GPU_PROFILE)
    assert plan.vector
    moved = [a for a in lane_accesses(plan, groups=range(work_groups(plan)))
             if a.instruction in ("load src", "store dst")]
    assert len(moved) == 2 * plan.items
    assert plan.aligned == all(a.address % a.size == 0 for a in moved)


# ---------------------------------------------------------------------------
# Where the report is printed.

def test_explain_reports_the_strategy_and_accesses(gpu_engine):
    dims = (2, 64, 8, 8)
    r = cly.Reorder(cly.MemoryDesc(dims, "f32", tag="nchw"),
                    cly.MemoryDesc(dims, "f32", tag="nhwc"), engine=gpu_engine)
    text = r.explain()
    assert "ocl:generated:reorder_f32_abcd_to_f32_acdb: runs" in text
    assert "strategy gpu, shape tiled: tiled" in text and "NDRange (" in text
    rows = [line.split() for line in text.splitlines()
            if line.strip().startswith(("load ", "store "))]
    assert {" ".join(row[:2]) for row in rows} == {"load src", "store tile", "load tile",
                                                   "store dst"}
    assert all(row[2] == ("local" if "tile" in row[1] else "global") for row in rows)
    assert text.splitlines()[-1].startswith("kernel: ld B/wi ")


def test_explain_command_plans_without_a_device():
    done = subprocess.run([sys.executable, "-m", "clayout.explain", "--src", "f32:nChw16c",
                           "--dims", "1x272x56x56", "--shuffle", "1:4"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "shuffle_g4_f32_aBcd16b on the gpu stand-in profile" in done.stdout
    assert "strategy gpu, shape tiled: tiled" in done.stdout and "load src" in done.stdout
    assert "work-group 0 of 784" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "clayout.explain", "--src", "f99:nchw",
                          "--dims", "1x2"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "f99" in bad.stderr


def test_explain_can_replay_every_work_group(capsys):
    """2x20x8x8 into nChw16c: the last box is mostly padding, so every
    box's figures differ from the first box's."""
    from clayout import explain
    argv = ["--src", "f32:nchw", "--dst", "f16:nChw16c", "--dims", "2x20x8x8",
            "--scales", "tensor"]
    assert explain.main(argv) == 0
    first = capsys.readouterr().out
    assert explain.main(argv + ["--all-groups"]) == 0
    every = capsys.readouterr().out
    assert "work-group 0 of 4 " in first and "all 4 work-groups" in every
    assert first.splitlines()[-1] != every.splitlines()[-1]
    with pytest.raises(SystemExit):  # (a device's plan is the primitive's own)
        explain.main(argv + ["--all-groups", "--device"])


def test_the_benchmark_access_table_prints_every_case():
    script = ROOT / "benchmarks" / "access_report.py"
    done = subprocess.run([sys.executable, str(script), "--shapes", "1x32x8x8"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    cases = subprocess.run([sys.executable, "-c", "import access_report as a; "
                            "print(len(a.CASES) + len(a.SHUFFLES))"], cwd=ROOT / "benchmarks",
                           capture_output=True, text=True, timeout=120)
    assert len(rows) == int(cases.stdout) and len(rows) >= 22
    assert all(any(f" {shape} " in r for shape in ("tiled", "striped", "nibble_transpose"))
               for r in rows)
    assert all(len(r.split("|")) == 14 for r in rows)


if __name__ == "__main__":
    run_cases(pathlib.Path(sys.argv[1]))
