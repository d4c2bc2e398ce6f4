"""The NumPy reorder (and shuffle): box by box, gather the source, convert,
scatter into the destination, so scratch memory stays bounded whatever the
tensor size (see layout.BOX_ELEMENTS)."""
from __future__ import annotations

import math

import numpy as np

from ..attr import Attr
from ..dtypes import DataType, f64_to_f32_odd
from ..md_addressing import element_span
from ..memory_desc import MemoryDesc
from . import layout
from .layout import (box_indices, box_offsets, box_view, boxes, digit_view, read_elements,
                     write_elements)

# The largest f32 below 2^31: f32 -> s32 saturates here, not at INT_MAX.
S32_MAX_FROM_F32 = 2147483520.0


def compute_dtype(src: DataType, dst: DataType):
    """f64 where either side is f64, else f32."""
    return np.float64 if "f64" in (src.name, dst.name) else np.float32


def convert(values: np.ndarray, dst: DataType) -> np.ndarray:
    """Convert f32/f64 values to ``dst`` with one rounding, to nearest even;
    integers saturate and take 0 for NaN; floats follow their type's overflow
    rule (inf; NaN for f8_e4m3, which has no infinity; the largest value for
    f4_e2m1, which saturates) and keep NaN (f4_e2m1, which has none: +0)."""
    if dst.is_int:
        high = S32_MAX_FROM_F32 if dst.name == "s32" and values.dtype == np.float32 else dst.max
        v = np.where(np.isnan(values), 0, values)
        return np.rint(np.clip(v, dst.min, high)).astype(dst.numpy)
    if values.dtype == np.float64 and dst.name not in ("f64", "f32", "f16"):
        # ml_dtypes converts f64 through f32, rounding twice; go through f32
        # rounded to odd instead (NumPy's own f64 -> f32 / f16 round once).
        values = f64_to_f32_odd(values)
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(dst.numpy)
    if dst.name == "f4_e2m1":  # no NaN in the format: +0 (ml_dtypes' zero may be -0)
        out = np.where(np.isnan(values), np.zeros((), dst.numpy), out)
    return out


def _per_slice(v, ndims: int, dims, index, ct):
    """A Scales/ZeroPoints' values for the elements at ``index`` (broadcastable)."""
    if v.mask == 0:
        return ct(v.values[0])
    groups = v.group_sizes(ndims)
    shape = [dims[d] // groups[d] if v.mask >> d & 1 else 1 for d in range(ndims)]
    full = v.values.reshape(shape).astype(ct)
    picks = tuple(index[d] // groups[d] if v.mask >> d & 1 else np.zeros((1,) * ndims, np.int64)
                  for d in range(ndims))
    return full[picks]


def reorder_values(src: np.ndarray, src_dt: DataType, dst_dt: DataType,
                   attr: Attr | None, dst_old: np.ndarray | None = None, index=None,
                   dims=None) -> np.ndarray:
    """DESIGN.md's formula, saturation and rounding, on the values ``src``.

    ``index`` (per-dim index arrays) and ``dims`` place the values in the
    tensor, for per-slice scales and zero points; without them ``src`` is the
    whole tensor.
    """
    if attr is None or attr.is_empty:
        if src_dt == dst_dt:
            return src.copy()  # bit exact, NaN payloads included
        if src_dt.is_int and dst_dt.is_int:  # saturate, in the source's own type
            if src_dt.packed:
                src = src.astype(np.int8)
            low, high = max(dst_dt.min, src_dt.min), min(dst_dt.max, src_dt.max)
            if (low, high) != (src_dt.min, src_dt.max):
                src = np.clip(src, np.asarray(low, src.dtype), np.asarray(high, src.dtype))
            return src.astype(dst_dt.numpy)
    ct = compute_dtype(src_dt, dst_dt)
    if index is None and dims is None:  # the whole tensor
        dims = src.shape
        index = [np.arange(n).reshape([n if e == d else 1 for e in range(src.ndim)])
                 for d, n in enumerate(src.shape)]

    def values(v):
        return _per_slice(v, len(dims), dims, index, ct)

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = src.astype(ct)
        if attr is not None:
            if attr.src_zero_points is not None:
                x = x - values(attr.src_zero_points)
            if attr.src_scales is not None:
                x = values(attr.src_scales) * x
            if attr.sum_beta is not None:
                old = dst_old.astype(ct)
                if attr.dst_zero_points is not None:
                    old = old - values(attr.dst_zero_points)
                x = x + ct(np.float32(attr.sum_beta)) * old  # beta is an f32, as in oneDNN
            if attr.dst_scales is not None:
                x = x / values(attr.dst_scales)
            if attr.dst_zero_points is not None:
                x = x + values(attr.dst_zero_points)
        return convert(np.asarray(x, dtype=ct), dst_dt)


def alignment(src_md: MemoryDesc, dst_md: MemoryDesc, shuffle=None):
    """Per dim, the multiple a box of the reorder starts on: the blocks of
    both sides that are read and written through strided views. None when
    those blocks would make a box too big (then everything goes by offsets)."""
    sides = [dst_md] + ([src_md] if shuffle is None else [])
    align = tuple(math.lcm(*(md.blocks[d] if not md.dtype.packed else 1 for md in sides))
                  for d in range(dst_md.ndims))
    return None if math.prod(align) > layout.BOX_ELEMENTS else align


def source_box(src_md: MemoryDesc, dst_box, shuffle=None):
    """The box of the source a destination box reads (whole source blocks;
    the whole axis of a shuffle), or None for a box of destination padding."""
    inner = [(start, min(stop, n)) for (start, stop), n in zip(dst_box, src_md.dims)]
    if any(start >= stop for start, stop in inner):
        return None
    if shuffle is not None:
        order = shuffled_source_index(src_md.dims[shuffle[0]], shuffle[1])
        start, stop = inner[shuffle[0]]
        picked = order[start:stop]
        inner[shuffle[0]] = (int(picked.min()), int(picked.max()) + 1)
    return layout.widen_to_blocks(src_md, tuple(inner))


def reorder(src_md: MemoryDesc, src_raw: np.ndarray, dst_md: MemoryDesc, dst_raw: np.ndarray,
            attr: Attr | None = None, shuffle: tuple[int, int] | None = None,
            src_base: int = 0, dst_base: int = 0, written: np.ndarray | None = None,
            region=None):
    """Reorder the tensor in the bytes ``src_raw`` into the bytes ``dst_raw`` (in place).

    ``shuffle=(axis, group)`` reads the source along ``axis`` in shuffled
    order. Only the destination's elements and its own padding are written;
    ``written`` (optional, like dst_raw) gets the bits written set. The raw
    arrays may hold a span of their buffer that starts at element
    ``src_base`` / ``dst_base``. ``region`` (a box of the destination's
    padded index space, on ``alignment``'s multiples) limits the work to it;
    the raw spans must then hold the region and its ``source_box``.
    """
    if src_md.nelems() == 0:
        return
    align = alignment(src_md, dst_md, shuffle)
    region = layout.whole_box(dst_md) if region is None else tuple(region)
    src_region = source_box(src_md, region, shuffle)
    if src_region is None:  # only padding: no source to read
        src = None
    else:
        src = _Side(src_md, src_raw, src_base, src_region,
                    view=align is not None and shuffle is None)
    dst = _Side(dst_md, dst_raw, dst_base, region, view=align is not None, written=written)
    dims = dst_md.dims
    order = None
    if shuffle is not None:
        axis, group = shuffle
        order = shuffled_source_index(dims[axis], group)
    has_sum = attr is not None and attr.sum_beta is not None
    # Index arrays only where something depends on the position.
    per_slice = order is not None or (attr is not None and any(
        v is not None and v.mask for v in (attr.src_scales, attr.dst_scales,
                                           attr.src_zero_points, attr.dst_zero_points)))
    origin = tuple(start for start, _ in region)
    for relative in boxes(tuple(stop - start for start, stop in region), align=align):
        box = tuple((o + start, o + stop) for o, (start, stop) in zip(origin, relative))
        shape = tuple(stop - start for start, stop in box)
        # The part of the box inside the tensor; the rest is dst's padding.
        inner = tuple((start, min(stop, n)) for (start, stop), n in zip(box, dims))
        if inner == box:
            out = None
        else:
            out = np.zeros(shape, dst_md.dtype.numpy)
            if not all(start < stop for start, stop in inner):
                dst.write(box, out)  # all padding
                continue
        index = box_indices(inner) if per_slice else None
        if order is not None:
            values = src.read_indices(index, axis, order)
        else:
            values = src.read(inner)
        old = dst.read(inner) if has_sum else None
        part = reorder_values(values, src_md.dtype, dst_md.dtype, attr, old, index, dims)
        if out is None:
            out = part
        else:
            out[tuple(slice(0, stop - start) for start, stop in inner)] = part
        dst.write(box, out)


def staging_regions(src_md: MemoryDesc, dst_md: MemoryDesc, shuffle=None,
                    max_bytes: int | None = None):
    """Regions of the destination for a host path whose bytes live on a
    device: each yielded as (region, (src first byte, end byte, first
    element) or None, (dst first byte, end byte, first element), fills),
    where the spans cover what ``reorder(region=...)`` reads and writes and
    ``fills`` says the region's elements are every bit of its dst span. A
    region's spans stay within ``max_bytes`` (default STAGE_BYTES) unless one
    block row alone is bigger."""
    max_bytes = max_bytes or layout.STAGE_BYTES
    align = alignment(src_md, dst_md, shuffle) or (1,) * dst_md.ndims

    def spans(region):
        src_box = source_box(src_md, region, shuffle)
        src = None if src_box is None else layout.to_byte_span(
            src_md, *element_span(src_md, src_box))
        dst = layout.to_byte_span(dst_md, *element_span(dst_md, region))
        return src, dst, layout.fills_span(dst_md, region)

    def fit(region):
        src, dst, fills = spans(region)
        size = (dst[1] - dst[0]) * (1 if fills else 2) + (src[1] - src[0] if src else 0)
        split = next((d for d, ((start, stop), a) in enumerate(zip(region, align))
                      if stop - start > a), None)
        if size <= max_bytes or split is None:
            yield region, src, dst, fills
            return
        start, stop = region[split]
        a = align[split]
        middle = start + -(-(stop - start) // 2 // a) * a
        for part in ((start, middle), (middle, stop)):
            yield from fit(region[:split] + (part,) + region[split + 1:])

    for region in boxes(dst_md.own_padded_dims, layout.STAGE_ELEMENTS, align):
        yield from fit(region)


class _Side:
    """One side of a reorder: its bytes, read and written box by box through
    a strided view (over ``region``) where the layout allows, else through
    element offsets."""

    def __init__(self, md, raw, base, region, view=True, written=None):
        self.md, self.raw, self.base, self.written = md, raw, base, written
        self.origin = tuple(start for start, _ in region)
        self.view = digit_view(md, raw, base, box=region) if view else None
        self.mask_view = None
        if self.view is not None and written is not None:
            mask_type = np.dtype(f"u{md.dtype.bits // 8}")
            self.mask_view = digit_view(md, written, base, dtype=mask_type, box=region)

    def read(self, box) -> np.ndarray:
        """The values of a box (inside the tensor) in C order."""
        if self.view is None:
            return read_elements(self.md.dtype, self.raw, box_offsets(self.md, box_indices(box)),
                                 self.base)
        # Widen the box to whole blocks, read, and keep the box.
        wide = layout.widen_to_blocks(self.md, box)
        values = box_view(self.md, self.view, wide, self.origin).reshape(
            tuple(stop - start for start, stop in wide))
        return values[tuple(slice(start - w, stop - w)
                            for (start, stop), (w, _) in zip(box, wide))]

    def read_indices(self, index, axis, order) -> np.ndarray:
        """The values at the broadcast ``index`` arrays, with the ``axis``
        index mapped through ``order`` (a shuffled read)."""
        index = list(index)
        index[axis] = order[index[axis]]
        return read_elements(self.md.dtype, self.raw, box_offsets(self.md, index), self.base)

    def write(self, box, values):
        """Store a box of values (padding included): whole blocks through the
        view, else element by element."""
        if self.view is None:
            write_elements(self.md.dtype, self.raw, box_offsets(self.md, box_indices(box)),
                           values, self.base, self.written)
            return
        target = box_view(self.md, self.view, box, self.origin)
        target[...] = values.reshape(target.shape)
        if self.mask_view is not None:
            box_view(self.md, self.mask_view, box, self.origin)[...] = \
                np.iinfo(self.mask_view.dtype).max


def shuffled_source_index(channels: int, group: int) -> np.ndarray:
    """For each destination position c along the axis, the source position c'.

    With c = u + v*(C/G): c' = u*G + v.
    """
    c = np.arange(channels)
    rows = channels // group
    return (c % rows) * group + c // rows
