"""The NumPy reorder (and shuffle): gather the source, convert, scatter into the destination."""
from __future__ import annotations

import numpy as np

from ..attr import Attr
from ..dtypes import DataType
from ..memory_desc import MemoryDesc
from .layout import gather, scatter

# The largest f32 below 2^31: f32 -> s32 saturates here, not at INT_MAX.
S32_MAX_FROM_F32 = 2147483520.0


def compute_dtype(src: DataType, dst: DataType):
    """f64 where either side is f64, else f32."""
    return np.float64 if "f64" in (src.name, dst.name) else np.float32


def _per_slice(values, mask, ndims, dims):
    """Values of a Scales/ZeroPoints shaped to broadcast over a tensor of ``dims``."""
    shape = [dims[d] if mask >> d & 1 else 1 for d in range(ndims)]
    return values.reshape(shape)


def f64_to_bf16(values: np.ndarray) -> np.ndarray:
    """Round f64 to bf16 once: via f32 rounded to odd, which cannot double-round."""
    import ml_dtypes
    with np.errstate(over="ignore", invalid="ignore"):
        f = values.astype(np.float32)
        # Truncate toward zero, then mark inexact results odd.
        bits = f.view(np.uint32).copy()
        overshoot = np.abs(f.astype(np.float64)) > np.abs(values)
        bits[overshoot] -= 1
        inexact = (bits.view(np.float32).astype(np.float64) != values) & np.isfinite(values)
        bits[inexact] |= 1
    return bits.view(np.float32).astype(ml_dtypes.bfloat16)


def convert(values: np.ndarray, dst: DataType) -> np.ndarray:
    """Convert f32/f64 values to ``dst``: round to nearest even; integers saturate
    and take 0 for NaN; floats overflow to inf and keep NaN."""
    if dst.is_int:
        high = S32_MAX_FROM_F32 if dst.name == "s32" and values.dtype == np.float32 else dst.max
        v = np.where(np.isnan(values), 0, values)
        return np.rint(np.clip(v, dst.min, high)).astype(dst.numpy)
    if dst.name == "bf16" and values.dtype == np.float64:
        return f64_to_bf16(values)
    with np.errstate(over="ignore"):
        return values.astype(dst.numpy)


def reorder_values(src: np.ndarray, src_dt: DataType, dst_dt: DataType,
                   attr: Attr | None, dst_old: np.ndarray | None = None) -> np.ndarray:
    """The reorder of logical arrays: DESIGN.md's formula, saturation and rounding."""
    if attr is None or attr.is_empty:
        if src_dt == dst_dt:
            return src.copy()  # bit exact, NaN payloads included
        if src_dt.is_int and dst_dt.is_int:
            return np.clip(src.astype(np.int64), dst_dt.min, dst_dt.max).astype(dst_dt.numpy)
    ct = compute_dtype(src_dt, dst_dt)
    ndims, dims = src.ndim, src.shape

    def values(v):
        return _per_slice(v.values, v.mask, ndims, dims).astype(ct)

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = src.astype(ct)
        if attr is not None:
            if attr.src_zero_point is not None:
                x = x - values(attr.src_zero_point)
            if attr.src_scales is not None:
                x = values(attr.src_scales) * x
            if attr.sum_beta is not None:
                old = dst_old.astype(ct)
                if attr.dst_zero_point is not None:
                    old = old - values(attr.dst_zero_point)
                x = x + ct(np.float32(attr.sum_beta)) * old  # beta is an f32, as in oneDNN
            if attr.dst_scales is not None:
                x = x / values(attr.dst_scales)
            if attr.dst_zero_point is not None:
                x = x + values(attr.dst_zero_point)
        return convert(np.asarray(x, dtype=ct), dst_dt)


def reorder(src_md: MemoryDesc, src_raw: np.ndarray, dst_md: MemoryDesc, dst_raw: np.ndarray,
            attr: Attr | None = None, shuffle: tuple[int, int] | None = None):
    """Reorder the tensor in the bytes ``src_raw`` into the bytes ``dst_raw`` (in place).

    ``shuffle=(axis, group)`` reads the source along ``axis`` in shuffled order.
    Only the destination's elements and its own padding are written.
    """
    if src_md.nelems() == 0:
        return
    src = gather(src_md, src_raw)
    if shuffle is not None:
        axis, group = shuffle
        src = np.take(src, shuffled_source_index(src_md.dims[axis], group), axis=axis)
    old = gather(dst_md, dst_raw) if attr is not None and attr.sum_beta is not None else None
    scatter(dst_md, reorder_values(src, src_md.dtype, dst_md.dtype, attr, old), dst_raw)


def shuffled_source_index(channels: int, group: int) -> np.ndarray:
    """For each destination position c along the axis, the source position c'.

    With c = u + v*(C/G): c' = u*G + v.
    """
    c = np.arange(channels)
    rows = channels // group
    return (c % rows) * group + c // rows
