"""Memory: a descriptor plus storage on an engine, with NumPy in and out.

The commands clayout enqueued on a buffer are remembered per buffer (as
pyopencl's Array keeps ``events``), whichever Memory objects share it
(clayout/backends/pending.py): a read or a write of a Memory waits for the
pending writes that may touch its elements, and a write also for the
pending reads (all of them, unless both are provably disjoint windows of
one layout, such as the halves of an in-place concat).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from .backends.pending import hold, host_pending_of, pending_of, record
from .engine import Engine, Stream, as_engine, as_stream, check_wait_for
from .errors import InvalidArgumentError
from .host.layout import (byte_span, dense_bytes, fills_span, from_dense_bytes, gather,
                          is_c_dense, scatter, span_base)
from .md_addressing import may_overlap
from .memory_desc import MemoryDesc


def _as_dtype(md: MemoryDesc, array) -> np.ndarray:
    """``array`` as a C-contiguous NumPy array of md's type and dims, converted
    only where NumPy calls that safe. Raises InvalidArgumentError otherwise."""
    if array is None or isinstance(array, (str, bytes)):
        raise InvalidArgumentError(f"array {array!r}: expected a NumPy array of shape {md.dims}")
    try:
        array = np.asarray(array)
    except (ValueError, TypeError) as error:  # ragged nested lists, odd objects
        raise InvalidArgumentError(f"array {array!r} is not a rectangular array: {error}") from None
    target = md.dtype.numpy
    if array.shape != md.dims:
        raise InvalidArgumentError(
            f"array of shape {array.shape} does not match dims {md.dims!r} of {md!r}")
    if array.dtype != target and not np.can_cast(array.dtype, target, "safe"):
        raise InvalidArgumentError(
            f"array of dtype {array.dtype} cannot be stored as {md.data_type} without "
            f"loss; convert it first (e.g. array.astype(clayout.dtypes.DATA_TYPES"
            f"[{md.data_type!r}].numpy)) or reorder from a {array.dtype} memory")
    return np.ascontiguousarray(array, dtype=target)


def _raw_bytes(raw) -> np.ndarray:
    """A bytes-like object (bytes, bytearray, a contiguous NumPy array) as uint8."""
    try:
        view = memoryview(raw)
        if not view.contiguous:
            raise TypeError("not contiguous")
        return np.frombuffer(view.cast("B"), dtype=np.uint8)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"raw {raw!r}: expected a contiguous bytes-like object or NumPy array ({error})"
        ) from None


def _need(md: MemoryDesc) -> int:
    """Bytes a buffer must hold for md: its span plus its offset0."""
    return md.size + md.dtype.nbytes(md.offset0)


#: A queue= argument: a Stream, or a queue of the engine's runtime and
#: context (a pyopencl CommandQueue, a dpctl SyclQueue).
QueueLike = Union[Stream, Any]
#: A wait_for= argument: events of the engine's runtime (pyopencl Events,
#: dpctl SyclEvents).
EventList = Sequence[Any]
#: What buffer= shares: a Memory, a pyopencl Buffer or Array (OpenCL), USM
#: memory or an object with __sycl_usm_array_interface__ (SYCL), a uint8
#: NumPy array (host).
BufferLike = Any


def _stream_queue(queue, engine):
    return engine.queue if queue is None else as_stream(queue, engine).queue


class Memory:
    """A tensor: a MemoryDesc and the storage that holds it on an engine.

    ``Memory(md, engine)`` allocates ``md.size`` zero bytes (filled on the
    device, without blocking); ``raw=`` copies a physical buffer in;
    ``buffer=`` shares the storage of another Memory, a pyopencl Buffer or
    Array (OpenCL), a dpctl USM memory or an object with
    ``__sycl_usm_array_interface__`` such as a dpnp array (SYCL), without a
    copy; that is also how a submemory descriptor is used.
    ``engine`` may be a pyopencl Context. Raises InvalidArgumentError for
    arguments of the wrong kind, a buffer too small, or a size the device or
    machine cannot allocate.
    """

    def __init__(self, md: MemoryDesc, engine: Engine | Any,
                 raw: bytes | bytearray | memoryview | np.ndarray | None = None,
                 buffer: BufferLike = None) -> None:
        engine = as_engine(engine, "memory engine")
        _check_layout(md, "Memory")
        if raw is not None and buffer is not None:
            raise InvalidArgumentError("give raw= or buffer=, not both")
        need = _need(md)
        self.md, self.engine = md, engine
        events = ()
        if buffer is not None:
            self.storage, self.nbytes, events = self._adopt(buffer)
        else:
            data = None
            if raw is not None:
                data = _raw_bytes(raw)
                if data.nbytes < need:
                    raise InvalidArgumentError(
                        f"raw buffer of {data.nbytes} bytes is smaller than the {need} bytes "
                        f"of {md!r}")
            self.storage, self.nbytes = _allocate(engine, md, max(need, 0), data), \
                max(need, 0 if data is None else data.nbytes)
        if self.nbytes < need:
            raise InvalidArgumentError(
                f"buffer of {self.nbytes} bytes is smaller than the {need} bytes of {md!r}")
        self._pending = _device_pending(engine, self.storage, events)
        self._host = _host_pending(engine, self.storage)
        if buffer is None and raw is None and engine.is_device and need:
            queue = engine.queue
            self._wrote(engine.backend.fill_zero(queue, self.storage, need), queue)

    # -- pending commands ---------------------------------------------------------
    #
    # A command holds the lock of each buffer it touches (``locked``) from
    # building its wait list to recording its event, so that events are
    # recorded in the order they were enqueued.

    def _wrote(self, event, queue=None):
        """Record a write of this memory's elements, enqueued on ``queue``."""
        if event is not None and self._pending is not None:
            self._pending.writes.add(event, queue, self.md)

    def _was_read(self, event, queue=None):
        """Record a read of this memory's elements, enqueued on ``queue``:
        later writes of them wait for it."""
        if event is not None and self._pending is not None:
            self._pending.reads.add(event, queue, self.md)

    def _wait_list(self, queue=None, write: bool = False) -> list:
        """Events a command on ``queue`` that reads (or, ``write``, writes)
        this memory waits for: the pending writes of its elements, and for
        a write their pending reads too. Raises ExecutionError once for a
        write that failed."""
        return [] if self._pending is None else self._pending.wait_list(queue, self.md, write)

    # A host memory remembers the device commands of cross-engine reorders
    # on its storage: downloads into it and uploads from it.

    def _host_events(self, write: bool = False, whole: bool = False) -> list:
        """The device commands a host read (``write`` False) or write of this
        host memory's elements (all its buffer's, when ``whole``) waits for:
        downloads into it, and before a write also uploads still reading it."""
        if self._host is None:
            return []
        return self._host.wait_list(None, None if whole else self.md, write)

    def _host_wait(self, write: bool = False, whole: bool = False):
        """Block until ``_host_events`` have ended. Raises ExecutionError
        when a download into it failed."""
        if self._host is None:
            return
        md = None if whole else self.md
        writes = self._host.writes
        writes.wait_list(None, md)  # drops what is done; a failed download raises once
        writes.wait(md)
        if write:
            self._host.reads.wait(md)  # failed or not: a failed upload changed nothing

    def _host_recorded(self, event, queue, write: bool, backend):
        """Record a device command of ``backend``, enqueued on ``queue``, that
        writes (or reads) this host memory's elements."""
        pending = self._host.writes if write else self._host.reads
        pending.add(event, queue, self.md, backend)

    @property
    def events(self) -> list:
        """The events of writes clayout enqueued that may touch this memory and
        may still run (what its readers wait for)."""
        return self._wait_list(None)

    def shares_bytes_with(self, other: "Memory") -> bool:
        """True when this memory and ``other`` may use some of the same bytes."""
        if self.engine.is_device:
            same = self._address() == other._address()
        else:
            same = np.may_share_memory(self.storage, other.storage)
        return same and may_overlap(self.md, other.md)

    def _address(self) -> int:
        """The device address of the storage, read once."""
        address = self.__dict__.get("_storage_address")
        if address is None:
            address = self._storage_address = self.engine.backend.address(self.storage)
        return address

    # -- storage ------------------------------------------------------------------

    def _adopt(self, buffer):
        """(storage, usable bytes, events to wait for) of a buffer= argument."""
        if isinstance(buffer, Memory):
            if buffer.engine != self.engine:
                raise InvalidArgumentError(
                    f"buffer of {buffer!r} lives on {buffer.engine.describe()}, not on "
                    f"{self.engine.describe()}")
            return buffer.storage, buffer.nbytes, ()
        return self.engine.backend.adopt(self.md, buffer)

    @classmethod
    def _wrap(cls, md, engine, storage, nbytes, events=()):
        """A Memory over new storage, whose contents are ready once ``events`` are."""
        memory = object.__new__(cls)
        memory.md, memory.engine, memory.storage, memory.nbytes = md, engine, storage, nbytes
        memory._pending = _device_pending(engine, storage, events)
        memory._host = _host_pending(engine, storage)
        return memory

    # -- NumPy in -------------------------------------------------------------------

    @classmethod
    def from_numpy(cls, md: MemoryDesc, engine: Engine | Any, array: npt.ArrayLike,
                   queue: QueueLike | None = None,
                   wait_for: EventList | None = None) -> "Memory":
        """A new Memory holding ``array`` (shape md.dims, logical order) in md's layout.

        The array is converted to md's type only where NumPy calls that safe;
        padding is written with zeros. The array's values are taken before
        this returns (it may be changed at once); the layout change runs on
        the device for big tensors, on ``queue`` (a Stream or a queue of the
        engine's context; the engine's own queue by default) after ``wait_for``,
        without blocking. Raises InvalidArgumentError for arrays or
        arguments that do not fit.
        """
        engine = as_engine(engine, "from_numpy engine")
        _check_layout(md, "from_numpy")
        array = _as_dtype(md, array)
        wait = check_wait_for(wait_for, engine)
        queue = _stream_queue(queue, engine)
        need = _need(md)
        if not engine.is_device:
            raw = _host_zeros(md, need)
            scatter(md, array, raw)
            return cls._wrap(md, engine, raw, need)
        if is_c_dense(md):  # the array's bytes are the buffer's, copied now
            return cls._wrap(md, engine, _allocate(engine, md, need, array), need, wait)
        # (Weights with compensation go through the host: a reorder into
        # them would quantize and compute compensation, not copy.)
        if need >= engine.caps.convert_on_device_bytes and md.extra is None:
            dense = MemoryDesc(md.dims, md.data_type)
            prim = _device_reorder(dense, md, engine)
            if prim is not None:
                data = dense_bytes(md.dtype, array)  # 4-bit types: two elements a byte
                staged = cls._wrap(dense, engine, _allocate(engine, dense, data.nbytes, data),
                                   data.nbytes)
                out = cls._wrap(md, engine, _allocate(engine, md, need), need)
                if not fills_span(md) or byte_span(md) != (0, need):
                    # Bytes around or between the elements: zero them too.
                    out._wrote(engine.backend.fill_zero(queue, out.storage, need), queue)
                # The conversion waits on nothing outside (an engine queue must
                # never stall on a caller's event); wait_for gates later users.
                prim.execute(queue, staged, out)
                for event in wait:
                    out._wrote(event)
                return out
        raw = np.zeros(need, dtype=np.uint8)
        scatter(md, array, raw)
        return cls._wrap(md, engine, _allocate(engine, md, need, raw), need, wait)

    # -- NumPy out ------------------------------------------------------------------

    def raw(self, queue: QueueLike | None = None,
            wait_for: EventList | None = None) -> np.ndarray:
        """A copy of the whole physical buffer as uint8. Blocks until the
        writes clayout enqueued on it and ``wait_for`` have finished and the
        bytes are read (on ``queue``, else the engine's own queue)."""
        if not self.engine.is_device:
            check_wait_for(wait_for, self.engine)
            _stream_queue(queue, self.engine)
            self._host_wait(whole=True)
            return self.storage[: self.nbytes].copy()
        return self._read((0, self.nbytes), queue, wait_for, whole=True)

    def _read(self, span, queue, wait_for, out=None, whole=False) -> np.ndarray:
        """Bytes ``span`` of the buffer, once the writes that may touch this
        memory (any, when ``whole``) and ``wait_for`` are done."""
        wait = check_wait_for(wait_for, self.engine)
        q = _stream_queue(queue, self.engine)
        backend = self.engine.backend
        backend.wait(wait + (self._pending.writes.wait_list(None) if whole
                             else self._wait_list()))
        lo, hi = span
        out = np.empty(hi - lo, dtype=np.uint8) if out is None else out
        backend.read(q, self.storage, lo, out)
        return out

    def to_numpy(self, queue: QueueLike | None = None,
                 wait_for: EventList | None = None) -> np.ndarray:
        """The tensor as a NumPy array of shape md.dims in logical order.

        Blocks until the writes clayout enqueued on this memory (on any
        stream) and ``wait_for`` have finished, then reads on ``queue`` (a
        Stream or a queue of the engine's; else the engine's own queue). Raises
        InvalidArgumentError for arguments of the wrong kind.
        """
        md = self.md
        if not self.engine.is_device or md.nelems() == 0:
            check_wait_for(wait_for, self.engine)
            _stream_queue(queue, self.engine)
            if not self.engine.is_device:
                self._host_wait()
                return gather(md, self.storage)
            return np.zeros(md.dims, dtype=md.dtype.numpy)
        if is_c_dense(md):
            out = np.empty(md.dims, dtype=md.dtype.numpy)
            self._read((0, out.nbytes), queue, wait_for, out.reshape(-1).view(np.uint8))
            return out
        if _need(md) >= self.engine.caps.convert_on_device_bytes and md.extra is None:
            dense = MemoryDesc(md.dims, md.data_type)
            prim = _device_reorder(md, dense, self.engine)
            if prim is not None:
                nbytes = dense.size
                staged = uninitialised(dense, self.engine)
                q = _stream_queue(queue, self.engine)
                # Wait here, not on the queue: an engine queue must never
                # stall on a caller's event (to_numpy blocks anyway).
                self.engine.backend.wait(check_wait_for(wait_for, self.engine)
                                         + self._wait_list())
                event = prim.execute(q, self, staged)
                out = np.empty(md.dims, dtype=md.dtype.numpy)
                if not md.dtype.packed:
                    staged._read((0, nbytes), q, [event], out.reshape(-1).view(np.uint8))
                    return out
                # 4-bit types: two elements a byte on the device, one in NumPy.
                return from_dense_bytes(md.dtype, staged._read((0, nbytes), q, [event]), out)
        return gather(md, self._read(byte_span(md), queue, wait_for), span_base(md))

    def to_cl_array(self, queue: QueueLike | None = None) -> Any:  # a pyopencl.array.Array
        """A pyopencl Array over this memory's buffer, without a copy (plain
        layouts only: no inner blocks, whole-byte types). Its ``events`` are
        the pending writes and reads (what a write through it must wait
        for). Raises InvalidArgumentError otherwise."""
        import pyopencl.array as cla

        md = self.md
        if not self.engine.is_opencl:
            raise InvalidArgumentError(f"{self!r}: a {self.engine.kind} memory has no pyopencl "
                                       f"Array")
        if md.inner_blks or md.dtype.packed:
            raise InvalidArgumentError(
                f"{md!r}: only plain layouts (no inner blocks, whole-byte types) are "
                f"pyopencl Arrays; reorder to a plain layout first")
        size = md.dtype.bits // 8
        first = md.offset((0,) * md.ndims) if md.nelems() else md.offset0
        return cla.Array(_stream_queue(queue, self.engine), md.dims, md.dtype.numpy,
                         strides=tuple(s * size for s in md.strides), data=self.storage,
                         offset=first * size, events=self._wait_list(write=True))

    def __repr__(self):
        return f"<Memory {self.md!r} on {self.engine!r}>"


def _check_layout(md, what):
    if not isinstance(md, MemoryDesc):
        raise InvalidArgumentError(f"{what}: {md!r} is not a MemoryDesc")
    if md.format_kind != "blocked":
        raise InvalidArgumentError(
            f"{what}: {md!r} has format 'any'; memory needs a layout")


def _host_pending(engine, storage):
    """The Pending of a host memory's storage; None on a device."""
    return None if engine.is_device else host_pending_of(storage)


def _device_pending(engine, storage, events=()):
    """The Pending of a device memory's storage; None on the host."""
    return pending_of(engine.backend, storage, events) if engine.is_device else None


def record_command(event, queue, wrote: Memory, read: list) -> None:
    """Record ``event``, a command enqueued on ``queue`` of ``wrote``'s
    device engine, as a write of ``wrote`` and a read of each memory in
    ``read`` (do it under ``locked``)."""
    if event is not None:
        record(event, queue, wrote.engine.backend, [(wrote._pending, wrote.md)],
               [(m._pending, m.md) for m in read])


def locked(*memories) -> hold:
    """A context manager that holds the locks of the buffers of ``memories``
    (Memory objects or None): what a command touching several memories
    holds from building its wait list to recording its event as a write
    of one and a read of the others. Each lock once, in one order for the
    whole process, so that two threads never deadlock."""
    return hold(*[m._pending or m._host for m in memories if m is not None])


def _host_zeros(md, nbytes):
    try:
        return np.zeros(nbytes, dtype=np.uint8)
    except MemoryError:
        raise InvalidArgumentError(
            f"{md!r} needs {nbytes} bytes, more than this machine can allocate") from None


def _allocate(engine, md, nbytes, data=None):
    """Storage of ``nbytes`` for md: uninitialised, or holding ``data`` (copied)."""
    return engine.backend.allocate(md, nbytes, data)


def uninitialised(md: MemoryDesc, engine: Engine) -> Memory:
    """A Memory of md on engine over new storage that is not zeroed: a
    staging buffer for a primitive that writes every byte it later reads."""
    need = _need(md)
    return Memory._wrap(md, engine, _allocate(engine, md, need), need)


# Memory sits below the primitives, yet from_numpy and to_numpy change big
# tensors' layouts with a device Reorder: clayout.primitives registers the
# maker of one here when it is imported (clayout's __init__ imports it).
_DEVICE_REORDER: list = []


def register_device_reorder(make) -> None:
    """Make ``make(src_md, dst_md, engine)`` (a primitive that runs as a
    device kernel, or None) what from_numpy and to_numpy use."""
    _DEVICE_REORDER[:] = [make]


def _device_reorder(src_md, dst_md, engine):
    """A primitive that changes src_md's layout to dst_md's in a device kernel,
    or None (then the layout is changed on the host)."""
    return _DEVICE_REORDER[0](src_md, dst_md, engine) if _DEVICE_REORDER else None
