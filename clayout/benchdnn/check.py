"""benchdnn's correctness protocol for one Case, on the driver's own terms.

The source is filled from benchdnn's table, written into its buffer at the
driver's own offsets; the destination buffer is filled with 0xFF, followed by
a guard region. After the primitive ran, every unit (element, or nibble for
the 4-bit types) of the buffer is accounted for: the elements must equal the
reference, the padding must be zero, and everything else (gaps between
strides, the guard) must still be 0xFF. Work goes in chunks of at most CHUNK
elements, so the host memory a problem needs is a few bytes per element.

A destination with compensation (--oflag) holds s32 values after its
elements: s8s8 first, then zp, each in C order over the masked dims' padded
sizes. Each must equal, for its slice, -sum (times 128 for s8s8) of the s8
values over the other dims, logical elements only; a padded slice holds 0.
The sum is of the values the destination holds where the check accepted
them, and of the reference's values where it did not (benchdnn sums its own
reference), so a wrong element is not counted twice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .cases import Case, Side
from .values import TypeInfo, fill_values, pick

GUARD_BYTES = 1024
CHUNK = 1 << 20
# More zeros than this share of the results: MISTRUSTED. benchdnn's reorder
# trusts up to 80% (its integer quantization makes many zeros); shuffle 50%.
MISTRUST_ZERO_RATIO = {"reorder": 0.8, "shuffle": 0.5}
SHOWN = 10                 # mismatches described per problem (all at -v99)
OLD_SEED = 0x5BD1E995      # the old destination (sum) draws from its own stream


# -- buffers as units ---------------------------------------------------------------

def units_of(raw: np.ndarray, t: TypeInfo) -> np.ndarray:
    """The elements' storage units of a byte buffer (nibbles, low first, for 4 bits)."""
    if t.bits == 4:
        out = np.empty(raw.size * 2, np.uint8)
        out[0::2], out[1::2] = raw & 0xF, raw >> 4
        return out
    return raw.view(t.unit)


def bytes_of(units: np.ndarray, t: TypeInfo) -> np.ndarray:
    if t.bits == 4:
        return (units[0::2] | (units[1::2] << 4)).astype(np.uint8)
    return units.view(np.uint8)


def all_ones(t: TypeInfo) -> int:
    return (1 << t.bits) - 1


def buffer_bytes(side: Side) -> int:
    """The bytes to allocate: clayout's size or the driver's, whichever
    is larger, rounded to 8, plus the guard."""
    return -(-max(side.md.size, side.nbytes) // 8) * 8 + GUARD_BYTES


def chunks(shape):
    """(flat C-order indices, per-dim index arrays) of ``shape``, CHUNK at a time."""
    total = math.prod(shape)
    for start in range(0, total, CHUNK):
        flat = np.arange(start, min(start + CHUNK, total), dtype=np.int64)
        yield flat, np.unravel_index(flat, shape)


# -- filling ----------------------------------------------------------------------------

def source_values(case: Case, flat: np.ndarray) -> np.ndarray:
    """The stored values (float64) of source elements with C-order indices ``flat``."""
    return pick(fill_values(case.src.type), flat, case.seed)


def old_values(case: Case, flat: np.ndarray) -> np.ndarray:
    return pick(fill_values(case.dst.type), flat, case.seed ^ OLD_SEED)


def source_buffer(case: Case) -> np.ndarray:
    """The source buffer: elements at the driver's offsets, zeros elsewhere."""
    t = case.src.type
    units = units_of(np.zeros(buffer_bytes(case.src), np.uint8), t)
    for flat, index in chunks(case.dims):
        units[case.src.layout.offsets(index)] = t.to_bits(source_values(case, flat))
    return bytes_of(units, t)


def destination_buffer(case: Case) -> np.ndarray:
    """0xFF everywhere; the old values at the elements when a sum reads them."""
    raw = np.full(buffer_bytes(case.dst), 0xFF, np.uint8)
    if case.beta is None:
        return raw
    t = case.dst.type
    units = units_of(raw, t)
    for flat, index in chunks(case.dims):
        units[case.dst.layout.offsets(index)] = t.to_bits(old_values(case, flat))
    return bytes_of(units, t)


# -- the reference ----------------------------------------------------------------------

def _slice_values(case: Case, name: str, index, ct):
    """The value of attribute ``name`` at each element of ``index``: the slice
    of the masked dims, each index divided by its dim's group size."""
    mask, values, groups = case.per_slice[name]
    if mask == 0:
        return ct(values[0])
    slot = np.zeros(index[0].shape, np.int64)
    for d, (n, g) in enumerate(zip(case.dims, groups)):
        if mask >> d & 1:
            slot = slot * (n // g) + index[d] // g
    return values[slot].astype(ct)


def candidates(case: Case, flat, index) -> list[np.ndarray]:
    """The values before rounding (float64 holding f32 or f64 results) that a
    faithful implementation may compute. Besides the formula as DESIGN.md
    writes it, benchdnn accepts a dst scale applied as a multiplication by its
    reciprocal."""
    ct = np.float64 if case.compute == "f64" else np.float32
    x = source_values(case, flat)
    if case.attr is None:
        return [x]
    old = old_values(case, flat) if case.beta is not None else None
    names = case.per_slice
    out = []
    for recip in (False, True) if "dst_scales" in names else (False,):
        with np.errstate(all="ignore"):
            v = x.astype(ct)
            if "src_zero_points" in names:
                v = v - _slice_values(case, "src_zero_points", index, ct)
            if "src_scales" in names:
                v = _slice_values(case, "src_scales", index, ct) * v
            if case.beta is not None:
                o = old.astype(ct)
                if "dst_zero_points" in names:
                    o = o - _slice_values(case, "dst_zero_points", index, ct)
                v = v + ct(np.float32(case.beta)) * o  # beta is an f32, as in oneDNN
            if "dst_scales" in names:
                s = _slice_values(case, "dst_scales", index, ct)
                v = v * (ct(1) / s) if recip else v / s
            if "dst_zero_points" in names:
                v = v + _slice_values(case, "dst_zero_points", index, ct)
        out.append(v.astype(np.float64))
    return out


def _same(a, b):
    return (a == b) | (np.isnan(a) & np.isnan(b))


def accepted(case: Case, pre: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Where ``got`` is an acceptable result of the pre-rounding values ``pre``."""
    t = case.dst.type
    compute = "f64" if case.attr is None and case.src.type.is_int and t.is_int else case.compute
    expect = t.quantize(pre, compute)
    ok = _same(got, expect)
    if t.is_int:
        # benchdnn's exceptions: a NaN may become any integer; an exact .5
        # tie may round either way.
        ok |= np.isnan(pre)
        with np.errstate(invalid="ignore"):
            tie = np.abs(pre - np.trunc(pre)) == 0.5
            inside = (pre > t.lowest) & (pre < t.highest)
        ok |= tie & inside & ((got == np.floor(pre)) | (got == np.ceil(pre)))
    elif t.name.startswith("f8"):
        ok |= _same(got, _f8_window(t, pre, expect))
    return ok


def _f8_window(t: TypeInfo, pre, expect):
    """benchdnn's fp8 rounding window: where ``pre`` lies within 2^-7 of an f8
    step of the midpoint between two f8 values (where rounding through f16
    first can land on the other one), the other neighbour; NaN elsewhere."""
    values, _ = t.minifloat._positive
    a = np.abs(pre)
    hi = np.clip(np.searchsorted(values, a), 1, values.size - 1)
    lo_v, hi_v = values[hi - 1], values[hi]
    mid = (lo_v + hi_v) / 2
    near = np.abs(a - mid) <= (hi_v - lo_v) * 2.0**-7
    other = np.where(np.abs(expect) == lo_v, hi_v, lo_v) * np.sign(pre)
    return np.where(near & np.isfinite(pre), other, np.nan)


# -- the check ---------------------------------------------------------------------------

@dataclass
class Verdict:
    wrong: int = 0
    checked: int = 0
    zeros: int = 0
    zero_trust: float = 0.5
    details: list = field(default_factory=list)

    def note(self, text, limit):
        if len(self.details) < limit:
            self.details.append(text)


def _describe(index, pos):
    return "(" + ",".join(str(int(i[pos])) for i in index) + ")"


def _compensation_offset(case: Case, verdict: Verdict, limit) -> int:
    """Where the compensation values start: clayout's offset, which must be the
    end of the elements (DESIGN.md), or that rounded up to 4 bytes (oneDNN's
    alignment of the s32 values)."""
    data = case.dst.data_nbytes
    offset = case.dst.md.compensation_offset
    if offset not in (data, -(-data // 4) * 4):
        verdict.wrong += 1
        verdict.note(f"clayout's compensation_offset of dst is {offset}; the elements end "
                     f"at byte {data}", limit)
        return data
    return offset


def check(case: Case, got_raw: np.ndarray, limit: int = SHOWN) -> Verdict:
    """Compare the destination buffer after the primitive with the reference."""
    t, layout = case.dst.type, case.dst.layout
    got = units_of(got_raw, t)
    covered = np.zeros(got.size, bool)
    verdict = Verdict(zero_trust=MISTRUST_ZERO_RATIO[case.problem.driver])
    comp = Compensation(case) if case.dst.compensation else None
    end = case.dst.nbytes
    if comp is not None:
        comp.offset = _compensation_offset(case, verdict, limit)
        end = comp.offset + case.dst.compensation_nbytes
    if case.dst.md.size != end:
        verdict.wrong += 1
        verdict.note(f"clayout's size of dst is {case.dst.md.size} bytes; the driver's layout says "
                     f"{end}", limit)
    for _, index in chunks(layout.padded):
        offsets = layout.offsets(index)
        covered[offsets] = True
        real = np.logical_and.reduce([i < n for i, n in zip(index, case.dims)]) \
            if layout.has_padding else np.ones(offsets.size, bool)
        pad = offsets[~real]
        if pad.size:
            bad = got[pad] != 0
            verdict.wrong += int(bad.sum())
            for pos in np.flatnonzero(bad)[:limit]:
                verdict.note(f"padding at {_describe([i[~real] for i in index], pos)} is "
                             f"{int(got[pad[pos]]):#x}, not 0", limit)
        index = tuple(i[real] for i in index)
        flat = np.ravel_multi_index(index, case.dims) if index[0].size else index[0]
        held = _check_elements(case, got[offsets[real]], flat, index, verdict, limit)
        if comp is not None:
            comp.add(index, held)
    if comp is not None:
        span = slice(comp.offset, comp.offset + case.dst.compensation_nbytes)
        covered[span] = True   # s8 destination: a unit is a byte
        comp.compare(got_raw[span], verdict, limit)
    outside = np.flatnonzero(~covered & (got != all_ones(t)))
    verdict.wrong += outside.size
    for unit in outside[:limit]:
        where = "the guard after the buffer" if unit * t.bits >= end * 8 \
            else "a gap between the destination's elements"
        verdict.note(f"{'nibble' if t.bits == 4 else 'unit'} {int(unit)} in {where} was "
                     f"written ({int(got[unit]):#x})", limit)
    return verdict


class Compensation:
    """The driver's compensation sums, gathered chunk by chunk, and their check."""

    def __init__(self, case: Case):
        self.case = case
        self.offset = case.dst.data_nbytes
        self.shapes = case.dst.compensation_shapes()
        # Sums of the s8 values per slice of each mask, over the logical dims.
        self.sums = {mask: np.zeros(math.prod(n for d, n in enumerate(case.dims)
                                              if mask >> d & 1), np.float64)
                     for _, mask, _ in self.shapes}

    def add(self, index, values: np.ndarray):
        for mask, sums in self.sums.items():
            slot = np.zeros(values.size, np.int64)
            for d, n in enumerate(self.case.dims):
                if mask >> d & 1:
                    slot = slot * n + index[d]
            sums += np.bincount(slot, weights=values, minlength=sums.size)

    def expected(self) -> list:
        """(kind, mask, padded shape, expected s32 values in C order) of each."""
        out = []
        for kind, mask, shape in self.shapes:
            logical = tuple(n for d, n in enumerate(self.case.dims) if mask >> d & 1)
            full = np.zeros(shape, np.int64)
            factor = 128 if kind == "s8s8" else 1
            full[tuple(slice(0, n) for n in logical)] = \
                -factor * self.sums[mask].reshape(logical).astype(np.int64)
            out.append((kind, mask, shape, full.reshape(-1)))
        return out

    def compare(self, raw: np.ndarray, verdict: Verdict, limit):
        got_all = np.ascontiguousarray(raw).view("<i4").astype(np.int64)
        start = 0
        for kind, mask, shape, expect in self.expected():
            got = got_all[start:start + expect.size]
            start += expect.size
            bad = np.flatnonzero(got != expect)
            verdict.wrong += bad.size
            for pos in bad[:max(0, limit - len(verdict.details))]:
                at = ",".join(str(int(i)) for i in np.unravel_index(pos, shape))
                verdict.note(f"{kind} compensation (mask {mask}) at ({at}): got {int(got[pos])}, "
                             f"expected {int(expect[pos])}", limit)


def _check_elements(case: Case, got_bits, flat, index, verdict: Verdict, limit):
    """Check elements; returns their values (float64; bits for a shuffle)
    as held: what was got where it was accepted, else the reference."""
    t = case.dst.type
    if case.shuffle is not None:
        axis, rows, cols = case.shuffle
        j = index[axis]
        source = list(index)
        source[axis] = (j % rows) * cols + j // rows
        src_flat = np.ravel_multi_index(tuple(source), case.dims) if j.size else j
        expect_bits = t.to_bits(source_values(case, src_flat))
        ok = got_bits == expect_bits
        expect, got = expect_bits, got_bits
    elif case.plain_copy:
        expect_bits = t.to_bits(source_values(case, flat))
        ok = got_bits == expect_bits
        expect, got = t.from_bits(expect_bits), t.from_bits(got_bits)
    else:
        got = t.from_bits(got_bits)
        pres = candidates(case, flat, index)
        ok = np.zeros(got.size, bool)
        for pre in pres:
            ok |= accepted(case, pre, got)
        expect = t.quantize(pres[0], case.compute)
    verdict.checked += got.size
    verdict.zeros += int(np.count_nonzero(expect == 0))
    bad = np.flatnonzero(~ok)
    verdict.wrong += bad.size
    for pos in bad[:max(0, limit - len(verdict.details))]:
        verdict.note(f"at {_describe(index, pos)}: got {got[pos]!r}, expected {expect[pos]!r}",
                     limit)
    return np.where(ok, got, expect)


def mistrusted(verdict: Verdict) -> bool:
    return verdict.checked >= 10 and verdict.zeros > verdict.zero_trust * verdict.checked


def host_bytes(case: Case) -> int:
    """Host memory the check needs at its peak (buffers, masks, one chunk)."""
    src, dst = buffer_bytes(case.src), buffer_bytes(case.dst)
    units = dst * 8 // case.dst.type.bits
    nibbles = 2 * (src + dst) if 4 in (case.src.type.bits, case.dst.type.bits) else 0
    chunk = min(math.prod(case.dst.layout.padded), CHUNK) * 160
    return src + 2 * dst + units + nibbles + chunk
