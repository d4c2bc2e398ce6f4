"""Moving logical NumPy arrays in and out of physical bytes, for any layout.

Two ways, both with bounded scratch memory:
- a strided NumPy view (``digit_view``) for whole-byte types: each dim is
  split into its outer index and its inner blocks ("digits"), each digit with
  its own stride, so a C-order padded array reshaped to the digits lines up
  with the view and one strided copy moves everything;
- element offsets computed box by box (``boxes``, ``box_offsets``) for
  everything else (the packed 4-bit types, shuffled reads, the reorder).

``raw`` is always a uint8 array holding the buffer's bytes from element
``base`` on (the start of a span read from a device, or 0 for a whole buffer).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..dtypes import DataType
from ..md_addressing import element_span
from ..memory_desc import MemoryDesc

#: Elements per box of the host path: with up to ~60 bytes of scratch per
#: element (offsets, values, temporaries) a box stays near 128 MiB.
BOX_ELEMENTS = 1 << 21

#: For the host path of an OpenCL engine, which copies the bytes it works on
#: from and to the device a region at a time: elements per region, and the
#: bytes its copies may take (source, destination and write mask together).
STAGE_ELEMENTS = 1 << 22
STAGE_BYTES = 64 << 20


def byte_span(md: MemoryDesc) -> tuple[int, int]:
    """``element_span`` in bytes, widened to whole bytes for the packed types."""
    return to_byte_span(md, *element_span(md))[:2]


def span_base(md: MemoryDesc) -> int:
    """The element that byte 0 of a ``byte_span`` read holds."""
    return to_byte_span(md, *element_span(md))[2]


def fills_span(md: MemoryDesc, box=None) -> bool:
    """True when the elements of a box of md's padded index space (default:
    all its own) are every bit of their span: no gaps, no byte shared with
    another tensor."""
    first, end = element_span(md, box)
    box = whole_box(md) if box is None else box
    count = math.prod(stop - start for start, stop in box)
    return end - first == count and (not md.dtype.packed or first % 2 == end % 2 == 0)


def is_c_dense(md: MemoryDesc) -> bool:
    """True when the bytes are exactly a C-order array of shape dims (no blocks,
    padding, gaps or offset): NumPy's own layout."""
    if md.inner_blks or md.offset0 or md.is_submemory or md.dtype.packed:
        return False
    stride = 1
    for n, s in reversed(tuple(zip(md.dims, md.strides))):
        if n > 1 and s != stride:
            return False
        stride *= n
    return True


# -- strided views ----------------------------------------------------------------

def whole_box(md: MemoryDesc):
    """The box of md's own padded index space."""
    return tuple((0, n) for n in md.own_padded_dims)


def _digits(md: MemoryDesc, box):
    """Per dim, the (extent, element stride) of its outer index and of each
    of its inner blocks, most significant first, over ``box`` of the padded
    index space; or None when the box (or md's window of its parent) does
    not start on block boundaries."""
    inner_strides = [math.prod(md.inner_blks[j + 1:]) for j in range(len(md.inner_blks))]
    blocks = md.blocks
    digits = []
    for d, (start, stop) in enumerate(box):
        if (md.padded_offsets[d] + start) % blocks[d] or md.own_padded_dims[d] % blocks[d]:
            return None
        digits.append([(-(-(stop - start) // blocks[d]), md.strides[d])]
                      + [(size, inner_strides[j]) for j, (size, idx)
                         in enumerate(zip(md.inner_blks, md.inner_idxs)) if idx == d])
    return digits


def digit_view(md: MemoryDesc, raw: np.ndarray, base: int = 0, dtype=None,
               box=None) -> np.ndarray | None:
    """A view of ``raw`` with one axis per digit (see ``_digits``) over ``box``
    (default: the whole own padded tensor): a C-order array of the box's
    shape reshaped to ``view.shape`` lines up element for element. ``dtype``
    (default md's) must have md's size. None for the packed types and boxes
    that do not start on block boundaries."""
    box = whole_box(md) if box is None else box
    digits = None if md.dtype.packed else _digits(md, box)
    if digits is None:
        return None
    size = md.dtype.bits // 8
    empty = any(start >= stop for start, stop in box)
    first = base if empty else md.offset(tuple(start for start, _ in box), padded=True)
    flat = [digit for per_dim in digits for digit in per_dim]
    return np.ndarray(tuple(n for n, _ in flat), dtype=dtype or md.dtype.numpy, buffer=raw,
                      offset=(first - base) * size, strides=tuple(s * size for _, s in flat))


def box_view(md: MemoryDesc, view: np.ndarray, box, origin=None) -> np.ndarray:
    """The part of a ``digit_view`` (made over a box starting at ``origin``,
    default the tensor's start) that holds ``box``; the box must start and
    end on md's block boundaries (or at the end of its own padded extent).
    Reshaped to the box, it is the box's values in C order."""
    slices = []
    for d, (start, stop) in enumerate(box):
        block = md.blocks[d]
        first = origin[d] if origin else 0
        slices.append(slice((start - first) // block, -(-(stop - first) // block)))
        slices += [slice(None)] * sum(1 for idx in md.inner_idxs if idx == d)
    return view[tuple(slices)]


def widen_to_blocks(md: MemoryDesc, box):
    """``box`` grown to whole blocks of md (within its own padded extent)."""
    return tuple((start - start % b, min(-(-stop // b) * b, n))
                 for (start, stop), b, n in zip(box, md.blocks, md.own_padded_dims))


def to_byte_span(md: MemoryDesc, first: int, end: int) -> tuple[int, int, int]:
    """(first byte, end byte, element at the first byte) of elements [first, end)."""
    if md.dtype.packed:
        return first // 2, (end + 1) // 2, first // 2 * 2
    size = md.dtype.bits // 8
    return first * size, end * size, first


# -- boxes of indices and their offsets ------------------------------------------

def boxes(shape: tuple[int, ...], limit: int | None = None, align=None):
    """Split the index space of ``shape`` into boxes of about ``limit``
    elements (default BOX_ELEMENTS), in C order; each a tuple of (start,
    stop) per dim. A box starts and ends on multiples of ``align`` (per dim,
    default 1) or at the end of the dim, so it holds at most
    max(limit, prod(align)) elements."""
    if 0 in shape:
        return
    limit = limit or BOX_ELEMENTS
    align = align or (1,) * len(shape)
    k = 0  # the dim to split: the first whose aligned rows fit the limit
    while k < len(shape) - 1 and math.prod(align[:k + 1]) * math.prod(shape[k + 1:]) > limit:
        k += 1
    rows = math.prod(shape[k + 1:]) * math.prod(align[:k])
    step = max(align[k], limit // rows // align[k] * align[k])
    starts = [range(0, n, a) for n, a in zip(shape[:k], align[:k])]
    for lead in itertools.product(*starts):
        for start in range(0, shape[k], step):
            yield tuple((i, min(i + a, n)) for i, a, n in zip(lead, align, shape)) \
                + ((start, min(start + step, shape[k])),) \
                + tuple((0, n) for n in shape[k + 1:])


def box_indices(box) -> list[np.ndarray]:
    """Index arrays of a box, shaped to broadcast against each other."""
    ndims = len(box)
    out = []
    for d, (start, stop) in enumerate(box):
        shape = [1] * ndims
        shape[d] = stop - start
        out.append(np.arange(start, stop, dtype=np.int64).reshape(shape))
    return out


def box_offsets(md: MemoryDesc, index: list[np.ndarray]) -> np.ndarray:
    """Element offsets (int64, the broadcast shape of ``index``) of md at the
    given per-dim index arrays, which may reach into md's own padding."""
    total = None
    for d, i in enumerate(index):
        term = md.dim_offsets(d, i)
        total = term if total is None else total + term
    return total + md.offset0


def read_elements(dt: DataType, raw: np.ndarray, offsets: np.ndarray, base: int = 0):
    """The elements of type dt at ``offsets`` (elements from ``base``) of ``raw``."""
    offsets = offsets - base
    if not dt.packed:
        size = dt.bits // 8
        return raw[: raw.size - raw.size % size].view(dt.numpy)[offsets]
    return _from_codes(dt, (raw[offsets >> 1] >> ((offsets & 1) * 4).astype(np.uint8)) & 0x0F)


def _from_codes(dt: DataType, nibbles: np.ndarray) -> np.ndarray:
    """Values of the 4-bit type dt from their codes (uint8, 0..15)."""
    if dt.is_float:  # f4_e2m1: ml_dtypes keeps the code in the low bits of a byte
        return nibbles.astype(np.uint8).view(dt.numpy)
    if dt.min < 0:  # sign-extend s4
        nibbles = np.where(nibbles >= 8, nibbles.astype(np.int16) - 16, nibbles)
    return nibbles.astype(dt.numpy)


def _codes(dt: DataType, values: np.ndarray) -> np.ndarray:
    """The 4-bit codes (uint8, 0..15) of values of the 4-bit type dt."""
    if dt.is_float:
        return np.ascontiguousarray(values, dt.numpy).view(np.uint8) & 0x0F
    return values.astype(np.int8).view(np.uint8) & 0x0F


_MASK_TYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def write_elements(dt: DataType, raw: np.ndarray, offsets: np.ndarray, values: np.ndarray,
                   base: int = 0, written: np.ndarray | None = None):
    """Store ``values`` (type dt) at ``offsets``; every other bit of ``raw`` is
    left alone. ``written`` (a uint8 array like raw), when given, gets the
    bits written set: the mask a partial write to a device buffer needs."""
    offsets = (offsets - base).ravel()
    values = np.broadcast_to(values, offsets.shape if values.ndim == 0 else values.shape).ravel()
    if not dt.packed:
        size = dt.bits // 8
        whole = raw.size - raw.size % size
        raw[:whole].view(dt.numpy)[offsets] = values
        if written is not None:
            written[:whole].view(_MASK_TYPES[size])[offsets] = np.iinfo(_MASK_TYPES[size]).max
        return
    nibbles = _codes(dt, values)
    for half in (0, 1):  # two elements a byte, the first in the low nibble
        pick = (offsets & 1) == half
        where = offsets[pick] >> 1
        keep = np.uint8(0xF0 if half == 0 else 0x0F)
        raw[where] = (raw[where] & keep) | (nibbles[pick] << (4 * half))
        if written is not None:
            written[where] |= ~keep


def dense_bytes(dt: DataType, array: np.ndarray) -> np.ndarray:
    """The bytes of a C-contiguous array of type dt as a dense C-order tensor
    holds them: the array's own bytes, or for the 4-bit types two elements a
    byte, low nibble first (an odd count leaves the last high nibble 0)."""
    flat = array.reshape(-1)
    if not dt.packed:
        return flat.view(np.uint8)
    codes = _codes(dt, flat)
    out = codes[0::2].copy()
    out[: codes.size // 2] |= codes[1::2] << 4
    return out


def from_dense_bytes(dt: DataType, raw: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (C-contiguous, type dt) from the bytes of a dense C-order
    tensor: ``dense_bytes`` backwards. Returns ``out``."""
    flat = out.reshape(-1)
    if not dt.packed:
        flat.view(np.uint8)[...] = raw[: flat.nbytes]
        return out
    flat[0::2] = _from_codes(dt, raw[: (flat.size + 1) // 2] & 0x0F)
    flat[1::2] = _from_codes(dt, raw[: flat.size // 2] >> 4)
    return out


# -- whole tensors -----------------------------------------------------------------

def scatter(md: MemoryDesc, array: np.ndarray, raw: np.ndarray, base: int = 0):
    """Write ``array`` (shape md.dims) into the bytes ``raw``; the descriptor's
    own padding gets zeros, every other byte is left alone."""
    if md.nelems() == 0:
        return
    view = digit_view(md, raw, base)
    own = md.own_padded_dims
    if view is not None:
        if own != md.dims:
            padded = np.zeros(own, dtype=md.dtype.numpy)
            padded[tuple(slice(0, n) for n in md.dims)] = array
            array = padded
        view[...] = np.ascontiguousarray(array).reshape(view.shape)
        return
    for box in boxes(own):
        values = _values_in_box(array, md.dims, box)
        write_elements(md.dtype, raw, box_offsets(md, box_indices(box)), values, base)


def _values_in_box(array, dims, box):
    """``array``'s values over a box of the padded index space, 0 in the padding."""
    inside = tuple(slice(start, min(stop, n)) for (start, stop), n in zip(box, dims))
    values = array[inside]
    if values.shape != tuple(stop - start for start, stop in box):
        full = np.zeros(tuple(stop - start for start, stop in box), dtype=array.dtype)
        full[tuple(slice(0, n) for n in values.shape)] = values
        values = full
    return values


def gather(md: MemoryDesc, raw: np.ndarray, base: int = 0) -> np.ndarray:
    """The logical array (shape md.dims) held by the bytes ``raw``."""
    out = np.empty(md.dims, dtype=md.dtype.numpy)
    if md.nelems() == 0:
        return out
    view = digit_view(md, raw, base)
    own = md.own_padded_dims
    if view is not None:
        padded = out if own == md.dims else np.empty(own, dtype=out.dtype)
        padded.reshape(view.shape)[...] = view
        if padded is not out:
            out[...] = padded[tuple(slice(0, n) for n in md.dims)]
        return out
    for box in boxes(md.dims):
        out[tuple(slice(a, b) for a, b in box)] = read_elements(
            md.dtype, raw, box_offsets(md, box_indices(box)), base)
    return out
