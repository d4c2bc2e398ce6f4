"""Conversion tables for the small types (f8_e5m2, f8_e4m3, f4_e2m1, s4, u4,
e8m0): boundary f32 values converted into each type, compared byte for byte
with the tests' own encoder (tests/small_types_reference.py), and every code of
each type converted back, compared with the reference's decoder. Each runs on
the host engine and on OpenCL with the CPU and the GPU strategies' plans
(e8m0 on the host only). The 4-bit types are packed two per byte, low nibble
first; an odd element count checks the tail byte, whose other nibble must
survive (DESIGN.md, low-precision types)."""
import math

import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
from reference import round_float
from small_types_reference import (BITS, FLOAT_FORMATS, INT_FORMATS, all_codes, decode,
                                   encode, encode_e8m0, is_nan_code, pack_nibbles,
                                   unpack_nibbles)

SMALL = ["f8_e5m2", "f8_e4m3", "f4_e2m1", "s4", "u4"]
PREFILL = 0xAB  # every destination byte before the reorder


@pytest.fixture(params=["host", "ocl-cpu", "ocl-gpu"])
def any_engine(request):
    """The host engine, then OpenCL with the CPU and with the GPU strategy."""
    name = {"host": "host_engine", "ocl-cpu": "cpu_engine", "ocl-gpu": "gpu_engine"}
    return request.getfixturevalue(name[request.param])


# =============================================================================
# The reference itself, on facts from the formats' definitions
# =============================================================================

#: (type, code, value) read off the formats' definitions
DECODE_FACTS = [
    # f8_e5m2: S.EEEEE.MM, bias 15, IEEE-like specials
    ("f8_e5m2", 0x7B, 57344.0), ("f8_e5m2", 0xFB, -57344.0), ("f8_e5m2", 0x7C, math.inf),
    ("f8_e5m2", 0xFC, -math.inf), ("f8_e5m2", 0x7D, math.nan), ("f8_e5m2", 0x7F, math.nan),
    ("f8_e5m2", 0x04, 2.0**-14), ("f8_e5m2", 0x03, 3 * 2.0**-16), ("f8_e5m2", 0x01, 2.0**-16),
    ("f8_e5m2", 0x3C, 1.0), ("f8_e5m2", 0x3E, 1.5), ("f8_e5m2", 0x80, -0.0),
    ("f8_e5m2", 0x00, 0.0),
    # f8_e4m3 (fn): S.EEEE.MMM, bias 7, no inf, S.1111.111 NaN only
    ("f8_e4m3", 0x7E, 448.0), ("f8_e4m3", 0xFE, -448.0), ("f8_e4m3", 0x7F, math.nan),
    ("f8_e4m3", 0xFF, math.nan), ("f8_e4m3", 0x78, 256.0), ("f8_e4m3", 0x7C, 384.0),
    ("f8_e4m3", 0x08, 2.0**-6), ("f8_e4m3", 0x07, 7 * 2.0**-9), ("f8_e4m3", 0x01, 2.0**-9),
    ("f8_e4m3", 0x38, 1.0), ("f8_e4m3", 0x80, -0.0),
    # f4_e2m1: S.EE.M, bias 1: 0, 0.5, 1, 1.5, 2, 3, 4, 6
    ("f4_e2m1", 0x0, 0.0), ("f4_e2m1", 0x1, 0.5), ("f4_e2m1", 0x2, 1.0), ("f4_e2m1", 0x3, 1.5),
    ("f4_e2m1", 0x4, 2.0), ("f4_e2m1", 0x5, 3.0), ("f4_e2m1", 0x6, 4.0), ("f4_e2m1", 0x7, 6.0),
    ("f4_e2m1", 0x8, -0.0), ("f4_e2m1", 0xF, -6.0), ("f4_e2m1", 0x9, -0.5),
    # s4 two's complement, u4 binary
    ("s4", 0x7, 7.0), ("s4", 0x8, -8.0), ("s4", 0xF, -1.0), ("u4", 0xF, 15.0), ("u4", 0x8, 8.0),
    # e8m0: 2^(code - 127), 0xff NaN
    ("e8m0", 0x7F, 1.0), ("e8m0", 0x00, 2.0**-127), ("e8m0", 0xFE, 2.0**127),
    ("e8m0", 0xFF, math.nan), ("e8m0", 0x80, 2.0),
]

#: (type, f32 value, code) from the rules of the issue and DESIGN.md
ENCODE_FACTS = [
    ("f8_e5m2", 61440.0, 0x7C), ("f8_e5m2", 61439.0, 0x7B), ("f8_e5m2", -61440.0, 0xFC),
    ("f8_e5m2", 57344.0, 0x7B), ("f8_e5m2", math.inf, 0x7C), ("f8_e5m2", 2.0**-17, 0x00),
    ("f8_e5m2", 2.0**-17 * 1.0000001, 0x01), ("f8_e5m2", 3 * 2.0**-17, 0x02),
    ("f8_e5m2", -2.0**-18, 0x80), ("f8_e5m2", 1.125, 0x3C), ("f8_e5m2", 1.375, 0x3E),
    ("f8_e4m3", 464.0, 0x7E), ("f8_e4m3", 465.0, 0x7F), ("f8_e4m3", -465.0, 0xFF),
    ("f8_e4m3", math.inf, 0x7F), ("f8_e4m3", 2.0**-10, 0x00), ("f8_e4m3", 3 * 2.0**-10, 0x02),
    ("f8_e4m3", 1.0625, 0x38), ("f8_e4m3", 1.1875, 0x3A),
    ("f4_e2m1", 7.0, 0x7), ("f4_e2m1", 1e30, 0x7), ("f4_e2m1", -math.inf, 0xF),
    ("f4_e2m1", math.nan, 0x0), ("f4_e2m1", 5.0, 0x6), ("f4_e2m1", 2.5, 0x4),
    ("f4_e2m1", 0.25, 0x0), ("f4_e2m1", 0.75, 0x2), ("f4_e2m1", -0.25, 0x8),
    ("f4_e2m1", 1.25, 0x2), ("f4_e2m1", 1.75, 0x4),
    ("s4", 7.5, 0x7), ("s4", 6.5, 0x6), ("s4", -8.5, 0x8), ("s4", -1.5, 0xE), ("s4", 2.5, 0x2),
    ("s4", math.nan, 0x0), ("s4", -math.inf, 0x8),
    ("u4", 15.5, 0xF), ("u4", 14.5, 0xE), ("u4", -3.0, 0x0), ("u4", math.inf, 0xF),
    ("u4", math.nan, 0x0), ("u4", 0.5, 0x0), ("u4", 1.5, 0x2),
    ("e8m0", 1.0, 0x7F), ("e8m0", 3.0, 0x81), ("e8m0", 0.0, 0xFF), ("e8m0", -4.0, 0xFF),
    ("e8m0", 2.0**-130, 0x00), ("e8m0", 1.5 * 2.0**127, 0xFF),
]


@pytest.mark.parametrize("fmt, code, value", DECODE_FACTS)
def test_reference_decodes_format_facts(fmt, code, value):
    got = decode(code, fmt)
    if math.isnan(value):
        assert math.isnan(got) and is_nan_code(code, fmt)
    else:
        assert got == value and math.copysign(1, got) == math.copysign(1, value), (got, value)


@pytest.mark.parametrize("fmt, x, code", ENCODE_FACTS)
def test_reference_encodes_format_facts(fmt, x, code):
    assert encode(np.float32(x), fmt) == code, f"{fmt}: {x!r} -> {encode(x, fmt):#x}"


def test_reference_format_bounds():
    bounds = {"f8_e5m2": (57344, 2.0**-14, 2.0**-16), "f8_e4m3": (448, 2.0**-6, 2.0**-9),
              "f4_e2m1": (6, 1.0, 0.5)}
    for fmt, (top, normal, sub) in bounds.items():
        f = FLOAT_FORMATS[fmt]
        assert (f.max, f.min_normal, f.min_subnormal) == (top, normal, sub), fmt
        finite = [decode(c, fmt) for c in all_codes(fmt) if math.isfinite(decode(c, fmt))]
        assert max(finite) == top and min(finite) == -top, fmt
        assert min(v for v in finite if v > 0) == sub, fmt
    assert INT_FORMATS == {"s4": (-8, 7), "u4": (0, 15)}


@pytest.mark.parametrize("fmt", SMALL + ["e8m0"])
def test_reference_round_trips_every_code(fmt):
    """encode(decode(c)) == c for every number code (so encode picks a value's
    own code); e8m0 has no zero, so every non-NaN code counts."""
    for code in all_codes(fmt):
        value = decode(code, fmt)
        if math.isnan(value):
            continue
        assert encode(value, fmt) == code, f"{fmt} {code:#x} = {value!r}"


# =============================================================================
# Tables of f32 inputs
# =============================================================================

def _up(x):
    return float(np.nextafter(np.float32(x), np.float32(np.inf)))


def _down(x):
    return float(np.nextafter(np.float32(x), np.float32(-np.inf)))


def _float_table(fmt):
    """Boundary f32 values for the float format fmt: the largest value, the
    overflow tie and its neighbours, saturation values, the smallest normal,
    the subnormals and their ties, the half of the smallest subnormal, ties to
    even in [1, 2), both zeros, infinities and NaN; every finite one with
    both signs."""
    f = FLOAT_FORMATS[fmt]
    top, normal, sub = float(f.max), float(f.min_normal), float(f.min_subnormal)
    ulp_top = 2.0 ** (f.emax - f.mbits)
    ulp_one = 2.0 ** -f.mbits
    tie = top + ulp_top / 2
    magnitudes = [
        top, _down(top), _up(top), tie, _down(tie), _up(tie), top + ulp_top, 2 * top,
        1e4 * top, 65504.0, 1e30, 3.4028234663852886e38,
        normal, _down(normal), _up(normal), normal - sub, normal - sub / 2, normal + sub / 2,
        normal + 3 * sub / 2, sub, sub / 2, _up(sub / 2), _down(sub / 2), 3 * sub / 2,
        5 * sub / 2, 3 * sub, sub / 4, 1e-30, 1.401298464324817e-45,
        1.0, 1 + ulp_one / 2, 1 + 3 * ulp_one / 2, _up(1 + ulp_one / 2),
        _down(1 + 3 * ulp_one / 2), 2 - ulp_one / 2, 1.5, 3.0, 0.1, 3.14159,
    ]
    values = [0.0, -0.0, math.inf, -math.inf, math.nan]
    for m in magnitudes:
        values += [m, -m]
    return values


def _int_table(fmt):
    lo, hi = INT_FORMATS[fmt]
    values = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e30, -1e30, 3.4028234663852886e38,
              0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, 0.50000006, 1.4999999,
              float(lo), float(hi), lo - 0.5, hi + 0.5, lo + 0.5, hi - 0.5, _down(hi + 0.5),
              _up(hi + 0.5), _up(lo - 0.5), _down(lo - 0.5), lo - 1.0, hi + 1.0, 100.0, -100.0,
              -1.0, 6.5, 5.5, 4.5, 1e-30, -1e-30]
    return values


def _as_f32(values):
    """The values rounded to f32 (the boundary ones are exact already)."""
    with np.errstate(over="ignore"):
        return [float(np.float32(v)) for v in values]


def f32_table(fmt):
    values = _int_table(fmt) if fmt in INT_FORMATS else _float_table(fmt)
    values = _as_f32(values)
    if len(values) % 2:  # an even count for the packed types
        values.append(2.0)
    return values


# =============================================================================
# Running a reorder on raw bytes
# =============================================================================

def _run(engine, sdt, ddt, dims, src_raw):
    """Reorder src_raw (bytes of sdt, plain layout) into a destination of
    ddt pre-filled with PREFILL; returns the destination's bytes."""
    src_md = cly.MemoryDesc(dims, sdt, tag="ab"[:len(dims)])
    dst_md = cly.MemoryDesc(dims, ddt, tag="ab"[:len(dims)])
    src_raw = np.ascontiguousarray(src_raw, np.uint8).reshape(-1)
    assert src_md.size == src_raw.size, (src_md, src_raw.size)
    src = cly.Memory(src_md, engine, raw=src_raw)
    dst = cly.Memory(dst_md, engine, raw=np.full(max(dst_md.size, 1), PREFILL, np.uint8))
    r = cly.Reorder(src_md, dst_md, engine=engine)
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    return dst.raw()[: dst_md.size]


def _codes_of(raw, fmt, count):
    """The `count` codes held in the destination bytes; for an odd count of a
    4-bit type, also checks that the tail byte's high nibble kept PREFILL's."""
    if BITS[fmt] == 8:
        assert raw.size == count
        return raw
    assert raw.size == (count + 1) // 2
    if count % 2:
        assert raw[-1] >> 4 == PREFILL >> 4, \
            f"the tail byte's other nibble changed: {raw[-1]:#04x}, was {PREFILL:#04x}"
    return unpack_nibbles(raw, count)


def _src_bytes(fmt, codes):
    if BITS[fmt] == 8:
        return np.array(codes, np.uint8)
    return pack_nibbles(codes, fill=0x5)  # an odd count leaves garbage in the tail


def _assert_codes(got, want, fmt, inputs):
    """Byte-exact, except that any NaN code stands for a NaN."""
    bad = []
    for x, g, w in zip(inputs, got.tolist(), want):
        if g == w or (fmt in FLOAT_FORMATS and is_nan_code(w, fmt) and is_nan_code(g, fmt)):
            continue
        bad.append(f"{x!r}: got {g:#x} ({decode(g, fmt)!r}), want {w:#x} ({decode(w, fmt)!r})")
    assert not bad, f"{len(bad)} of {len(want)} {fmt} codes differ:\n" + "\n".join(bad[:20])


def _assert_f32(got_raw, want_values, what):
    got = got_raw.view(np.uint32)
    want = np.array(want_values, np.float32)
    same = (got == want.view(np.uint32)) | (np.isnan(got.view(np.float32)) & np.isnan(want))
    bad = [f"{w}: got {g!r} ({gb:#010x})" for w, g, gb, ok in
           zip(what, got.view(np.float32).tolist(), got.tolist(), same) if not ok]
    assert not bad, f"{len(bad)} values differ:\n" + "\n".join(bad[:20])


# =============================================================================
# f32 -> small type and every code -> f32
# =============================================================================

@pytest.mark.parametrize("fmt", SMALL)
def test_f32_into_small_type(any_engine, fmt):
    values = f32_table(fmt)
    n = len(values)
    raw = _run(any_engine, "f32", fmt, (2, n // 2), np.array(values, np.float32).view(np.uint8))
    _assert_codes(_codes_of(raw, fmt, n), [encode(v, fmt) for v in values], fmt, values)


@pytest.mark.parametrize("fmt", ["s4", "u4", "f4_e2m1"])
def test_f32_into_packed_type_odd_count(any_engine, fmt):
    values = f32_table(fmt)[:15]
    raw = _run(any_engine, "f32", fmt, (3, 5), np.array(values, np.float32).view(np.uint8))
    _assert_codes(_codes_of(raw, fmt, 15), [encode(v, fmt) for v in values], fmt, values)


@pytest.mark.parametrize("fmt", SMALL)
def test_every_code_into_f32(any_engine, fmt):
    codes = all_codes(fmt)
    dims = (16, 16) if BITS[fmt] == 8 else (2, 8)
    raw = _run(any_engine, fmt, "f32", dims, _src_bytes(fmt, codes))
    _assert_f32(raw, [decode(c, fmt) for c in codes], [f"{fmt} {c:#x}" for c in codes])


def _e8m0_inputs():
    """f32 values at every edge of e8m0's rounding: each binade's 2^k and
    1.5 * 2^k (the tie, which goes up) and their neighbours, the bottom
    (2^-127 is an f32 subnormal) and the top, zeros, negatives, specials."""
    values = [0.0, -0.0, -1.0, -2.0 ** -130, math.inf, -math.inf, math.nan, 1e-45,
              2.0 ** -127, _up(2.0 ** -127), _down(2.0 ** -127), 2.0 ** -126 * 1.2,
              1.5 * 2.0 ** 127, _down(1.5 * 2.0 ** 127), float(np.finfo(np.float32).max)]
    for k in range(-126, 128, 7):
        for x in (2.0 ** k, 1.5 * 2.0 ** k):
            values += [x, _up(x), _down(x)]
    return _as_f32(values)


def test_e8m0_codes_run_on_the_device_both_ways(any_engine):
    """e8m0, the MX formats' scale type, has kernels: every code into f32
    (0xff NaN, 0x00 the subnormal 2^-127) and f32 into e8m0 by the rule
    tests/small_types_reference.py writes down (ties up, as ml_dtypes)."""
    codes = all_codes("e8m0")
    raw = _run(any_engine, "e8m0", "f32", (16, 16), _src_bytes("e8m0", codes))
    _assert_f32(raw, [decode(c, "e8m0") for c in codes], [f"e8m0 {c:#x}" for c in codes])
    values = _e8m0_inputs()
    values += [2.0] * (len(values) % 2)
    raw = _run(any_engine, "f32", "e8m0", (2, len(values) // 2),
               np.array(values, np.float32).view(np.uint8))
    _assert_codes(_codes_of(raw, "e8m0", len(values)), [encode(v, "e8m0") for v in values],
                  "e8m0", values)
    if any_engine.is_device:
        r = cly.Reorder(cly.MemoryDesc((4,), "f32"), cly.MemoryDesc((4,), "e8m0"),
                        engine=any_engine)
        assert r.impl.startswith(DEVICE_IMPL), r.impl


@pytest.mark.parametrize("fmt", ["s4", "u4", "f4_e2m1"])
def test_every_code_into_f32_odd_count(any_engine, fmt):
    codes = all_codes(fmt)[1:]  # 15 codes, the garbage nibble after them
    raw = _run(any_engine, fmt, "f32", (3, 5), _src_bytes(fmt, codes))
    _assert_f32(raw, [decode(c, fmt) for c in codes], [f"{fmt} {c:#x}" for c in codes])


# =============================================================================
# e8m0 (host only)
# =============================================================================

def test_f32_into_e8m0(host_engine):
    magnitudes = [1.0, 1.5, _down(1.5), 3.0, _down(3.0), 0.75, 0.7, 2.0**-127, 2.0**-128,
                  2.0**-126, 1.5 * 2.0**-127, _up(2.0**-127), 1.4 * 2.0**-127, 2.0**-149,
                  2.0**127, _down(1.5 * 2.0**127), 1.5 * 2.0**127, 3.4028234663852886e38,
                  1e30, 1e-30, 123.0]
    values = _as_f32([0.0, -0.0, math.inf, -math.inf, math.nan] + magnitudes
                     + [-m for m in magnitudes])
    if len(values) % 2:
        values.append(2.0)
    n = len(values)
    raw = _run(host_engine, "f32", "e8m0", (2, n // 2), np.array(values, np.float32).view(np.uint8))
    _assert_codes(_codes_of(raw, "e8m0", n), [encode_e8m0(v) for v in values], "e8m0", values)


def test_every_e8m0_code_into_f32(host_engine):
    codes = all_codes("e8m0")
    raw = _run(host_engine, "e8m0", "f32", (16, 16), np.array(codes, np.uint8))
    # 2^-127 is an f32 subnormal, exactly representable
    _assert_f32(raw, [decode(c, "e8m0") for c in codes], [f"e8m0 {c:#x}" for c in codes])


# =============================================================================
# f16 and bf16 on the other side
# =============================================================================

def _half_bits(values, dt):
    """uint16 bits of values that are exact in dt ('f16' or 'bf16')."""
    f32 = np.array(values, np.float32)
    if dt == "f16":
        out = f32.astype(np.float16)
        ok = (out.astype(np.float32) == f32) | np.isnan(f32)
        bits = out.view(np.uint16)
    else:
        bits = (f32.view(np.uint32) >> 16).astype(np.uint16)
        ok = ((f32.view(np.uint32) & 0xFFFF) == 0) | np.isnan(f32)
    assert ok.all(), f"not exact in {dt}: {f32[~ok]}"
    return bits


def _exact_in(values, dt):
    f32 = np.array(values, np.float32)
    with np.errstate(all="ignore"):
        if dt == "f16":
            ok = f32.astype(np.float16).astype(np.float32) == f32
        else:
            ok = (f32.view(np.uint32) & 0xFFFF) == 0
    return [v for v, k in zip(values, (ok | np.isnan(f32)).tolist()) if k]


@pytest.mark.parametrize("sdt, fmt", [("f16", "f8_e5m2"), ("bf16", "f4_e2m1"),
                                      ("bf16", "f8_e4m3"), ("f16", "u4")])
def test_half_into_small_type(any_engine, sdt, fmt):
    """Inputs exact in f16/bf16, so the one rounding is the reference's."""
    values = _exact_in(f32_table(fmt), sdt)
    if len(values) % 2:
        values = values[:-1]
    assert len(values) >= 20
    n = len(values)
    raw = _run(any_engine, sdt, fmt, (2, n // 2), _half_bits(values, sdt).view(np.uint8))
    _assert_codes(_codes_of(raw, fmt, n), [encode(v, fmt) for v in values], fmt, values)


@pytest.mark.parametrize("fmt, ddt", [("f8_e4m3", "f16"), ("f8_e5m2", "bf16"),
                                      ("f4_e2m1", "bf16"), ("s4", "f16")])
def test_every_code_into_half(any_engine, fmt, ddt):
    """decode, then the reference's rounding to f16/bf16 (exact here)."""
    codes = all_codes(fmt)
    dims = (16, 16) if BITS[fmt] == 8 else (2, 8)
    raw = _run(any_engine, fmt, ddt, dims, _src_bytes(fmt, codes))
    got = raw.view(np.uint16)
    with np.errstate(all="ignore"):
        want = round_float(np.array([decode(c, fmt) for c in codes]), ddt)
    want_bits = want.view(np.uint16)
    as_f32 = {"f16": lambda b: b.view(np.float16).astype(np.float32),
              "bf16": lambda b: (b.astype(np.uint32) << 16).view(np.float32)}[ddt]
    same = (got == want_bits) | (np.isnan(as_f32(got)) & np.isnan(as_f32(want_bits)))
    bad = [f"{fmt} {c:#x}: got {g:#06x}, want {w:#06x}"
           for c, g, w, ok in zip(codes, got.tolist(), want_bits.tolist(), same) if not ok]
    assert not bad, "\n".join(bad[:20])


# =============================================================================
# OpenCL serves every pair of the types its kernels handle
# =============================================================================

OCL_TYPES = ["f32", "f16", "bf16", "s32", "s8", "u8", "f8_e5m2", "f8_e4m3", "s4", "u4",
             "f4_e2m1"]


@pytest.mark.parametrize("sdt", OCL_TYPES)
def test_opencl_serves_every_pair(cl_engine, sdt):
    declined = []
    for ddt in OCL_TYPES:
        r = cly.Reorder(cly.MemoryDesc((4, 6), sdt), cly.MemoryDesc((4, 6), ddt), engine=cl_engine)
        if not r.impl.startswith(DEVICE_IMPL):
            declined.append(f"{sdt}->{ddt}: {r.impl}")
    assert not declined, f"{len(declined)} pairs not served by OpenCL:\n" + "\n".join(declined)
