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
        "A layout change without attributes (a bit copy in clayout, DESIGN.md): oneDNN's "
        "simple:any implementation copies bf16 through f32 arithmetic, so -0 becomes +0 "
        "and NaN payloads change."),
    DifferenceClass(
        "onednn_dst_scales_gapped_mask", "clayout",
        "oneDNN defect: destination scales on two dims that are not next to each other "
        "(mask 0b101) are read past their array by its jit reorder (f32 [1..16] as 2x4x2 "
        "with dst scales [1, 2, 4, 8] on dims 0 and 2 gives zeros for the second half)."),
    DifferenceClass(
        "out_of_range_to_integer", "clayout",
        "NaN, an infinity or a value past the s32 range into an integer type: clayout writes "
        "0 for NaN and saturates the rest (DESIGN.md; oneDNN's documentation: saturation); "
        "oneDNN's CPU writes what its conversion through s32 gives (the type's minimum for "
        "NaN, -128 for +inf into s8, 0 for bf16 2^31 into u8)."),
    DifferenceClass(
        "nan_to_f4", "either",
        "NaN into f4_e2m1, a type without NaN: clayout writes +0 (DESIGN.md), oneDNN the "
        "largest value, 6 (the OCP microscaling formats leave it to the implementation)."),
    DifferenceClass(
        "denormals_flushed", "clayout",
        "oneDNN's jit code runs with denormals flushed to zero (inputs and results): a "
        "denormal source, or a result below f32's smallest normal, becomes +-0 there; "
        "clayout keeps gradual underflow, as IEEE 754 does (bf16 9.2e-41 / -1.3: clayout "
        "-9.2e-41, oneDNN -0)."),
    DifferenceClass(
        "s32_rounding_order", "either",
        "s32 values past 2^24 with scales, zero points or a sum: both sides compute in f32 "
        "but in another order (oneDNN subtracts zero points before converting), so the "
        "results part by an f32 ulp or two of the largest operand."),
    DifferenceClass(
        "onednn_masked_zero_points", "clayout",
        "oneDNN defect: its jit reorder applies the first zero point to every element "
        "whatever the mask (u8 [100..107] as 2x4 with src zero points [1, 2, 3, 4] on dim 1 "
        "gives [99..106])."),
    DifferenceClass(
        "dst_scale_reciprocal", "clayout",
        "Destination scales: clayout divides by the scale (DESIGN.md's formula, one "
        "rounding); oneDNN multiplies by its f32 reciprocal, a second rounding that is one "
        "f32 ulp off for most scales that are not powers of 2."),
    DifferenceClass(
        "f8_through_f16", "clayout",
        "f8 destinations: oneDNN's CPU rounds the f32 value to f16 first, then to f8, so a "
        "value just beside a tie of the f8 type rounds the other way (f32 0.937417 to "
        "f8_e5m2: clayout 0.875, oneDNN 1.0); clayout rounds once, as IEEE 754 does."),
    DifferenceClass(
        "exact_integers", "oneDNN",
        "Integer sources with zero points, scales or a sum: oneDNN keeps s32 values exact "
        "where clayout computes in f32 as DESIGN.md says, so values past 2^24 lose their low "
        "bits in clayout (s32 -1907321280 minus a zero point of 10: clayout -1907321344, "
        "oneDNN -1907321290)."),
    DifferenceClass(
        "sum_without_dst_zero_point", "either",
        "A sum with a destination zero point: clayout subtracts zp_dst from the old values "
        "before adding them (DESIGN.md: dst = (s_src(src - zp_src) + beta(old - zp_dst)) / "
        "s_dst + zp_dst); oneDNN adds beta*old as it is (its sum post-op has its own zero "
        "point, and its reorders implement only 0 for it)."),
    DifferenceClass(
        "quantization_tie", "either",
        "An integer destination where the value before rounding lies within one f32 ulp of "
        "a .5 boundary: the order of the f32 operations decides the side (the reference "
        "accepts either)."),
    DifferenceClass(
        "onednn_narrow_scales", "clayout",
        "oneDNN defect: scales stored as f16 or bf16 reach oneDNN's CPU reorder "
        "implementation simple:any as garbage for some masks (f32 [1, 2, 3, 4] with one f16 "
        "src scale 0.5 gives values near 1e19)."),
    DifferenceClass(
        "onednn_4bit_destination", "clayout",
        "oneDNN defect: 4-bit destinations (s4, u4, f4_e2m1) from other than f32 sources, "
        "and some f32 transposes, are written wrong by oneDNN's CPU (s8 [1, 2, 3, 4] to s4 "
        "gives zeros through jit_direct_copy)."),
)}


def _flushed(x):
    """x with the f32 denormals (and smaller) flushed to zero, sign kept."""
    return np.where(np.abs(x) < 2.0 ** -126, np.copysign(0, x), x).astype(x.dtype)


def _model(case, values, old, attrs, *, reciprocal=False, through_f16=False, exact=False,
           sum_plain=False, first_zero_point=False, flush=False):
    """oneDNN's result by a model of its rules (the flags, each a class
    above) for every element: DESIGN.md's formula where no flag is set."""
    sdt, ddt = case.sdt, case.ddt
    ct = np.float64 if exact or "f64" in (sdt, ddt) else np.float32
    if first_zero_point:
        attrs = {k: (np.full_like(v, v.reshape(-1)[0]) if "zero_point" in k else v)
                 for k, v in attrs.items()}
    with np.errstate(all="ignore"):
        x = np.asarray(values).astype(np.float64).astype(ct)
        if flush:
            x = _flushed(x)
        if "src_zero_point" in attrs:
            x = x - attrs["src_zero_point"].astype(ct)
        if "src_scales" in attrs:
            x = attrs["src_scales"].astype(np.float32).astype(ct) * x
        if case.sum_beta is not None:
            o = np.asarray(old).astype(np.float64).astype(ct)
            if "dst_zero_point" in attrs and not sum_plain:
                o = o - attrs["dst_zero_point"].astype(ct)
            x = x + ct(np.float32(case.sum_beta)) * o
        if "dst_scales" in attrs:
            s = attrs["dst_scales"].astype(np.float32)
            x = x * (np.float32(1) / s).astype(ct) if reciprocal else x / s.astype(ct)
        if "dst_zero_point" in attrs:
            x = x + attrs["dst_zero_point"].astype(ct)
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
         "onednn_masked_zero_points": "first_zero_point", "denormals_flushed": "flush"}


def _applicable_flags(case):
    out = []
    if case.dst_scales is not None:
        out.append("dst_scale_reciprocal")
    if case.ddt.startswith("f8"):
        out.append("f8_through_f16")
    if "s32" in (case.sdt, case.ddt) and case.has_attr:
        out.append("exact_integers")
    if case.sum_beta is not None and case.dst_zero_point is not None:
        out.append("sum_without_dst_zero_point")
    if any(v is not None and v.mask for v in (case.src_zero_point, case.dst_zero_point)):
        out.append("onednn_masked_zero_points")
    if case.sdt not in INTS or case.ddt not in INTS:
        out.append("denormals_flushed")
    return out


def _same(a, b):
    """Element by element: the same bits, or both NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "V" or b.dtype != a.dtype:
        b = b.astype(a.dtype)
    bits_a, bits_b = ref.bits_of(a), ref.bits_of(b)
    same = bits_a == bits_b
    if a.dtype.kind not in "iu" and a.dtype not in (np.dtype(ref.NP["s4"]), np.dtype(ref.NP["u4"])):
        with np.errstate(invalid="ignore"):
            same |= np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
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
    problem = run.problem
    case, expect = problem.case, problem.expect
    a, b = run.clayout, run.onednn
    if np.array_equal(a, b):
        return Comparison({}, [])
    counts, unexplained = {}, []
    ddt = case.ddt
    at = expect.dst_at.reshape(-1)
    # Bytes outside the elements (padding, gaps, a window's parent).
    inside = np.zeros(a.size, bool)
    width = 1 if ddt in NIBBLES else ref.itemsize(ddt)
    byte_at = (at // 2) if ddt in NIBBLES else at
    for k in range(width):
        inside[byte_at * width + k if ddt not in NIBBLES else byte_at] = True
    outside = np.nonzero((a != b) & ~inside)[0]
    if outside.size:
        unexplained.append(f"{outside.size} bytes outside the elements differ (first at byte "
                           f"{outside[0]}: clayout {a[outside[0]]}, oneDNN {b[outside[0]]})")
    got_a, got_b = load(a, at, ddt), load(b, at, ddt)
    bits_differ = ref.bits_of(np.asarray(got_a)) != ref.bits_of(np.asarray(got_b))
    left = np.nonzero(bits_differ.reshape(-1))[0]
    if left.size == 0:
        return Comparison(counts, unexplained)
    flat_a, flat_b = np.asarray(got_a).reshape(-1), np.asarray(got_b).reshape(-1)

    def take(name, mask):
        nonlocal left
        if mask.any():
            counts[name] = counts.get(name, 0) + int(mask.sum())
            left = left[~mask]

    if case.kind == "shuffle":
        pass  # bit copies: every difference is unexplained
    elif case.sdt == ddt and not case.has_attr:  # a bit copy in clayout
        if run.onednn_impl.startswith("simple") and ddt in ("bf16", "f16", "f8_e5m2", "f8_e4m3"):
            with np.errstate(invalid="ignore"):
                fa, fb = flat_a[left].astype(np.float64), flat_b[left].astype(np.float64)
                take("onednn_copy_not_bitwise", ((fa == 0) & (fb == 0))
                     | (np.isnan(fa) & np.isnan(fb)))
    else:
        a_left, b_left = flat_a[left], flat_b[left]
        with np.errstate(invalid="ignore"):
            if ddt not in INTS and ddt != "f4_e2m1":
                fa, fb = a_left.astype(np.float64), b_left.astype(np.float64)
                take("nan_payload", np.isnan(fa) & np.isnan(fb))
                fa, fb = flat_a[left].astype(np.float64), flat_b[left].astype(np.float64)
                take("signed_zero", (fa == 0) & (fb == 0))
            src = np.asarray(expect.values).reshape(-1).astype(np.float64)
            pre = expect.pre
            if ddt == "f4_e2m1":
                src_nan = np.isnan(src[left])
                if pre is not None:
                    src_nan |= np.isnan(np.broadcast_to(pre, case.dims).reshape(-1)[left]
                                        .astype(np.float64))
                take("nan_to_f4", src_nan)
            if ddt in INTS:
                beyond = ~(np.abs(src[left]) < 2.0 ** 31)
                if pre is not None:
                    beyond |= ~(np.abs(np.broadcast_to(pre, case.dims).reshape(-1)[left]
                                       .astype(np.float64)) < 2.0 ** 31)
                take("out_of_range_to_integer", beyond)
        if left.size:
            _by_models(case, expect, flat_b, left, take)
        if left.size and ddt in INTS and expect.pre is not None:
            p = np.broadcast_to(expect.pre, case.dims).reshape(-1)[left].astype(np.float64)
            frac = np.abs(p - np.floor(p) - 0.5)
            ulp = np.abs(np.spacing(np.float32(p))).astype(np.float64)
            near = (np.abs(flat_a[left].astype(np.int64) - flat_b[left].astype(np.int64)) == 1) \
                & (frac <= ulp)
            take("quantization_tie", near)
        if left.size and "s32" in (case.sdt, ddt) and case.has_attr and expect.pre is not None:
            take("s32_rounding_order", _within_f32_ulps(case, expect, flat_a, flat_b, left))
        if left.size and case.dst_scales is not None and _gapped(case.dst_scales.mask):
            take("onednn_dst_scales_gapped_mask", np.ones(left.size, bool))
        if left.size and any(getattr(case, n) is not None and getattr(case, n).data_type
                             for n in ("src_scales", "dst_scales")) \
                and run.onednn_impl.startswith("simple"):
            take("onednn_narrow_scales", np.ones(left.size, bool))
        if left.size and ddt in NIBBLES and (case.sdt != "f32"
                                             or case.src.tag != case.dst_layout.tag):
            take("onednn_4bit_destination", np.ones(left.size, bool))
    for k in left[:6]:
        src = expect.values.reshape(-1)[k] if case.kind == "reorder" else "-"
        unexplained.append(f"element {k}: src {src}, clayout {flat_a[k]}, oneDNN {flat_b[k]}")
    if left.size > 6:
        unexplained.append(f"... {left.size} elements unexplained in all")
    return Comparison(counts, unexplained)


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
            hit = ~found & _same(model, flat_b[left])
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
