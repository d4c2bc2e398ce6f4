"""NumPy in and out of memories: what Memory's from_numpy, to_numpy, write,
read, ``np.asarray`` and to_cl_array do, and the helpers memories and
primitives share to allocate storage and record their commands. Functions
take the Memory (or its class) they work for, so this module sits below
clayout.memory."""
from __future__ import annotations

import functools

import numpy as np

from .backends.host import COMPLETE
from .backends.pending import hold, host_pending_of, pending_of, record
from .engine import Engine, as_engine, as_stream, check_wait_for
from .errors import InvalidArgumentError, describe
from .host.arrays import desc_of_array, host_array, is_plain, matching_bytes, plain_view
from .host.layout import (byte_span, dense_bytes, fills_span, from_dense_bytes, gather,
                          is_c_dense, scatter, span_base)
from .memory_desc import MemoryDesc


def as_dtype(md: MemoryDesc, array) -> np.ndarray:
    """``array`` as a C-contiguous NumPy array of md's type and dims, converted
    only where NumPy calls that safe. Raises InvalidArgumentError otherwise."""
    if array is None or isinstance(array, (str, bytes)):
        raise InvalidArgumentError(
            f"array {describe(array)}: expected a NumPy array of shape {md.dims}")
    try:
        array = np.asarray(array)
    except (ValueError, TypeError) as error:  # ragged nested lists, odd objects
        raise InvalidArgumentError(
            f"array {describe(array)} is not a rectangular array: {error}") from None
    target = md.dtype.numpy
    if array.shape != md.dims:
        raise InvalidArgumentError(
            f"array of shape {array.shape} does not match dims {md.dims!r} of {md!r}")
    if array.dtype != target and not np.can_cast(array.dtype, target, "safe"):
        from .dtypes import NUMPY_NAMES, numpy_name, with_article
        # From a dtype clayout stores too, a reorder converts (rounding, saturating).
        reorder = (f" or reorder from {with_article(array.dtype.name)} memory"
                   if array.dtype.name in NUMPY_NAMES else "")
        raise InvalidArgumentError(
            f"array of dtype {array.dtype} cannot be stored as {md.data_type} without "
            f"loss; convert it first (e.g. array.astype({numpy_name(md.dtype)})){reorder}")
    return np.ascontiguousarray(array, dtype=target)


def need_bytes(md: MemoryDesc) -> int:
    """Bytes a buffer must hold for md: its span plus its offset0."""
    return md.size + md.dtype.nbytes(md.offset0)


def stream_queue(queue, engine):
    return engine.queue if queue is None else as_stream(queue, engine).queue



# -- NumPy in and out ---------------------------------------------------------------

def from_numpy(cls, md, engine, array, queue, wait_for):
    """Memory.from_numpy (see there) for the Memory class ``cls``."""
    if not isinstance(md, MemoryDesc):
        if array is not None:
            raise InvalidArgumentError(
                f"from_numpy({describe(md)}, engine, {describe(array)}): give a "
                f"MemoryDesc and an array, or the array alone")
        array = host_array(md)
        md = desc_of_array(array)
    engine = as_engine(engine, "from_numpy engine")
    check_layout(md, "from_numpy")
    array = as_dtype(md, host_array(array))
    wait = check_wait_for(wait_for, engine)
    queue = stream_queue(queue, engine)
    need = need_bytes(md)
    if not engine.is_device:
        raw = host_zeros(md, need)
        scatter(md, array, raw)
        return cls._wrap(md, engine, raw, need)
    if is_c_dense(md):  # the array's bytes are the buffer's, copied now
        return cls._wrap(md, engine, allocate(engine, md, need, array), need, wait)
    # (Weights with compensation go through the host: a reorder into
    # them would quantize and compute compensation, not copy.)
    if need >= engine.caps.convert_on_device_bytes and md.extra is None:
        dense = MemoryDesc(md.dims, md.data_type)
        prim = _device_reorder(dense, md, engine)
        if prim is not None:
            data = dense_bytes(md.dtype, array)  # 4-bit types: two elements a byte
            staged = cls._wrap(dense, engine, allocate(engine, dense, data.nbytes, data),
                               data.nbytes)
            out = cls._wrap(md, engine, allocate(engine, md, need), need)
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
    return cls._wrap(md, engine, allocate(engine, md, need, raw), need, wait)



def to_numpy(mem, queue, wait_for, out):
    """Memory.to_numpy (see there)."""
    if out is not None:
        array, event = mem.read(out, queue=queue, wait_for=wait_for)
        _finish(mem, event)
        return array
    md = mem.md
    if not mem.engine.is_device or md.nelems() == 0:
        check_wait_for(wait_for, mem.engine)
        stream_queue(queue, mem.engine)
        if not mem.engine.is_device:
            mem._host_wait()
            return gather(md, mem.storage)
        return np.zeros(md.dims, dtype=md.dtype.numpy)
    if is_c_dense(md):
        out = np.empty(md.dims, dtype=md.dtype.numpy)
        mem._read((0, out.nbytes), queue, wait_for, out.reshape(-1).view(np.uint8))
        return out
    if need_bytes(md) >= mem.engine.caps.convert_on_device_bytes and md.extra is None:
        dense = MemoryDesc(md.dims, md.data_type)
        prim = _device_reorder(md, dense, mem.engine)
        if prim is not None:
            nbytes = dense.size
            staged = new_memory(type(mem), dense, mem.engine)
            q = stream_queue(queue, mem.engine)
            # Wait here, not on the queue: an engine queue must never
            # stall on a caller's event (to_numpy blocks anyway).
            mem.engine.backend.wait(check_wait_for(wait_for, mem.engine)
                                     + mem._wait_list())
            event = prim.execute(q, mem, staged)
            out = np.empty(md.dims, dtype=md.dtype.numpy)
            if not md.dtype.packed:
                staged._read((0, nbytes), q, [event], out.reshape(-1).view(np.uint8))
                return out
            # 4-bit types: two elements a byte on the device, one in NumPy.
            return from_dense_bytes(md.dtype, staged._read((0, nbytes), q, [event]), out)
    return gather(md, mem._read(byte_span(md), queue, wait_for), span_base(md))



def write(mem, array, queue, wait_for):
    """Memory.write (see there)."""
    md = mem.md
    array = host_array(array)
    if not mem.engine.is_device:
        check_wait_for(wait_for, mem.engine)
        stream_queue(queue, mem.engine)
        array = as_dtype(md, array)
        mem._host_wait(write=True)
        scatter(md, array, mem.storage)
        return COMPLETE
    direct = matching_bytes(md, array)
    if direct is None:
        array = as_dtype(md, array)
        dense = MemoryDesc(md.dims, md.data_type)
        staged = type(mem)(dense, Engine("host"), buffer=np.array(dense_bytes(md.dtype, array)))
        return _cross_reorder(dense, md, staged.engine, mem.engine).execute(
            stream_queue(queue, mem.engine), staged, mem, wait_for)
    wait = check_wait_for(wait_for, mem.engine)
    q = stream_queue(queue, mem.engine)
    backend = mem.engine.backend
    with locked(mem):
        wait += mem._wait_list(q, write=True)
        # As execute: an input that already failed fails the write, and
        # nothing is enqueued (a copy behind a failed event may never run).
        event = backend.run_after(wait, lambda: backend.write_async(
            q, mem.storage, byte_span(md)[0], direct, wait), q)
        record_command(event, q, mem, [])
    _hold_until_done(mem.engine, event, array)
    return event



def read(mem, out, queue, wait_for):
    """Memory.read (see there)."""
    md = mem.md
    out = _read_target(mem, out)
    if not mem.engine.is_device:
        check_wait_for(wait_for, mem.engine)
        stream_queue(queue, mem.engine)
        mem._host_wait()
        if is_plain(md):
            np.copyto(out, plain_view(md, mem.storage))
        else:
            np.copyto(out, gather(md, mem.storage))
        return out, COMPLETE
    direct = matching_bytes(md, out)
    if direct is not None:
        wait = check_wait_for(wait_for, mem.engine)
        q = stream_queue(queue, mem.engine)
        backend = mem.engine.backend
        with locked(mem):
            wait += mem._wait_list(q)
            event = backend.run_after(wait, lambda: backend.read_async(
                q, mem.storage, byte_span(md)[0], direct, wait), q)
            mem._was_read(event, q)
        _hold_until_done(mem.engine, event, out)
        return out, event
    if md.dtype.packed:
        np.copyto(out, mem.to_numpy(queue, wait_for))
        return out, COMPLETE
    if not out.flags.c_contiguous:
        raise InvalidArgumentError(
            f"out {describe(out)} with strides {out.strides}: read takes an array in C "
            f"order or in the memory's own layout ({md!r})")
    dense = MemoryDesc(md.dims, md.data_type)
    landing = type(mem)(dense, Engine("host"), buffer=out.reshape(-1).view(np.uint8))
    event = _cross_reorder(md, dense, mem.engine, landing.engine).execute(
        stream_queue(queue, mem.engine), mem, landing, wait_for)
    return out, event


def _hold_until_done(engine, event, array):
    """Keep ``array`` alive until ``event`` completes: pyopencl's events hold
    the host arrays of their copies, a dpctl memcpy_async does not (a caller
    dropping its array at once would leave the copy a freed buffer)."""
    if engine.kind == "sycl":
        engine.backend.when_complete(event, lambda: array)


def _read_target(mem, out):
    """``out`` checked for ``read``, or a new array in the memory's own
    layout (C order for blocked layouts)."""
    md = mem.md
    if out is None:
        if not is_plain(md) or not md.nelems():
            return np.empty(md.dims, dtype=md.dtype.numpy)
        order = sorted(range(md.ndims), key=lambda a: (-md.strides[a], a))
        physical = np.empty([md.dims[a] for a in order], dtype=md.dtype.numpy)
        return physical.transpose(np.argsort(order))
    if not isinstance(out, np.ndarray) or out.shape != md.dims \
            or out.dtype != md.dtype.numpy:
        raise InvalidArgumentError(
            f"out {describe(out)}: expected a NumPy array of shape {md.dims} and dtype "
            f"{md.dtype.numpy.name} for {md!r}")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"out {describe(out)} is read-only")
    return out

def _finish(mem, event):
    """Block until ``event`` (of this memory's engine) has completed."""
    if mem.engine.is_device:
        mem.engine.backend.wait([event])


def as_array(mem, dtype, copy):
    """Memory.__array__ (see there)."""
    if mem.engine.is_device:
        raise InvalidArgumentError(
            f"np.asarray({mem!r}): a device memory's bytes are not in host memory; "
            f"use memory.to_numpy(), memory.read(out=...), or np.from_dlpack on a "
            f"SYCL memory")
    mem._host_wait()
    if is_plain(mem.md):
        array = plain_view(mem.md, mem.storage)
        if copy:
            array = array.copy()
    elif copy is False:
        raise ValueError(f"{mem.md!r} has inner blocks: its tensor is no view of its "
                         f"bytes, so np.asarray(copy=False) cannot give one")
    else:
        array = gather(mem.md, mem.storage)
    return array if dtype is None else array.astype(dtype, copy=False)



def cl_array(mem, queue):
    """Memory.to_cl_array (see there)."""
    import pyopencl.array as cla

    md = mem.md
    if not mem.engine.is_opencl:
        raise InvalidArgumentError(f"{mem!r}: a {mem.engine.kind} memory has no pyopencl "
                                   f"Array")
    if md.inner_blks or md.dtype.packed:
        raise InvalidArgumentError(
            f"{md!r}: only plain layouts (no inner blocks, whole-byte types) are "
            f"pyopencl Arrays; reorder to a plain layout first")
    size = md.dtype.bits // 8
    first = md.offset((0,) * md.ndims) if md.nelems() else md.offset0
    strides = tuple(s * size for s in md.strides)
    dense = np.empty(0, md.dtype.numpy)
    dense = np.lib.stride_tricks.as_strided(dense, md.dims, strides)
    flags = dense.flags
    # A layout dense in another axis order (nhwc seen as nchw) is neither
    # C nor Fortran order, which pyopencl's get() asks for.
    kind = _permuted_array_class() if md.nelems() and fills_span(md) and not (
        flags.c_contiguous or flags.f_contiguous) else cla.Array
    return kind(stream_queue(queue, mem.engine), md.dims, md.dtype.numpy,
                strides=strides, data=mem.storage, offset=first * size,
                events=mem._wait_list(write=True))


@functools.cache
def _permuted_array_class():
    """pyopencl's Array for a layout dense in another axis order than C or
    Fortran: get() reads it in its own order (one copy) and returns the
    logical view of that (pyopencl's get() takes C or Fortran order only)."""
    import pyopencl.array as cla

    class PermutedArray(cla.Array):
        def get_async(self, queue=None, ary=None):
            order = sorted(range(self.ndim), key=lambda a: (-self.strides[a], a))
            physical = cla.Array.transpose(self, order)  # C order: pyopencl reads it
            into = None if ary is None else ary.transpose(order)
            if into is not None and not into.flags.c_contiguous:
                raise InvalidArgumentError(
                    f"ary {describe(ary)} with strides {ary.strides}: get() of a "
                    f"{self.strides}-strided Array fills arrays of its own layout; "
                    f"use get() without ary")
            out, event = cla.Array.get_async(physical, queue, into)
            return (ary if ary is not None else out.transpose(np.argsort(order))), event

        def get(self, queue=None, ary=None):
            out, event = self.get_async(queue, ary)
            event.wait()
            return out

    return PermutedArray


def check_layout(md, what):
    if not isinstance(md, MemoryDesc):
        raise InvalidArgumentError(f"{what}: {md!r} is not a MemoryDesc")
    if md.format_kind != "blocked":
        raise InvalidArgumentError(
            f"{what}: {md!r} has format 'any'; memory needs a layout")


def host_pending(engine, storage):
    """The Pending of a host memory's storage; None on a device."""
    return None if engine.is_device else host_pending_of(storage)


def device_pending(engine, storage, events=()):
    """The Pending of a device memory's storage; None on the host."""
    return pending_of(engine.backend, storage, events) if engine.is_device else None


def record_command(event, queue, wrote, read: list) -> None:
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


def host_zeros(md, nbytes):
    try:
        return np.zeros(nbytes, dtype=np.uint8)
    except MemoryError:
        raise InvalidArgumentError(
            f"{md!r} needs {nbytes} bytes, more than this machine can allocate") from None


def new_memory(cls, md, engine):
    """A ``cls`` (Memory) of md on engine over new storage that is not
    zeroed: a staging buffer for a primitive that writes every byte it
    later reads."""
    need = need_bytes(md)
    return cls._wrap(md, engine, allocate(engine, md, need), need)


def allocate(engine, md, nbytes, data=None):
    """Storage of ``nbytes`` for md: uninitialised, or holding ``data`` (copied)."""
    return engine.backend.allocate(md, nbytes, data)


# Memories sit below the primitives, yet from_numpy, to_numpy, write and
# read change layouts with a Reorder: clayout.primitives registers the
# makers of them here when it is imported (clayout's __init__ imports it).
_DEVICE_REORDER: list = []


def register_device_reorder(make) -> None:
    """Make ``make(src_md, dst_md, engine)`` (a primitive that runs as a
    device kernel, or None) what from_numpy and to_numpy use."""
    _DEVICE_REORDER[:] = [make]


_CROSS_REORDER: list = []


def register_cross_engine_reorder(make) -> None:
    """Make ``make(src_md, dst_md, src_engine, dst_engine)`` (a Reorder
    across engines) what write and read use where a layout must change."""
    _CROSS_REORDER[:] = [make]


def _cross_reorder(src_md, dst_md, src_engine, dst_engine):
    return _CROSS_REORDER[0](src_md, dst_md, src_engine, dst_engine)


def _device_reorder(src_md, dst_md, engine):
    """A primitive that changes src_md's layout to dst_md's in a device kernel,
    or None (then the layout is changed on the host)."""
    return _DEVICE_REORDER[0](src_md, dst_md, engine) if _DEVICE_REORDER else None
