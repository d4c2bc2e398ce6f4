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

from . import memory_io
from .engine import Engine, Stream, as_engine, check_wait_for
from .errors import InvalidArgumentError, describe
from .md_addressing import may_overlap
from .memory_desc import MemoryDesc
from .memory_io import (allocate, check_layout, device_pending, host_pending, need_bytes,
                        stream_queue)


def _raw_bytes(raw) -> np.ndarray:
    """A bytes-like object (bytes, bytearray, a contiguous NumPy array) as uint8."""
    try:
        view = memoryview(raw)
        if not view.contiguous:
            raise TypeError("not contiguous")
        return np.frombuffer(view.cast("B"), dtype=np.uint8)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(
            f"raw {describe(raw)}: expected a contiguous bytes-like object or NumPy array ({error})"
        ) from None


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
        check_layout(md, "Memory")
        if raw is not None and buffer is not None:
            raise InvalidArgumentError("give raw= or buffer=, not both")
        need = need_bytes(md)
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
            self.storage, self.nbytes = allocate(engine, md, max(need, 0), data), \
                max(need, 0 if data is None else data.nbytes)
        if self.nbytes < need:
            raise InvalidArgumentError(
                f"buffer of {self.nbytes} bytes is smaller than the {need} bytes of {md!r}")
        self._pending = device_pending(engine, self.storage, events)
        self._host = host_pending(engine, self.storage)
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
        memory._pending = device_pending(engine, storage, events)
        memory._host = host_pending(engine, storage)
        return memory

    # -- NumPy in -------------------------------------------------------------------

    @classmethod
    def from_numpy(cls, md: MemoryDesc | npt.ArrayLike, engine: Engine | Any,
                   array: npt.ArrayLike | None = None, queue: QueueLike | None = None,
                   wait_for: EventList | None = None) -> "Memory":
        """A new Memory holding ``array`` (shape md.dims, logical order) in md's layout.

        ``Memory.from_numpy(x, engine)`` takes the descriptor from the array
        itself: dims from its shape, type from its dtype, layout from its
        strides when it is dense in some axis order (so the logical nchw
        view of a channels-last array makes an nhwc memory), C order
        otherwise. ``array`` may be any array NumPy takes, a DLPack producer
        on the CPU (a PyTorch CPU tensor) too.
        The array is converted to md's type only where NumPy calls that safe;
        padding is written with zeros. The array's values are taken before
        this returns (it may be changed at once); the layout change runs on
        the device for big tensors, on ``queue`` (a Stream or a queue of the
        engine's context; the engine's own queue by default) after ``wait_for``,
        without blocking. Raises InvalidArgumentError for arrays or
        arguments that do not fit.
        """
        return memory_io.from_numpy(cls, md, engine, array, queue, wait_for)

    # -- NumPy out ------------------------------------------------------------------

    def raw(self, queue: QueueLike | None = None,
            wait_for: EventList | None = None) -> np.ndarray:
        """A copy of the whole physical buffer as uint8. Blocks until the
        writes clayout enqueued on it and ``wait_for`` have finished and the
        bytes are read (on ``queue``, else the engine's own queue)."""
        if not self.engine.is_device:
            check_wait_for(wait_for, self.engine)
            stream_queue(queue, self.engine)
            self._host_wait(whole=True)
            return self.storage[: self.nbytes].copy()
        return self._read((0, self.nbytes), queue, wait_for, whole=True)

    def _read(self, span, queue, wait_for, out=None, whole=False) -> np.ndarray:
        """Bytes ``span`` of the buffer, once the writes that may touch this
        memory (any, when ``whole``) and ``wait_for`` are done."""
        wait = check_wait_for(wait_for, self.engine)
        q = stream_queue(queue, self.engine)
        backend = self.engine.backend
        backend.wait(wait + (self._pending.writes.wait_list(None) if whole
                             else self._wait_list()))
        lo, hi = span
        out = np.empty(hi - lo, dtype=np.uint8) if out is None else out
        backend.read(q, self.storage, lo, out)
        return out

    def to_numpy(self, queue: QueueLike | None = None,
                 wait_for: EventList | None = None,
                 out: np.ndarray | None = None) -> np.ndarray:
        """The tensor as a NumPy array of shape md.dims in logical order.

        Blocks until the writes clayout enqueued on this memory (on any
        stream) and ``wait_for`` have finished, then reads on ``queue`` (a
        Stream or a queue of the engine's; else the engine's own queue).
        ``out``: an existing array to read into, as ``read`` takes it; it is
        returned. Raises InvalidArgumentError for arguments of the wrong kind.
        """
        return memory_io.to_numpy(self, queue, wait_for, out)

    # -- into and out of existing memory ---------------------------------------------

    def write(self, array: npt.ArrayLike, queue: QueueLike | None = None,
              wait_for: EventList | None = None) -> Any:
        """Write ``array`` (shape md.dims, logical order; a DLPack producer on
        the CPU too) into this memory's elements, in its layout, after
        ``wait_for`` and what this memory waits for; padding gets zeros and
        no other byte is touched. Returns the event of the write without
        blocking, as pyopencl's ``Array.set(async_=True)``: keep ``array``
        unchanged until it completes. When the array lies as the memory
        does (same type, and strides that are md's, no gaps) its bytes go in
        one copy, allocating nothing; else through a staging buffer and the
        device's layout change. The host engine writes at once and returns a
        complete HostEvent. Raises InvalidArgumentError for an array of
        other dims, or of a type that does not convert safely.
        """
        return memory_io.write(self, array, queue, wait_for)

    def read(self, out: np.ndarray | None = None, queue: QueueLike | None = None,
             wait_for: EventList | None = None) -> tuple[np.ndarray, Any]:
        """Read the tensor into ``out`` (shape md.dims, md's NumPy type; C
        order or the memory's own layout), or into a new array in the
        memory's own layout, once the writes clayout enqueued on it and
        ``wait_for`` are done. Returns ``(array, event)`` without blocking,
        as pyopencl's ``Array.get_async``: the array holds the values once
        the event completes. An ``out`` that lies as the memory does takes
        the bytes in one copy, allocating nothing. The 4-bit types (one
        element a byte in NumPy, two on the device) are read blocking.
        Raises InvalidArgumentError for an ``out`` of other shape or type,
        or in neither layout.
        """
        return memory_io.read(self, out, queue, wait_for)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(memory)``: a host memory's tensor, without a copy for a
        plain layout (the array shares its bytes; ``copy=True`` copies), a
        copy in logical order for a blocked one (``copy=False`` then raises
        ValueError, as NumPy's protocol asks). A device memory refuses:
        its bytes are not in host memory."""
        return memory_io.as_array(self, dtype, copy)

    def to_cl_array(self, queue: QueueLike | None = None) -> Any:  # a pyopencl.array.Array
        """A pyopencl Array over this memory's buffer, without a copy (plain
        layouts only: no inner blocks, whole-byte types), of shape md.dims
        with the layout's strides. Its ``events`` are the pending writes and
        reads (what a write through it must wait for). A layout dense in
        another axis order than C or Fortran (nhwc) gives a subclass whose
        ``get()`` and ``get_async()`` read the bytes in that order, in one
        copy, and hand back the logical view. Raises InvalidArgumentError
        otherwise.""" 
        return memory_io.cl_array(self, queue)

    # -- DLPack -------------------------------------------------------------------------

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """The DLPack capsule of this memory's tensor over its own bytes (the
        array API standard's ``__dlpack__``; versioned when ``max_version``
        allows, a copy for ``copy=True``), after the commands clayout
        enqueued on it. Host memories export through NumPy, SYCL memories
        through usm_ndarray (``stream``: a dpctl SyclQueue or None). Raises
        clayout.dlpack.DLPackError (an InvalidArgumentError and a
        BufferError) for OpenCL memories, blocked layouts, 4-bit and other
        types DLPack exporters do not carry, and ``dl_device``/``copy``
        requests that cannot be met; see clayout/dlpack.py."""
        from . import dlpack
        return dlpack.export(self, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(device type, number) as DLPack names them: (1, 0) kDLCPU on the
        host, (14, n) kDLOneAPI on a SYCL engine, (4, 0) kDLOpenCL on an
        OpenCL engine (which ``__dlpack__`` refuses: no consumer takes it)."""
        from . import dlpack
        return dlpack.device_of(self)

    @classmethod
    def from_dlpack(cls, obj: Any, engine: Engine | Any = None,
                    md: MemoryDesc | None = None) -> "Memory":
        """A Memory sharing the bytes of a DLPack producer's tensor (NumPy,
        PyTorch CPU, dpnp, ...): a host memory for a CPU tensor, a SYCL
        memory over the USM of a oneAPI-device one; ``engine`` of another
        kind gets a copy. ``md`` says how the bytes are read (default: the
        tensor's dims, type and strides). Raises InvalidArgumentError for
        what has no clayout form (a type clayout lacks, negative or
        broadcast strides, a tensor that does not hold ``md``),
        UnimplementedError for tensors on other devices; see
        clayout/dlpack.py."""
        from . import dlpack
        return dlpack.from_dlpack(obj, engine=engine, md=md, memory_type=cls)

    def __repr__(self):
        return f"<Memory {self.md!r} on {self.engine!r}>"


def uninitialised(md: MemoryDesc, engine: Engine) -> Memory:
    """A Memory of md on engine over new storage that is not zeroed: a
    staging buffer for a primitive that writes every byte it later reads."""
    return memory_io.new_memory(Memory, md, engine)
