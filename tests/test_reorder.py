"""Reorder on the host and OpenCL paths, checked against an independent reference.

The reference below knows nothing of clayout: it lays tensors out in memory
by reshaping and transposing NumPy arrays (one axis per outer dim and per
inner block, in the tag's physical order), and converts values with the
formula of DESIGN.md section 3 written out in NumPy, rounding floats with
its own round-to-nearest-even. Memories are filled with `raw=` bytes the
reference made and read back with `raw()`, so clayout's own scatter/gather
never decides an expected value.
"""
import math
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import clayout as cly

# =============================================================================
# Reference
# =============================================================================

LETTERS = "abcdefghijkl"
CORE = ["f32", "f16", "bf16", "s32", "s8", "u8"]
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64,
      "s32": np.int32, "s8": np.int8, "u8": np.uint8}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
INT_RANGE = {"s32": (-2**31, 2**31 - 1), "s8": (-128, 127), "u8": (0, 255)}
# (stored mantissa bits, smallest normal exponent, largest exponent)
FLOAT_FORMAT = {"f16": (10, -14, 15), "bf16": (7, -126, 127), "f32": (23, -126, 127)}
S32_MAX_FROM_F32 = 2147483520  # the largest f32 below 2^31


def is_int(dt):
    return dt in INT_RANGE


# -- layouts ------------------------------------------------------------------

def parse_tag(tag):
    """'ABcd4b16a4b' -> outer dims in physical order [0, 1, 2, 3] and the
    inner blocks outermost first [(1, 4), (0, 16), (1, 4)]."""
    m = re.fullmatch(r"([a-lA-L]+)((?:\d+[a-l])*)", tag)
    assert m, tag
    outer = [LETTERS.index(c.lower()) for c in m.group(1)]
    inner = [(LETTERS.index(letter), int(n))
             for n, letter in re.findall(r"(\d+)([a-l])", m.group(2))]
    assert sorted(outer) == list(range(len(outer))), tag
    return outer, inner


def to_physical(logical, tag, fill=0):
    """The dense physical buffer (1-d, same dtype) of a logical array in layout `tag`.

    Each dim d is padded to its block B_d and split into (P_d / B_d, b_1, b_2, ...),
    its inner blocks in tag order (mixed radix, most significant first); the
    axes are then transposed to: outer dims in tag order, inner blocks in tag order.
    """
    logical = np.asarray(logical)
    outer, inner = parse_tag(tag)
    n = logical.ndim
    assert len(outer) == n
    blocks = [math.prod(s for d2, s in inner if d2 == d) for d in range(n)]
    padded = [-(-size // b) * b for size, b in zip(logical.shape, blocks)]
    buf = np.full(padded, fill, dtype=logical.dtype)
    buf[tuple(slice(0, size) for size in logical.shape)] = logical
    shape, axes = [], []
    for d in range(n):
        sizes = [s for d2, s in inner if d2 == d]
        axes.append(list(range(len(shape), len(shape) + 1 + len(sizes))))
        shape += [padded[d] // blocks[d]] + sizes
    perm = [axes[d][0] for d in outer]
    used = [1] * n
    for d, _ in inner:
        perm.append(axes[d][used[d]])
        used[d] += 1
    return np.ascontiguousarray(buf.reshape(shape).transpose(perm)).reshape(-1)


def element_positions(dims, tag):
    """Physical element offset of every logical index (int64 array of shape dims)."""
    count = math.prod(dims)
    phys = to_physical(np.arange(count, dtype=np.int64).reshape(dims), tag, fill=-1)
    pos = np.empty(count, dtype=np.int64)
    valid = phys >= 0
    pos[phys[valid]] = np.nonzero(valid)[0]
    return pos.reshape(dims)


def physical_size(dims, tag):
    return to_physical(np.zeros(dims, np.uint8), tag).size


def strided_positions(dims, strides):
    """Element offset of every logical index of a plain strided layout."""
    return sum(g * s for g, s in zip(np.indices(dims, dtype=np.int64), strides))


def raw_of(logical, tag, dt, pad_byte=0):
    """Bytes of `logical` in layout `tag`; padding bytes are `pad_byte`."""
    values = np.asarray(logical).astype(NP[dt])
    phys = to_physical(values, tag)
    raw = phys.view(np.uint8).copy()
    if pad_byte:
        valid = to_physical(np.ones(values.shape, bool), tag, fill=False)
        raw.reshape(phys.size, -1)[~valid] = pad_byte
    return raw


def logical_of(raw, dims, tag, dt):
    """The logical array held by the dense bytes `raw` in layout `tag`."""
    typed = np.asarray(raw).view(NP[dt])
    return typed[element_positions(dims, tag)]


# -- values --------------------------------------------------------------------

def round_float(x, dt):
    """x rounded once to dt: to nearest even, overflow to +-inf, NaN stays NaN."""
    x = np.asarray(x, dtype=np.float64)
    if dt == "f64":
        return x.copy()
    mbits, emin, emax = FLOAT_FORMAT[dt]
    with np.errstate(all="ignore"):
        _, e = np.frexp(x)                             # |x| in [2^(e-1), 2^e)
        quantum = np.ldexp(1.0, np.maximum(e - 1, emin) - mbits)
        r = np.rint(x / quantum) * quantum             # exact: quantum is a power of 2
        r = np.where(np.abs(r) >= 2.0 ** (emax + 1), np.copysign(np.inf, x), r)
        r = np.where(np.isfinite(x), r, x)
        if dt == "bf16":  # r is exactly a bf16: keep the top half of its f32 bits
            top = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            return top.view(ml_dtypes.bfloat16)
        return r.astype(NP[dt])


def to_int(x, dt, compute):
    lo, hi = INT_RANGE[dt]
    if dt == "s32" and compute == np.float32:
        hi = S32_MAX_FROM_F32
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
        x = np.asarray(x, dtype=np.float64)
    x = np.where(np.isnan(x), 0.0, x)
    return np.rint(np.clip(x, lo, hi)).astype(NP[dt])


def per_slice(values, mask, dims):
    """Per-slice values (C order over the masked dims) shaped to broadcast over dims."""
    shape = [dims[d] if mask >> d & 1 else 1 for d in range(len(dims))]
    return np.asarray(values).reshape(shape)


def ref_reorder(src, sdt, ddt, src_scale=None, dst_scale=None, src_zp=None, dst_zp=None,
                beta=None, old=None):
    """DESIGN.md's reorder of a logical array. Scales and zero points are
    arrays that broadcast over src (see per_slice). Returns (result, x) where x
    is the value before the final rounding (None for exact copies)."""
    plain = all(v is None for v in (src_scale, dst_scale, src_zp, dst_zp, beta))
    if plain and sdt == ddt:
        return src.copy(), None
    if plain and is_int(sdt) and is_int(ddt):
        lo, hi = INT_RANGE[ddt]
        return np.clip(src.astype(np.int64), lo, hi).astype(NP[ddt]), None
    ct = np.float64 if "f64" in (sdt, ddt) else np.float32
    with np.errstate(all="ignore"):
        x = src.astype(ct)
        if src_zp is not None:
            x = x - np.asarray(src_zp, np.int32).astype(ct)
        if src_scale is not None:
            x = np.asarray(src_scale, np.float32).astype(ct) * x
        if beta is not None:
            o = old.astype(ct)
            if dst_zp is not None:
                o = o - np.asarray(dst_zp, np.int32).astype(ct)
            x = x + ct(np.float32(beta)) * o  # beta is an f32 (as oneDNN's sum scale)
        if dst_scale is not None:
            x = x / np.asarray(dst_scale, np.float32).astype(ct)
        if dst_zp is not None:
            x = x + np.asarray(dst_zp, np.int32).astype(ct)
        x = np.broadcast_to(x, src.shape).astype(ct)
    out = to_int(x, ddt, ct) if is_int(ddt) else round_float(x, ddt)
    return out, x


# -- comparison ----------------------------------------------------------------

def _bits(a):
    return a.view(UINT[a.dtype.itemsize])


def _report(mask, got, want, src, pre):
    lines = []
    for idx in np.argwhere(mask)[:10]:
        i = tuple(idx)
        line = f"  at {i}: got {got[i]!r}, want {want[i]!r}"
        if src is not None:
            line += f", src {src[i]!r}"
        if pre is not None:
            line += f", before rounding {pre[i]!r}"
        lines.append(line)
    return f"{int(mask.sum())} of {mask.size} elements differ:\n" + "\n".join(lines)


def assert_same(got, want, src=None, pre=None, quantized=False, what="result"):
    """Floats: equal bits, NaN matching any NaN. Integers: equal, or (quantized)
    off by 1 where the value before rounding is within 1 f32 ulp of a .5 boundary."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                  want.shape, want.dtype)
    if want.dtype.kind in "iu":
        diff = got.astype(np.int64) - want.astype(np.int64)
        ok = diff == 0
        if quantized and pre is not None:
            p = np.asarray(pre, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                to_half = np.abs(np.abs(p - np.floor(p)) - 0.5)
                ulp = np.spacing(np.abs(p).astype(np.float32)).astype(np.float64)
                near = np.isfinite(p) & (to_half <= ulp)
            ok |= (np.abs(diff) == 1) & near
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        ok = (np.isnan(g) & np.isnan(w)) | (~np.isnan(w) & (_bits(got) == _bits(want)))
    if not ok.all():
        pytest.fail(f"{what}: " + _report(~ok, got, want, src, pre), pytrace=False)


def assert_bytes(got, want, what="bytes"):
    got, want = np.asarray(got, np.uint8), np.asarray(want, np.uint8)
    assert got.size == want.size, f"{what}: {got.size} bytes, want {want.size}"
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{what}: {bad.size} of {got.size} bytes differ, first at "
                           f"{bad[:8].tolist()}: got {got[bad[:8]].tolist()}, "
                           f"want {want[bad[:8]].tolist()}")


# -- running -------------------------------------------------------------------

def src_memory(engine, dims, dt, tag, values, lib_tag=None, pad_byte=0x5A):
    """A source Memory built from the reference's bytes; padding holds garbage."""
    md = cly.MemoryDesc(dims, dt, tag=lib_tag or tag)
    raw = raw_of(values, tag, dt, pad_byte)
    assert md.size == raw.size, f"{md!r}: size {md.size}, reference {raw.size}"
    return md, cly.Memory(md, engine, raw=raw)


def prefilled(md, engine, byte=0xAB):
    return cly.Memory(md, engine, raw=np.full(max(md.size, 1), byte, np.uint8))


def execute(engine, src_md, dst_md, src, dst, attr=None):
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    return r


FLOAT_SPECIALS = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, -3.5, 126.5, 127.5, 128.0,
    -127.5, -128.5, -129.0, 254.5, 255.5, 256.0, 257.0, -1.0, 2049.0, 2051.0, 65504.0,
    65519.0, 65520.0, -65536.0, 1e5, -1e5, 16777217.0, 2147483520.0, 2147483648.0,
    -2147483648.0, -2147483904.0, 3e9, -3e9, 3.4028235e38, -3.4028235e38, 1e-8, 2.0**-25,
    1e-40, 1 + 2.0**-8, 1 + 3 * 2.0**-8,
]
INT_SPECIALS = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 300, -300, 65504, 65520,
                2**24 + 1, -(2**24 + 3), 2147483520, 2147483584, 2**31 - 1, -2**31]


def sample_values(dt, shape, rng, specials=True):
    """Values of type dt: the specials first (those the type holds), then random ones."""
    count = math.prod(shape)
    if is_int(dt):
        lo, hi = INT_RANGE[dt]
        pool = [v for v in INT_SPECIALS if lo <= v <= hi] if specials else []
        rand = rng.integers(lo, hi, size=count, endpoint=True, dtype=np.int64)
        rand[: count // 3] = rng.integers(max(lo, -300), min(hi, 300), size=count // 3)
        values = np.concatenate([np.array(pool, np.int64), rand])[:count]
        return values.astype(NP[dt]).reshape(shape)
    pool = FLOAT_SPECIALS if specials else []
    rand = rng.normal(0, 1, count) * 10.0 ** rng.integers(0, 6, count)
    rand[::4] = rng.integers(-300, 300, rand[::4].size) + 0.5
    values = np.concatenate([np.array(pool, np.float64), rand])[:count]
    with np.errstate(all="ignore"):
        return values.astype(np.float32).astype(NP[dt]).reshape(shape)


def random_bits(dt, shape, rng):
    """Any bit pattern of dt: NaN payloads, denormals, infinities included."""
    size = np.dtype(NP[dt]).itemsize
    raw = rng.integers(0, 256, size=math.prod(shape) * size, dtype=np.uint8)
    return raw.view(NP[dt]).reshape(shape)


# =============================================================================
# The reference itself, against hand-computed values
# =============================================================================

def test_reference_layout_matches_hand_computed_offsets():
    # nChw16c, C = 17: (n, c, h, w) -> n*(2*16*2*3) + (c//16)*(16*2*3) + h*(3*16) + w*16 + c%16
    pos = element_positions((2, 17, 2, 3), "aBcd16b")
    for n, c, h, w in [(0, 0, 0, 0), (1, 16, 1, 2), (0, 15, 1, 0), (1, 3, 0, 1)]:
        assert pos[n, c, h, w] == n * 192 + (c // 16) * 96 + h * 48 + w * 16 + c % 16
    # OIhw4i16o4i (ABcd4b16a4b): i = 4*i1 + i0 -> ... + i1*64 + o*4 + i0
    pos = element_positions((16, 16, 1, 1), "ABcd4b16a4b")
    assert pos[5, 7, 0, 0] == (7 // 4) * 64 + 5 * 4 + 7 % 4
    assert physical_size((17, 20), "BA16a64b") == 32 * 64


def test_reference_rounding_matches_hand_computed_values():
    f = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4028235e38, np.nan, 257.0, -0.0], np.float32)
    got = round_float(f, "bf16").astype(np.float32)
    assert got[0] == 1.0 and got[1] == 1 + 2.0**-6 and got[2] == np.inf and np.isnan(got[3])
    assert got[4] == 256.0 and np.signbit(got[5])
    h = round_float(np.array([2049, 2051, 65519, 65520, 2.0**-25, 3e-8], np.float32), "f16")
    assert h.tolist() == [2048, 2052, 65504, np.inf, 0.0, 2.0**-24]
    assert to_int(np.array([2.5, -3.5, np.nan, 3e9], np.float32), "s32", np.float32).tolist() \
        == [2, -4, 0, S32_MAX_FROM_F32]


# =============================================================================
# Every type pair, plain and blocked
# =============================================================================

PAIR_DIMS = (2, 17, 3, 2)


def _blocked_layouts(sdt, ddt):
    """Half the pairs go plain -> blocked, the other half blocked -> plain."""
    if (CORE.index(sdt) + CORE.index(ddt)) % 2:
        return "aBcd8b", "acdb"
    return "abcd", "aBcd16b"


@pytest.mark.parametrize("blocked", [False, True], ids=["plain", "blocked"])
@pytest.mark.parametrize("ddt", CORE)
@pytest.mark.parametrize("sdt", CORE)
def test_every_type_pair(engine, sdt, ddt, blocked):
    stag, dtag = _blocked_layouts(sdt, ddt) if blocked else ("abcd", "abcd")
    values = sample_values(sdt, PAIR_DIMS, np.random.default_rng(1))
    src_md, src = src_memory(engine, PAIR_DIMS, sdt, stag, values)
    dst_md = cly.MemoryDesc(PAIR_DIMS, ddt, tag=dtag)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    raw = dst.raw()
    assert raw.size == physical_size(PAIR_DIMS, dtag) * np.dtype(NP[ddt]).itemsize
    assert_same(logical_of(raw, PAIR_DIMS, dtag, ddt), want, src=values)
    if sdt == ddt:  # a bit copy: NaN payloads included
        assert_bytes(raw, raw_of(values, dtag, ddt))
    # The padding is zeros, whatever the source's padding held.
    pad = ~to_physical(np.ones(PAIR_DIMS, bool), dtag, fill=False)
    assert not raw.reshape(pad.size, -1)[pad].any()


@pytest.mark.parametrize("sdt, ddt", [("f32", "s8"), ("bf16", "f16"), ("s32", "u8"),
                                      ("f16", "f16"), ("u8", "bf16")])
def test_blocked_to_same_blocked_layout_zeroes_padding(engine, sdt, ddt):
    # The source's padding is garbage; the destination's must come out as zeros.
    dims = (3, 21, 2, 2)
    values = sample_values(sdt, dims, np.random.default_rng(2))
    src_md, src = src_memory(engine, dims, sdt, "aBcd16b", values, pad_byte=0x7F)
    dst_md = cly.MemoryDesc(dims, ddt, tag="aBcd16b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    assert_same(logical_of(dst.raw(), dims, "aBcd16b", ddt), want, src=values)
    pad = ~to_physical(np.ones(dims, bool), "aBcd16b", fill=False)
    assert not dst.raw().reshape(pad.size, -1)[pad].any()


# =============================================================================
# Layouts: bit-exact, both directions, with tails
# =============================================================================

# (clayout's tag, the reference's canonical tag, dims for a given C)
LAYOUTS = {
    "abx": ("abc", lambda c: (2, c, 3)),
    "axb": ("acdeb", lambda c: (2, c, 2, 2, 3)),
    "aBx4b": ("aBcd4b", lambda c: (2, c, 3, 2)),
    "aBx8b": ("aBcd8b", lambda c: (2, c, 3, 2)),
    "aBx16b": ("aBcde16b", lambda c: (2, c, 2, 1, 3)),
    "ABx16a16b": ("ABcd16a16b", lambda c: (c, 20, 2, 3)),
    "ABcd4b16a4b": ("ABcd4b16a4b", lambda c: (c, 21, 2, 2)),
    "gOIhw16i16o": ("aBCde16c16b", lambda c: (2, c, 19, 3, 1)),
    "BA16a64b": ("BA16a64b", lambda c: (c, 70)),
}


def plain_tag(ndims):
    return LETTERS[:ndims]


@pytest.mark.parametrize("c", [17, 40, 63])
@pytest.mark.parametrize("direction", ["to_plain", "from_plain"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_round_trip_is_bit_exact(engine, layout, direction, c):
    ref_tag, make_dims = LAYOUTS[layout]
    dims = make_dims(c)
    plain = plain_tag(len(dims))
    values = random_bits("f32", dims, np.random.default_rng(c))
    if direction == "to_plain":
        (s_tag, s_lib), (d_tag, d_lib) = (ref_tag, layout), (plain, plain)
    else:
        (s_tag, s_lib), (d_tag, d_lib) = (plain, plain), (ref_tag, layout)
    src_md, src = src_memory(engine, dims, "f32", s_tag, values, lib_tag=s_lib)
    dst_md = cly.MemoryDesc(dims, "f32", tag=d_lib)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    # Every byte: the elements bit for bit (NaN payloads too) and zero padding.
    assert_bytes(dst.raw(), raw_of(values, d_tag, "f32"), f"{src_md!r} -> {dst_md!r}")


BLOCKED_PAIRS = [
    ("aBcd8b", "aBcd16b", (2, 20, 3, 2)),
    ("ABcd4b16a4b", "ABcd16a16b", (18, 37, 2, 1)),
    ("ABcd16a16b", "BAcd16a16b", (33, 17, 1, 2)),
    ("BA16a64b", "AB16b64a", (17, 65)),
    ("acdb", "aBcd4b", (1, 7, 5, 3)),
]


@pytest.mark.parametrize("s_tag, d_tag, dims", BLOCKED_PAIRS)
def test_blocked_to_blocked_is_bit_exact(engine, s_tag, d_tag, dims):
    values = random_bits("s32", dims, np.random.default_rng(3))
    src_md, src = src_memory(engine, dims, "s32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "s32", tag=d_tag)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_bytes(dst.raw(), raw_of(values, d_tag, "s32"))


@pytest.mark.parametrize("dt", ["f16", "bf16", "f64", "s8"])
def test_same_type_layout_change_copies_bits(engine, dt):
    # NaN payloads (signalling ones too), denormals, all of f64.
    dims = (3, 9, 2, 2)
    values = random_bits(dt, dims, np.random.default_rng(4))
    flat = values.reshape(-1)
    if dt in ("f16", "bf16"):
        flat.view(np.uint16)[:4] = [0x7C01, 0xFE01, 0x7F81, 0x0001]
    src_md, src = src_memory(engine, dims, dt, "abcd", values)
    dst_md = cly.MemoryDesc(dims, dt, tag="aBcd8b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_bytes(dst.raw(), raw_of(values, "aBcd8b", dt))


def test_same_layout_same_type_copies_bits(engine):
    dims = (4, 33)
    values = random_bits("f32", dims, np.random.default_rng(5))
    src_md, src = src_memory(engine, dims, "f32", "ab", values)
    dst = prefilled(src_md, engine)
    execute(engine, src_md, src_md, src, dst)
    assert_bytes(dst.raw(), values.view(np.uint8).reshape(-1))


# =============================================================================
# Strided and submemory destinations (and sources)
# =============================================================================

@pytest.mark.parametrize("sdt, ddt, s_tag, strides", [
    ("f32", "f32", "abc", (40, 7, 1)),
    ("f32", "f32", "aBc8b", (2, 30, 300)),       # dims reversed in memory, with gaps
    ("s8", "f32", "acb", (50, 9, 2)),
    ("f32", "u8", "abc", (1, 4, 25)),
])
def test_strided_destination_leaves_gaps_alone(engine, sdt, ddt, s_tag, strides):
    dims = (3, 5, 4)
    values = sample_values(sdt, dims, np.random.default_rng(6))
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, strides=strides)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    pos = strided_positions(dims, strides)
    item = np.dtype(NP[ddt]).itemsize
    expect = np.full(dst_md.size, 0xAB, np.uint8)
    expect.view(NP[ddt])[pos] = want
    raw = dst.raw()
    assert raw.size == expect.size
    touched = np.zeros(expect.size, bool)
    touched.reshape(-1, item)[pos.reshape(-1)] = True
    assert_bytes(raw[~touched], expect[~touched], "gap bytes")
    assert_same(raw.view(NP[ddt])[pos], want, src=values)


@pytest.mark.parametrize("sdt, ddt", [("f32", "f32"), ("u8", "bf16")])
def test_strided_source_with_gaps(engine, sdt, ddt):
    dims, strides = (3, 5, 4), (3, 40, 9)
    values = sample_values(sdt, dims, np.random.default_rng(22))
    src_md = cly.MemoryDesc(dims, sdt, strides=strides)
    raw = np.full(src_md.size, 0x7F, np.uint8)  # the gaps hold garbage
    raw.view(NP[sdt])[strided_positions(dims, strides)] = values
    src = cly.Memory(src_md, engine, raw=raw)
    dst_md = cly.MemoryDesc(dims, ddt, tag="aBc4b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    assert_same(logical_of(dst.raw(), dims, "aBc4b", ddt), want, src=values)
    pad = ~to_physical(np.ones(dims, bool), "aBc4b", fill=False)
    assert not dst.raw().reshape(pad.size, -1)[pad].any()


SUBMEMORIES = [
    # parent reference tag, parent dims, sub dims, offsets
    ("abcd", (4, 10, 3, 3), (4, 4, 3, 3), (0, 3, 0, 0)),
    ("abcd", (5, 6, 4, 3), (2, 3, 2, 3), (1, 2, 1, 0)),
    ("acdb", (2, 12, 3, 4), (2, 5, 2, 2), (0, 6, 1, 1)),
    ("aBcd8b", (2, 24, 3, 2), (2, 8, 3, 2), (0, 8, 0, 0)),
    ("aBcd8b", (2, 24, 3, 2), (1, 16, 2, 1), (1, 0, 1, 1)),
]


@pytest.mark.parametrize("ddt", ["f32", "s8"])
@pytest.mark.parametrize("p_tag, p_dims, sub_dims, offsets", SUBMEMORIES)
def test_submemory_destination_leaves_parent_alone(engine, p_tag, p_dims, sub_dims, offsets,
                                                   ddt):
    values = sample_values("f32", sub_dims, np.random.default_rng(7))
    src_md, src = src_memory(engine, sub_dims, "f32", "abcd", values)
    parent_md = cly.MemoryDesc(p_dims, ddt, tag=p_tag)
    parent = prefilled(parent_md, engine)
    sub_md = parent_md.submemory(sub_dims, offsets)
    dst = cly.Memory(sub_md, engine, buffer=parent)
    execute(engine, src_md, sub_md, src, dst)
    want, _ = ref_reorder(values, "f32", ddt)
    pos = element_positions(p_dims, p_tag)[tuple(slice(o, o + n) for o, n in
                                                 zip(offsets, sub_dims))]
    raw = parent.raw()
    item = np.dtype(NP[ddt]).itemsize
    touched = np.zeros(raw.size, bool)
    touched.reshape(-1, item)[pos.reshape(-1)] = True
    assert_bytes(raw[~touched], np.full(raw.size, 0xAB, np.uint8)[~touched], "parent bytes")
    assert_same(raw.view(NP[ddt])[pos], want, src=values)


def test_submemory_destination_reaching_the_padded_end(engine):
    # The sub's own padding (channels 20..23 of the last block) is the
    # destination's padded area: zeros. Every other parent byte is untouched.
    p_dims, sub_dims, offsets = (2, 20, 3, 2), (2, 4, 3, 2), (0, 16, 0, 0)
    values = sample_values("f32", sub_dims, np.random.default_rng(8))
    src_md, src = src_memory(engine, sub_dims, "f32", "abcd", values)
    parent_md = cly.MemoryDesc(p_dims, "f32", tag="aBcd8b")
    parent = prefilled(parent_md, engine)
    sub_md = parent_md.submemory(sub_dims, offsets)
    execute(engine, src_md, sub_md, src, cly.Memory(sub_md, engine, buffer=parent))
    padded_pos = element_positions((2, 24, 3, 2), "aBcd8b")
    sub_pos = padded_pos[:, 16:20]
    pad_pos = padded_pos[:, 20:24]
    expect = np.full(parent_md.size, 0xAB, np.uint8)
    expect.view(np.float32)[sub_pos] = values
    expect.view(np.float32)[pad_pos] = 0
    assert_bytes(parent.raw(), expect)


def test_submemory_source(engine):
    p_dims = (3, 16, 4, 2)
    values = sample_values("s8", p_dims, np.random.default_rng(9))
    parent_md, parent = src_memory(engine, p_dims, "s8", "aBcd8b", values)
    sub_md = parent_md.submemory((2, 8, 3, 2), (1, 8, 1, 0))
    src = cly.Memory(sub_md, engine, buffer=parent)
    dst_md = cly.MemoryDesc((2, 8, 3, 2), "f32", tag="acdb")
    dst = prefilled(dst_md, engine)
    execute(engine, sub_md, dst_md, src, dst)
    want, _ = ref_reorder(values[1:3, 8:16, 1:4, 0:2], "s8", "f32")
    assert_bytes(dst.raw(), raw_of(want, "acdb", "f32"))


# =============================================================================
# Scales, zero points, sum
# =============================================================================

ATTR_DIMS = (2, 3, 4, 5)  # distinct sizes: a wrong slice index shows


def masked_values(mask, rng, kind):
    count = math.prod(ATTR_DIMS[d] for d in range(4) if mask >> d & 1)
    if kind == "scale":
        return rng.uniform(0.05, 3.0, count).astype(np.float32)
    return rng.integers(-20, 20, count).astype(np.int32)


def attr_case(engine, sdt, ddt, s_tag, d_tag, rng, *, src_scale=None, dst_scale=None,
              src_zp=None, dst_zp=None, beta=None):
    """Run one reorder with attributes given as (values, mask) and check it."""
    values = sample_values(sdt, ATTR_DIMS, rng, specials=False)
    if not is_int(sdt):
        with np.errstate(all="ignore"):
            specials = np.array(FLOAT_SPECIALS, np.float32).astype(NP[sdt])
        values.reshape(-1)[:specials.size] = specials
    src_md, src = src_memory(engine, ATTR_DIMS, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(ATTR_DIMS, ddt, tag=d_tag)
    old = sample_values(ddt, ATTR_DIMS, rng, specials=False)
    if not is_int(ddt):
        old = (rng.normal(0, 50, ATTR_DIMS)).astype(NP[ddt])
    dst = cly.Memory(dst_md, engine, raw=raw_of(old, d_tag, ddt, pad_byte=0x7F))
    kw, ref = {}, {}
    for name, given_, cls in (("src_scales", src_scale, cly.Scales),
                              ("dst_scales", dst_scale, cly.Scales),
                              ("src_zero_point", src_zp, cly.ZeroPoints),
                              ("dst_zero_point", dst_zp, cly.ZeroPoints)):
        if given_ is not None:
            vals, mask = given_
            kw[name] = cls(vals, mask=mask)
            ref[name] = per_slice(vals, mask, ATTR_DIMS)
    attr = cly.Attr(sum_beta=beta, **kw)
    r = execute(engine, src_md, dst_md, src, dst, attr=attr)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=ref.get("src_scales"),
                            dst_scale=ref.get("dst_scales"), src_zp=ref.get("src_zero_point"),
                            dst_zp=ref.get("dst_zero_point"), beta=beta,
                            old=old if beta is not None else None)
    raw = dst.raw()
    assert_same(logical_of(raw, ATTR_DIMS, d_tag, ddt), want, src=values, pre=pre,
                quantized=is_int(ddt))
    pad = ~to_physical(np.ones(ATTR_DIMS, bool), d_tag, fill=False)
    assert not raw.reshape(pad.size, -1)[pad].any(), "padding not zero"
    return r


MASKS = [0b0001, 0b0010, 0b0100, 0b1000, 0b0110, 0b1001]


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"mask{m:04b}")
@pytest.mark.parametrize("side", ["src", "dst"])
@pytest.mark.parametrize("sdt, ddt, s_tag, d_tag", [
    ("f32", "s8", "abcd", "acdb"),
    ("s8", "f32", "acdb", "aBcd4b"),
])
def test_scale_masks(engine, sdt, ddt, s_tag, d_tag, side, mask):
    rng = np.random.default_rng(mask * 2 + (side == "dst"))
    scale = (masked_values(mask, rng, "scale"), mask)
    attr_case(engine, sdt, ddt, s_tag, d_tag, rng,
              **({"src_scale": scale} if side == "src" else {"dst_scale": scale}))


@pytest.mark.parametrize("sdt, ddt, kind", [
    ("f32", "u8", "both_scales"), ("f32", "s8", "both_scales"),
    ("u8", "s32", "src_zp_common"), ("s8", "f32", "src_zp_per_dim"),
    ("f32", "u8", "dst_zp_per_dim"), ("f32", "s8", "all"), ("u8", "s8", "zp_both_per_dim"),
    ("f16", "u8", "dst_zp_common"), ("s8", "bf16", "src_zp_common"),
    ("s32", "s32", "both_scales"), ("s8", "s8", "zp_both_per_dim"),
])
def test_scales_and_zero_points(engine, sdt, ddt, kind):
    rng = np.random.default_rng(len(kind) + len(sdt + ddt))
    cases = {
        "both_scales": dict(src_scale=(masked_values(0b0010, rng, "scale"), 0b0010),
                            dst_scale=(masked_values(0b1000, rng, "scale"), 0b1000)),
        "src_zp_common": dict(src_zp=(np.array([128]), 0),
                              src_scale=(np.array([0.37], np.float32), 0)),
        "src_zp_per_dim": dict(src_zp=(masked_values(0b1000, rng, "zp"), 0b1000)),
        "dst_zp_per_dim": dict(dst_zp=(masked_values(0b0010, rng, "zp") + 100, 0b0010),
                               dst_scale=(np.array([0.7], np.float32), 0)),
        "all": dict(src_scale=(masked_values(0b0110, rng, "scale"), 0b0110),
                    dst_scale=(masked_values(0b0001, rng, "scale"), 0b0001),
                    dst_zp=(np.array([-7]), 0)),
        "zp_both_per_dim": dict(src_zp=(masked_values(0b0100, rng, "zp"), 0b0100),
                                dst_zp=(masked_values(0b0011, rng, "zp"), 0b0011)),
        "dst_zp_common": dict(dst_zp=(np.array([3]), 0)),
    }
    attr_case(engine, sdt, ddt, "abcd", "aBcd4b", rng, **cases[kind])


@pytest.mark.parametrize("sdt, ddt, with_zp", [
    ("f32", "s8", False), ("f32", "s8", True), ("f32", "f32", False), ("s8", "u8", True),
    ("u8", "s32", False), ("s8", "f16", False), ("f32", "bf16", False),
])
def test_sum(engine, sdt, ddt, with_zp):
    rng = np.random.default_rng(11)
    kw = dict(src_scale=(masked_values(0b0010, rng, "scale"), 0b0010))
    if with_zp:
        kw["dst_zp"] = (masked_values(0b0010, rng, "zp"), 0b0010)
    attr_case(engine, sdt, ddt, "acdb", "aBcd4b", rng, beta=0.5, **kw)


def test_sum_with_every_attribute_on_a_strided_destination(engine):
    # Old values are read from (and results written to) the strided positions only.
    dims, strides = (2, 3, 4), (50, 13, 3)
    rng = np.random.default_rng(12)
    values = sample_values("f32", dims, rng, specials=False)
    src_md, src = src_memory(engine, dims, "f32", "abc", values)
    dst_md = cly.MemoryDesc(dims, "u8", strides=strides)
    pos = strided_positions(dims, strides)
    raw = np.full(dst_md.size, 0xAB, np.uint8)
    old = rng.integers(0, 256, dims).astype(np.uint8)
    raw[pos] = old
    dst = cly.Memory(dst_md, engine, raw=raw)
    sc = rng.uniform(0.5, 2, 3).astype(np.float32)
    attr = cly.Attr(src_scales=cly.Scales(sc, mask=0b010), dst_scales=1.5, src_zero_point=None,
                    dst_zero_point=cly.ZeroPoints([5, 9], mask=0b001), sum_beta=0.5)
    execute(engine, src_md, dst_md, src, dst, attr=attr)
    want, pre = ref_reorder(values, "f32", "u8", src_scale=per_slice(sc, 0b010, dims),
                            dst_scale=np.float32(1.5), dst_zp=per_slice([5, 9], 0b001, dims),
                            beta=0.5, old=old)
    got = dst.raw()
    assert_same(got[pos], want, src=values, pre=pre, quantized=True)
    raw[pos] = 0xAB
    got[pos] = 0xAB
    assert_bytes(got, raw, "gap bytes")


def test_scales_on_f64(engine):
    rng = np.random.default_rng(13)
    attr_case(engine, "f64", "s32", "abcd", "acdb", rng,
              src_scale=(masked_values(0b0100, rng, "scale"), 0b0100))
    attr_case(engine, "s8", "f64", "abcd", "acdb", rng, src_zp=(np.array([-3]), 0),
              dst_scale=(np.array([0.3], np.float32), 0), beta=0.5)


def test_f64_sum_agrees_between_host_and_opencl(host_engine, cl_engine):
    # beta = 0.1 is not an f32: it is applied as the f32 nearest 0.1, on both paths.
    dims = (3, 7)
    values = np.random.default_rng(14).normal(0, 10, dims)
    old = np.random.default_rng(15).normal(0, 10, dims)
    want, _ = ref_reorder(values, "f64", "f64", beta=0.1, old=old)
    outs = []
    for eng in (host_engine, cl_engine):
        src_md, src = src_memory(eng, dims, "f64", "ab", values)
        dst_md = cly.MemoryDesc(dims, "f64", tag="ba")
        dst = cly.Memory(dst_md, eng, raw=raw_of(old, "ba", "f64"))
        execute(eng, src_md, dst_md, src, dst, attr=cly.Attr(sum_beta=0.1))
        outs.append(dst.raw())
        assert_same(logical_of(outs[-1], dims, "ba", "f64"), want, what=repr(eng))
    assert_bytes(outs[1], outs[0], "opencl vs host")


def test_new_attribute_values_with_the_same_masks(engine):
    # Kernels are keyed by masks, not values: new values must take effect.
    rng = np.random.default_rng(16)
    for scale, zp in ((2.0, 1), (0.25, -9), (3.0, 4)):
        attr_case(engine, "f32", "s8", "abcd", "acdb", rng,
                  src_scale=(np.array([scale], np.float32), 0), dst_zp=(np.array([zp]), 0))


# =============================================================================
# Special values: NaN, infinities, saturation, .5 boundaries, exactness
# =============================================================================

CONVERSIONS = [
    ("f32", "s8", [np.nan, np.inf, -np.inf, 2.5, -3.5, 126.5, 127.5, -128.5, -127.5, 0.5, -0.5,
                   1.5, 1000.0, -1000.0],
     [0, 127, -128, 2, -4, 126, 127, -128, -128, 0, 0, 2, 127, -128]),
    ("f32", "u8", [np.nan, np.inf, -np.inf, 255.5, 254.5, -0.5, 0.5, 1.5, -124.0, 300.0, 2.5],
     [0, 255, 0, 255, 254, 0, 0, 2, 0, 255, 2]),
    ("f32", "s32", [np.nan, np.inf, -np.inf, 2147483520.0, 2147483648.0, 3e9, -2147483648.0,
                    -3e9, 16777217.0, 2.5, -2.5, -7.5],
     [0, S32_MAX_FROM_F32, -2**31, S32_MAX_FROM_F32, S32_MAX_FROM_F32, S32_MAX_FROM_F32,
      -2**31, -2**31, 16777216, 2, -2, -8]),
    ("f16", "s8", [np.nan, np.inf, -np.inf, 127.5, -128.5, 2.5, 3.5, 65504.0],
     [0, 127, -128, 127, -128, 2, 4, 127]),
    ("bf16", "u8", [np.nan, -np.inf, 255.0, 126.5, 127.5, -1.0, 1e30],
     [0, 0, 255, 126, 128, 0, 255]),
    ("f32", "f16", [2049.0, 2051.0, 65519.0, 65520.0, -65520.0, np.nan, 1e-8, 2.0**-25, 3e-8],
     [2048.0, 2052.0, 65504.0, np.inf, -np.inf, np.nan, 0.0, 0.0, 2.0**-24]),
    ("f32", "bf16", [1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4028235e38, -3.4028235e38, np.nan, 257.0,
                     259.0],
     [1.0, 1 + 2.0**-6, np.inf, -np.inf, np.nan, 256.0, 260.0]),
    ("f16", "bf16", [np.nan, np.inf, 65504.0, 257.0], [np.nan, np.inf, 65536.0, 256.0]),
    ("bf16", "f16", [np.nan, -np.inf, 1e30, 65536.0, 3.0], [np.nan, -np.inf, np.inf, np.inf, 3.0]),
    ("s32", "f32", [16777217, 2**31 - 1, -2**31, -16777219], [16777216.0, 2.0**31, -2.0**31,
                                                                -16777220.0]),
    ("s32", "f16", [65504, 65520, 2**31 - 1, -70000], [65504.0, np.inf, np.inf, -np.inf]),
    ("s32", "bf16", [16777217, 2**31 - 1, 257, 259], [16777216.0, 2.0**31, 256.0, 260.0]),
    ("s32", "s8", [2**31 - 1, -2**31, 300, -300, 16777217, 5], [127, -128, 127, -128, 127, 5]),
    ("s32", "u8", [2**31 - 1, -2**31, 256, -1, 16777217, 255], [255, 0, 255, 0, 255, 255]),
    ("u8", "s8", [200, 255, 0, 127, 128], [127, 127, 0, 127, 127]),
    ("s8", "u8", [-1, -128, 127, 0], [0, 0, 127, 0]),
    ("s8", "s32", [-128, 127, -1], [-128, 127, -1]),
    ("u8", "f16", [255, 0, 1], [255.0, 0.0, 1.0]),
    ("f64", "s32", [2147483647.0, 3e9, -3e9, np.nan, 2.5, 2147483646.5],
     [2**31 - 1, 2**31 - 1, -2**31, 0, 2, 2147483646]),
    ("f64", "bf16", [1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-8, np.nan, 1e300],
     [1 + 2.0**-7, 1.0, np.nan, np.inf]),
    ("f64", "f32", [1 + 2.0**-24 + 2.0**-40, 1e300, -1e300, 1e-300],
     [1 + 2.0**-23, np.inf, -np.inf, 0.0]),
    ("f64", "f16", [65519.99, 65520.0, 2049.0000001], [65504.0, np.inf, 2050.0]),
    ("s32", "f64", [2**31 - 1, 16777217], [2147483647.0, 16777217.0]),
]


@pytest.mark.parametrize("sdt, ddt, values, expected", CONVERSIONS,
                         ids=[f"{c[0]}->{c[1]}" for c in CONVERSIONS])
def test_conversion_of_special_values(engine, sdt, ddt, values, expected):
    # Two rows, the second reversed, so that the values meet different lanes.
    with np.errstate(all="ignore"):
        src_values = np.array([values, values[::-1]], dtype=object).astype(NP[sdt])
        want = np.array([expected, expected[::-1]], dtype=object).astype(NP[ddt])
    assert_same(ref_reorder(src_values, sdt, ddt)[0], want, what="the reference itself")
    dims = src_values.shape
    src_md, src = src_memory(engine, dims, sdt, "ab", src_values)
    dst_md = cly.MemoryDesc(dims, ddt, tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_same(logical_of(dst.raw(), dims, "ba", ddt), want, src=src_values)


def test_s32_beyond_2_24_is_copied_exactly(engine):
    values = np.array([[16777217, 2**31 - 1, -2**31, 2147483583, -16777219, 123456789]], np.int32)
    values = np.repeat(values, 3, axis=0)
    src_md, src = src_memory(engine, values.shape, "s32", "ab", values)
    for tag in ("ba", "ab"):
        dst_md = cly.MemoryDesc(values.shape, "s32", tag=tag)
        dst = prefilled(dst_md, engine)
        execute(engine, src_md, dst_md, src, dst)
        assert_bytes(dst.raw(), raw_of(values, tag, "s32"))
    # An empty Attr is no attribute at all: still a copy.
    dst_md = cly.MemoryDesc(values.shape, "s32", tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=cly.Attr())
    assert_bytes(dst.raw(), raw_of(values, "ba", "s32"))


def test_s32_bound_holds_with_scales(engine):
    values = np.array([[2147483520.0, 2147483648.0, np.inf, -np.inf, np.nan, -2147483648.0]],
                      np.float32)
    src_md, src = src_memory(engine, values.shape, "f32", "ab", values)
    dst_md = cly.MemoryDesc(values.shape, "s32", tag="ba")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=1.0, dst_scales=0.5))
    want = [[S32_MAX_FROM_F32] * 3 + [-2**31, 0, -2**31]]
    assert_same(logical_of(dst.raw(), values.shape, "ba", "s32"), np.array(want, np.int32))


def test_nan_survives_scaling_into_floats(engine):
    values = np.array([[np.nan, np.inf, -np.inf, 1.0, 65504.0, -0.0]], np.float32)
    for ddt, want in (("f16", [np.nan, np.inf, -np.inf, 2.0, np.inf, -0.0]),
                      ("bf16", [np.nan, np.inf, -np.inf, 2.0, 131072.0, -0.0])):
        src_md, src = src_memory(engine, values.shape, "f32", "ab", values)
        dst_md = cly.MemoryDesc(values.shape, ddt, tag="ab")
        dst = prefilled(dst_md, engine)
        execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=2.0))
        assert_same(logical_of(dst.raw(), values.shape, "ab", ddt),
                    np.array([want], np.float32).astype(NP[ddt]))


# =============================================================================
# Many dims (host path), zero-size dims
# =============================================================================

@pytest.mark.parametrize("dims, s_tag, d_tag", [
    ((2, 1, 3, 1, 2, 2, 3), "abcdefg", "gfedcba"),
    ((2, 5, 1, 2, 1, 3, 2), "abcdefg", "aBcdefg4b"),
    ((2, 2, 1, 2, 1, 3, 2, 2), "hgfedcba", "acegbdfh"),
    ((1, 2, 3, 1, 2, 1, 2, 9), "abcdefgh", "abcdefgH8h"),
])
def test_seven_and_eight_dims_run_on_the_host(engine, dims, s_tag, d_tag):
    values = random_bits("f32", dims, np.random.default_rng(17))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "f32", tag=d_tag)
    dst = prefilled(dst_md, engine)
    r = execute(engine, src_md, dst_md, src, dst)
    assert r.impl.startswith("host"), r.impl
    assert_bytes(dst.raw(), raw_of(values, d_tag, "f32"))
    # With a conversion and per-slice scales on the last dim.
    values = sample_values("f32", dims, np.random.default_rng(18))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "s8", tag=d_tag)
    dst = prefilled(dst_md, engine)
    mask = 1 << (len(dims) - 1)
    sc = np.linspace(0.3, 2.7, dims[-1]).astype(np.float32)
    r = execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=cly.Scales(sc, mask)))
    assert r.impl.startswith("host"), r.impl
    want, pre = ref_reorder(values, "f32", "s8", src_scale=per_slice(sc, mask, dims))
    assert_same(logical_of(dst.raw(), dims, d_tag, "s8"), want, src=values, pre=pre,
                quantized=True)


def test_seven_dim_submemory_destination_with_sum(engine):
    p_dims, sub_dims, offsets = (2, 3, 1, 4, 2, 1, 5), (1, 2, 1, 3, 2, 1, 2), (1, 1, 0, 1, 0, 0, 2)
    rng = np.random.default_rng(24)
    values = sample_values("s8", sub_dims, rng)
    src_md, src = src_memory(engine, sub_dims, "s8", "gfedcba", values)
    parent_md = cly.MemoryDesc(p_dims, "f32", tag="abcdefg")
    parent_raw = np.full(parent_md.size, 0xAB, np.uint8)
    pos = element_positions(p_dims, "abcdefg")[tuple(slice(o, o + n) for o, n in
                                                      zip(offsets, sub_dims))]
    old = rng.normal(0, 20, sub_dims).astype(np.float32)
    parent_raw.view(np.float32)[pos] = old
    parent = cly.Memory(parent_md, engine, raw=parent_raw)
    sub_md = parent_md.submemory(sub_dims, offsets)
    r = execute(engine, src_md, sub_md, src, cly.Memory(sub_md, engine, buffer=parent),
                attr=cly.Attr(src_zero_point=-3, dst_scales=0.75, sum_beta=0.5))
    assert r.impl.startswith("host"), r.impl
    want, _ = ref_reorder(values, "s8", "f32", src_zp=np.int32(-3), dst_scale=np.float32(0.75),
                          beta=0.5, old=old)
    expect = parent_raw.copy()
    expect.view(np.float32)[pos] = want
    assert_bytes(parent.raw(), expect)


@pytest.mark.parametrize("attr", [None, cly.Attr(src_scales=2.0, sum_beta=0.5)],
                         ids=["plain", "attr"])
@pytest.mark.parametrize("dims, s_tag, d_tag, ddt", [
    ((2, 0, 3, 4), "abcd", "aBcd16b", "s8"),
    ((0, 5), "ab", "ba", "f32"),
    ((3, 0), "ab", "ab", "f32"),
    ((0, 2, 1, 1, 1, 1, 2), "abcdefg", "gfedcba", "f16"),
])
def test_zero_size_dims_are_a_no_op(engine, dims, s_tag, d_tag, ddt, attr):
    src_md = cly.MemoryDesc(dims, "f32", tag=s_tag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    src = cly.Memory(src_md, engine)
    dst = cly.Memory(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=attr)
    assert dst.to_numpy().shape == dims
    cly.reorder(src, dst, attr=attr)


# =============================================================================
# Errors
# =============================================================================

def _raises(fn, *needles):
    with pytest.raises(cly.InvalidArgumentError) as info:
        fn()
    assert isinstance(info.value, ValueError)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {str(info.value)!r}"


def test_error_dims_mismatch(engine):
    a = cly.MemoryDesc((2, 3, 4), "f32")
    b = cly.MemoryDesc((2, 4, 3), "f32")
    _raises(lambda: cly.Reorder(a, b, engine=engine), "(2, 3, 4)", "(2, 4, 3)")


def test_error_scales_mask_beyond_ndims(engine):
    md = cly.MemoryDesc(ATTR_DIMS, "f32")
    dst = cly.MemoryDesc(ATTR_DIMS, "s8")
    attr = cly.Attr(src_scales=cly.Scales(np.ones(4, np.float32), mask=0b10000))
    _raises(lambda: cly.Reorder(md, dst, engine=engine, attr=attr), "0b10000")
    attr = cly.Attr(dst_zero_point=cly.ZeroPoints([1, 2], mask=0b100000))
    _raises(lambda: cly.Reorder(md, dst, engine=engine, attr=attr), "0b100000")


def test_error_wrong_count_of_scale_values(engine):
    md = cly.MemoryDesc(ATTR_DIMS, "f32")
    dst = cly.MemoryDesc(ATTR_DIMS, "s8")
    attr = cly.Attr(dst_scales=cly.Scales(np.ones(7, np.float32), mask=0b0110))
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Reorder(md, dst, engine=engine, attr=attr)
    message = str(info.value)
    assert re.search(r"\b7\b", message) and re.search(r"\b12\b", message), message
    attr = cly.Attr(src_zero_point=cly.ZeroPoints([1, 2, 3], mask=0b0001))
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Reorder(cly.MemoryDesc(ATTR_DIMS, "s8"), dst, engine=engine, attr=attr)
    assert re.search(r"\b3\b", str(info.value)) and re.search(r"\b2\b", str(info.value))


@pytest.mark.parametrize("sdt, ddt, which", [("f32", "s8", "src"), ("s8", "f16", "dst"),
                                             ("bf16", "u8", "src"), ("u8", "f32", "dst")])
def test_error_zero_point_on_a_float_type(engine, sdt, ddt, which):
    a = cly.MemoryDesc(ATTR_DIMS, sdt)
    b = cly.MemoryDesc(ATTR_DIMS, ddt)
    attr = cly.Attr(**{f"{which}_zero_point": 3})
    _raises(lambda: cly.Reorder(a, b, engine=engine, attr=attr), sdt if which == "src" else ddt)


def test_error_memory_not_matching_the_primitive(engine):
    a = cly.MemoryDesc(ATTR_DIMS, "f32", tag="abcd")
    b = cly.MemoryDesc(ATTR_DIMS, "s8", tag="acdb")
    wrong_dst = cly.MemoryDesc(ATTR_DIMS, "s8", tag="abcd")
    wrong_src = cly.MemoryDesc(ATTR_DIMS, "f16", tag="abcd")
    r = cly.Reorder(a, b, engine=engine)
    s = cly.Stream(engine)
    src, dst = cly.Memory(a, engine), cly.Memory(b, engine)
    _raises(lambda: r.execute(s, src, cly.Memory(wrong_dst, engine)), repr(wrong_dst))
    _raises(lambda: r.execute(s, cly.Memory(wrong_src, engine), dst), repr(wrong_src))
    r.execute(s, src, dst)  # the right ones still work
    s.wait()


def test_error_memory_on_another_engine(host_engine, cl_engine):
    md = cly.MemoryDesc((2, 3), "f32")
    r = cly.Reorder(md, md, engine=cl_engine)
    on_host = cly.Memory(md, host_engine)
    _raises(lambda: r.execute(cly.Stream(cl_engine), on_host, cly.Memory(md, cl_engine)),
            repr(host_engine))
    with pytest.raises(cly.UnimplementedError, match="across engines"):
        cly.reorder(on_host, cly.Memory(md, cl_engine))


# =============================================================================
# Destination of format "any"
# =============================================================================

@pytest.mark.parametrize("s_tag", ["aBcd16b", "acdb", "ABcd4b16a4b"])
def test_any_destination_takes_the_source_layout(engine, s_tag):
    dims = (17, 19, 2, 3)
    values = sample_values("f32", dims, np.random.default_rng(19))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    r = cly.Reorder(src_md, cly.MemoryDesc(dims, "s8", tag="any"), engine=engine)
    assert r.dst_md == cly.MemoryDesc(dims, "s8", tag=s_tag)
    assert r.dst_md.format_kind == "blocked"
    dst = prefilled(r.dst_md, engine)
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    want, _ = ref_reorder(values, "f32", "s8")
    assert_bytes(dst.raw(), raw_of(want, s_tag, "s8"))


# =============================================================================
# Execution: one-call form, reuse, kernel cache
# =============================================================================

def test_one_call_form_and_reuse(engine):
    dims = (3, 10, 2, 2)
    rng = np.random.default_rng(20)
    src_md = cly.MemoryDesc(dims, "bf16", tag="abcd")
    dst_md = cly.MemoryDesc(dims, "u8", tag="aBcd8b")
    attr = cly.Attr(src_scales=cly.Scales(rng.uniform(0.5, 2, 10).astype(np.float32), 0b10),
                    dst_zero_point=7)
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    s = cly.Stream(engine)
    for seed in range(2):  # one primitive, two pairs of memories
        values = sample_values("bf16", dims, np.random.default_rng(seed + 30))
        _, src = src_memory(engine, dims, "bf16", "abcd", values)
        dst, dst2 = prefilled(dst_md, engine), prefilled(dst_md, engine)
        r.execute(s, src, dst)
        s.wait()
        cly.reorder(src, dst2, attr=attr)
        want, pre = ref_reorder(values, "bf16", "u8", src_scale=per_slice(
            attr.src_scales.values, 0b10, dims), dst_zp=np.int32(7))
        for mem in (dst, dst2):
            assert_same(logical_of(mem.raw(), dims, "aBcd8b", "u8"), want, src=values, pre=pre,
                        quantized=True)


def test_chained_reorders_on_one_stream(engine):
    # f32 -> bf16 (blocked) -> f32, enqueued back to back, the second waiting on the first.
    dims = (2, 11, 3, 2)
    values = sample_values("f32", dims, np.random.default_rng(23))
    a_md, a = src_memory(engine, dims, "f32", "abcd", values)
    b_md = cly.MemoryDesc(dims, "bf16", tag="aBcd8b")
    c_md = cly.MemoryDesc(dims, "f32", tag="acdb")
    b, c = prefilled(b_md, engine), prefilled(c_md, engine)
    s = cly.Stream(engine)
    ev = cly.Reorder(a_md, b_md, engine=engine).execute(s, a, b)
    cly.Reorder(b_md, c_md, engine=engine).execute(s, b, c, wait_for=[ev] if ev else None)
    s.wait()
    want = round_float(values, "bf16").astype(np.float32)
    assert_same(logical_of(c.raw(), dims, "acdb", "f32"), want, src=values)


def test_second_reorder_builds_nothing(cl_engine):
    b = cly.kernel_cache
    dims = (9, 5, 7, 11)  # no other test uses these dims

    def run_once(scale):
        src_md = cly.MemoryDesc(dims, "f32", tag="abcd")
        dst_md = cly.MemoryDesc(dims, "s8", tag="aBcd8b")
        values = sample_values("f32", dims, np.random.default_rng(21))
        _, src = src_memory(cl_engine, dims, "f32", "abcd", values)
        dst = prefilled(dst_md, cl_engine)
        r = execute(cl_engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=scale))
        assert r.impl == "ocl:generated"
        want, pre = ref_reorder(values, "f32", "s8", src_scale=np.float32(scale))
        assert_same(logical_of(dst.raw(), dims, "aBcd8b", "s8"), want, src=values, pre=pre,
                    quantized=True)

    before = b.builds
    run_once(0.5)
    assert b.builds == before + 1
    n = b.builds
    run_once(0.5)
    run_once(3.25)  # other values, same mask: the same kernel
    assert b.builds == n


# =============================================================================
# Property-based: random shapes, layouts and type pairs
# =============================================================================

@st.composite
def layouts(draw, ndims):
    """A permutation of the dims, maybe one of them blocked by 4, 8 or 16."""
    order = draw(st.permutations(range(ndims)))
    blocked = draw(st.sampled_from([None] + list(range(ndims))))
    outer = "".join(LETTERS[d].upper() if d == blocked else LETTERS[d] for d in order)
    if blocked is None:
        return outer
    return outer + f"{draw(st.sampled_from([4, 8, 16]))}{LETTERS[blocked]}"


@st.composite
def reorder_cases(draw):
    ndims = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(1, 6), min_size=ndims, max_size=ndims)))
    if draw(st.booleans()):  # a tail for the blocks
        d = draw(st.integers(0, ndims - 1))
        dims = dims[:d] + (draw(st.integers(7, 20)),) + dims[d + 1:]
    s_tag, d_tag = draw(layouts(ndims)), draw(layouts(ndims))
    sdt, ddt = draw(st.sampled_from(CORE)), draw(st.sampled_from(CORE))
    scale_mask = draw(st.sampled_from([None, None, 0] + [1 << d for d in range(ndims)]))
    return dims, s_tag, d_tag, sdt, ddt, scale_mask, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=reorder_cases())
def test_property_random_layouts_and_types(host_engine, cl_engine, case):
    dims, s_tag, d_tag, sdt, ddt, scale_mask, seed = case
    rng = np.random.default_rng(seed)
    values = sample_values(sdt, dims, rng) if rng.random() < 0.7 else random_bits(sdt, dims, rng)
    scales = attr = None
    if scale_mask is not None:
        count = math.prod(dims[d] for d in range(len(dims)) if scale_mask >> d & 1)
        sc = rng.uniform(0.1, 4, count).astype(np.float32)
        attr = cly.Attr(src_scales=cly.Scales(sc, mask=scale_mask))
        scales = per_slice(sc, scale_mask, dims)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=scales)
    raws = []
    for eng in (host_engine, cl_engine):
        src_md, src = src_memory(eng, dims, sdt, s_tag, values)
        dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
        dst = prefilled(dst_md, eng)
        execute(eng, src_md, dst_md, src, dst, attr=attr)
        raw = dst.raw()
        got = logical_of(raw, dims, d_tag, ddt)
        assert_same(got, want, src=values, pre=pre, quantized=attr is not None and is_int(ddt))
        pad = ~to_physical(np.ones(dims, bool), d_tag, fill=False)
        assert not raw.reshape(pad.size, -1)[pad].any(), f"{eng!r}: padding not zero"
        raws.append(got)
    if attr is None:  # with no attributes the two paths agree exactly
        assert_same(raws[1], raws[0])
