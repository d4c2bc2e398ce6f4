"""Addressing a descriptor's elements: the offset each dim contributes, the
offset of an index and of every element, the span a box of elements covers,
and whether two views of one buffer may overlap.

Functions of a MemoryDesc: the bodies of its methods dim_offsets, offset
and element_offsets (they use its private helpers, as methods would);
clayout.memory_desc re-exports element_span and may_overlap.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from .dim_values import int_tuple
from .errors import InvalidArgumentError, describe


def dim_offsets(md, d: int, index: int | np.ndarray) -> int | np.ndarray:
    """Offsets (in elements) that dim ``d`` contributes for ``index`` (int or array).

    The physical offset of a logical index is ``offset0`` plus the sum over
    the dims: the layout is separable, which the host path and kernel
    generators rely on.
    """
    p = index + md.padded_offsets[d]
    off = (p // md.blocks[d]) * md.strides[d]
    inner_stride = 1
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            off = off + (p % size) * inner_stride
            p = p // size
        inner_stride *= size
    return off


def offset(md, idx: Sequence[int], padded: bool = False) -> int:
    """Physical element offset of the logical index ``idx``.

    With ``padded`` the index may reach into the padding (up to
    ``own_padded_dims``). Raises InvalidArgumentError for an index out of range.
    """
    md._require_layout(f"offset({describe(idx)})")
    md._require_concrete(f"offset({describe(idx)})")
    idx = int_tuple(idx, "index")
    limits = md.own_padded_dims if padded else md.dims
    if len(idx) != md.ndims or any(not 0 <= i < n for i, n in zip(idx, limits)):
        raise InvalidArgumentError(
            f"index {idx!r} is out of range for {'padded ' if padded else ''}dims {limits!r}")
    return md.offset0 + sum(int(dim_offsets(md, d, i)) for d, i in enumerate(idx))


def element_offsets(md, padded: bool = False) -> np.ndarray:
    """Offsets of every element as an int64 array of shape dims (or own_padded_dims)."""
    md._require_layout("element_offsets")
    md._require_concrete("element_offsets")
    shape = md.own_padded_dims if padded else md.dims
    out = np.full(shape, md.offset0, dtype=np.int64)
    for d, n in enumerate(shape):
        view = [1] * md.ndims
        view[d] = n
        out += dim_offsets(md, d, np.arange(n, dtype=np.int64)).reshape(view)
    return out


def element_span(md, box=None) -> tuple[int, int]:
    """First and one-past-last element offset of a box of md's padded index
    space (default: its own elements, padding included); (0, 0) when empty.
    Offsets grow with every index, so the box's corners bound them."""
    box = tuple((0, n) for n in md.own_padded_dims) if box is None else box
    if any(start >= stop for start, stop in box):
        return 0, 0
    return (md.offset(tuple(start for start, _ in box), padded=True),
            md.offset(tuple(stop - 1 for _, stop in box), padded=True) + 1)


@functools.lru_cache(maxsize=256)
def _bit_span(md) -> tuple[int, int]:
    first, end = element_span(md)
    return first * md.dtype.bits // 8 * 8, -(-end * md.dtype.bits // 8) * 8  # whole bytes


def may_overlap(a, b) -> bool:
    """False only when descriptors ``a`` and ``b`` (None: the whole buffer)
    are provably disjoint views of one buffer: windows of one layout
    (submemories of one parent) that miss each other in some dim, or views
    whose spans miss each other."""
    if a is None or b is None:
        return True
    # 4-bit windows that meet mid-byte share that byte, and kernels store
    # whole bytes: compare byte spans, never the windows' elements.
    packed = a.dtype.packed or b.dtype.packed
    if not packed and all(getattr(a, n) == getattr(b, n) for n in (
            "data_type", "padded_dims", "strides", "inner_blks", "inner_idxs", "offset0")):
        return all(oa < ob + nb and ob < oa + na for oa, na, ob, nb in zip(
            a.padded_offsets, a.own_padded_dims, b.padded_offsets, b.own_padded_dims))
    (a0, a1), (b0, b1) = _bit_span(a), _bit_span(b)
    return a0 < b1 and b0 < a1
