"""The tests' own reference: layouts, conversions, attributes and shuffle,
written from DESIGN.md and oneDNN's documented rules, without clayout.

Nothing here imports clayout: expected values never come from the code under
test. Tests fill memories with bytes made here (`raw_of`), read results back
with `raw()` and decode them here (`logical_of`), so clayout's own scatter,
gather and conversions never decide an expected value.

Contents, in order:

* types: `NP` (type name -> NumPy type), integer ranges, float formats;
* layouts: `abstract_tag` (oneDNN aliases such as nChw16c, OIhw4i16o4i,
  gOIhw16i16o -> abstract tags), `parse_tag`, `blocking` (oneDNN's blocking
  descriptor of a tag), `element_offsets` (physical offset of every logical
  element, for a tag or for explicit strides), `physical_size`,
  `padding_mask`;
* bytes: `raw_of` (logical array -> bytes of a layout, padding filled),
  `logical_of` (and back), `bits_of`;
* values: `round_float` (round to nearest even, vectorised), `nearest_even`
  (the same by exact arithmetic over every code of a small type), `to_int`
  (saturation, NaN -> 0), `per_slice` (mask values), `ref_reorder` (the
  attribute formula), `ref_shuffle`;
* data: `random_bits`, `sample_values` and the special values they use;
* checks: `assert_same`, `assert_bytes`, `assert_padding_zero`.
"""
import collections
import fractions
import functools
import math
import re

import ml_dtypes
import numpy as np

# =============================================================================
# Types
# =============================================================================

NP = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f8_e5m2": ml_dtypes.float8_e5m2, "f8_e4m3": ml_dtypes.float8_e4m3fn,
    "s32": np.int32, "s8": np.int8, "u8": np.uint8, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4,
}
#: the types the OpenCL kernels handle in every pair
CORE = ["f32", "f16", "bf16", "s32", "s8", "u8"]
FLOATS = ("f64", "f32", "f16", "bf16", "f8_e5m2", "f8_e4m3")
INT_RANGE = {"s32": (-2**31, 2**31 - 1), "s8": (-128, 127), "u8": (0, 255),
             "s4": (-8, 7), "u4": (0, 15)}
#: types stored two to a byte, first element in the low nibble
PACKED = ("s4", "u4")
#: (stored mantissa bits, smallest normal exponent, largest exponent) of the
#: IEEE-like formats: infinities, NaNs, gradual underflow
FLOAT_FORMAT = {"f32": (23, -126, 127), "f16": (10, -14, 15), "bf16": (7, -126, 127),
                "f8_e5m2": (2, -14, 15)}
#: the largest f32 below 2^31: the s32 bound when the arithmetic is in f32
S32_MAX_FROM_F32 = 2147483520
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

_NAME_OF = {np.dtype(t): name for name, t in NP.items()}


def is_int(dt):
    return dt in INT_RANGE


def dt_of(array):
    """The type name ('f32', 'bf16', ...) of a NumPy array or dtype."""
    dtype = array if isinstance(array, np.dtype) else np.asarray(array).dtype
    assert dtype in _NAME_OF, f"no type name for {dtype}"
    return _NAME_OF[dtype]


def itemsize(dt):
    return np.dtype(NP[dt]).itemsize


# =============================================================================
# Layouts
# =============================================================================

LETTERS = "abcdefghijkl"
#: logical dim order of oneDNN's alias letters: activations, then weights
_DATA_DIMS = "ncdhw"
_WEIGHT_DIMS = "goidhw"
_TAG = re.compile(r"([A-Za-z]+)((?:\d+[A-Za-z])*)")

Blocking = collections.namedtuple("Blocking", "padded_dims strides inner_blks inner_idxs")


def abstract_tag(tag):
    """A oneDNN alias as an abstract tag; an abstract tag as it is.

    An alias names its dims by letters (n c d h w for activations, g o i d h w
    for weights) that become a, b, c, ... in that logical order; an upper-case
    letter is a blocked dim: nChw16c -> aBcd16b, OIhw4i16o4i -> ABcd4b16a4b,
    gOIhw16i16o -> aBCde16c16b, x -> a.
    """
    m = _TAG.fullmatch(tag)
    assert m, f"not a tag: {tag!r}"
    letters = m.group(1).lower()
    blocks = re.findall(r"(\d+)([A-Za-z])", m.group(2))
    if sorted(letters) == list(LETTERS[:len(letters)]):
        return tag
    if letters == "x":
        return "a" + "".join(f"{n}a" for n, _ in blocks)
    order = _WEIGHT_DIMS if set(letters) & set("oi") else _DATA_DIMS
    present = [c for c in order if c in letters]
    assert sorted(present) == sorted(letters), f"not a tag or alias: {tag!r}"
    to_abstract = {c: LETTERS[k] for k, c in enumerate(present)}
    blocked = {c.lower() for _, c in blocks}
    outer = "".join(to_abstract[c].upper() if c in blocked else to_abstract[c] for c in letters)
    return outer + "".join(f"{n}{to_abstract[c.lower()]}" for n, c in blocks)


def parse_tag(tag):
    """'ABcd4b16a4b' -> outer dims in physical order [0, 1, 2, 3] and the
    inner blocks, outermost first, as (dim, size): [(1, 4), (0, 16), (1, 4)].
    Aliases are accepted ('nChw16c' -> [0, 1, 2, 3], [(1, 16)])."""
    m = re.fullmatch(r"([a-lA-L]+)((?:\d+[a-l])*)", abstract_tag(tag))
    assert m, f"not an abstract tag: {tag!r}"
    outer = [LETTERS.index(c.lower()) for c in m.group(1)]
    inner = [(LETTERS.index(letter), int(n))
             for n, letter in re.findall(r"(\d+)([a-l])", m.group(2))]
    assert sorted(outer) == list(range(len(outer))), f"{tag!r}: each dim once"
    assert all(d < len(outer) and n > 0 for d, n in inner), f"{tag!r}: bad inner block"
    return outer, inner


def blocking(dims, tag):
    """oneDNN's blocking descriptor of `tag` for `dims`.

    Each dim d is padded to a multiple of B_d, the product of its inner
    blocks. The innermost outer dim has stride prod(all inner blocks); each
    outer dim further out, that times the outer sizes P_d / B_d inside it (a
    zero-size dim counts as 1, as in oneDNN). Inner blocks are listed
    outermost first.
    """
    outer, inner = parse_tag(tag)
    n = len(dims)
    assert len(outer) == n, f"{tag!r} is not a tag of {n} dims"
    block = [math.prod(s for d2, s in inner if d2 == d) for d in range(n)]
    padded = [-(-size // b) * b for size, b in zip(dims, block)]
    strides = [0] * n
    s = math.prod(s for _, s in inner)
    for d in reversed(outer):
        strides[d] = s
        s *= max(1, padded[d] // block[d])
    return Blocking(tuple(padded), tuple(strides), tuple(s for _, s in inner),
                    tuple(d for d, _ in inner))


def blocked_offsets(index, desc):
    """Element offsets of (padded) indices under a blocking descriptor.

    `index` holds one integer array per dim (broadcastable); the outer part
    is sum((i_d // B_d) * strides[d]), the inner part peels each dim's blocks
    from the innermost one outwards (mixed radix)."""
    _, strides, inner_blks, inner_idxs = desc
    n = len(strides)
    block = [1] * n
    for b, d in zip(inner_blks, inner_idxs):
        block[d] *= b
    offset = np.int64(0)
    rest = []
    for d in range(n):
        i = np.asarray(index[d], dtype=np.int64)
        offset = offset + (i // block[d]) * strides[d]
        rest.append(i % block[d])
    scale = 1
    for b, d in reversed(list(zip(inner_blks, inner_idxs))):
        offset = offset + (rest[d] % b) * scale
        rest[d] = rest[d] // b
        scale *= b
    return np.asarray(offset, dtype=np.int64)


def _grid(dims):
    """One index array per dim, shaped to broadcast over dims."""
    return [np.arange(size, dtype=np.int64).reshape([-1 if e == d else 1 for e in range(len(dims))])
            for d, size in enumerate(dims)]


def element_offsets(dims, tag=None, *, strides=None):
    """Physical element offset of every logical index: int64 array of shape dims.

    Either a tag (padding included in the layout) or explicit strides in
    elements (offset = sum(i_d * strides[d]), gaps allowed)."""
    dims = tuple(dims)
    assert (tag is None) != (strides is None), "a tag or strides"
    if strides is not None:
        assert len(strides) == len(dims)
        offsets = sum((i * s for i, s in zip(_grid(dims), strides)), np.int64(0))
    else:
        offsets = blocked_offsets(_grid(dims), blocking(dims, tag))
    return np.ascontiguousarray(np.broadcast_to(offsets, dims))


def physical_size(dims, tag):
    """Elements in the dense buffer of `tag`: the product of the padded dims."""
    return math.prod(blocking(tuple(dims), tag).padded_dims)


def padding_mask(dims, tag):
    """Over the physical elements of `tag`: True where an element is padding."""
    pad = np.ones(physical_size(dims, tag), dtype=bool)
    pad[element_offsets(dims, tag).reshape(-1)] = False
    return pad


def bits_of(array):
    """The bit patterns of `array` as unsigned integers (NaN payloads compare)."""
    array = np.ascontiguousarray(array)
    return array.view(UINT[array.dtype.itemsize])


def to_physical(logical, tag, fill=0):
    """The dense physical buffer (1-d, same dtype) of a logical array in layout
    `tag`; padding elements hold `fill`. Elements are moved as bit patterns."""
    logical = np.ascontiguousarray(logical)
    buf = np.full(physical_size(logical.shape, tag), fill, dtype=logical.dtype)
    bits_of(buf)[element_offsets(logical.shape, tag).reshape(-1)] = bits_of(logical).reshape(-1)
    return buf


def raw_of(logical, tag, dt, pad_byte=0):
    """Bytes of `logical` (converted to dt with NumPy's cast when it is not
    already of type dt) in layout `tag`; every padding byte is `pad_byte`."""
    assert dt not in PACKED, "packed types: not in this reference"
    values = np.asarray(logical)
    if values.dtype != np.dtype(NP[dt]):
        with np.errstate(all="ignore"):
            values = values.astype(NP[dt])
    raw = to_physical(values, tag).view(np.uint8).copy()
    if pad_byte:
        raw.reshape(-1, itemsize(dt))[padding_mask(values.shape, tag)] = pad_byte
    return raw


def logical_of(raw, dims, tag, dt):
    """The logical array held by the dense bytes `raw` in layout `tag`."""
    assert dt not in PACKED, "packed types: not in this reference"
    typed = np.ascontiguousarray(raw).view(np.uint8).view(NP[dt])
    return typed[element_offsets(dims, tag)]


# =============================================================================
# Values
# =============================================================================

def round_float(x, dt):
    """x rounded once to the float type dt: to nearest even, overflow to +-inf,
    NaN stays NaN, -0 stays -0. Vectorised, with exact power-of-2 arithmetic
    in f64 (x must be exact in f64)."""
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
        x = np.asarray(x, dtype=np.float64)
    if dt == "f64":
        return x.copy()
    assert dt in FLOAT_FORMAT, f"round_float: no rule for {dt} (see nearest_even)"
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


@functools.lru_cache(maxsize=None)
def _finite_codes(dt):
    """Every code of a float type of 16 bits or fewer with a finite value, and the values."""
    bits = 8 * itemsize(dt)
    assert dt in FLOATS and bits <= 16, dt
    codes = np.arange(2 ** bits, dtype=UINT[bits // 8])
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
        values = codes.view(NP[dt]).astype(np.float64)
    finite = np.isfinite(values)
    return codes[finite], values[finite]


def nearest_even(x, dt):
    """The finite value of the float type dt (16 bits or fewer) nearest to the
    float x, by exact rational arithmetic over every code of dt; a tie goes to
    the code with an even last bit, and zero keeps the sign of x. For |x|
    within dt's finite range (no overflow rule here)."""
    bits = 8 * itemsize(dt)
    codes, values = _finite_codes(dt)
    # Only the values next to x can be nearest: compare those exactly.
    below, above = values[values <= x], values[values >= x]
    near = {v for v in (below.max() if below.size else None,
                        above.min() if above.size else None) if v is not None}
    negative = math.copysign(1, x) < 0
    best = None
    candidates = np.isin(values, sorted(near))
    for code, value in zip(codes[candidates], values[candidates]):
        distance = abs(fractions.Fraction(x) - fractions.Fraction(float(value)))
        key = (distance, int(code) & 1, (int(code) >> (bits - 1)) != negative)
        if best is None or key < best[0]:
            best = (key, code)
    return np.array([best[1]], dtype=codes.dtype).view(NP[dt])[0]


def to_int(x, dt, compute=np.float64):
    """x saturated to the integer type dt and rounded to nearest even; NaN -> 0.
    When the arithmetic is in f32 the s32 bound is the largest f32 below 2^31."""
    lo, hi = INT_RANGE[dt]
    if dt == "s32" and compute == np.float32:
        hi = S32_MAX_FROM_F32
    with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
        x = np.asarray(x, dtype=np.float64)
    x = np.where(np.isnan(x), 0.0, x)
    return np.rint(np.clip(x, lo, hi)).astype(NP[dt])


def per_slice(values, mask, dims):
    """Per-slice values (C order over the dims set in mask) shaped to broadcast
    over dims: slice index i_d for every d in the mask, 0 elsewhere."""
    shape = [dims[d] if mask >> d & 1 else 1 for d in range(len(dims))]
    return np.asarray(values).reshape(shape)


def ref_reorder(src, sdt, ddt, src_scale=None, dst_scale=None, src_zp=None, dst_zp=None,
                beta=None, old=None):
    """DESIGN.md's reorder of a logical array:

        dst = (s_src * (src - zp_src) + beta * (old - zp_dst)) / s_dst + zp_dst

    computed in f32 (f64 when either side is f64), then rounded once to ddt
    (nearest even; saturated with NaN -> 0 for integers). Without attributes,
    the same type is a bit copy and integer to integer is an exact saturation.
    Scales (f32) and zero points (s32) are arrays that broadcast over src (see
    per_slice); beta is applied as an f32, like oneDNN's sum scale.
    Returns (result, x), x the value before the final rounding (None for
    exact copies)."""
    src = np.asarray(src)
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
            o = np.asarray(old).astype(ct)
            if dst_zp is not None:
                o = o - np.asarray(dst_zp, np.int32).astype(ct)
            x = x + ct(np.float32(beta)) * o
        if dst_scale is not None:
            x = x / np.asarray(dst_scale, np.float32).astype(ct)
        if dst_zp is not None:
            x = x + np.asarray(dst_zp, np.int32).astype(ct)
        x = np.broadcast_to(x, src.shape).astype(ct)
    out = to_int(x, ddt, ct) if is_int(ddt) else round_float(x, ddt)
    return out, x


def ref_shuffle(src, axis, group, backward=False):
    """oneDNN's shuffle, from the u/v formula with explicit loops:
    dst(.., u + v*C/G, ..) = src(.., u*G + v, ..); backward swaps G and C/G."""
    channels = src.shape[axis]
    g = channels // group if backward else group
    rows = channels // g
    dst = np.empty_like(src)
    moved_src = np.moveaxis(src, axis, 0)
    moved_dst = np.moveaxis(dst, axis, 0)  # a view: writes land in dst
    for u in range(rows):
        for v in range(g):
            moved_dst[u + v * rows] = moved_src[u * g + v]
    return dst


# =============================================================================
# Data
# =============================================================================

#: bit patterns every random float array gets: NaNs with payloads (quiet and
#: signalling, both signs), infinities, -0, the smallest denormal
SPECIAL_BITS = {
    "f64": [0x7FF8000000000000, 0x7FF0000000000001, 0xFFF4A5A5A5A5A5A5, 0x7FF7FFFFFFFFFFFF,
            0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0x0000000000000001],
    "f32": [0x7FC00000, 0x7F800001, 0xFFA5A5A5, 0x7FBFFFFF, 0x7F800000, 0xFF800000,
            0x80000000, 0x00000001],
    "bf16": [0x7FC0, 0x7F81, 0xFFA5, 0x7FBF, 0x7F80, 0xFF80, 0x8000, 0x0001],
    "f16": [0x7E00, 0x7C01, 0xFDA5, 0x7D55, 0x7C00, 0xFC00, 0x8000, 0x0001],
    "f8_e5m2": [0x7E, 0x7D, 0xFF, 0x7F, 0x7C, 0xFC, 0x80, 0x01],
    "f8_e4m3": [0x7F, 0xFF, 0x7E, 0xFE, 0x80, 0x01],
}

FLOAT_SPECIALS = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, -3.5, 126.5, 127.5, 128.0,
    -127.5, -128.5, -129.0, 254.5, 255.5, 256.0, 257.0, -1.0, 2049.0, 2051.0, 65504.0,
    65519.0, 65520.0, -65536.0, 1e5, -1e5, 16777217.0, 2147483520.0, 2147483648.0,
    -2147483648.0, -2147483904.0, 3e9, -3e9, 3.4028235e38, -3.4028235e38, 1e-8, 2.0**-25,
    1e-40, 1 + 2.0**-8, 1 + 3 * 2.0**-8,
]
INT_SPECIALS = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 300, -300, 65504, 65520,
                2**24 + 1, -(2**24 + 3), 2147483520, 2147483584, 2**31 - 1, -2**31]


def random_bits(dt, shape, rng):
    """An array of type dt with arbitrary bit patterns: for floats, NaN
    payloads, denormals and infinities, SPECIAL_BITS always among them (at
    random places); for s4/u4, any value of the type."""
    shape = tuple(shape)
    n = math.prod(shape)
    if dt in PACKED:
        lo, hi = INT_RANGE[dt]
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(NP[dt])
    utype = UINT[itemsize(dt)]
    bits = rng.integers(0, int(np.iinfo(utype).max) + 1, size=n, dtype=np.uint64).astype(utype)
    if dt in SPECIAL_BITS and n:
        special = np.array(SPECIAL_BITS[dt], dtype=np.uint64).astype(utype)
        where = rng.choice(n, size=min(n, 2 * len(special)), replace=False)
        bits[where] = np.resize(special, where.size)
    return bits.reshape(shape).view(NP[dt])


def sample_values(dt, shape, rng, specials=True):
    """Values of type dt: the specials first (those the type holds), then
    random ones (a third of the integers small, a quarter of the floats on .5)."""
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


# =============================================================================
# Checks
# =============================================================================

def _shown(array, i):
    """One element, with its bits for a float."""
    if dt_of(array) in FLOATS:
        return f"{array[i]!r} (0x{int(bits_of(array)[i]):X})"
    return repr(array[i])


def _report(mask, got, want, src, pre, limit=10):
    lines = []
    for idx in np.argwhere(mask)[:limit]:
        i = tuple(int(v) for v in idx)
        line = f"  at {i}: got {_shown(got, i)}, want {_shown(want, i)}"
        if src is not None:
            line += f", src {np.asarray(src)[i]!r}"
        if pre is not None:
            line += f", before rounding {np.asarray(pre)[i]!r}"
        lines.append(line)
    more = "\n  ..." if int(mask.sum()) > limit else ""
    return f"{int(mask.sum())} of {mask.size} elements differ:\n" + "\n".join(lines) + more


def assert_same(got, want, *, src=None, pre=None, quantized=False, any_nan=False,
                what="result"):
    """Element by element, bit for bit, with a readable report of the first
    differences (index, got, want, bits, and src / pre when given).

    Floats: equal bit patterns; with any_nan, a NaN wanted matches any NaN
    (a conversion's NaN payload is not specified). Integers: equal, or with
    quantized, off by 1 where `pre` (the value before rounding) is within one
    f32 ulp of a .5 boundary."""
    __tracebackhide__ = True
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"{what}: got {got.dtype}{list(got.shape)}, "
                             f"want {want.dtype}{list(want.shape)}")
    if got.ndim == 0:
        got, want = got.reshape(1), want.reshape(1)
    if dt_of(want) not in FLOATS:
        diff = got.astype(np.int64) - want.astype(np.int64)
        ok = diff == 0
        if quantized and pre is not None:
            p = np.asarray(pre, dtype=np.float64).reshape(want.shape)
            with np.errstate(invalid="ignore"):
                to_half = np.abs(np.abs(p - np.floor(p)) - 0.5)
                ulp = np.spacing(np.abs(p).astype(np.float32)).astype(np.float64)
                near = np.isfinite(p) & (to_half <= ulp)
            ok |= (np.abs(diff) == 1) & near
    else:
        ok = bits_of(got) == bits_of(want)
        if any_nan:
            with np.errstate(invalid="ignore"):
                got_nan = np.isnan(got.astype(np.float64))
                want_nan = np.isnan(want.astype(np.float64))
            ok = np.where(want_nan, got_nan, ok)
    if not ok.all():
        raise AssertionError(f"{what}: " + _report(~ok, got, want, src, pre))


def assert_bytes(got, want, what="bytes"):
    """Two byte buffers, equal in size and every byte."""
    __tracebackhide__ = True
    got = np.ascontiguousarray(got).view(np.uint8).reshape(-1)
    want = np.ascontiguousarray(want).view(np.uint8).reshape(-1)
    if got.size != want.size:
        raise AssertionError(f"{what}: {got.size} bytes, want {want.size}")
    bad = np.nonzero(got != want)[0]
    if bad.size:
        first = bad[:8]
        raise AssertionError(f"{what}: {bad.size} of {got.size} bytes differ, first at "
                             f"{first.tolist()}: got {[hex(b) for b in got[first]]}, "
                             f"want {[hex(b) for b in want[first]]}")


def assert_padding_zero(raw, dims, tag, dt, what="padding"):
    """Every byte of every padding element of layout `tag` in `raw` (the
    memory's bytes, at least the layout's size) is zero."""
    __tracebackhide__ = True
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    item = itemsize(dt)
    size = physical_size(dims, tag) * item
    if raw.size < size:
        raise AssertionError(f"{what}: {raw.size} bytes, {tag} {tuple(dims)} {dt} needs {size}")
    pad = padding_mask(dims, tag)
    nonzero = raw[:size].reshape(-1, item).any(axis=1) & pad
    if nonzero.any():
        bad = np.nonzero(nonzero)[0]
        padded = blocking(tuple(dims), tag).padded_dims
        where = element_offsets(padded, tag).reshape(-1)
        index_of = dict(zip(where.tolist(), np.ndindex(*padded)))
        shown = ", ".join(f"{index_of[int(o)]}: {raw[o * item:(o + 1) * item].tolist()}"
                          for o in bad[:6])
        raise AssertionError(f"{what}: {bad.size} of {int(pad.sum())} padding elements of "
                             f"{tag} {tuple(dims)} {dt} are not zero; at padded index: {shown}")


# =============================================================================
# Packed 4-bit types (s4, u4, f4_e2m1) and grouped scales / zero points
# =============================================================================
#
# A 4-bit element at element offset k (what `element_offsets` gives for its
# layout) lies in byte k // 2: the low nibble when k is even, the high nibble
# when k is odd. The helpers below read and write nibbles one by one, so they
# stay obviously right (the tests keep their tensors small).

#: f4_e2m1 magnitudes by code 0..7 (bit 3 of a code is the sign)
F4_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: the 4-bit types and their NumPy (ml_dtypes) types
NIBBLE_NP = {"s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "f4_e2m1": ml_dtypes.float4_e2m1fn}


def nibble_codes(values, dt):
    """The 4-bit codes (uint8, 0..15) of `values`, which must be exact values
    of the 4-bit type dt: s4 in two's complement, u4 as is, f4_e2m1 as the
    sign in bit 3 and the index of the magnitude in F4_E2M1_VALUES."""
    if dt == "f4_e2m1":
        v = np.asarray(values).astype(np.float64).reshape(-1)
        codes = []
        for x in v:
            assert abs(x) in F4_E2M1_VALUES, f"{x!r} is not an f4_e2m1 value"
            codes.append(F4_E2M1_VALUES.index(abs(x)) | (8 if math.copysign(1, x) < 0 else 0))
        return np.array(codes, dtype=np.uint8).reshape(np.shape(values))
    lo, hi = INT_RANGE[dt]
    ints = np.asarray(values).astype(np.int64)
    assert ints.size == 0 or (ints.min() >= lo and ints.max() <= hi), f"not {dt} values"
    return (ints & 0xF).astype(np.uint8)


def nibble_values(codes, dt):
    """The values (of NIBBLE_NP[dt]) of 4-bit codes: nibble_codes backwards."""
    codes = np.asarray(codes).astype(np.int64) & 0xF
    if dt == "u4":
        return codes.astype(ml_dtypes.uint4)
    if dt == "s4":
        return np.where(codes >= 8, codes - 16, codes).astype(ml_dtypes.int4)
    assert dt == "f4_e2m1", dt
    magnitude = np.array(F4_E2M1_VALUES)[codes & 7]
    return np.where(codes & 8, -magnitude, magnitude).astype(ml_dtypes.float4_e2m1fn)


def get_nibbles(raw, offsets):
    """The 4-bit codes (uint8) at the element offsets `offsets` of the bytes raw."""
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    offsets = np.asarray(offsets, dtype=np.int64)
    out = np.empty(offsets.shape, dtype=np.uint8)
    for index, k in np.ndenumerate(offsets):
        out[index] = (int(raw[k // 2]) >> (4 * (k % 2))) & 0xF
    return out


def put_nibbles(raw, offsets, codes):
    """Store the 4-bit codes at the element offsets of the uint8 array raw (in
    place); every other nibble keeps its value."""
    offsets = np.asarray(offsets, dtype=np.int64)
    codes = np.broadcast_to(np.asarray(codes, dtype=np.int64), offsets.shape)
    for k, c in zip(offsets.reshape(-1).tolist(), codes.reshape(-1).tolist()):
        assert 0 <= c <= 15
        keep = 0xF0 if k % 2 == 0 else 0x0F
        raw[k // 2] = (int(raw[k // 2]) & keep) | (c << (4 * (k % 2)))
    return raw


def window_offsets(parent_dims, tag, dims, offsets):
    """Element offsets (shape dims) of a window of `dims` at `offsets` of a
    parent tensor of layout `tag`: what a submemory's elements occupy."""
    every = element_offsets(parent_dims, tag)
    return np.ascontiguousarray(every[tuple(slice(o, o + n) for o, n in zip(offsets, dims))])


def raw_of_packed(logical, tag, dt, pad_nibble=0):
    """Bytes of the 4-bit array `logical` (exact dt values) in layout `tag`:
    ceil(physical elements / 2) bytes; padding nibbles, and the spare high
    nibble of the last byte when the count is odd, hold pad_nibble."""
    logical = np.asarray(logical)
    count = physical_size(logical.shape, tag)
    raw = np.full((count + 1) // 2, pad_nibble * 0x11, dtype=np.uint8)
    return put_nibbles(raw, element_offsets(logical.shape, tag), nibble_codes(logical, dt))


def logical_of_packed(raw, dims, tag, dt):
    """The 4-bit logical array (NIBBLE_NP[dt]) held by the bytes raw in layout `tag`."""
    return nibble_values(get_nibbles(raw, element_offsets(dims, tag)), dt)


def assert_padding_nibbles_zero(raw, dims, tag, what="padding"):
    """Every padding element (nibble) of a 4-bit tensor in layout `tag` is 0."""
    __tracebackhide__ = True
    pad = np.nonzero(padding_mask(dims, tag))[0]
    codes = get_nibbles(raw, pad)
    bad = pad[codes != 0]
    if bad.size:
        raise AssertionError(f"{what}: {bad.size} of {pad.size} padding nibbles of {tag} "
                             f"{tuple(dims)} are not zero, first at element offsets "
                             f"{bad[:8].tolist()}: {codes[codes != 0][:8].tolist()}")


def to_f4_e2m1(x):
    """x (floats, exact in f64) converted to f4_e2m1: to nearest, a tie to the
    even code; |x| above 6 (inf included) saturates to +-6; NaN -> +0; the
    sign of zero is kept. Element by element, by exact comparisons."""
    with np.errstate(invalid="ignore"):
        x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape, dtype=np.float64)
    for index, v in np.ndenumerate(x):
        if math.isnan(v):
            out[index] = 0.0
            continue
        negative = math.copysign(1, v) < 0
        magnitude = abs(v)
        if magnitude >= 6.0:
            best = 6.0
        else:
            below = max(m for m in F4_E2M1_VALUES if m <= magnitude)
            above = min(m for m in F4_E2M1_VALUES if m >= magnitude)
            d_below = fractions.Fraction(magnitude) - fractions.Fraction(below)
            d_above = fractions.Fraction(above) - fractions.Fraction(magnitude)
            if d_below != d_above:
                best = below if d_below < d_above else above
            else:  # a tie (or below == above): the even code
                best = below if F4_E2M1_VALUES.index(below) % 2 == 0 else above
        out[index] = -best if negative else best
    return out.astype(ml_dtypes.float4_e2m1fn)


def stored_scales(values, dt):
    """Scale values as stored in the data type dt (f32, bf16 or f16): each
    rounded once from its exact value to nearest even; returned as f32."""
    return np.asarray(round_float(np.asarray(values, dtype=np.float64), dt)).astype(np.float32)


def per_group(values, mask, groups, dims):
    """Grouped per-slice values for every element (array of shape dims).

    Dim d counts when bit d of mask is set; along it, `group[d]` consecutive
    indices share one value (groups = (g_row, g_col) on the last two dims, 1
    on the others; None means all 1). The values are in C order over the
    masked dims' group counts dims[d] // group[d]. Element by element."""
    values = np.asarray(values).reshape(-1)
    n = len(dims)
    group = [1] * n
    if groups is not None:
        group[n - 2:] = groups
    masked = [d for d in range(n) if mask >> d & 1]
    counts = [dims[d] // group[d] for d in masked]
    assert values.size == math.prod(counts), (values.size, counts)
    out = np.empty(tuple(dims), dtype=values.dtype)
    for index in np.ndindex(*dims):
        flat = 0
        for d, count in zip(masked, counts):
            flat = flat * count + index[d] // group[d]
        out[index] = values[flat]
    return out
