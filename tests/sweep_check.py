"""The sweep's expectations (tests/test_sweep.py), from tests/reference.py
alone: where each element of a layout lies, the bytes of a source and of a
prefilled destination, the values a reorder or shuffle must write, and the
check of a destination buffer, whole.

Nothing here imports clayout. A layout (tests/sweep_cases.py's Layout) is
turned into element offsets by the reference's blocking rules (outer strides
from the tag unless given), a window's offsets added in its parent.

The check of a destination, after one execution into a buffer prefilled
with random non-zero bytes (old values at the elements for a sum):

* the elements hold the reference's values: bit for bit, except that a NaN
  from arithmetic matches any NaN (not in bit copies: layout changes and
  shuffles keep payloads), and that integer quantization may be off by 1
  where the value before rounding is within 1 f32 ulp of a .5 boundary
  (reference.assert_same);
* every other byte of the buffer is as prefilled, but the destination's own
  padding (the padded box of its dims, a window's within its parent's
  padding), which is zero: gaps between strides, the parent around a
  window and the other nibble of a byte shared with a 4-bit element stay.
"""
import functools
import math

import ml_dtypes
import numpy as np

import reference as ref
from sweep_cases import INTS, NIBBLES

# =============================================================================
# Layouts
# =============================================================================


def _round_up(n, b):
    return -(-n // b) * b


def geometry(dims, layout):
    """(element offsets, int64 array of shape dims; own padding offsets, 1-d)
    of `layout` in its buffer (the parent's for a window), in elements."""
    dims = tuple(dims)
    full = tuple(layout.parent or dims)
    n = len(dims)
    at = tuple(layout.offsets or (0,) * n)
    if layout.tag is not None:
        b = ref.blocking(full, layout.tag)
        desc = ref.Blocking(b.padded_dims, tuple(layout.strides or b.strides),
                            b.inner_blks, b.inner_idxs)
    else:
        desc = ref.Blocking(full, tuple(layout.strides), (), ())
    block = [1] * n
    for size, d in zip(desc.inner_blks, desc.inner_idxs):
        block[d] *= size
    index = np.indices(dims, dtype=np.int64) if n else []
    elements = ref.blocked_offsets([index[d] + at[d] for d in range(n)], desc)
    own = tuple(min(_round_up(size, blk), padded - o) for size, blk, padded, o in
                zip(dims, block, desc.padded_dims, at))
    box = np.indices(own, dtype=np.int64)
    outside = np.zeros(own, dtype=bool)
    for d in range(n):
        outside |= box[d] >= dims[d]
    padding = ref.blocked_offsets([box[d][outside] + at[d] for d in range(n)], desc)
    return np.broadcast_to(elements, dims).copy(), np.asarray(padding, np.int64).reshape(-1)


def buffer_bytes(count, dt):
    """Bytes that `count` elements of dt take."""
    return (count + 1) // 2 if dt in NIBBLES else count * ref.itemsize(dt)


# =============================================================================
# Values and bytes
# =============================================================================

def numpy_type(dt):
    return ref.NIBBLE_NP[dt] if dt in NIBBLES else ref.NP[dt]


def sample(dt, dims, rng):
    """Values of dt for a source or a sum's old values: the reference's
    samples (specials included) or arbitrary bits (NaN payloads, denormals)."""
    if dt == "f4_e2m1":
        return ref.nibble_values(rng.integers(0, 16, size=dims), dt)
    if rng.random() < 0.3:
        return ref.random_bits(dt, dims, rng)
    return ref.sample_values(dt, dims, rng)


@functools.lru_cache(maxsize=None)
def _code_values(dt):
    """The value (f64; NaN, inf) of every code of a float type of 16 bits or fewer."""
    if dt == "f4_e2m1":
        return ref.nibble_values(np.arange(16), dt).astype(np.float64)
    codes = np.arange(2 ** (8 * ref.itemsize(dt)), dtype=ref.UINT[ref.itemsize(dt)])
    with np.errstate(invalid="ignore"):
        return codes.view(ref.NP[dt]).astype(np.float64)


def _midpoints(ddt, n, rng):
    """n values (f64) halfway between neighbours of the type ddt (for the
    largest, halfway to the next step past it: the overflow tie); NaN where
    none was drawn. For an integer ddt, k + 0.5."""
    if ddt in INTS:
        lo, hi = ref.INT_RANGE[ddt]
        return rng.integers(max(lo, -2**20) - 1, min(hi, 2**20) + 1, n) + 0.5
    if ddt == "f32":
        with np.errstate(invalid="ignore"):  # signalling NaNs raise "invalid" when widened
            v = ref.random_bits("f32", (n,), rng).astype(np.float64)
        step = np.abs(np.spacing(v.astype(np.float32)).astype(np.float64))
        return v + np.copysign(step, v) / 2
    if ddt == "f64":
        return np.full(n, np.nan)
    values = _code_values(ddt)
    half = values.size // 2
    c = rng.integers(0, values.size, n)
    v, up = values[c], values[(c + 1) % values.size]
    top = ((c + 1) % half == 0) | ~np.isfinite(up)  # past the largest finite value
    with np.errstate(invalid="ignore"):
        up = np.where(top, v + (v - values[c - 1]), up)
        return np.where(np.isfinite(v), (v + up) / 2, np.nan)


def ties(sdt, ddt, dims, rng):
    """Values of sdt that a conversion to ddt must round: ties between two
    values of ddt, and (a fifth of them) the sdt values next to a tie; where
    sdt cannot hold a tie exactly, the reference's samples. None when sdt
    is not wider than ddt."""
    n = math.prod(dims)
    if sdt == ddt or sdt == "f4_e2m1" or n == 0 or (sdt in INTS and ddt in INTS):
        return None
    x = _midpoints(ddt, n, rng)
    with np.errstate(all="ignore"):
        if sdt in INTS:
            lo, hi = ref.INT_RANGE[sdt]
            exact = (x == np.rint(x)) & (x >= lo) & (x <= hi)
            held = np.where(exact, x, 0).astype(np.int64).astype(numpy_type(sdt))
        else:
            held = x.astype(ref.NP[sdt])
            exact = held.astype(np.float64) == x
    if not exact.any():
        return None
    out = sample(sdt, (n,), rng)
    out[exact] = held[exact]
    if sdt not in INTS:  # the neighbours of a tie: one code up or down
        with np.errstate(invalid="ignore"):
            near = exact & (rng.random(n) < 0.2) & (out.astype(np.float64) != 0)
        bits = ref.bits_of(out).copy()
        step = rng.choice(np.array([1, -1], dtype=np.int64), n).astype(bits.dtype)
        bits[near] = bits[near] + step[near]
        out = bits.view(out.dtype)
    return out.reshape(dims)


def source_values(case, rng):
    """The source's values: ties for its conversion (40%, where there are
    some), else the reference's samples or arbitrary bits."""
    if case.kind == "reorder" and rng.random() < 0.4:
        values = ties(case.sdt, case.ddt, case.dims, rng)
        if values is not None:
            return values
    return sample(case.sdt, case.dims, rng)


def store(raw, offsets, values, dt):
    """Write `values` (of dt) at the element offsets of the uint8 buffer raw."""
    if offsets.size == 0:
        return
    if dt in NIBBLES:
        ref.put_nibbles(raw, offsets, ref.nibble_codes(values, dt))
    else:
        raw.view(ref.UINT[ref.itemsize(dt)])[offsets] = ref.bits_of(values)


def load(raw, offsets, dt):
    """The values of dt at the element offsets of the uint8 buffer raw."""
    if dt in NIBBLES:
        return ref.nibble_values(ref.get_nibbles(raw, offsets), dt)
    return raw.view(ref.NP[dt])[offsets]


def copy_elements(target, source, offsets, dt):
    """The bits of the elements at `offsets` of `source` into `target`."""
    if offsets.size == 0:
        return
    if dt in NIBBLES:
        ref.put_nibbles(target, offsets, ref.get_nibbles(source, offsets))
    else:
        unit = ref.UINT[ref.itemsize(dt)]
        target.view(unit)[offsets] = source.view(unit)[offsets]


def zero_elements(target, offsets, dt):
    if offsets.size == 0:
        return
    if dt in NIBBLES:
        ref.put_nibbles(target, offsets, np.zeros(offsets.shape, np.int64))
    else:
        target.view(ref.UINT[ref.itemsize(dt)])[offsets] = 0


# =============================================================================
# Conversions the reference's round_float does not cover
# =============================================================================

#: (stored mantissa bits, smallest normal exponent, largest finite value)
_SMALL = {"f8_e4m3": (3, -6, 448.0), "f4_e2m1": (1, 0, 6.0)}


def round_small(x, dt):
    """x (exact in f64) rounded once to f8_e4m3 (fn: beyond 448 and +-inf
    become NaN) or f4_e2m1 (saturates to +-6, NaN -> +0), to nearest even,
    the sign of zero kept. Vectorised; checked against
    tests/small_types_reference.py's encoder in test_sweep.py."""
    mbits, emin, top = _SMALL[dt]
    with np.errstate(all="ignore"):
        x = np.asarray(x, dtype=np.float64)
        _, e = np.frexp(x)
        quantum = np.ldexp(1.0, np.maximum(e - 1, emin) - mbits)
        r = np.rint(x / quantum) * quantum
        over = ~np.isfinite(x) | (np.abs(r) > top)
        if dt == "f8_e4m3":
            r = np.where(over | np.isnan(x), np.copysign(np.nan, x), r)
            return r.astype(ml_dtypes.float8_e4m3fn)
        r = np.where(over, np.copysign(top, x), r)
        r = np.where(np.isnan(x), 0.0, r)
        return r.astype(ml_dtypes.float4_e2m1fn)


def _spread(values, v, dims):
    """Values over the dims their mask (and groups) give them."""
    if v.groups:
        return ref.per_group(values, v.mask, v.groups, dims)
    return ref.per_slice(values, v.mask, dims)


def _attr_arrays(case):
    dims = case.dims
    out = {}
    for name in ("src_scales", "dst_scales"):
        v = getattr(case, name)
        if v is not None:
            values = np.array(v.values, np.float32)
            if v.data_type:
                values = ref.stored_scales(values, v.data_type)
            out[name] = _spread(values, v, dims)
    for name in ("src_zero_points", "dst_zero_points"):
        v = getattr(case, name)
        if v is not None:
            out[name] = _spread(np.array(v.values, np.int32), v, dims)
    return out


def expected(case, values, old):
    """(values the destination's elements must hold, the values before the
    final rounding or None, whether the elements are bit copies)."""
    if case.kind == "shuffle":
        axis, group, backward = case.shuffle
        if values.size == 0:
            return values.copy(), None, True
        return ref.ref_shuffle(values, axis, group, backward), None, True
    sdt, ddt = case.sdt, case.ddt
    a = _attr_arrays(case)
    kw = dict(src_scale=a.get("src_scales"), dst_scale=a.get("dst_scales"),
              src_zp=a.get("src_zero_points"), dst_zp=a.get("dst_zero_points"),
              beta=case.sum_beta, old=old)
    if sdt == ddt and not case.has_attr:
        return values.copy(), None, True
    if ddt in _SMALL:  # the formula in f32 (f64 from f64), then this rounding
        proxy = "f64" if sdt == "f64" else "f32"
        if old is not None:
            kw["old"] = old.astype(np.float64 if proxy == "f64" else np.float32)
        _, x = ref.ref_reorder(values, sdt, proxy, **kw)
        if x is None:
            x = values.astype(np.float64 if proxy == "f64" else np.float32)
        return round_small(x, ddt), x, False
    want, pre = ref.ref_reorder(values, sdt, ddt, **kw)
    return want, pre, False


def assert_elements(got, want, pre, case, exact, src):
    """The destination's element values against the reference's."""
    __tracebackhide__ = True
    if case.ddt == "f4_e2m1":  # no NaN: the codes themselves
        ref.assert_same(ref.nibble_codes(got, "f4_e2m1"), ref.nibble_codes(want, "f4_e2m1"),
                        what="f4_e2m1 codes of the elements")
        return
    with np.errstate(all="ignore"):  # the reference's ulp of a value past f32's range
        ref.assert_same(got, want, src=src, pre=pre, any_nan=not exact,
                        quantized=case.ddt in INTS and case.has_attr, what="elements")


# =============================================================================
# One problem's buffers and its check
# =============================================================================

class Expectation:
    """A problem's source bytes, prefilled destination bytes and the check
    of a destination after a run. `src_size` and `dst_size` are the buffer
    sizes in bytes (the parents' for windows), from the descriptors."""

    def __init__(self, case, src_size, dst_size, rng):
        self.case = case
        dims = case.dims
        self.src_at, _ = geometry(dims, case.src)
        self.dst_at, self.dst_pad = geometry(dims, case.dst_layout)
        for what, at, pad, size, dt in (("src", self.src_at, (), src_size, case.sdt),
                                        ("dst", self.dst_at, self.dst_pad, dst_size, case.ddt)):
            top = max(int(np.max(at, initial=-1)), int(np.max(pad, initial=-1)))
            if buffer_bytes(top + 1, dt) > size:
                raise AssertionError(f"{what}: element offset {top} lies past the "
                                     f"descriptor's size, {size} bytes")
        self.values = source_values(case, rng)
        self.src_raw = rng.integers(0, 256, max(src_size, 1), dtype=np.uint8)
        store(self.src_raw, self.src_at, self.values, case.sdt)
        self.dst_raw = rng.integers(1, 256, max(dst_size, 1), dtype=np.uint8)
        self.old = None
        if case.sum_beta is not None:
            self.old = sample(case.ddt, dims, rng)
            store(self.dst_raw, self.dst_at, self.old, case.ddt)
        self.want, self.pre, self.exact = expected(case, self.values, self.old)

    def check(self, got):
        """Raise AssertionError unless the destination buffer `got` (uint8)
        is right, whole."""
        __tracebackhide__ = True
        case = self.case
        got = np.ascontiguousarray(got).view(np.uint8).reshape(-1)
        if got.size != self.dst_raw.size:
            raise AssertionError(f"destination buffer: {got.size} bytes, {self.dst_raw.size} "
                                 f"given")
        if self.dst_at.size:
            # (a shuffle's element comes from another index: no src to show)
            src = self.values if case.kind == "reorder" else None
            assert_elements(load(got, self.dst_at, case.ddt), self.want, self.pre, case,
                            self.exact, src)
        want = self.dst_raw.copy()
        zero_elements(want, self.dst_pad, case.ddt)
        copy_elements(want, got, self.dst_at.reshape(-1), case.ddt)
        ref.assert_bytes(got, want, what="destination bytes outside its elements (padding "
                                         "zero; gaps, parent and shared nibbles as prefilled)")
