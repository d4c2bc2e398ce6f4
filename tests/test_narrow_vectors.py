"""The narrow types' vector kernels (issue 21): 8-bit floats decoded and
encoded by bit operations, 4-bit values unpacked from and packed into whole
bytes, runs that load one grouped value or a vector of per-lane values, and
byte rows transposed in registers.

* every f8 code decodes right, through the vector codec and the one-value
  codec (element by element, tiled), on both OpenCL strategies;
* f32 bit patterns around every f8 rounding boundary (ties, the subnormal
  and normal steps, the overflow tie, zeros, f32 subnormals, infinities,
  NaNs with payloads, both signs), and random bit patterns, encode right;
* vector runs with attributes: per-lane and grouped scales, a sum into f8
  and 4-bit destinations (the old values decoded as vectors), padded runs,
  4-bit bit copies of whole bytes, and quantizing into nChw16c by 16x16
  byte transposes;
* under Oclgrind, the same kernels stay inside their destination windows,
  race-free, and leave every other byte (and nibble) alone.

Expected codes come from tests/small_types_reference.py (the formats' bit
fields, exact rational arithmetic), values and layouts from tests/reference.py.
"""
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import clayout as cly
import reference as ref
from clayout.gpu.plan import plan_kernel
from clayout.problem import Problem
from small_types_reference import FLOAT_FORMATS, decode, encode, is_nan_code

F8 = ["f8_e5m2", "f8_e4m3"]
STRATEGIES = ["cpu_engine", "gpu_engine"]


@pytest.fixture(params=STRATEGIES)
def eng(request):
    return request.getfixturevalue(request.param)


def plan_of(engine, src_md, dst_md, attr=None):
    return plan_kernel(Problem("reorder", src_md, dst_md, attr), engine.profile)


def run(engine, src_md, dst_md, src_raw, attr=None, dst_raw=None):
    """One reorder of raw bytes into a destination pre-filled with dst_raw
    (0xA5 bytes by default); returns the destination's bytes."""
    src = cly.Memory(src_md, engine, raw=np.ascontiguousarray(src_raw, np.uint8).reshape(-1))
    if dst_raw is None:
        dst_raw = np.full(dst_md.size, 0xA5, np.uint8)
    dst = cly.Memory(dst_md, engine, raw=dst_raw)
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    assert r.impl.startswith("ocl:generated"), r.impl
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    return dst.raw()


# Layouts of a (rows, 16) tensor: the same on both sides (whole vectors), or
# transposed (element by element on the CPU strategy, tiles on the GPU one).
LAYOUTS = {"vector": ("ab", "ab"), "one-value": ("ab", "ba")}


def check_path(engine, src_md, dst_md, layout):
    plan = plan_of(engine, src_md, dst_md)
    assert plan.vector == (layout == "vector"), plan


# -- decoding: every code -----------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fmt", F8)
def test_every_f8_code_decodes(eng, fmt, layout):
    stag, dtag = LAYOUTS[layout]
    dims = (16, 16)
    codes = np.arange(256, dtype=np.uint8).reshape(dims)
    src_md = cly.MemoryDesc(dims, fmt, tag=stag)
    dst_md = cly.MemoryDesc(dims, "f32", tag=dtag)
    check_path(eng, src_md, dst_md, layout)
    got = ref.logical_of(run(eng, src_md, dst_md, ref.to_physical(codes, stag)), dims, dtag,
                         "f32")
    bad = []
    for code, value in zip(codes.reshape(-1).tolist(), got.reshape(-1).tolist()):
        want = decode(code, fmt)
        same = (math.isnan(want) and math.isnan(value)) or (
            np.float32(want).view(np.uint32) == np.float32(value).view(np.uint32))
        if not same:
            bad.append(f"{code:#04x}: got {value!r}, want {want!r}")
    assert not bad, f"{len(bad)} of 256 {fmt} codes decode wrong:\n" + "\n".join(bad[:20])


# -- encoding: f32 bit patterns around every boundary --------------------------------

def _bits(x):
    return int(np.float32(x).view(np.uint32))


def boundary_patterns(fmt):
    """f32 bit patterns (uint32) next to every place where fmt's rounding
    changes its answer: each finite value and each midpoint between
    neighbours (a tie) with the patterns 1-3 steps either side, the overflow
    tie and beyond, zeros, f32 subnormals, infinities and NaNs with several
    payloads; each with both signs."""
    f = FLOAT_FORMATS[fmt]
    values = sorted({decode(c, fmt) for c in range(128) if not math.isnan(decode(c, fmt))})
    finite = [v for v in values if math.isfinite(v)]
    top = float(f.max)
    ulp_top = 2.0 ** (f.emax - f.mbits)
    centres = finite + [(a + b) / 2 for a, b in zip(finite, finite[1:])]
    centres += [top + ulp_top / 2, top + ulp_top, 2 * top, float(f.min_subnormal) / 2,
                float(f.min_subnormal) / 4, 1.0 + 2.0 ** -(f.mbits + 1)]
    patterns = set()
    for c in centres:
        b = _bits(c)
        assert float(np.uint32(b).view(np.float32)) == c, c  # every centre is an f32
        patterns.update(b + k for k in range(-3, 4) if 0 <= b + k < 0x7F800000)
    patterns.update([0, 1, 2, 0x7FFFFF, 0x800000, _bits(3.4028234663852886e38), 0x7F7FFFFF,
                     0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FA00000])
    out = sorted(patterns)
    return np.array(out + [b | 0x80000000 for b in out], np.uint32)


def _encode_all(bits, fmt):
    return [encode(float(v), fmt) for v in bits.view(np.float32)]


def _assert_codes(got, want, bits, fmt):
    """Byte-exact, except that any NaN code stands for a NaN."""
    bad = []
    for b, g, w in zip(bits.tolist(), got.tolist(), want):
        if g == w or (is_nan_code(w, fmt) and is_nan_code(g, fmt)):
            continue
        x = float(np.uint32(b).view(np.float32))
        bad.append(f"{b:#010x} ({x!r}): got {g:#04x} ({decode(g, fmt)!r}), "
                   f"want {w:#04x} ({decode(w, fmt)!r})")
    assert not bad, f"{len(bad)} of {len(want)} {fmt} codes differ:\n" + "\n".join(bad[:20])


def _encode_run(engine, bits, fmt, layout):
    """The codes the kernel gives for the f32 patterns bits, as a (n/16, 16) tensor."""
    stag, dtag = LAYOUTS[layout]
    pad = -bits.size % 16
    bits = np.concatenate([bits, np.zeros(pad, np.uint32)])
    dims = (bits.size // 16, 16)
    src_md = cly.MemoryDesc(dims, "f32", tag=stag)
    dst_md = cly.MemoryDesc(dims, fmt, tag=dtag)
    check_path(engine, src_md, dst_md, layout)
    logical = bits.view(np.float32).reshape(dims)
    raw = run(engine, src_md, dst_md, ref.raw_of(logical, stag, "f32"))
    return bits, raw[ref.element_offsets(dims, dtag)].reshape(-1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fmt", F8)
def test_f32_encodes_around_every_f8_boundary(eng, fmt, layout):
    bits, got = _encode_run(eng, boundary_patterns(fmt), fmt, layout)
    _assert_codes(got, _encode_all(bits, fmt), bits, fmt)


@pytest.mark.parametrize("fmt", F8)
def test_random_f32_patterns_encode(eng, fmt):
    rng = np.random.default_rng(21)
    # Any pattern, and patterns of fmt's own range (exponents near its bias).
    bits = np.concatenate([rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32),
                           (rng.integers(0, 2**23, 4096).astype(np.uint32)
                            | rng.integers(100, 145, 4096).astype(np.uint32) << 23
                            | rng.integers(0, 2, 4096).astype(np.uint32) << 31)])
    bits, got = _encode_run(eng, bits, fmt, "vector")
    _assert_codes(got, _encode_all(bits, fmt), bits, fmt)


# -- vector runs with attributes -----------------------------------------------------

def packed_or_plain(logical, tag, dt):
    if dt in ref.PACKED:
        return ref.raw_of_packed(logical, tag, dt)
    return ref.raw_of(logical, tag, dt)


def decoded(raw, dims, tag, dt):
    """The logical values of a destination's bytes, as f64 (NaN for f8 NaN codes)."""
    if dt in ref.PACKED:
        return ref.logical_of_packed(raw, dims, tag, dt).astype(np.float64)
    if dt in F8:
        codes = raw[ref.element_offsets(dims, tag)]
        return np.vectorize(lambda c: decode(int(c), dt))(codes)
    return ref.logical_of(raw, dims, tag, dt).astype(np.float64)


def expected(x, ddt):
    """The f32 values x (before the final rounding) as ddt's values (f64)."""
    if ddt in F8:
        return np.vectorize(lambda v: decode(encode(float(v), ddt), ddt))(x)
    return ref.to_int(x, ddt, np.float32).astype(np.float64)


def assert_values(got, want, what):
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    bad = np.argwhere(~same)
    assert bad.size == 0, (f"{what}: {len(bad)} of {got.size} differ, first at "
                           f"{bad[:5].tolist()}: got {got[~same][:5]}, want {want[~same][:5]}")


def f32_values(dims, rng):
    """Values over and past the small types' ranges, a quarter of them on ties."""
    x = rng.standard_normal(dims) * 8
    ties = rng.random(dims) < 0.25
    return np.where(ties, np.round(x) + 0.5, x).astype(np.float32)


@pytest.mark.parametrize("ddt", ["s4", "u4", "f8_e4m3"])
def test_per_lane_scales_load_as_vectors(eng, ddt):
    """Per-column scales along the run (mask on its dim, one per element)."""
    rng = np.random.default_rng(1)
    dims = (6, 64)
    x = f32_values(dims, rng)
    scales = rng.uniform(0.25, 2.0, dims[1]).astype(np.float32)
    attr = cly.Attr(src_scales=cly.Scales(scales, mask=0b10))
    src_md, dst_md = cly.MemoryDesc(dims, "f32", tag="ab"), cly.MemoryDesc(dims, ddt, tag="ab")
    plan = plan_of(eng, src_md, dst_md, attr)
    assert plan.vector and not plan.levels[-1].merged, plan
    raw = run(eng, src_md, dst_md, ref.raw_of(x, "ab", "f32"), attr)
    _, want = ref.ref_reorder(x, "f32", "f32", src_scale=ref.per_slice(scales, 0b10, dims))
    assert_values(decoded(raw, dims, "ab", ddt), expected(want, ddt), f"f32 -> {ddt}")


@pytest.mark.parametrize("group", [8, 16, 32])
@pytest.mark.parametrize("sdt, ddt", [("u4", "f16"), ("s4", "f32"), ("f32", "s4"),
                                      ("f32", "u4")])
def test_grouped_values_once_per_run(eng, sdt, ddt, group):
    """Scales (and u4 zero points) per 1 x group: a run inside one group
    loads each value once; groups shorter than 16 take shorter runs."""
    rng = np.random.default_rng(group)
    dims = (4, 128)
    count = dims[0] * dims[1] // group
    scales = ref.stored_scales(rng.uniform(0.05, 2.0, count), "f16")
    kw = dict(src_scales=cly.Scales(scales, mask=0b11, groups=(1, group), data_type="f16"))
    zps = None
    if sdt == "u4":
        zps = rng.integers(0, 16, count).astype(np.int32)
        kw["src_zero_points"] = cly.ZeroPoints(zps, mask=0b11, groups=(1, group), data_type="u4")
    attr = cly.Attr(**kw)
    if sdt in ref.PACKED:
        lo, hi = ref.INT_RANGE[sdt]
        x = rng.integers(lo, hi, dims, endpoint=True).astype(ref.NP[sdt])
    else:
        x = f32_values(dims, rng) * 4
    src_md, dst_md = cly.MemoryDesc(dims, sdt, tag="ab"), cly.MemoryDesc(dims, ddt, tag="ab")
    plan = plan_of(eng, src_md, dst_md, attr)
    assert plan.vector and group % plan.vec == 0, plan
    raw = run(eng, src_md, dst_md, packed_or_plain(x, "ab", sdt), attr)
    _, want = ref.ref_reorder(
        x, sdt, "f32", src_scale=ref.per_group(scales, 0b11, (1, group), dims),
        src_zp=None if zps is None else ref.per_group(zps, 0b11, (1, group), dims))
    want = (ref.round_float(want, ddt).astype(np.float64) if ddt in ("f16", "f32")
            else expected(want, ddt))
    assert_values(decoded(raw, dims, "ab", ddt), want, f"{sdt} -> {ddt}, groups of {group}")


@pytest.mark.parametrize("ddt", ["s4", "u4", "f8_e4m3", "f8_e5m2"])
def test_sum_reads_the_old_values_as_vectors(eng, ddt):
    rng = np.random.default_rng(7)
    dims = (4, 32)
    x = f32_values(dims, rng)
    if ddt in ref.PACKED:
        lo, hi = ref.INT_RANGE[ddt]
        old = rng.integers(lo, hi, dims, endpoint=True).astype(ref.NP[ddt])
        old_raw = ref.raw_of_packed(old, "ab", ddt)
    else:
        old_raw = rng.integers(0, 256, dims[0] * dims[1]).astype(np.uint8)
        old_raw[old_raw & 0x7F == 0x7F] = 0x11  # no NaN codes among the old values
    old = decoded(old_raw, dims, "ab", ddt)
    attr = cly.Attr(src_scales=0.5, sum_beta=0.75)
    src_md, dst_md = cly.MemoryDesc(dims, "f32", tag="ab"), cly.MemoryDesc(dims, ddt, tag="ab")
    assert plan_of(eng, src_md, dst_md, attr).vector
    raw = run(eng, src_md, dst_md, ref.raw_of(x, "ab", "f32"), attr, dst_raw=old_raw.copy())
    _, want = ref.ref_reorder(x, "f32", "f32", src_scale=np.float32(0.5), beta=0.75,
                              old=old.astype(np.float32))
    assert_values(decoded(raw, dims, "ab", ddt), expected(want, ddt), f"sum into {ddt}")


def test_padded_runs_into_a_blocked_4bit_destination(eng):
    """Runs along a padded block of the destination: a run of padding is
    stored as zero bytes, the others converted (a = 20 padded to 32)."""
    rng = np.random.default_rng(3)
    dims = (20, 6)
    x = f32_values(dims, rng)
    src_md = cly.MemoryDesc(dims, "f32", tag="ba")
    dst_md = cly.MemoryDesc(dims, "s4", tag="Ab16a")
    plan = plan_of(eng, src_md, dst_md)
    assert plan.vector and plan.nibbles == "pairs", plan
    raw = run(eng, src_md, dst_md, ref.raw_of(x, "ba", "f32"))
    _, want = ref.ref_reorder(x, "f32", "f32", src_scale=np.float32(1))
    assert_values(decoded(raw, dims, "Ab16a", "s4"), expected(want, "s4"), "f32 -> s4 Ab16a")
    ref.assert_padding_nibbles_zero(raw, dims, "Ab16a")


@pytest.mark.parametrize("dt", ["s4", "u4"])
def test_4bit_windows_copy_whole_bytes(eng, dt):
    """A same-type reorder between windows starting on a byte moves whole
    bytes; every nibble outside the destination window keeps its value."""
    rng = np.random.default_rng(5)
    parent, dims = (6, 48), (4, 32)
    lo, hi = ref.INT_RANGE[dt]
    whole = rng.integers(lo, hi, parent, endpoint=True).astype(ref.NP[dt])
    src_md = cly.MemoryDesc(parent, dt, tag="ab").submemory(dims, (2, 8))
    dst_md = cly.MemoryDesc(parent, dt, tag="ab").submemory(dims, (0, 16))
    assert plan_of(eng, src_md, dst_md).vector
    before = rng.integers(0, 256, parent[0] * parent[1] // 2).astype(np.uint8)
    raw = run(eng, src_md, dst_md, ref.raw_of_packed(whole, "ab", dt), dst_raw=before.copy())
    inside = ref.window_offsets(parent, "ab", dims, (0, 16))
    assert (ref.get_nibbles(raw, inside) == ref.nibble_codes(whole[2:6, 8:40], dt)).all(), \
        "the window's values"
    outside = np.setdiff1d(np.arange(parent[0] * parent[1]), inside)
    assert (ref.get_nibbles(raw, outside) == ref.get_nibbles(before, outside)).all(), \
        "a nibble outside the window changed"


@pytest.mark.parametrize("ddt", ["s8", "u8"])
def test_quantizing_into_blocks_by_byte_transposes(eng, ddt):
    """f32 nchw -> s8/u8 nChw16c with per-channel scales: on the CPU
    strategy 16 rows of 16 bytes transposed in registers, stored whole."""
    rng = np.random.default_rng(11)
    dims = (2, 48, 4, 8)
    x = f32_values(dims, rng) * 8
    scales = rng.uniform(0.5, 4.0, dims[1]).astype(np.float32)
    attr = cly.Attr(src_scales=cly.Scales(scales, mask=0b10))
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, ddt, tag="nChw16c")
    if eng.profile.strategy == "cpu":
        plan = plan_of(eng, src_md, dst_md, attr)
        assert plan.block == 16 and plan.typed_store, plan
    raw = run(eng, src_md, dst_md, ref.raw_of(x, "abcd", "f32"), attr)
    _, want = ref.ref_reorder(x, "f32", "f32", src_scale=ref.per_slice(scales, 0b10, dims))
    got = ref.logical_of(raw, dims, "aBcd16b", ddt).astype(np.float64)
    assert_values(got, expected(want, ddt), f"f32 nchw -> {ddt} nChw16c")


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
def test_narrow_kernels_stay_inside_their_destination_under_oclgrind(oclgrind, strategy):
    script = pathlib.Path(__file__).parent / "oclgrind" / "narrow_cases.py"
    env = dict(os.environ, CLAYOUT_STRATEGY=strategy)
    done = subprocess.run([oclgrind, "--data-races", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Oclgrind" in done.stderr and done.stdout.split() == ["ok", "8"], done.stdout
    for report in ("Invalid read", "Invalid write", "data race", "Uninitialized"):
        assert report not in done.stderr, done.stderr[-3000:]
