"""The USM side of the SYCL engine that needs no dpctl: reading an object's
``__sycl_usm_array_interface__`` as the storage of a descriptor, and the
interfaces of byte ranges that dpctl's ``as_usm_memory`` turns into views."""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, describe


def usm_span(md, buffer) -> tuple[dict, int, int]:
    """(interface, address of the first byte, bytes spanned) of ``buffer``
    (an object with ``__sycl_usm_array_interface__``) as md's storage:
    either md's tensor itself (its dims and type, md without inner blocks,
    the array's strides md's), or flat and contiguous, of md's type or of
    bytes; from the array's first byte. Raises InvalidArgumentError
    otherwise."""
    face = getattr(buffer, "__sycl_usm_array_interface__", None)
    if not isinstance(face, dict):
        raise InvalidArgumentError(
            f"buffer {describe(buffer)}: expected a Memory, a dpctl USM memory or an object "
            f"with __sycl_usm_array_interface__ (a dpnp or dpctl.tensor array)")
    try:
        shape = tuple(int(n) for n in face.get("shape", ()))
        dtype = np.dtype(face.get("typestr", "|u1"))
        # (Its read-only flag is not read: dpctl's own writable
        # allocations set it.)
        data = int(face["data"][0])
        c_strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        strides = tuple(int(n) for n in face.get("strides") or c_strides)
        offset = int(face.get("offset", 0) or 0)
    except (KeyError, TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"buffer {buffer!r}: a malformed __sycl_usm_array_interface__ ({error})") from None
    if offset or any(n < 0 for n in shape) or len(strides) != len(shape):
        raise InvalidArgumentError(
            f"USM array of shape {shape}, strides {strides} and offset {offset}: as "
            f"the buffer of {md!r} it must start at its first byte")
    if shape == md.dims and len(shape) > 1:  # md's tensor itself
        first = md.offset((0,) * md.ndims) if md.nelems() else md.offset0
        same = (dtype == md.dtype.numpy and not md.inner_blks and not md.dtype.packed
                and first == 0 and all(n <= 1 or s == t for n, s, t
                                       in zip(shape, strides, md.strides)))
        if not same:
            raise InvalidArgumentError(
                f"USM array of shape {shape}, dtype {dtype} and strides {strides} "
                f"elements does not hold {md!r} (strides {md.strides}): an array of its "
                f"dims must have its type and strides; or give a flat array of its bytes")
        span = 0 if 0 in shape else sum((n - 1) * s for n, s in zip(shape, strides)) + 1
    elif len(shape) != 1 or strides[0] != 1 or dtype not in (md.dtype.numpy,
                                                             np.dtype(np.uint8)):
        raise InvalidArgumentError(
            f"USM array of shape {shape}, strides {strides} and dtype {dtype}: as the "
            f"buffer of {md!r} it must be flat and contiguous, of {md.dtype.numpy} or of "
            f"uint8 bytes, or have dims {md.dims} and md's strides")
    else:
        span = shape[0]
    return face, data, span * dtype.itemsize


class Span:
    """``nbytes`` bytes from ``data``, the first byte of a USM array, as
    ``__sycl_usm_array_interface__``; holds the array."""

    def __init__(self, array, face, data: int, nbytes: int):
        self.array = array
        self.__sycl_usm_array_interface__ = {
            "data": (data, False), "shape": (max(nbytes, 1),), "strides": None,
            "typestr": "|u1", "version": 1, "syclobj": face.get("syclobj")}


class Window:
    """Bytes of a USM allocation, as ``__sycl_usm_array_interface__`` (for
    copies from or into part of it); holds the allocation."""

    def __init__(self, storage, first: int, count: int):
        face = storage.__sycl_usm_array_interface__
        self.storage = storage
        self.__sycl_usm_array_interface__ = {
            "data": (face["data"][0] + first, False), "shape": (count,), "strides": None,
            "typestr": "|u1", "version": 1, "syclobj": storage.sycl_queue}
