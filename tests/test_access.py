"""The access report (gpu/access.py): coalescing as a tested property.

Under the GPU strategy every global load and store of the benchmark cases
must touch at most 1.25x the 128-byte lines its bytes need; the CPU
strategy's plans, shaped for PoCL, touch many more, which shows the report
can tell them apart. No device is needed: plans come from the stand-in
profiles.
"""
import subprocess
import sys

import numpy as np
import pytest

import clayout as cly
from clayout.gpu.access import Access, access_report
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.problem import Problem

BIG = (8, 256, 56, 56)
# The benchmark rows of benchmarks/bench_reorder.py and bench_shuffle.py.
REORDERS = [
    ("f32", "nchw", "f32", "nhwc", None, BIG),
    ("f32", "nhwc", "f32", "nchw", None, BIG),
    ("f32", "nchw", "f32", "nChw16c", None, BIG),
    ("f32", "nChw16c", "f32", "nchw", None, BIG),
    ("bf16", "nhwc", "bf16", "nchw", None, BIG),
    ("f32", "nchw", "f16", "nchw", None, BIG),
    ("f32", "nchw", "bf16", "nchw", None, BIG),
    ("f32", "nchw", "s8", "nchw", "tensor", BIG),
    ("f32", "nchw", "s8", "nChw16c", "per-channel", BIG),
    ("s8", "nChw16c", "f32", "nchw", "per-channel", BIG),
    ("f32", "oihw", "f32", "OIhw4i16o4i", None, (256, 256, 3, 3)),
    ("f32", "oihw", "f32", "OIhw16i16o", None, (512, 512, 3, 3)),
]
SHUFFLES = [((32, 256, 56, 56), "nchw", 4), ((32, 256, 56, 56), "nChw16c", 4),
            ((1, 272, 56, 56), "nchw", 4), ((1, 272, 56, 56), "nChw16c", 4),
            ((1, 272, 56, 56), "nChw16c", 3)]


def _attr(kind, channels):
    if kind == "tensor":
        return cly.Attr(src_scales=0.5)
    if kind == "per-channel":
        return cly.Attr(src_scales=cly.Scales(np.ones(channels, np.float32), mask=2))
    return None


def reorder_problem(sdt, stag, ddt, dtag, attr, dims):
    return Problem("reorder", cly.MemoryDesc(dims, sdt, tag=stag),
                   cly.MemoryDesc(dims, ddt, tag=dtag), _attr(attr, dims[1]))


def shuffle_problem(dims, tag, group):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    return Problem("shuffle", md, md, None, (1, group))


PROBLEMS = ([pytest.param(reorder_problem(*case), id=f"{case[1]}-{case[3]}-{case[2]}-{case[4]}")
             for case in REORDERS] +
            [pytest.param(shuffle_problem(*case), id=f"shuffle-{case[0][1]}-{case[1]}-g{case[2]}")
             for case in SHUFFLES])


@pytest.mark.parametrize("problem", PROBLEMS)
def test_gpu_strategy_touches_near_the_ideal_lines(problem):
    report = access_report(plan_kernel(problem, GPU_PROFILE))
    assert {a.instruction for a in report} >= {"load src", "store dst"}
    for access in report:
        assert access.ratio <= 1.25, access


@pytest.mark.parametrize("problem", [p for p in PROBLEMS if "nchw-nhwc" in p.id
                                     or "nChw16c-nchw" in p.id or "oihw" in p.id])
def test_cpu_strategy_transposes_touch_many_lines_per_warp(problem):
    """PoCL's plans give each work-item its own run: a warp's 32 neighbours
    then read 32 different lines. The report must see it."""
    report = access_report(plan_kernel(problem, CPU_PROFILE))
    assert max(a.ratio for a in report) >= 4


def test_lines_are_counted_from_the_addresses():
    """Hand-made cases of the counting rule: 32 consecutive floats fill one
    line; 32 floats 64 bytes apart fill 16; a misaligned run spans two."""
    from clayout.gpu.access import _Recorder
    rec = _Recorder()
    for lane in range(32):
        rec.add("dense", 0, 4, lane * 4)
        rec.add("spread", 0, 4, lane * 64)
        rec.add("shifted", 0, 4, 64 + lane * 4)
    got = {a.instruction: (a.lines, a.ideal) for a in rec.report()}
    assert got == {"dense": (1, 1), "spread": (16, 1), "shifted": (2, 1)}
    assert Access("x", 4, 1, 3, 2).ratio == 1.5


def test_typed_vectors_count_as_one_access_and_vload_as_many():
    problem = reorder_problem("f32", "nchw", "f16", "nchw", None, BIG)
    gpu = plan_kernel(problem, GPU_PROFILE)
    assert gpu.aligned and gpu.vec == 4
    widths = {a.instruction: a.width for a in access_report(gpu)}
    assert widths == {"load src": 16, "store dst": 8}
    # A destination window starting one element in: not provably aligned.
    parent = cly.MemoryDesc((8, 256, 56, 57), "f16")
    window = parent.submemory(BIG, (0, 0, 0, 1))
    moved = Problem("reorder", problem.src_md, window)
    plan = plan_kernel(moved, GPU_PROFILE)
    assert not plan.aligned
    assert {a.width for a in access_report(plan)} <= {2, 4}


def test_explain_reports_the_strategy_and_lines(gpu_engine):
    dims = (2, 64, 8, 8)
    r = cly.Reorder(cly.MemoryDesc(dims, "f32", tag="nchw"),
                    cly.MemoryDesc(dims, "f32", tag="nhwc"), engine=gpu_engine)
    text = r.explain()
    assert "ocl:generated:reorder_f32_abcd_to_f32_acdb: runs" in text
    assert "strategy gpu: tiled" in text and "NDRange (" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("load", "store"))]
    assert [row[:2] for row in rows] == [["load", "src"], ["store", "dst"]]
    assert all(float(row[-1]) <= 1.25 for row in rows)


def test_explain_command_plans_without_a_device():
    done = subprocess.run([sys.executable, "-m", "clayout.explain", "--src", "f32:nChw16c",
                           "--dims", "1x272x56x56", "--shuffle", "1:4"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "shuffle_g4_f32_aBcd16b on the gpu stand-in profile" in done.stdout
    assert "strategy gpu: tiled" in done.stdout and "load src" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "clayout.explain", "--src", "f99:nchw",
                          "--dims", "1x2"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "f99" in bad.stderr


def test_the_benchmark_access_table_prints_every_case():
    import pathlib
    script = pathlib.Path(__file__).parents[1] / "benchmarks" / "access_report.py"
    done = subprocess.run([sys.executable, str(script), "--shapes", "1x32x8x8"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 22 and all(" tiled " in r or " striped " in r for r in rows)


@pytest.mark.parametrize("dst_dims, offsets", [
    ((2, 16, 6, 8), (0, 0, 0, 0)), ((2, 16, 6, 12), (0, 0, 0, 4)), ((2, 16, 6, 10), (0, 0, 0, 2)),
    ((2, 20, 6, 8), (0, 4, 0, 0)), ((3, 16, 6, 8), (1, 0, 0, 0)), ((2, 16, 7, 8), (0, 0, 1, 0))])
@pytest.mark.parametrize("dt", ["f16", "s8", "f32"])
def test_a_plan_claims_aligned_vectors_only_when_every_vector_is(dst_dims, offsets, dt):
    """Typed vector accesses fault on a GPU when misaligned: wherever a plan
    says ``aligned``, every vector it moves must start on its own size."""
    from clayout.gpu.access import _Offsets
    dims = (2, 16, 6, 8)
    window = cly.MemoryDesc(dst_dims, dt).submemory(dims, offsets)
    plan = plan_kernel(Problem("reorder", cly.MemoryDesc(dims, "f32"), window), GPU_PROFILE)
    assert plan.vector
    starts = _Offsets(plan)
    inner = len(plan.levels) - 1
    seen = set()
    for item in range(plan.items):
        a, rest = [0] * len(plan.levels), item
        for j in reversed(range(len(plan.levels))):
            extent = plan.levels[j].extent // (plan.vec if j == inner else 1)
            rest, a[j] = divmod(rest, extent)
        a[inner] *= plan.vec
        i = starts.logical(a)
        seen.add((starts.src(a, i) % plan.vec, starts.dst(a) % plan.vec))
    assert plan.aligned == (seen == {(0, 0)}), (plan.aligned, seen)
