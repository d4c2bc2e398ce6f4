"""Dynamic quantization: the rules of ``Quantize`` and its NumPy path.

The scales (and zero points) are computed from the data, one per group of
elements; a group is what ``Scales(mask=, groups=)`` gives one value: on a
dim in the mask, ``groups`` consecutive indices (1 off the last two dims);
on a dim outside it, the whole dim. All arithmetic is f32, in this order:

1. The group's statistics: ``absmax = max |x|`` (symmetric, MX), or
   ``lo = min(min x, 0)``, ``hi = max(max x, 0)`` (asymmetric: zero stays
   exact). NaN elements are skipped (IEEE fmax / fmin).
2. The scale, in f32:
   - symmetric integer (s8, s4): ``s = absmax / qmax`` (127, 7);
   - symmetric float (f8_e4m3, f8_e5m2, f4_e2m1): ``s = absmax / max_finite``
     (448, 57344, 6);
   - asymmetric (s8, u8, s4, u4): ``s = (hi - lo) / (qmax - qmin)``.
   Then rounded up (toward +inf) to the scale type (f32, bf16, f16), so
   that the group's range still fits the codes (a scale rounded down would
   push the extremes past qmax: with bf16, 255 x 2^-9 is half a step),
   saturating at its largest finite value; a scale that is 0 there (an
   all-zero group, or one too small for the type) is stored as 1.
3. The zero point (asymmetric): ``zp = clamp(rint(qmin - lo / s), qmin, qmax)``
   with the stored scale ``s``.
4. The elements, with the stored scale (so that dequantization, ``(q - zp) * s``,
   uses what quantization used): integers ``q = clamp(rint(x / s) + zp, qmin,
   qmax)`` (zp = 0 symmetric; ``x / s`` an f32 division, rint to nearest even;
   NaN -> the zero code zp); floats ``q = convert(clamp(x / s, -max, max))``
   to nearest even (NaN stays NaN in f8, is 0 in f4_e2m1, which has none).

MX (OCP Microscaling v1.0): one e8m0 scale per 32 consecutive elements of
the last dim. ``shared_exp = floor(log2(absmax)) - emax`` (emax: f8_e4m3 8,
f8_e5m2 15, f4_e2m1 2), clamped to e8m0's [-127, 127] (an all-zero block
gets 2^-127, the smallest); ``X = 2^shared_exp``; ``P = convert(V / X)`` to
nearest even, saturated at the element type's largest normal. MXINT8 (dst
s8): the element is a two's complement int8 with an implicit 2^-6, ``P =
clamp(rint(V / X * 64), -127, 127)``; its stored scale is the equivalent
direct one, ``2^clamp(floor(log2(absmax)) - 6, -127, 127)``, so that every
format dequantizes as ``P * scale``. Non-finite data: NaN is skipped by the
reductions (a NaN element gives NaN in f8, 0 otherwise); an infinity makes
the scale infinite (f32), saturated (bf16, f16) or 2^127 (e8m0), and its
group's values are outside the round-trip promise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..attr import Scales
from ..dtypes import data_type as _data_type
from ..errors import InvalidArgumentError, describe
from ..memory_desc import MemoryDesc

SCHEMES = ("symmetric", "asymmetric", "mx")
#: The integer destinations' code ranges.
INT_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}
#: The largest magnitude a symmetric integer scale maps absmax to.
SYMMETRIC_QMAX = {"s8": 127, "s4": 7}
#: The float elements' largest finite values.
FLOAT_MAX = {"f8_e4m3": 448.0, "f8_e5m2": 57344.0, "f4_e2m1": 6.0}
#: MX: emax of the element type (MXINT8's 6 folds its implicit 2^-6 into the scale).
MX_EMAX = {"f8_e4m3": 8, "f8_e5m2": 15, "f4_e2m1": 2, "s8": 6}
MX_BLOCK = 32
#: What each scheme takes: dst types, scale types.
DST_TYPES = {"symmetric": ("s8", "s4", "f8_e4m3", "f8_e5m2", "f4_e2m1"),
             "asymmetric": ("s8", "u8", "s4", "u4"),
             "mx": ("f8_e4m3", "f8_e5m2", "f4_e2m1", "s8")}
SCALE_TYPES = {"symmetric": ("f32", "bf16", "f16"), "asymmetric": ("f32", "bf16", "f16"),
               "mx": ("e8m0",)}
ZERO_POINT_TYPES = ("s32", "s8", "u8", "s4", "u4")
SRC_TYPES = ("f32", "f16", "bf16")


@dataclass(frozen=True)
class QuantizeSpec:
    """A checked Quantize problem: descriptors, scheme, mask, groups, types,
    and each dim's group extent (how many indices share one value)."""

    src_md: MemoryDesc
    dst_md: MemoryDesc
    scheme: str
    mask: int
    groups: tuple[int, int] | None
    scale_data_type: str
    zero_point_data_type: str | None
    extents: tuple[int, ...]

    @property
    def counts(self) -> tuple[int, ...]:
        """The shape of the scales (and zero points): dims // extents over
        the masked dims, C order; (1,) per tensor."""
        dims = self.src_md.dims
        shape = tuple(dims[d] // self.extents[d] for d in range(len(dims)) if self.mask >> d & 1)
        return shape or (1,)

    @property
    def group_length(self) -> int:
        return math.prod(self.extents)

    def contiguous_groups(self) -> bool:
        """Whether every group is one run of consecutive C-order indices:
        extents 1 on the outer dims, the whole dim on the inner ones."""
        dims, ext = self.src_md.dims, self.extents
        k = next((d for d in range(len(dims)) if ext[d] != 1), len(dims))
        return all(ext[d] == dims[d] for d in range(k + 1, len(dims)))


def _name(value, what, allowed):
    try:
        dt = _data_type(value)
    except InvalidArgumentError:
        dt = None
    if dt is None or dt.name not in allowed:
        raise InvalidArgumentError(f"{what} {describe(value)}: expected one of {', '.join(allowed)}")
    return dt.name


def check_quantize(src_md, dst_data_type, scheme, mask, groups, scale_data_type,
                   zero_point_data_type, dst_md) -> QuantizeSpec:
    """The QuantizeSpec of Quantize's arguments; raises InvalidArgumentError
    naming the value and the rule."""
    if not isinstance(src_md, MemoryDesc) or src_md.format_kind != "blocked":
        raise InvalidArgumentError(f"Quantize src_md {describe(src_md)}: expected a MemoryDesc "
                                   f"with a layout")
    if src_md.is_runtime:
        raise InvalidArgumentError("Quantize: runtime dims are not supported")
    _name(src_md.data_type, "Quantize src_md data_type", SRC_TYPES)
    if scheme not in SCHEMES:
        raise InvalidArgumentError(f"Quantize scheme {describe(scheme)}: expected one of "
                                   f"{', '.join(SCHEMES)}")
    dst = _name(dst_data_type, f"Quantize dst data type for scheme={scheme!r}",
                DST_TYPES[scheme])
    scale = _name(scale_data_type, f"Quantize scale_data_type for scheme={scheme!r}",
                  SCALE_TYPES[scheme])
    if scheme == "asymmetric":
        zp = dst if zero_point_data_type is None else _name(
            zero_point_data_type, "Quantize zero_point_data_type", ZERO_POINT_TYPES)
        lo, hi = INT_RANGE[dst]
        dt = _data_type(zp)
        if dt.min > lo or dt.max < hi:
            raise InvalidArgumentError(
                f"Quantize zero_point_data_type {zp} cannot hold {dst}'s zero points "
                f"{lo}..{hi}")
    elif zero_point_data_type is not None:
        raise InvalidArgumentError(
            f"Quantize zero_point_data_type {describe(zero_point_data_type)}: scheme="
            f"{scheme!r} has no zero points (scheme='asymmetric' has)")
    else:
        zp = None
    dims = src_md.dims
    rule = Scales(mask=mask, groups=groups)
    if scheme == "mx":
        full = (1 << len(dims)) - 1
        if rule.groups != (1, MX_BLOCK) or rule.mask != full:
            raise InvalidArgumentError(
                f"Quantize scheme='mx' with mask {rule.mask:#b} and groups {groups!r}: an MX "
                f"block is {MX_BLOCK} elements along the last dim (mask={full:#b}, "
                f"groups=(1, {MX_BLOCK}))")
    # Scales checks mask and groups as the decompression reorder will.
    rule.check(dims, "src")
    sizes = rule.group_sizes(len(dims))
    extents = tuple(sizes[d] if rule.mask >> d & 1 else dims[d] for d in range(len(dims)))
    if dst_md is None:
        dst_md = MemoryDesc(dims, dst)
    elif not isinstance(dst_md, MemoryDesc) or dst_md.format_kind != "blocked" \
            or dst_md.dims != dims or dst_md.data_type != dst or dst_md.extra is not None:
        raise InvalidArgumentError(
            f"Quantize dst_md {describe(dst_md)}: expected a MemoryDesc of dims {dims!r} "
            f"and type {dst}, with a layout and no extra")
    return QuantizeSpec(src_md, dst_md, scheme, rule.mask, rule.groups, scale, zp, extents)


# -- the NumPy path ------------------------------------------------------------------

def _grouped(x: np.ndarray, extents) -> tuple[np.ndarray, tuple]:
    """``x`` as (groups, group length), groups in C order of the masked
    dims, and what ``_ungrouped`` needs."""
    split = []
    for n, e in zip(x.shape, extents):
        split += [n // e, e]
    ndims = x.ndim
    order = tuple(range(0, 2 * ndims, 2)) + tuple(range(1, 2 * ndims, 2))
    view = x.reshape(split).transpose(order)
    return view.reshape(math.prod(view.shape[:ndims]), -1), (view.shape, order)


def _ungrouped(g: np.ndarray, how) -> np.ndarray:
    shape, order = how
    back = np.argsort(order)
    full = g.reshape(shape).transpose(back)
    dims = tuple(full.shape[2 * i] * full.shape[2 * i + 1] for i in range(len(shape) // 2))
    return full.reshape(dims)


def _stored_scale(s: np.ndarray, scale_dt: str) -> np.ndarray:
    """f32 scales rounded to ``scale_dt`` (saturated; 0 -> 1), as the type's values."""
    dt = _data_type(scale_dt)
    with np.errstate(over="ignore"):
        r = s.astype(dt.numpy)
        below = r.astype(np.float32) < s
        if below.any():  # rounded up: the next value of the type
            r[below] = np.nextafter(r[below], np.array(np.inf, dt.numpy))
    r = np.where(np.isinf(r.astype(np.float32)) & np.isfinite(s), dt.numpy.type(dt.max), r)
    return np.where(r.astype(np.float32) == 0, dt.numpy.type(1), r).astype(dt.numpy)


def quantize(x: np.ndarray, spec: QuantizeSpec):
    """(values, scales, zero points or None) of the logical array ``x``:
    values of shape dims in the dst type's NumPy dtype, scales and zero
    points of shape ``spec.counts`` in theirs."""
    x = np.asarray(x).astype(np.float32)
    g, how = _grouped(x, spec.extents)
    dst = spec.dst_md.data_type
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if spec.scheme == "mx":
            q, scales = _mx(g, dst)
            zp = None
        else:
            q, scales, zp = _scaled(g, spec)
    values = _ungrouped(q, how).astype(spec.dst_md.dtype.numpy)
    scales = scales.reshape(spec.counts)
    if zp is not None:
        zp = zp.reshape(spec.counts).astype(_data_type(spec.zero_point_data_type).numpy)
    return values, scales, zp


def _scaled(g, spec):
    dst = spec.dst_md.data_type
    zero = np.float32(0)
    if spec.scheme == "asymmetric":
        qmin, qmax = INT_RANGE[dst]
        lo = np.fmin.reduce(g, axis=1, initial=zero)
        hi = np.fmax.reduce(g, axis=1, initial=zero)
        s = (hi - lo) / np.float32(qmax - qmin)
    else:
        absmax = np.fmax.reduce(np.abs(g), axis=1, initial=zero)
        top = SYMMETRIC_QMAX.get(dst) or FLOAT_MAX[dst]
        s = absmax / np.float32(top)
    stored = _stored_scale(s.astype(np.float32), spec.scale_data_type)
    s32 = stored.astype(np.float32)[:, None]
    v = g / s32
    if dst in FLOAT_MAX:
        top = np.float32(FLOAT_MAX[dst])
        v = np.where(np.isnan(v), v, np.clip(v, -top, top))
        if dst == "f4_e2m1":
            v = np.where(np.isnan(v), zero, v)
        return v.astype(_data_type(dst).numpy), stored, None
    qmin, qmax = INT_RANGE[dst]
    zp = np.zeros(len(g), np.float32)
    if spec.scheme == "asymmetric":
        zp = np.clip(np.rint(np.float32(qmin) - lo / s32[:, 0]), qmin, qmax)
    q = np.rint(v) + zp[:, None]
    q = np.where(np.isnan(q), zp[:, None], np.clip(q, qmin, qmax))
    return q.astype(np.int32), stored, zp.astype(np.int32) if spec.scheme == "asymmetric" else None


def mx_exponents(absmax: np.ndarray, dst: str) -> np.ndarray:
    """The e8m0 exponent of each block: floor(log2(absmax)) - emax, clamped."""
    e = (absmax.astype(np.float32).view(np.uint32) >> 23 & 0xFF).astype(np.int32) - 127
    return np.clip(e - MX_EMAX[dst], -127, 127)


def _mx(g, dst):
    absmax = np.fmax.reduce(np.abs(g), axis=1, initial=np.float32(0))
    k = mx_exponents(absmax, dst)
    v = np.ldexp(g, -k[:, None]).astype(np.float32)  # exact: a power of two
    if dst == "s8":
        q = np.clip(np.rint(v), -127, 127)
        q = np.where(np.isnan(q), 0, q).astype(np.int32)
    else:
        top = np.float32(FLOAT_MAX[dst])
        q = np.where(np.isnan(v), v, np.clip(v, -top, top))
        if dst == "f4_e2m1":
            q = np.where(np.isnan(q), np.float32(0), q)
        q = q.astype(_data_type(dst).numpy)
    scales = (k + 127).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    return q, scales
