"""NumPy arrays as memory descriptors see them: the descriptor an array's
own shape and strides give, the array over a plain layout's bytes, and an
array's bytes when they are already in a descriptor's layout (so a copy of
them is the whole transfer, with no staging and no allocation)."""
from __future__ import annotations

import numpy as np

from ..dtypes import data_type
from ..errors import InvalidArgumentError, describe
from ..memory_desc import MemoryDesc
from .layout import byte_span, fills_span


def host_array(value, what: str = "array") -> np.ndarray:
    """``value`` as a NumPy array without a copy where it can be: a NumPy
    array as it is, a DLPack producer on the CPU (a PyTorch CPU tensor, say)
    through ``np.from_dlpack``, anything else through ``np.asarray``. Raises
    InvalidArgumentError for a producer on another device and for values
    that are no array."""
    if isinstance(value, np.ndarray):
        return value
    if value is None or isinstance(value, (str, bytes)):
        raise InvalidArgumentError(f"{what} {describe(value)}: expected a NumPy array or an "
                                   f"array that DLPack exports to the CPU")
    if hasattr(value, "__dlpack__") and not hasattr(value, "md"):
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError, ValueError) as error:
            raise InvalidArgumentError(
                f"{what} {describe(value)}: NumPy cannot take it through DLPack ({error}); "
                f"an array on a device goes in with Memory.from_dlpack(obj, engine)") from None
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:  # ragged nested lists, odd objects
        raise InvalidArgumentError(
            f"{what} {describe(value)} is not a rectangular array: {error}") from None


def _permutation(array: np.ndarray) -> tuple[int, ...] | None:
    """The axis order (outermost first) in which ``array`` is C-contiguous,
    or None when it is dense in no order (gaps, overlaps, negative strides)."""
    order = tuple(sorted(range(array.ndim), key=lambda a: (-array.strides[a], a)))
    return order if array.transpose(order).flags.c_contiguous else None


def desc_of_array(array: np.ndarray) -> MemoryDesc:
    """The descriptor of ``array`` as it lies: dims from its shape, type
    from its dtype, strides from its strides (``MemoryDesc.from_array``)
    when it is dense in some axis order (C order, an nhwc tensor seen as
    nchw, a transpose); plain C order otherwise (a slice with gaps, negative
    strides): its values then go in a copy. Raises InvalidArgumentError for
    a dtype clayout lacks."""
    dt = data_type(array.dtype)
    if not array.size or dt.packed or _permutation(array) is None:
        return MemoryDesc(array.shape, dt)
    return MemoryDesc.from_array(array)


def is_plain(md: MemoryDesc) -> bool:
    """md's elements are a strided NumPy array: no inner blocks, whole bytes."""
    return not md.inner_blks and not md.dtype.packed


def plain_view(md: MemoryDesc, storage: np.ndarray) -> np.ndarray:
    """The array (shape md.dims, md's type) over the bytes ``storage`` (uint8)
    of a plain layout, without a copy: writes through it land in storage."""
    size = md.dtype.bits // 8
    first = md.offset((0,) * md.ndims) if md.nelems() else 0
    return np.ndarray(md.dims, dtype=md.dtype.numpy, buffer=storage, offset=first * size,
                      strides=tuple(s * size for s in md.strides))


def matching_bytes(md: MemoryDesc, array: np.ndarray) -> np.ndarray | None:
    """The bytes of ``array`` as one flat uint8 view when they are md's
    span byte for byte (same type and shape, md plain without gaps, the
    array's strides md's): a copy of them is then the whole transfer.
    None otherwise."""
    if not is_plain(md) or array.dtype != md.dtype.numpy or array.shape != md.dims \
            or not md.nelems() or not fills_span(md):
        return None
    size = md.dtype.bits // 8
    if any(n > 1 and a != s * size for n, a, s in zip(md.dims, array.strides, md.strides)):
        return None
    order = _permutation(array)
    if order is None:
        return None
    flat = array.transpose(order).reshape(-1)  # a view: C-contiguous in that order
    lo, hi = byte_span(md)
    return flat.view(np.uint8) if flat.nbytes == hi - lo else None
