"""Where clayout's bytes and oneDNN's may differ, and why: the named
difference classes of the differential suite (tests/test_onednn.py), and
the comparison that sorts each differing element into one of them.

A class explains an element where it is the reason the two results part:
either a oneDNN *behaviour* (a rule of its own, different from the formula
DESIGN.md gives clayout) that a model of it reproduces, value for value, or
a oneDNN *defect* (a wrong result, shown by a minimal reproducer in
tests/test_onednn.py that fails once oneDNN is mended). clayout's own result
is checked against tests/reference.py first: a class never excuses clayout.
A difference no class explains fails the suite, so a new kind shows up.

docs/onednn.md is the users' page of this table.
"""
import dataclasses
import itertools

import numpy as np

import reference as ref
from sweep_cases import INTS, NIBBLES
from sweep_check import _attr_arrays, load, round_small


@dataclasses.dataclass(frozen=True)
class DifferenceClass:
    """One named reason for a difference. ``right``: which side follows the
    rule it should (IEEE 754, DESIGN.md, or oneDNN's documentation)."""
    name: str
    right: str
    reason: str


CLASSES = {c.name: c for c in (
    DifferenceClass(
        "nan_payload", "either",
        "Both sides write a NaN, with other payload bits: a conversion's NaN may carry any "
        "payload (IEEE 754 leaves it open); oneDNN sets the quiet bit and more, clayout keeps "
        "the bits its conversion gives. Bit copies (no conversion) keep payloads on both."),
    DifferenceClass(
        "signed_zero", "clayout",
        "Both write zero, with other signs: IEEE 754 keeps the sign of a zero through "
        "products and quotients and gives -0 for (-0) + (-0), which clayout writes; "
        "oneDNN's simple:any implementation writes +0 there."),
    DifferenceClass(
        "onednn_copy_not_bitwise", "clayout",
        "A layout change without attributes (a bit copy in clayout, DESIGN.md): oneDNN "
        "copies f32, f16, bf16, f8 and s32 values through f32 arithmetic (simple:any, "
        "jit_direct_copy), so s32 values past 2^24 lose their low bits, "
        "signalling NaNs come out quiet and, in simple:any, -0 becomes +0 and denormals "
        "become zero."),
    DifferenceClass(
        "onednn_zero_points_dropped", "clayout",
        "oneDNN defect: some of its jit reorders leave zero points out altogether (s32 8x8 "
        "ab into Ab8a with a src zero point of 11 copies the values unchanged)."),
    DifferenceClass(
        "onednn_s32_zero_point_wraps", "clayout",
        "oneDNN defect: an s32 source minus its zero point is computed in s32 and wraps "
        "around (2147483647 with a zero point of -2 becomes -2147483647); clayout computes "
        "in f32 (DESIGN.md)."),
    DifferenceClass(
        "onednn_4bit_simple_any", "clayout",
        "oneDNN defect: its simple:any implementation converts some 4-bit sources and "
        "destinations wrong (u4 1 into bf16 becomes -5.97e26) and writes past the "
        "destination: into a window's parent, or past the buffer's end (u4 12x1 into a "
        "bf16 window of 12 in a parent of 15)."),
    DifferenceClass(
        "onednn_f8_direct_copy_writes_past", "clayout",
        "oneDNN defect: its jit_direct_copy of an f8 tensor writes past the end of the "
        "destination buffer (f8_e5m2 10x1x16 cBa4b to the same: 12 bytes past it; in a "
        "buffer of its own, that corrupts the heap and aborts the process), and in some "
        "runs wrong values inside it (16x1x16 cBa4b: zeros at c = 8, seen in CI on a "
        "Xeon). Where oneDNN's ISA is avx512_core_bf16 (an AMD EPYC) it picks simple:any "
        "for these instead, which copies right."),
    DifferenceClass(
        "onednn_direct_copy_of_windows", "clayout",
        "oneDNN defect: its jit_direct_copy copies a window of a blocked layout as if it "
        "were the whole tensor: wrong values, and bytes of the parent outside the window "
        "written (f32 3x1x23 Bac4b window of 8x9x26 at (2, 8, 2) to the same)."),
    DifferenceClass(
        "onednn_gapped_scale_mask", "clayout",
        "oneDNN defect: scales on two dims that are not next to each other (mask 0b101) are "
        "read past their array by its jit reorder (f32 [1..16] as 2x4x2 with dst scales "
        "[1, 2, 4, 8] on dims 0 and 2 gives zeros for the second half)."),
    DifferenceClass(
        "onednn_negative_zero_padding", "clayout",
        "oneDNN defect: with a negative scale its jit reorder writes -0 (the sign bit alone) "
        "into the destination's padding, which must be zero bytes (DESIGN.md; oneDNN keeps "
        "padding zero)."),
    DifferenceClass(
        "onednn_f8_sum_dropped", "clayout",
        "oneDNN defect: its jit reorder into an f8 type leaves the sum out for the last "
        "elements of its loop (the tail: 37 of 546 dense ones) and for every element when "
        "the destination's strides have gaps (f32 ones plus a sum of 1.0 over old f8 ones "
        "give 1.0 there, not 2.0)."),
    DifferenceClass(
        "onednn_narrow_scales", "clayout",
        "oneDNN defect: scales stored as f16 or bf16 reach oneDNN's CPU reorder "
        "implementation simple:any as garbage for some masks (f32 [1, 2, 3, 4] with one f16 "
        "src scale 0.5 gives values near 1e19)."),
    DifferenceClass(
        "onednn_4bit_destination", "clayout",
        "oneDNN defect: 4-bit destinations (s4, u4, f4_e2m1) from other than f32 sources, "
        "and some f32 transposes, are written wrong by oneDNN's CPU (s8 [1, 2, 3, 4] to s4 "
        "gives zeros through jit_direct_copy); with gaps between the destination's strides "
        "it zeroes bytes of the gaps too."),
)}


def _flushed(x):
    """x with the f32 denormals (and smaller) flushed to zero, sign kept."""
    return np.where(np.abs(x) < 2.0 ** -126, np.copysign(0, x), x).astype(x.dtype)


def _model(case, values, old, attrs, *, reciprocal=False, through_f16=False, exact=False,
           sum_plain=False, first_zero_point=False, flush=False, drop_sum=False,
           drop_zero_points=False, wrap=False):
    """oneDNN's result by a model of its rules (the flags, each a class
    above) for every element: DESIGN.md's formula where no flag is set."""
    sdt, ddt = case.sdt, case.ddt
    ct = np.float64 if exact or "f64" in (sdt, ddt) else np.float32
    if first_zero_point:
        attrs = {k: (np.full_like(v, v.reshape(-1)[0]) if "zero_point" in k else v)
                 for k, v in attrs.items()}
    if drop_zero_points:
        attrs = {k: v for k, v in attrs.items() if "zero_point" not in k}
    with np.errstate(all="ignore"):
        x = np.asarray(values).astype(np.float64).astype(ct)
        if flush:
            x = _flushed(x)
        if wrap and "src_zero_points" in attrs:  # s32 arithmetic, wrapping around
            x = (np.asarray(values).astype(np.int64) - attrs["src_zero_points"]).astype(
                np.int32).astype(ct)
        elif "src_zero_points" in attrs:
            x = x - attrs["src_zero_points"].astype(ct)
        if "src_scales" in attrs:
            x = attrs["src_scales"].astype(np.float32).astype(ct) * x
        if case.sum_beta is not None and not drop_sum:
            o = np.asarray(old).astype(np.float64).astype(ct)
            if "dst_zero_points" in attrs and not sum_plain:
                o = o - attrs["dst_zero_points"].astype(ct)
            x = x + ct(np.float32(case.sum_beta)) * o
        if "dst_scales" in attrs:
            s = attrs["dst_scales"].astype(np.float32)
            x = x * (np.float32(1) / s).astype(ct) if reciprocal else x / s.astype(ct)
        if "dst_zero_points" in attrs:
            x = x + attrs["dst_zero_points"].astype(ct)
        x = np.broadcast_to(x, case.dims).astype(ct)
        if flush:
            x = _flushed(x)
        if ddt in INTS:
            return ref.to_int(x, ddt, ct)
        if ddt in ("f8_e4m3", "f4_e2m1"):
            return round_small(ref.round_float(x, "f16").astype(np.float64) if through_f16
                               else x, ddt)
        if ddt == "f8_e5m2" and through_f16:
            x = ref.round_float(x, "f16").astype(np.float64)
        return ref.round_float(x, ddt)


#: The model's flags, by the class each stands for.
FLAGS = {"dst_scale_reciprocal": "reciprocal", "f8_through_f16": "through_f16",
         "exact_integers": "exact", "sum_without_dst_zero_point": "sum_plain",
         "onednn_masked_zero_points": "first_zero_point", "denormals_flushed": "flush",
         "onednn_f8_sum_dropped": "drop_sum", "onednn_zero_points_dropped": "drop_zero_points",
         "onednn_s32_zero_point_wraps": "wrap"}


def _applicable_flags(case):
    out = []
    if case.dst_scales is not None:
        out.append("dst_scale_reciprocal")
    if case.ddt.startswith("f8"):
        out.append("f8_through_f16")
    if "s32" in (case.sdt, case.ddt) and case.has_attr:
        out.append("exact_integers")
    if case.sum_beta is not None and case.dst_zero_points is not None:
        out.append("sum_without_dst_zero_point")
    if any(v is not None and v.mask for v in (case.src_zero_points, case.dst_zero_points)):
        out.append("onednn_masked_zero_points")
    if case.src_zero_points is not None or case.dst_zero_points is not None:
        out.append("onednn_zero_points_dropped")
    if case.sdt == "s32" and case.src_zero_points is not None:
        out.append("onednn_s32_zero_point_wraps")
    if case.sdt not in INTS or case.ddt not in INTS:
        out.append("denormals_flushed")
    if case.sum_beta is not None and case.ddt.startswith("f8"):
        out.append("onednn_f8_sum_dropped")
    return out


def _same(a, b, zero_sign=True):
    """Element by element: the same bits, or both NaN (or both zero, when
    ``zero_sign`` is False: the sign of a zero is signed_zero's class)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "V" or b.dtype != a.dtype:
        b = b.astype(a.dtype)
    bits_a, bits_b = ref.bits_of(a), ref.bits_of(b)
    same = bits_a == bits_b
    if a.dtype.kind not in "iu" and a.dtype not in (np.dtype(ref.NP["s4"]), np.dtype(ref.NP["u4"])):
        with np.errstate(invalid="ignore"):
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            same |= np.isnan(fa) & np.isnan(fb)
            if not zero_sign:
                same |= (fa == 0) & (fb == 0)
    return same


@dataclasses.dataclass
class Comparison:
    """The differences of one problem: element counts by class, and what no
    class explains (a list of lines)."""
    classes: dict
    unexplained: list

    @property
    def equal(self):
        return not self.classes and not self.unexplained


def compare(run):
    """Sort every byte where ``run``'s two destination buffers differ (a
    tests/onednn_runs.py Run) into the classes above."""
    case, expect = run.problem.case, run.problem.expect
    a, b = run.clayout, run.onednn
    counts, unexplained = {}, []
    if run.onednn_past:
        name = _past_the_end_class(case, run)
        if name:
            counts[name] = 1
        else:
            unexplained.append(f"oneDNN wrote {run.onednn_past} bytes past the destination "
                               f"buffer")
    if np.array_equal(a, b):
        return Comparison(counts, unexplained)
    at = expect.dst_at.reshape(-1)
    inside = _element_bytes(case.ddt, at, a.size)
    outside = np.nonzero((a != b) & ~inside)[0]
    if outside.size:
        name = _outside_class(case, run, expect, a, b, inside)
        if name:
            counts[name] = 1
        else:
            unexplained.append(f"{outside.size} bytes outside the elements differ (first at "
                               f"byte {outside[0]}: clayout {a[outside[0]]}, oneDNN "
                               f"{b[outside[0]]})")
    elements = _Elements(run, counts)
    if elements.left.size:
        if case.kind == "shuffle":
            pass  # bit copies: every difference is unexplained
        elif _direct_copy_of_window(case, run):
            elements.take("onednn_direct_copy_of_windows", elements.every())
        elif "onednn_f8_direct_copy_writes_past" in counts:
            # A copy that writes past its buffer is not trusted inside it.
            elements.take("onednn_f8_direct_copy_writes_past", elements.every())
        elif case.sdt == case.ddt and not case.has_attr:
            _sort_bit_copy(elements, case.ddt)
        else:
            _sort_conversion(elements, case, expect, run)
    left, flat_a, flat_b = elements.left, elements.a, elements.b
    for k in left[:6]:
        src = expect.values.reshape(-1)[k] if case.kind == "reorder" else "-"
        unexplained.append(f"element {k}: src {src}, clayout {flat_a[k]}, oneDNN {flat_b[k]}")
    if left.size > 6:
        unexplained.append(f"... {left.size} elements unexplained in all")
    return Comparison(counts, unexplained)


class _Elements:
    """The destination's elements on both sides (``a`` clayout's, ``b``
    oneDNN's, flat), the indices of those still unexplained (``left``), and
    the counts by class; `take` moves elements from ``left`` to a class."""

    def __init__(self, run, counts):
        expect, ddt = run.problem.expect, run.problem.case.ddt
        at = expect.dst_at.reshape(-1)
        self.a = np.asarray(load(run.clayout, at, ddt)).reshape(-1)
        self.b = np.asarray(load(run.onednn, at, ddt)).reshape(-1)
        self.left = np.nonzero(ref.bits_of(self.a) != ref.bits_of(self.b))[0]
        self.counts = counts

    def every(self):
        return np.ones(self.left.size, bool)

    def floats(self):
        """The elements left, both sides, as f64."""
        with np.errstate(invalid="ignore"):
            return self.a[self.left].astype(np.float64), self.b[self.left].astype(np.float64)

    def take(self, name, mask):
        """Count the elements left where ``mask`` holds under ``name``."""
        if mask.any():
            self.counts[name] = self.counts.get(name, 0) + int(mask.sum())
            self.left = self.left[~mask]


def _element_bytes(ddt, at, size):
    """A mask of the ``size`` buffer bytes that hold elements (at ``at``)."""
    inside = np.zeros(size, bool)
    if ddt in NIBBLES:
        inside[at // 2] = True
        return inside
    width = ref.itemsize(ddt)
    for k in range(width):
        inside[at * width + k] = True
    return inside


def _past_the_end_class(case, run):
    """The class of oneDNN's writes past the destination buffer, or None."""
    if _nibble_defect(case, run) == "onednn_4bit_simple_any":
        return "onednn_4bit_simple_any"
    if case.ddt.startswith("f8") and run.onednn_impl.startswith("jit_direct_copy"):
        return "onednn_f8_direct_copy_writes_past"
    return None


def _outside_class(case, run, expect, a, b, inside):
    """The class of oneDNN's writes to bytes outside the elements (padding,
    gaps, a window's parent), or None."""
    if _negative_zero_padding(case, expect, a, b, inside):
        return "onednn_negative_zero_padding"
    if any(v is not None and _gapped(v.mask) for v in (case.src_scales, case.dst_scales)):
        return "onednn_gapped_scale_mask"  # (scales read past their array reach padding)
    if _direct_copy_of_window(case, run):
        return "onednn_direct_copy_of_windows"
    return _nibble_defect(case, run)


def _sort_bit_copy(elements, ddt):
    """A layout change clayout copies bit for bit: oneDNN's goes through f32."""
    if ddt == "s32":
        a = elements.a[elements.left].astype(np.int64)
        through_f32 = np.minimum(a.astype(np.float32).astype(np.float64),
                                 ref.S32_MAX_FROM_F32).astype(np.int64)
        elements.take("onednn_copy_not_bitwise",
                      elements.b[elements.left].astype(np.int64) == through_f32)
    if ddt in ("f32", "bf16", "f16", "f8_e5m2", "f8_e4m3"):
        fa, fb = elements.floats()
        elements.take("onednn_copy_not_bitwise",
                      ((fb == 0) & (np.abs(fa) < 2.0 ** -126)) | (np.isnan(fa) & np.isnan(fb)))


def _before_rounding(expect, case, left):
    """The source values and the values before the final rounding (or the
    source's again where there is none) of the elements ``left``, as f64."""
    src = np.asarray(expect.values).reshape(-1)[left].astype(np.float64)
    if expect.pre is None:
        return src, src
    return src, np.broadcast_to(expect.pre, case.dims).reshape(-1)[left].astype(np.float64)


def _sort_conversion(elements, case, expect, run):
    """A conversion (types or attributes): value rules first, then models of
    oneDNN's arithmetic, then its defects that spoil whole problems."""
    ddt = case.ddt
    with np.errstate(invalid="ignore"):
        if ddt not in INTS and ddt != "f4_e2m1":
            fa, fb = elements.floats()
            elements.take("nan_payload", np.isnan(fa) & np.isnan(fb))
            fa, fb = elements.floats()
            elements.take("signed_zero", (fa == 0) & (fb == 0))
        src, pre = _before_rounding(expect, case, elements.left)
        if ddt == "f4_e2m1":
            elements.take("nan_to_f4", np.isnan(src) | np.isnan(pre))
        if ddt in INTS:
            elements.take("out_of_range_to_integer",
                          ~(np.abs(src) < 2.0 ** 31) | ~(np.abs(pre) < 2.0 ** 31))
    if elements.left.size:
        _by_models(case, expect, elements.b, elements.left, elements.take)
    if elements.left.size and ddt in INTS and expect.pre is not None:
        _, p = _before_rounding(expect, case, elements.left)
        frac = np.abs(p - np.floor(p) - 0.5)
        ulp = np.abs(np.spacing(np.float32(p))).astype(np.float64)
        apart = np.abs(elements.a[elements.left].astype(np.int64)
                       - elements.b[elements.left].astype(np.int64))
        elements.take("quantization_tie", (apart == 1) & (frac <= ulp))
    if elements.left.size and "s32" in (case.sdt, ddt) and case.has_attr \
            and expect.pre is not None:
        elements.take("s32_rounding_order", _within_f32_ulps(
            case, expect, elements.a, elements.b, elements.left))
    for name in _whole_problem_defects(case, run):
        if elements.left.size:
            elements.take(name, elements.every())


def _whole_problem_defects(case, run):
    """The oneDNN defects that spoil every element of this problem (each
    with its reproducer in tests/test_onednn.py)."""
    out = []
    simple = run.onednn_impl.startswith("simple")
    if simple and any(v is not None and v.mask
                      for v in (case.src_zero_points, case.dst_zero_points)):
        out.append("onednn_masked_zero_points")
    if any(v is not None and _gapped(v.mask) for v in (case.src_scales, case.dst_scales)):
        out.append("onednn_gapped_scale_mask")
    if simple and any(v is not None and v.data_type for v in (case.src_scales, case.dst_scales)):
        out.append("onednn_narrow_scales")
    if _nibble_defect(case, run):
        out.append(_nibble_defect(case, run))
    return out


def _by_models(case, expect, flat_b, left, take):
    """Elements whose oneDNN value a model with some of the flags gives:
    counted under each flag of the smallest set that does."""
    flags = _applicable_flags(case)
    if not flags:
        return
    attrs = _attr_arrays(case)
    found = np.zeros(left.size, bool)
    named = [None] * left.size
    for size in range(1, len(flags) + 1):
        for chosen in itertools.combinations(flags, size):
            model = _model(case, expect.values, expect.old, attrs,
                           **{FLAGS[f]: True for f in chosen}).reshape(-1)[left]
            hit = ~found & _same(model, flat_b[left], zero_sign=False)
            for i in np.nonzero(hit)[0]:
                named[i] = chosen
            found |= hit
    for chosen in {c for c in named if c is not None}:
        mask = np.array([c == chosen for c in named])
        take("+".join(chosen), mask)
        named = [c for c, m in zip(named, mask) if not m]


def _within_f32_ulps(case, expect, flat_a, flat_b, left):
    """Elements where the two results part by at most two f32 ulps of the
    largest operand of the formula (the scaled source, the scaled old value,
    the value before rounding)."""
    attrs = _attr_arrays(case)
    with np.errstate(all="ignore"):
        big = np.abs(np.asarray(expect.values).astype(np.float64))
        if "src_scales" in attrs:
            big = big * np.abs(attrs["src_scales"].astype(np.float64))
        big = np.maximum(np.broadcast_to(big, case.dims),
                         np.abs(np.broadcast_to(expect.pre, case.dims).astype(np.float64)))
        if case.sum_beta is not None:
            big = np.maximum(big, abs(case.sum_beta) * np.abs(
                np.asarray(expect.old).astype(np.float64)))
        big = big.reshape(-1)[left]
        ulp = np.abs(np.spacing(big.astype(np.float32))).astype(np.float64)
        gap = np.abs(flat_a[left].astype(np.float64) - flat_b[left].astype(np.float64))
        return (gap <= 2 * ulp) & (big >= 2.0 ** 24)


def _gapped(mask):
    """Whether the set bits of ``mask`` are not one run (0b101 is, 0b110 is not)."""
    low = mask & -mask
    return mask != 0 and (mask + low) & mask != 0


def _negative_zero_padding(case, expect, a, b, inside):
    """Whether oneDNN wrote -0 where clayout wrote zero bytes, in the
    destination's padding only, with a negative scale."""
    ddt = case.ddt
    if ddt in INTS or ddt in NIBBLES or not any(
            v is not None and min(v.values) < 0 for v in (case.src_scales, case.dst_scales)):
        return False
    width = ref.itemsize(ddt)
    pad = np.zeros(a.size, bool)
    for k in range(width):
        pad[expect.dst_pad * width + k] = True
    if np.any((a != b) & ~pad & ~inside):
        return False
    unit = ref.UINT[width]
    sign = unit(1 << (8 * width - 1))
    at = expect.dst_pad
    got_a, got_b = a.view(unit)[at], b.view(unit)[at]
    return bool(np.all((got_a == 0) & ((got_b == 0) | (got_b == sign))))


def _nibble_defect(case, run):
    """The 4-bit defect class this problem falls in, or None."""
    if {case.sdt, case.ddt} & set(NIBBLES) and run.onednn_impl.startswith("simple"):
        return "onednn_4bit_simple_any"
    if case.ddt in NIBBLES and (case.sdt != "f32" or case.src.tag != case.dst_layout.tag):
        return "onednn_4bit_destination"
    return None


def _direct_copy_of_window(case, run):
    """Whether oneDNN's jit_direct_copy ran with a window on either side."""
    return run.onednn_impl.startswith("jit_direct_copy") and (
        case.src.parent is not None or case.dst_layout.parent is not None)
