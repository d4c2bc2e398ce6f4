"""Dims and strides as values: RUNTIME_DIM, the int64 limit, the checks of
integer tuples given for dims, strides, offsets and indices, and their text.

Shared by the descriptor (clayout.memory_desc, which re-exports these names)
and its addressing and transforms (md_addressing, md_transforms).
"""
from __future__ import annotations

import operator

import numpy as np

from .errors import InvalidArgumentError, describe
from .tags import MAX_NDIMS

#: A dim or stride given only at execution (oneDNN's DNNL_RUNTIME_DIM_VAL,
#: the smallest int64): a primitive created on such descriptors runs on
#: memories whose descriptors fill it in.
RUNTIME_DIM = -(2**63)


#: Offsets and sizes are int64 in the kernels and the host path.
INT64_LIMIT = 2**63


def int_tuple(values, what, runtime: bool = False) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError(f"{what} {describe(values)}: expected a sequence of integers")
    try:
        out = tuple(operator.index(v) for v in values)
    except TypeError:
        raise InvalidArgumentError(
            f"{what} {describe(values)}: expected a sequence of integers") from None
    if any(isinstance(v, (bool, np.bool_)) for v in values):
        raise InvalidArgumentError(f"{what} {describe(values)}: expected integers, not booleans")
    if any(abs(v) >= INT64_LIMIT and not (runtime and v == RUNTIME_DIM) for v in out):
        raise InvalidArgumentError(
            f"{what} {describe(values)}: each must fit in int64 (below 2**63)")
    return out


def check_dims(dims, runtime: bool = False) -> tuple[int, ...]:
    dims = int_tuple(dims, "dims", runtime)
    if not 1 <= len(dims) <= MAX_NDIMS:
        raise InvalidArgumentError(
            f"dims {dims!r}: {len(dims)} dims is outside 1..{MAX_NDIMS}")
    if any(d < 0 and d != RUNTIME_DIM for d in dims):
        raise InvalidArgumentError(f"dims {dims!r}: a dim cannot be negative")
    return dims


def round_up(value: int, block: int) -> int:
    return -(-value // block) * block


def dims_text(values) -> str:
    """Dims (or strides) as 2x*x3, a runtime one shown as *."""
    return "x".join("*" if v == RUNTIME_DIM else str(v) for v in values)
