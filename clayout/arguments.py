"""What Reorder and Shuffle check in their arguments, at creation and at
execute: each rule once, each refusal an InvalidArgumentError (or
UnimplementedError) that names the value and the rule.

(The engine, stream and wait_for arguments are turned into Engines,
Streams and event lists by clayout.engine's as_engine, as_stream and
check_wait_for, which every layer above the engines uses.)
"""
from __future__ import annotations

import numpy as np

from .attr import Attr
from .compensation import check_problem as check_compensation
from .errors import InvalidArgumentError, describe
from .execute_values import KEYWORDS
from .memory import Memory
from .memory_desc import RUNTIME_DIM, MemoryDesc, dims_text


def check_reorder(src_md, dst_md, attr) -> MemoryDesc:
    """The destination descriptor of a Reorder of ``src_md`` to ``dst_md``
    with ``attr`` (a dst of format ``any`` takes the source's layout).
    Raises InvalidArgumentError for arguments of the wrong kind, dims that
    differ, scales or zero points that do not fit, compensation rules."""
    for arg, md in (("src", src_md), ("dst", dst_md)):
        if not isinstance(md, MemoryDesc):
            raise InvalidArgumentError(f"{arg} {describe(md)} is not a MemoryDesc")
    if src_md.format_kind == "any":
        raise InvalidArgumentError(f"src {src_md!r}: a source needs a layout, not 'any'")
    src_md.check_same_dims(dst_md, "reorder src and dst")
    if dst_md.format_kind == "any":
        dst_md = src_md.dense_like(dst_md.data_type)
    if attr is not None:
        if not isinstance(attr, Attr):
            raise InvalidArgumentError(f"attr {describe(attr)} is not a clayout Attr")
        check_scales_and_points(attr, src_md, dst_md)
    check_compensation("reorder", src_md, dst_md, attr)
    return dst_md


def check_shuffle(src_md, axis, group_size, backward, dst_md) -> tuple[int, int, MemoryDesc]:
    """(axis in 0..ndims-1, the axis' size, the destination descriptor) of a
    Shuffle; raises InvalidArgumentError for a bad axis, group or
    destination."""
    if not isinstance(src_md, MemoryDesc) or src_md.format_kind != "blocked":
        raise InvalidArgumentError(
            f"src {describe(src_md)}: shuffle needs a MemoryDesc with a layout")
    if dst_md is not None and not isinstance(dst_md, MemoryDesc):
        raise InvalidArgumentError(
            f"shuffle dst_md {describe(dst_md)} is not a MemoryDesc (or None)")
    if not is_int(axis):
        raise InvalidArgumentError(
            f"shuffle axis {describe(axis)}: expected an integer in "
            f"-{src_md.ndims}..{src_md.ndims - 1} for dims {src_md.dims!r}")
    if not -src_md.ndims <= axis < src_md.ndims:
        raise InvalidArgumentError(
            f"shuffle axis {describe(axis)} is outside -{src_md.ndims}..{src_md.ndims - 1} for "
            f"dims {src_md.dims!r}")
    if not isinstance(backward, (bool, np.bool_)):
        raise InvalidArgumentError(f"shuffle backward {describe(backward)}: expected True or False")
    axis = int(axis) % src_md.ndims
    channels = src_md.dims[axis]
    if channels == RUNTIME_DIM:
        raise InvalidArgumentError(
            f"shuffle axis {axis} of {dims_text(src_md.dims)} is a runtime dim: the "
            f"group must divide an axis size known at creation")
    if not is_int(group_size) or group_size <= 0 or \
            (channels and channels % group_size):
        raise InvalidArgumentError(
            f"shuffle group_size {describe(group_size)} must be a positive divisor of the "
            f"axis size {channels} (dims {src_md.dims!r}, axis {axis})")
    if dst_md is None or dst_md.format_kind == "any":
        dtype = src_md.data_type if dst_md is None else dst_md.data_type
        dst_md = src_md if dst_md is None and not src_md.is_submemory \
            else src_md.dense_like(dtype)
    src_md.check_same_dims(dst_md, "shuffle src and dst")
    if dst_md.data_type != src_md.data_type:
        raise InvalidArgumentError(
            f"shuffle src type {src_md.data_type} and dst type {dst_md.data_type} differ: "
            f"a shuffle does not convert (reorder first)")
    check_compensation("shuffle", src_md, dst_md, None)
    return axis, channels, dst_md


def check_memory(mem, md: MemoryDesc, engine, arg: str, where) -> None:
    """Raise InvalidArgumentError unless ``mem`` is a Memory of ``md`` (of an
    instance of it, when md has runtime dims) on ``engine``: what a
    primitive's execute checks its ``arg`` ("src", "dst") against.
    ``where()`` ends the message of a memory on another engine (made only
    then: execute runs this check often)."""
    if not isinstance(mem, Memory):
        raise InvalidArgumentError(f"{arg} {describe(mem)} is not a clayout Memory")
    if md.is_runtime:  # a pattern: the memory brings the shape
        md.check_instance(mem.md, f"{arg} memory")
    elif mem.md != md:
        raise InvalidArgumentError(
            f"{arg} memory {mem.md!r} does not match the primitive's {arg} {md!r}")
    if mem.engine != engine:
        raise InvalidArgumentError(f"{arg} memory lives on {mem.engine.describe()}{where()}")


def check_pair(kind: str, src: Memory, dst: Memory) -> None:
    """Raise InvalidArgumentError when execute's ``src`` and ``dst`` fill a
    runtime pattern's dims differently or share bytes (no primitive runs in
    place)."""
    if src.md.dims != dst.md.dims:
        raise InvalidArgumentError(
            f"src {src.md!r} and dst {dst.md!r} fill the runtime dims differently")
    if src.shares_bytes_with(dst):
        raise InvalidArgumentError(
            f"src {src.md!r} and dst {dst.md!r} share bytes of one buffer: a {kind} "
            f"does not run in place; give a destination of its own")


def check_values_apart(values: dict | None, dst: Memory) -> None:
    """Raise InvalidArgumentError when a memory of values given to execute
    shares bytes with ``dst``: the kernel would read values it overwrites."""
    for value in (values or {}).values():
        if value.memory is not None and value.memory.shares_bytes_with(dst):
            raise InvalidArgumentError(
                f"{value.slot.keyword} memory {value.memory.md!r} and dst {dst.md!r} share "
                f"bytes of one buffer: the values would be overwritten while they are read; "
                f"give them a buffer of their own")


def refuse_keywords(unknown: dict):
    """Raise InvalidArgumentError naming execute's keywords in ``unknown``
    (if any) and those it takes."""
    if unknown:
        raise InvalidArgumentError(
            f"execute() got the keyword {sorted(unknown)[0]!r}: it takes wait_for= and "
            f"the values {', '.join(f'{k}=' for k in KEYWORDS)}")


def is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_scales_and_points(attr: Attr, src_md: MemoryDesc, dst_md: MemoryDesc):
    for name in ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points"):
        value = getattr(attr, name)
        if value is None:
            continue
        runtime = src_md.is_runtime and [d for d in value.masked_dims()
                                         if d < src_md.ndims and src_md.dims[d] == RUNTIME_DIM]
        if runtime and not value.at_execute:
            raise InvalidArgumentError(
                f"{name} mask {value.mask:#b} covers runtime dim {runtime[0]} of "
                f"{dims_text(src_md.dims)}: per-slice values fixed at creation need that dim "
                f"fixed (their count would change with the shape); make them with mask= "
                f"and no values to give them at execute")
        value.check(src_md.dims, name)  # on runtime dims: counted at each execute
    for arg, md, point in (("src", src_md, attr.src_zero_points),
                           ("dst", dst_md, attr.dst_zero_points)):
        if point is not None and not md.dtype.is_int:
            raise InvalidArgumentError(
                f"{arg}_zero_points given for {arg} type {md.data_type}: zero points "
                f"apply to integer types only")
