"""The OpenCL backend: pyopencl contexts, queues, buffers, programs, events."""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
import warnings

import numpy as np
import pyopencl as cl

from .. import verbose
from ..errors import ExecutionError, InvalidArgumentError, UnimplementedError, describe
from ..gpu import events as ev
from ..gpu.profile import read_profile
from .caps import DeviceCaps, env_bytes, with_tuning_table
from .exit_guard import EXIT

_DONE = cl.command_execution_status.COMPLETE


def opencl_devices() -> list:
    """Every OpenCL device of every platform, GPUs of each platform first; [] without a driver."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD installed: PLATFORM_NOT_FOUND_KHR
        return []
    devices = []
    for platform in platforms:
        try:
            devices += platform.get_devices()
        except cl.Error:
            continue
    return sorted(devices, key=lambda d: not d.type & cl.device_type.GPU)


def _shares_host_memory(device) -> bool:
    """True when the device's buffers live in the host's RAM."""
    if device.type & cl.device_type.CPU:
        return True
    try:  # deprecated since OpenCL 2.0; some drivers no longer answer
        return bool(device.host_unified_memory)
    except (cl.Error, AttributeError):
        return False


_IDENTITIES: dict = {}


def _tuned_profile(device):
    """The device's profile, with the tuning table that applies to it."""
    from ..tuning_table import Identity

    identity = _IDENTITIES.get(device.int_ptr)
    if identity is None:
        identity = _IDENTITIES[device.int_ptr] = Identity.of(device)
    return with_tuning_table(read_profile(device), identity)


class OpenCLBackend:
    """An Engine on a pyopencl Context and Device (see clayout/backends)."""

    kind = "opencl"
    is_device = True
    args_are_state = True  # a pyopencl Kernel holds its arguments until enqueued
    background_builds = True  # pyopencl lets go of the GIL while the driver builds

    def __init__(self, engine, device=None, context=None, queue=None):
        if queue is not None:
            raise InvalidArgumentError(
                "an OpenCL engine takes no queue=; pass context= (and device=), and the "
                "queue to Stream(engine, queue=...)")
        if device is not None and not isinstance(device, cl.Device):
            raise InvalidArgumentError(f"engine device {describe(device)}: expected a pyopencl Device")
        if context is not None and not isinstance(context, cl.Context):
            raise InvalidArgumentError(f"engine context {describe(context)}: expected a pyopencl Context")
        if context is not None:
            if device is not None and device not in context.devices:
                raise InvalidArgumentError(
                    f"engine device {device.name.strip()!r} is not a device of context {context!r}")
            device = device or context.devices[0]
        elif device is None:
            if "PYOPENCL_CTX" in os.environ:
                context = cl.create_some_context(interactive=False)
                device = context.devices[0]
            else:
                devices = opencl_devices()
                if not devices:
                    raise UnimplementedError(
                        "engine 'opencl': no OpenCL platform or device is installed "
                        "(install a driver, e.g. apt-get install pocl-opencl-icd, "
                        "or use Engine('host'))")
                device = devices[0]
        self.engine = engine
        engine.device = device
        engine.context = context or cl.Context([device])
        engine.caps = DeviceCaps(
            name=device.name.strip(),
            max_alloc=device.max_mem_alloc_size,
            address_bits=device.address_bits,
            global_mem=device.global_mem_size,
            shares_host_memory=_shares_host_memory(device),
            convert_on_device_bytes=env_bytes("CLAYOUT_CONVERT_ON_DEVICE_BYTES", 8 << 20),
            runs_when_waited="Oclgrind" in device.platform.name,
            quick_unoptimized_builds=device.platform.name.strip() == "Intel(R) OpenCL" and
            bool(device.type & cl.device_type.CPU),
        )
        engine.profile = _tuned_profile(device)
        self.kernel_scope = engine.context  # kernels are cached per Context
        self.device_key = device.int_ptr
        self._queues = {}
        self._lock = threading.Lock()

    # -- engine and queues ------------------------------------------------------------

    def identity(self):
        return ("opencl", self.engine.context.int_ptr, self.engine.device.int_ptr)

    def describe(self) -> str:
        e = self.engine
        return f"<Engine opencl: {e.caps.name} ({e.device.platform.name.strip()})>"

    def context_text(self) -> str:
        return f"context {self.engine.context.int_ptr:#x}"

    def own_queue(self, purpose: str):
        with self._lock:
            queue = self._queues.get(purpose)
            if queue is None:
                queue = self._queues[purpose] = cl.CommandQueue(self.engine.context,
                                                                self.engine.device)
            return queue

    def stream_queue(self, profiling: bool):
        """A new queue for a Stream."""
        props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
        return cl.CommandQueue(self.engine.context, self.engine.device, properties=props)

    def is_queue(self, value) -> bool:
        return isinstance(value, cl.CommandQueue)

    def adopt_queue(self, queue, what: str = "stream queue"):
        if not isinstance(queue, cl.CommandQueue):
            raise InvalidArgumentError(f"{what} {describe(queue)}: expected a pyopencl CommandQueue")
        if not self.in_context(queue, what):
            raise InvalidArgumentError(
                f"queue {queue!r} belongs to another context than {self.engine.describe()}")
        return queue

    def finish(self, queue) -> None:
        try:
            queue.finish()
        except cl.RuntimeError as error:
            # NVIDIA's driver answers DEVICE_NOT_FOUND once an event a command
            # waited for has failed; PoCL and Intel's runtime finish the queue.
            # Raised at once: a lost device may never settle clayout's events.
            raise ExecutionError(
                f"waiting for the stream's queue: the OpenCL driver answered '{error}' "
                f"(an event a command waited for failed, or the device was lost); what "
                f"was enqueued holds undefined values") from error
        ev.wait_settled(queue, self.engine.caps)

    def in_context(self, obj, what: str) -> bool:
        """Whether the pyopencl object ``obj`` (a queue, event, buffer or Array)
        belongs to the engine's context. Raises InvalidArgumentError, naming it
        as ``what``, when its context can no longer be read (the context was
        released: some implementations then refuse the query)."""
        try:
            return obj.context == self.engine.context
        except cl.Error as error:
            raise InvalidArgumentError(
                f"{what} {obj!r} belongs to another context than {self.engine.describe()}: "
                f"its context cannot even be read ({error}), it was released") from None

    # -- storage ------------------------------------------------------------------------

    def allocate(self, md, nbytes: int, data=None):
        self.engine.caps.check_allocation(md, nbytes, "buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)")
        flags = cl.mem_flags.READ_WRITE
        try:
            if data is not None and data.nbytes:
                return cl.Buffer(self.engine.context, flags | cl.mem_flags.COPY_HOST_PTR,
                                 hostbuf=data.reshape(-1).view(np.uint8))
            # OpenCL has no empty buffers; a zero-size tensor still gets one byte.
            return cl.Buffer(self.engine.context, flags, max(nbytes, 1))
        except cl.Error as error:
            raise InvalidArgumentError(
                f"{md!r}: allocating {nbytes} bytes on {self.engine.caps.name} failed "
                f"({error})") from None

    def address(self, storage) -> int:
        return storage.int_ptr

    def adopt(self, md, buffer):
        """(storage, usable bytes, events) of a pyopencl Buffer or Array."""
        if is_cl_array(buffer):
            storage, nbytes = _adopt_cl_array(md, self, buffer)
            return storage, nbytes, tuple(getattr(buffer, "events", ()))
        if is_cl_buffer(buffer):
            if not self.in_context(buffer, "pyopencl buffer"):
                raise InvalidArgumentError(
                    f"pyopencl buffer of another context than {self.engine.describe()}")
            return buffer, buffer.size, ()
        raise InvalidArgumentError(
            f"buffer {describe(buffer)}: expected a Memory, a pyopencl Buffer or Array")

    def upload(self, values: np.ndarray):
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        return cl.Buffer(self.engine.context, flags, hostbuf=np.ascontiguousarray(values))

    # -- commands -----------------------------------------------------------------------

    def fill_zero(self, queue, storage, nbytes: int):
        return cl.enqueue_fill_buffer(queue, storage, np.uint8(0), 0, nbytes)

    def copy(self, queue, dst, src, nbytes: int, wait_for=None):
        return cl.enqueue_copy(queue, dst, src, byte_count=nbytes, wait_for=wait_for or None)

    def read(self, queue, storage, first: int, out: np.ndarray) -> None:
        if out.size:
            cl.enqueue_copy(queue, out, storage, src_offset=first, is_blocking=True)

    def write(self, queue, storage, first: int, data: np.ndarray) -> None:
        if data.size:
            cl.enqueue_copy(queue, storage, data, dst_offset=first, is_blocking=True)

    def write_async(self, queue, storage, first: int, data: np.ndarray, wait_for=None):
        # pyopencl's event holds ``data`` until the copy completes.
        return cl.enqueue_copy(queue, storage, data, dst_offset=first, is_blocking=False,
                               wait_for=wait_for or None)

    def read_async(self, queue, storage, first: int, out: np.ndarray, wait_for=None):
        return cl.enqueue_copy(queue, out, storage, src_offset=first, is_blocking=False,
                               wait_for=wait_for or None)

    @staticmethod
    def marker_on(queue, wait_for=None):
        """An event that completes once everything before it on ``queue``
        (and ``wait_for``) has."""
        return cl.enqueue_marker(queue, wait_for=wait_for or None)

    def marker(self, queue, wait_for=None):
        return self.marker_on(queue, wait_for)

    def run_after(self, inputs: list, enqueue, queue):
        return ev.run_after(inputs, enqueue, self.engine, queue)

    def host_job(self, queue, ready: list, host_waits: list, work, upstream=()):
        return HostJob(self.engine, queue, ready, host_waits, work, upstream)

    # -- events -------------------------------------------------------------------------

    def check_wait_for(self, wait_for) -> list:
        for event in wait_for:
            if not isinstance(event, cl.Event):
                raise InvalidArgumentError(
                    f"wait_for entry {describe(event)}: expected a pyopencl Event")
            if not self.in_context(event, "wait_for event"):
                raise InvalidArgumentError(
                    f"wait_for event {event!r} belongs to another context than "
                    f"{self.engine.describe()}")
        return list(wait_for)

    status = staticmethod(ev.status)
    recorded = staticmethod(ev.recorded)
    in_order = staticmethod(ev.in_order)
    flush = staticmethod(ev.flush)
    wait = staticmethod(ev.wait_for_events)
    unfailing = staticmethod(ev.unfailing)
    seconds = staticmethod(ev.device_seconds)

    def when_complete(self, event, callback):
        ev.when_complete(event, callback, self.engine.caps)

    # -- kernels --------------------------------------------------------------------------

    def build(self, source, names: list[str], key=None, options=()) -> list:
        """Build one program, or load its binary from the persistent cache
        (gpu/binaries.py: ``key`` is what the source is made from; ``source()``
        renders it, only on a miss); its kernels named ``names``. The
        compiler's log goes to the verbose lines: level 2 after a build,
        level 1 when it failed. ``options``: past the device's own."""
        from ..gpu.binaries import load_program, source_key, store_program
        from ..gpu.build import build_options, compile_program, source_function

        source = source_function(source)
        start = time.perf_counter()
        label = names[0] if len(names) == 1 else f"{len(names)} kernels"
        context, device = self.engine.context, self.engine.device
        options = build_options(device) + list(options)
        made_from = source_key(source, key)
        program = load_program(context, device, made_from, options)
        if program is not None:
            verbose.log("load", "opencl", "", label,
                        time=f"{(time.perf_counter() - start) * 1e3:.2f}ms")
            return [getattr(program, name) for name in names]
        try:
            program, log = compile_program(context, source(), options)
        except cl.Error as error:
            verbose.log("compiler", "opencl", "", label, text=str(error))
            raise
        verbose.log("build", "opencl", "", label,
                    time=f"{(time.perf_counter() - start) * 1e3:.2f}ms")
        if log:
            verbose.log("compiler", "opencl", "", label, min_level=2, text=log)
        store_program(context, device, program, made_from, options)
        return [getattr(program, name) for name in names]

    build_errors = (cl.Error,)

    def has_program(self, key) -> bool:
        """Whether the persistent cache holds the program made from ``key``
        (as ``build`` looks it up): it would load, not compile."""
        from ..gpu.binaries import has_program
        from ..gpu.build import build_options

        return has_program(self.engine.context, self.engine.device, key,
                           build_options(self.engine.device))

    @staticmethod
    def work_group_limit(kernel, device) -> int:
        return kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, device)

    @staticmethod
    def enqueue(queue, kernel, global_size, local_size, args, wait_for=None, offset=None):
        kernel.set_args(*args)
        return cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size,
                                          global_work_offset=offset,
                                          wait_for=wait_for or None)


def is_cl_buffer(value) -> bool:
    """A pyopencl Buffer, or a buffer of a pyopencl memory pool (not an image)."""
    return isinstance(value, cl.MemoryObjectHolder) and \
        value.get_info(cl.mem_info.TYPE) == cl.mem_object_type.BUFFER


def is_cl_array(value) -> bool:
    if "pyopencl.array" not in sys.modules:
        return False  # nobody made one: pyopencl.array is slow to import
    import pyopencl.array as cla
    return isinstance(value, cla.Array)


def _adopt_cl_array(md, backend, array):
    """(buffer, usable bytes) of a pyopencl Array given as md's storage.

    Either the Array is md's tensor (same dims, type, strides and start), or
    a flat contiguous Array of md's type (or of bytes) holds md's buffer.
    """
    data = array.base_data
    if not is_cl_buffer(data):
        raise InvalidArgumentError(f"pyopencl Array {array!r}: it has no Buffer to share")
    if not backend.in_context(array, "pyopencl Array"):
        raise InvalidArgumentError(
            f"pyopencl Array of another context than {backend.engine.describe()}")
    dt = md.dtype
    itemsize = array.dtype.itemsize
    if array.shape == md.dims:  # the Array is the tensor itself
        first = md.offset((0,) * md.ndims) if md.nelems() else md.offset0
        size = max(dt.bits // 8, 1)
        strides = tuple(s // itemsize if s % itemsize == 0 else None for s in array.strides)
        same = (array.dtype == dt.numpy and not md.inner_blks and not dt.packed
                and array.offset == first * size
                and all(n <= 1 or s == t for n, s, t in zip(md.dims, strides, md.strides)))
        if not same:
            raise InvalidArgumentError(
                f"pyopencl Array of shape {array.shape}, dtype {array.dtype}, strides "
                f"{array.strides} bytes and offset {array.offset} does not hold {md!r} "
                f"(strides {md.strides} elements); describe it with "
                f"MemoryDesc.from_array(array)")
        return data, data.size
    if array.ndim != 1 or not array.flags.forc:
        raise InvalidArgumentError(
            f"pyopencl Array of shape {array.shape} and strides {array.strides}: as a buffer "
            f"for {md!r} it must be flat and contiguous, or have dims {md.dims} and md's "
            f"strides (see MemoryDesc.from_array)")
    if array.dtype not in (dt.numpy, np.dtype(np.uint8)):
        raise InvalidArgumentError(
            f"pyopencl Array of dtype {array.dtype} cannot hold {md.data_type} elements "
            f"of {md!r}: give an Array of {dt.numpy} or of uint8 bytes")
    if array.offset:
        raise InvalidArgumentError(
            f"pyopencl Array starting at byte {array.offset} of its buffer: a flat buffer "
            f"must start at byte 0 (MemoryDesc.from_array describes an offset view)")
    return data, array.nbytes


class HostJob:
    """Host work ordered with an OpenCL queue: ``work()`` on a worker thread,
    once the events ``ready`` (of the engine's context; after everything
    before on ``queue``) and ``host_waits`` (device commands on host
    memories, of any context) have completed. ``enqueue()`` puts a marker
    on ``queue`` after ``work`` and returns the user event that tells its
    end (failed if an input failed or ``work`` raised, whatever the
    implementation makes of the marker); ``start()``, called once the caller
    has enqueued and recorded the rest, starts the thread (started earlier,
    it would wait for the GIL the caller holds meanwhile). Never blocks,
    but on a device that runs commands only when the host waits (Oclgrind),
    where ``enqueue`` runs the work itself."""

    def __init__(self, engine, queue, ready: list, host_waits: list, work, upstream=()):
        self.engine, self.queue, self.work = engine, queue, work
        self.done = cl.UserEvent(engine.context)
        # Held until ``done`` is set: PoCL 3.1 touches the commands waiting on
        # a user event when it fails, so they must not be freed before.
        self.finished = None
        # An input that has already failed fails the job at once, and nothing
        # is enqueued, as for execute (ev.run_after): PoCL leaves a marker
        # behind an already-failed event queued for good.
        self.failed = min((ev.status_of(e) for e in (*ready, *upstream, *host_waits)),
                          default=_DONE)
        if self.failed < 0:
            self.inputs, self.work = [], None
            self.done.set_status(self.failed)
            return
        # The events themselves too, and those ``upstream`` of them (that
        # ``ready`` waited for): the marker, and a command after a failed
        # event, may complete all the same. Not in the marker's own list:
        # Intel's runtime crashes when a failed user event is in a wait list
        # both itself and through a command that waits for it.
        self.inputs = [cl.enqueue_marker(queue, wait_for=ready or None), *ready, *upstream,
                       *host_waits]

    def enqueue(self):
        if self.failed < 0:
            return self.done
        if self.engine.caps.runs_when_waited:
            self.run()
            cl.enqueue_marker(self.queue, wait_for=[self.done])
            return self.done
        try:
            self.finished = cl.enqueue_marker(self.queue, wait_for=[self.done])
        except BaseException:
            self.done.set_status(-1)
            self.work = None  # nothing to start
            raise
        return self.done

    def start(self):
        if self.engine.caps.runs_when_waited or self.work is None:
            return
        try:
            self.queue.flush()  # the queue must reach the inputs while the worker waits
            threading.Thread(target=self.run, name="clayout-host-job", daemon=True).start()
        except BaseException:
            self.done.set_status(-1)
            raise

    def run(self):
        status = _DONE
        working = False
        try:
            if not ev.wait_in_python(self.inputs, self.engine.caps):  # an input failed
                status = -1
                return
            working = EXIT.start_work()
            if not working:  # the interpreter is exiting: nobody will read the result
                return
            self.work()
        except BaseException:  # noqa: BLE001 - the event fails, and says why here
            status = -1
            warnings.warn("clayout: host work for an OpenCL engine failed; its event "
                          "reports an error:\n" + traceback.format_exc(), RuntimeWarning,
                          stacklevel=1)
        finally:
            self.done.set_status(status)
            self.inputs = self.work = self.finished = None
            if working:
                EXIT.end_work()

