"""Scales and zero points given at execute (oneDNN v3's execution arguments).

A primitive made with ``Scales(mask=...)`` or ``ZeroPoints(mask=...)`` (no
values) takes them at each ``execute``: ``src_scales=``, ``dst_scales=``,
``src_zero_points=``, ``dst_zero_points=``. ``resolve`` checks them before
anything is enqueued and returns one ``ExecValue`` per field; the
implementations take what they need from it: a device buffer for a kernel
(``kernel_arg``), NumPy values for the host path (``host_values``).

What each value may be:

- NumPy values (an array, a sequence or a number): checked and rounded to
  the declared data type as values given at creation are, then copied (the
  caller may change the array once execute returns);
- a clayout Memory on the primitive's engine, a pyopencl Array or Buffer of
  its context (OpenCL engines), USM memory or a USM array of its context
  (SYCL engines: dpctl memory, dpnp or dpctl.tensor arrays), holding the values from its first byte, as
  the kernels read them (f32 scales, s32 zero points), or in the declared
  data type (then a device reorder, made with the primitive, widens them
  first). A Buffer (or USM memory) has no type: it holds f32 scales or s32
  zero points.
  For a kernel nothing comes back to the host; the host path copies them on
  the stream at execute and reads the copy on its worker.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from .attr import PER_SLICE_FIELDS, Attr
from .backends import foreign_storage
from .dtypes import DATA_TYPES
from .errors import InvalidArgumentError, UnimplementedError, describe
from .memory import Memory, uninitialised
from .memory_desc import RUNTIME_DIM, MemoryDesc

#: What execute takes as the values of one attribute.
ValuesLike = Union[np.ndarray, Sequence[float], float, Memory, Any]
#: execute's keyword for each field of Attr that holds values (the same names).
KEYWORDS = {field: field for field in PER_SLICE_FIELDS}
#: The type the kernels read each kind of value in.
KERNEL_TYPE = {"scales": "f32", "zero_points": "s32"}


class ValueSlot:
    """One of execute's value keywords, as a primitive takes it (worked out
    at creation by ``value_spec``): its Attr field, the declared
    Scales/ZeroPoints (None: the attr has none), whether the values come at
    execute, the type the kernels read, and the device reorder that widens
    values given in the declared type to it (made at creation, so that no
    execute builds)."""

    __slots__ = ("keyword", "field", "declared", "wanted", "kernel_type", "widening")

    def __init__(self, keyword: str, field: str, declared, engine, make_reorder):
        self.keyword, self.field, self.declared = keyword, field, declared
        self.wanted = declared is not None and declared.at_execute
        self.kernel_type = KERNEL_TYPE[field.split("_", 1)[1]]
        self.widening = None
        if self.wanted and engine.is_device and declared.data_type != self.kernel_type:
            # A runtime-dims pattern: one kernel for every count of values.
            self.widening = make_reorder(MemoryDesc((RUNTIME_DIM,), declared.data_type, tag="a"),
                                         MemoryDesc((RUNTIME_DIM,), self.kernel_type, tag="a"),
                                         engine=engine)


class ExecValue:
    """One field's values for one execute: ``host`` (a Scales/ZeroPoints
    holding NumPy values) or ``memory`` (a device Memory of them)."""

    __slots__ = ("slot", "host", "memory")

    def __init__(self, slot: ValueSlot, host=None, memory: Memory | None = None):
        self.slot, self.host, self.memory = slot, host, memory

    def kernel_arg(self, engine, queue, wait_for: list) -> tuple:
        """(the buffer a kernel enqueued on ``queue`` after ``wait_for``
        reads, events it waits for besides)."""
        if self.memory is None:
            return engine.backend.upload(self.host.values), []
        memory = self.memory
        if memory.md.data_type != self.slot.kernel_type:  # the declared type: widen first
            reorder = self.slot.widening
            wide = uninitialised(reorder.dst_md.with_dims(memory.md.dims), engine)
            return wide.storage, [reorder.execute(queue, memory, wide, wait_for=wait_for)]
        return memory.storage, memory._wait_list(queue)

    def snapshot(self, engine, queue, wait_for: list) -> tuple:
        """(an ExecValue whose device values are a copy taken on ``queue``
        after ``wait_for`` and the memory's writes, the copy's event or
        None): for the host path, which reads them later, on a worker."""
        if self.memory is None:
            return self, None
        copy = uninitialised(self.memory.md, engine)
        event = engine.backend.copy(queue, copy.storage, self.memory.storage, copy.md.size,
                                    wait_for + self.memory._wait_list(queue))
        copy._wrote(event, queue)
        return ExecValue(self.slot, memory=copy), event

    def host_values(self, dims, engine):
        """A Scales/ZeroPoints holding the values in NumPy. Reads a device
        memory back on the engine's host queue (blocks: call it where
        waiting is allowed)."""
        if self.host is not None:
            return self.host
        # Every value of the declared types (bf16 and 4-bit ones too, which
        # have no NumPy kind the checks know) is exact in the kernels' type.
        kernel_np = np.float32 if self.slot.kernel_type == "f32" else np.int32
        values = self.memory.to_numpy(queue=engine.host_queue)
        return self.slot.declared.with_values(values.reshape(-1).astype(kernel_np), dims,
                                              self.slot.keyword, as_stored=True)


def _values_text(count: int) -> str:
    return f"{count} value" if count == 1 else f"{count} values"


def value_spec(attr: Attr | None, engine, make_reorder) -> tuple[ValueSlot, ...]:
    """What ``resolve`` checks each execute against, worked out once per
    primitive on ``engine``: a ValueSlot per keyword, in KEYWORDS' order.
    ``make_reorder(src_md, dst_md, engine=)`` (clayout's Reorder: this
    module sits below the primitives) makes the widening reorders."""
    return tuple(ValueSlot(keyword, field, None if attr is None else getattr(attr, field),
                           engine, make_reorder) for keyword, field in KEYWORDS.items())


def resolve(spec: tuple, given: tuple, dims: tuple[int, ...], engine,
            counted: bool = False) -> dict:
    """{field: ExecValue} for ``given`` (the values of execute's keywords,
    in KEYWORDS' order, None where not given), checked against ``spec``
    (``value_spec``: which fields take values at execute) and the
    execution's ``dims`` (``counted``: the primitive's own dims, on which
    masks and groups were checked at creation). Raises InvalidArgumentError
    for a value missing, unexpected, of the wrong count, type or engine."""
    out = {}
    for slot, value in zip(spec, given):
        keyword, field, declared = slot.keyword, slot.field, slot.declared
        if value is None:
            if slot.wanted:
                raise InvalidArgumentError(
                    f"{keyword} missing: the primitive's {declared!r} take their values at "
                    f"execute; pass {keyword}= ({_values_text(declared.count(dims))})")
            continue
        if not slot.wanted:
            why = (f"its {field} {declared!r} were fixed at creation (make them with "
                   f"mask= and no values to pass them at execute)" if declared is not None
                   else f"it was created without {field}")
            raise InvalidArgumentError(f"{keyword} given to execute, but {why}")
        out[field] = _resolve_one(slot, value, dims, engine, counted)
    return out


def _resolve_one(slot: ValueSlot, value, dims, engine, counted) -> ExecValue:
    if type(value) is not np.ndarray and (isinstance(value, Memory) or _is_device(value, engine)):
        if not counted:  # a runtime pattern's groups meet this execution's dims
            slot.declared.check(dims, slot.keyword)
        return ExecValue(slot, memory=_device_memory(slot, value, dims, engine))
    return ExecValue(slot, host=slot.declared.with_values(value, dims, slot.keyword,
                                                          counted=counted))


def _is_device(value, engine) -> bool:
    """Whether ``value`` is device storage another runtime made (a pyopencl
    Buffer or Array, USM memory). For a runtime other than the engine's,
    the engine's check of it says so."""
    return foreign_storage(value) is not None


def _device_memory(slot: ValueSlot, value, dims, engine) -> Memory:
    """The values of a Memory, Array or Buffer as a Memory on ``engine``,
    of the kernels' type or the declared one."""
    keyword, declared, kernel_type = slot.keyword, slot.declared, slot.kernel_type
    count = declared.count(dims)
    if isinstance(value, Memory):
        if value.engine != engine:
            raise InvalidArgumentError(
                f"{keyword} memory lives on {value.engine.describe()}, the primitive on "
                f"{engine.describe()}")
        memory = value
    elif foreign_storage(value) != engine.kind:
        what = {"opencl": "a pyopencl object", "sycl": "USM memory"}[foreign_storage(value)]
        raise InvalidArgumentError(
            f"{keyword} {describe(value)}: {what} for a primitive on {engine.describe()}; give "
            f"NumPy values or a Memory of its engine")
    elif not hasattr(value, "dtype"):  # a Buffer, USM memory: untyped bytes
        md = MemoryDesc((count,), kernel_type, tag="a")
        memory = _adopt(keyword, md, engine, value, f"it holds {kernel_type} values")
    else:
        data_type = _array_type(keyword, value, declared, kernel_type)
        md = MemoryDesc((value.size,), data_type, tag="a")
        memory = _adopt(keyword, md, engine, value, "")
    md = memory.md
    if md.ndims != 1 or md.dims[0] != count or md != MemoryDesc((count,), md.data_type, tag="a"):
        raise InvalidArgumentError(
            f"{keyword} {md!r}: expected {count} values, dense from the first byte "
            f"(MemoryDesc(({count},), {md.data_type!r}, tag='a')), for {declared!r} on dims "
            f"{dims!r}")
    if md.data_type not in (kernel_type, declared.data_type):
        raise InvalidArgumentError(
            f"{keyword} memory of {md.data_type}: expected {kernel_type} or the declared "
            f"data_type {declared.data_type}")
    return memory


def _array_type(keyword, array, declared, kernel_type) -> str:
    for name in (kernel_type, declared.data_type):
        if np.dtype(DATA_TYPES[name].numpy) == array.dtype:
            return name
    raise InvalidArgumentError(
        f"{keyword} array of dtype {array.dtype}: expected "
        f"{np.dtype(DATA_TYPES[kernel_type].numpy)} ({kernel_type}) or the declared "
        f"data_type {declared.data_type}")


def _adopt(keyword, md, engine, value, note) -> Memory:
    try:
        return Memory(md, engine, buffer=value)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{keyword}: {e}{'; ' + note if note else ''}") from None


def check_cross_engine(attr: Attr | None):
    """Raise UnimplementedError when a cross-engine reorder's ``attr`` takes
    values at execute."""
    if attr is not None and attr.at_execute():
        raise UnimplementedError(
            f"values at execute ({', '.join(attr.at_execute())}) for a cross-engine reorder "
            f"are not implemented: give the values at creation, or reorder on one engine")
