"""A randomized exactness sweep of cly.Quantize (issue 38), beside the
reorder sweep (test_sweep.py): seeded problems (every scheme and element
type, f32, f16 and bf16 sources, groups along a row or two dims, per-row and
per-tensor scales, every scale and zero-point type, transposed destinations,
magnitudes from 1e-30 to 1e30, NaN) run on the pass's device
engine, and their values, scales and zero points are checked whole against
tests/quantize_reference.py, written from the formulas.

Settings (environment):

* CLAYOUT_QUANTIZE_SWEEP_PROBLEMS: problems per pass (default:
  DEFAULT_PROBLEMS; `make fuzz` runs more);
* CLAYOUT_SWEEP_SEED: the seed (default SEED), shared with the reorder sweep;
  each pass (implementation and strategy) takes its own range of indices;
* CLAYOUT_QUANTIZE_SWEEP_ONLY: indices (comma-separated) to run alone: a
  failure prints the command that reruns it.
"""
import os
from dataclasses import dataclass

import numpy as np
import pytest

import clayout as cly
from conftest import TEST_PLATFORM
from quantize_reference import reference

#: Problems per pass when CLAYOUT_QUANTIZE_SWEEP_PROBLEMS is not set, by
#: strategy: about 0.4 s each on PoCL, Intel's runtime and SYCL with the CPU
#: strategy, 1.3 s with the GPU strategy's kernels, which PoCL builds slowly
#: (building is most of it; a warm kernel cache takes a tenth).
DEFAULT_PROBLEMS = {"cpu": 40, "gpu": 20}
SEED = 38
CHUNK = 10
#: Where each pass's indices start, by (implementation, strategy).
PASS_START = {("pocl", "cpu"): 0, ("pocl", "gpu"): 10**6, ("intel", "cpu"): 2 * 10**6,
              ("intel", "gpu"): 3 * 10**6, ("sycl", "cpu"): 4 * 10**6,
              ("sycl", "gpu"): 5 * 10**6, ("", "cpu"): 6 * 10**6, ("", "gpu"): 7 * 10**6}
ELEMENTS = {"symmetric": ["s8", "s4", "f8_e4m3", "f8_e5m2", "f4_e2m1"],
            "asymmetric": ["u8", "u4", "s8", "s4"],
            "mx": ["f8_e4m3", "f8_e5m2", "f4_e2m1", "s8"]}


@dataclass(frozen=True)
class Problem:
    index: int
    dims: tuple
    src_dt: str
    dst_dt: str
    scheme: str
    mask: int
    groups: tuple | None
    scale_dt: str
    zp_dt: str | None
    dst_tag: str | None  # a transposed destination, else C order
    magnitude: float
    nan: bool
    zero_group: bool


def make_problem(seed: int, index: int) -> Problem:
    """Problem ``index`` of ``seed``: the same anywhere."""
    rng = np.random.default_rng([seed, index])
    pick = lambda options: options[int(rng.integers(len(options)))]  # noqa: E731
    scheme = pick(list(ELEMENTS))
    dst_dt = pick(ELEMENTS[scheme])
    src_dt = pick(["f32", "f32", "f16", "bf16"])
    rows = pick([1, 2, 3, 8, 17, 64])
    cols = pick([32, 64, 96, 128, 256, 512, 1024])
    if rng.random() < 0.05:  # enough groups for the vector kernel's widest work-items
        rows, cols = 256, 2048
    dims = (pick([2, 3]), rows, cols) if rng.random() < 0.2 else (rows, cols)
    full = (1 << len(dims)) - 1
    scale_dt, zp_dt = "e8m0", None
    if scheme == "mx":
        mask, groups = full, (1, 32)
    else:
        shape = pick(["row", "row", "row", "two", "per row", "tensor"])
        length = pick([g for g in (16, 32, 48, 64, 128, 256, 1024) if cols % g == 0])
        if shape == "two":
            mask, groups = full, (pick([r for r in (2, 4, 8) if rows % r == 0] or [1]), length)
        elif shape == "per row":
            mask, groups = full ^ (1 << (len(dims) - 1)), None
        elif shape == "tensor":
            mask, groups = 0, None
        else:
            mask, groups = full, (1, length)
        scale_dt = pick(["f32", "f32", "f16", "bf16"])
        if scheme == "asymmetric":  # a type that holds the dst's codes
            zp_dt = pick([z for z in ("u4", "u8", "s32", "s8", "s4") if _holds(z, dst_dt)])
    dst_tag = None
    if rng.random() < 0.1:
        dst_tag = "ba" if len(dims) == 2 else "acb"
    magnitude = (float(rng.uniform(0.01, 100)) if rng.random() < 0.6
                 else float(10.0 ** rng.uniform(-30, 30)))
    if src_dt == "f16":
        magnitude = min(magnitude, 1000.0)
    return Problem(index, dims, src_dt, dst_dt, scheme, mask, groups, scale_dt, zp_dt, dst_tag,
                   magnitude, bool(rng.random() < 0.5), bool(rng.random() < 0.2))


def _holds(zp_dt: str, dst_dt: str) -> bool:
    ranges = {"u4": (0, 15), "u8": (0, 255), "s4": (-8, 7), "s8": (-128, 127),
              "s32": (-2**31, 2**31 - 1)}
    return ranges[zp_dt][0] <= ranges[dst_dt][0] and ranges[dst_dt][1] <= ranges[zp_dt][1]


def problem_data(p: Problem, seed: int) -> np.ndarray:
    """The source values of ``p``, in its source type (no infinities: they are
    outside the formulas' promise, docs/quantization.md)."""
    rng = np.random.default_rng([seed, p.index, 1])
    x = (rng.standard_normal(p.dims) * p.magnitude).astype(np.float32)
    flat = x.reshape(-1)
    if p.zero_group:
        x.reshape(-1, p.dims[-1])[0, :] = 0
    if p.nan:
        flat[rng.integers(flat.size)] = np.nan
    with np.errstate(over="ignore"):
        return x.astype(cly.MemoryDesc((1,), p.src_dt).dtype.numpy)


def check_problem(p: Problem, seed: int, engine) -> str | None:
    """None where ``p`` quantizes on ``engine`` as the reference does (or is
    refused at creation, with the library's error), else what differs."""
    src_md = cly.MemoryDesc(p.dims, p.src_dt)
    dst_md = cly.MemoryDesc(p.dims, p.dst_dt, tag=p.dst_tag) if p.dst_tag else None
    try:
        q = cly.Quantize(src_md, p.dst_dt, scheme=p.scheme, mask=p.mask, groups=p.groups,
                         scale_data_type=p.scale_dt, zero_point_data_type=p.zp_dt,
                         dst_md=dst_md, engine=engine)
    except cly.InvalidArgumentError:
        return None
    x = problem_data(p, seed)
    stream = cly.Stream(engine)
    outs = [cly.Memory(m, engine) for m in (q.dst_md, q.scales_md, q.zero_points_md)
            if m is not None]
    q.execute(stream, cly.Memory.from_numpy(src_md, engine, x), *outs)
    stream.wait()
    values, scales, zps = reference(x.astype(np.float32), p.dst_dt, p.scheme, p.mask, p.groups,
                                    p.scale_dt, p.zp_dt)
    wrong = []
    got = outs[0].to_numpy().astype(np.float32)
    if not np.array_equal(got, values, equal_nan=True):
        bad = np.argwhere(~((got == values) | (np.isnan(got) & np.isnan(values))))
        at = tuple(int(i) for i in bad[0])
        wrong.append(f"{len(bad)} values, first at {at}: {got[at]!r}, the reference "
                     f"{values[at]!r} (x {x.astype(np.float32)[at]!r})")
    got_scales = (outs[1].raw()[:scales.size] if p.scheme == "mx"
                  else outs[1].to_numpy().astype(np.float32).ravel())
    if not np.array_equal(got_scales, scales, equal_nan=True):
        wrong.append(f"{int(np.sum(got_scales != scales))} scales")
    if zps is not None and not np.array_equal(outs[2].to_numpy().astype(np.int64).ravel(), zps):
        wrong.append(f"{int(np.sum(outs[2].to_numpy().astype(np.int64).ravel() != zps))} "
                     f"zero points")
    if not wrong:
        return None
    return (f"problem {p.index} ({q.impl}): {'; '.join(wrong)}\n  {p}\n  rerun: "
            f"CLAYOUT_SWEEP_SEED={seed} CLAYOUT_QUANTIZE_SWEEP_ONLY={p.index} "
            f"python -m pytest tests/test_quantize_sweep.py")


def _indices():
    only = os.environ.get("CLAYOUT_QUANTIZE_SWEEP_ONLY", "").strip()
    if only:
        return [int(i) for i in only.split(",")]
    strategy = os.environ.get("CLAYOUT_STRATEGY", "").strip().lower() or "cpu"
    count = int(os.environ.get("CLAYOUT_QUANTIZE_SWEEP_PROBLEMS",
                               DEFAULT_PROBLEMS.get(strategy, 40)))
    start = PASS_START.get((TEST_PLATFORM, strategy), 0)
    return list(range(start, start + count))


SWEEP_SEED = int(os.environ.get("CLAYOUT_SWEEP_SEED", SEED))
INDICES = _indices()
CHUNKS = [INDICES[i:i + CHUNK] for i in range(0, len(INDICES), CHUNK)]


@pytest.mark.parametrize("indices", CHUNKS, ids=[f"{c[0]}-{c[-1]}" for c in CHUNKS])
def test_quantize_sweep(cl_engine, indices):
    failures = [f for f in (check_problem(make_problem(SWEEP_SEED, i), SWEEP_SEED, cl_engine)
                            for i in indices) if f]
    assert not failures, (f"{len(failures)} of {len(indices)} problems (seed {SWEEP_SEED}):\n"
                          + "\n".join(failures))


def test_the_quantize_problems_cover_the_space():
    """The first 400 problems of a seed hold every scheme and element type,
    every source, scale and zero-point type, each kind of group, transposed
    destinations, NaN and zero groups; the same (seed, index)
    is the same problem."""
    problems = [make_problem(5, i) for i in range(400)]
    assert make_problem(5, 11) == problems[11]
    assert {(p.scheme, p.dst_dt) for p in problems} == {
        (s, d) for s, ds in ELEMENTS.items() for d in ds}
    assert {p.src_dt for p in problems} == {"f32", "f16", "bf16"}
    assert {p.scale_dt for p in problems} == {"f32", "f16", "bf16", "e8m0"}
    assert {p.zp_dt for p in problems} == {None, "u4", "u8", "s32", "s8", "s4"}
    kinds = {("two" if p.groups and p.groups[0] > 1 else "row") if p.groups else
             ("tensor" if p.mask == 0 else "per row") for p in problems}
    assert kinds == {"row", "two", "per row", "tensor"}
    assert {len(p.dims) for p in problems} == {2, 3}
    assert all(any(getattr(p, flag) for p in problems) for flag in ("nan", "zero_group"))
    assert any(p.dst_tag for p in problems)
    assert max(p.magnitude for p in problems) > 1e20 and min(p.magnitude for p in problems) < 1e-20
