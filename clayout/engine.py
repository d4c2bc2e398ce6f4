"""Engine (an OpenCL device, or the host) and Stream (an OpenCL command queue)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import InvalidArgumentError, UnimplementedError

try:  # pyopencl is a dependency, but a broken install should leave the host path usable
    import pyopencl as cl
except ImportError:  # pragma: no cover - exercised only without pyopencl
    cl = None


def opencl_devices() -> list:
    """Every OpenCL device of every platform, GPUs of each platform first; [] without a driver."""
    if cl is None:
        return []
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


@dataclass(frozen=True)
class DeviceCaps:
    """What the kernels need to know about a device, read once."""

    name: str
    fp16: bool
    fp64: bool
    max_work_group_size: int
    max_alloc: int
    address_bits: int


class Engine:
    """Where primitives run: ``Engine("opencl", device=...)``, ``Engine("host")``
    or ``Engine()`` (PYOPENCL_CTX if set, else the first OpenCL GPU, else the
    first OpenCL device, else the host).

    ``Engine("opencl", context=ctx)`` adopts an existing pyopencl Context.
    Raises UnimplementedError when OpenCL is asked for and no device exists.
    """

    def __init__(self, kind: str | None = None, device=None, context=None):
        if kind not in (None, "opencl", "host"):
            raise InvalidArgumentError(f"engine kind {kind!r}: expected 'opencl' or 'host'")
        if kind is None:
            kind = "opencl" if (device is not None or context is not None
                                or "PYOPENCL_CTX" in os.environ or opencl_devices()) else "host"
        self.kind = kind
        self.context = None
        self.device = None
        self.caps = None
        self._queue = None
        if kind == "host":
            return
        if cl is None:
            raise UnimplementedError("engine 'opencl': pyopencl cannot be imported")
        if context is not None:
            self.context = context
            self.device = device or context.devices[0]
        else:
            if device is None:
                if "PYOPENCL_CTX" in os.environ:
                    self.context = cl.create_some_context(interactive=False)
                    device = self.context.devices[0]
                else:
                    devices = opencl_devices()
                    if not devices:
                        raise UnimplementedError(
                            "engine 'opencl': no OpenCL platform or device is installed "
                            "(install a driver, e.g. apt-get install pocl-opencl-icd, "
                            "or use Engine('host'))")
                    device = devices[0]
            self.device = device
            self.context = self.context or cl.Context([device])
        d = self.device
        self.caps = DeviceCaps(
            name=d.name.strip(),
            fp16="cl_khr_fp16" in d.extensions,
            fp64="cl_khr_fp64" in d.extensions or bool(getattr(d, "double_fp_config", 0)),
            max_work_group_size=d.max_work_group_size,
            max_alloc=d.max_mem_alloc_size,
            address_bits=d.address_bits,
        )

    @property
    def queue(self):
        """The engine's own in-order queue, for copies in and out of Memory."""
        if self._queue is None and self.is_opencl:
            self._queue = cl.CommandQueue(self.context, self.device)
        return self._queue

    @property
    def is_opencl(self) -> bool:
        return self.kind == "opencl"

    def __repr__(self):
        if self.kind == "host":
            return "<Engine host>"
        return f"<Engine opencl: {self.caps.name} ({self.device.platform.name.strip()})>"


_DEFAULT = []


def default_engine() -> Engine:
    """The process's shared ``Engine()``, made on first use: what a primitive
    created without ``engine=`` runs on (so its kernels are built once)."""
    if not _DEFAULT:
        _DEFAULT.append(Engine())
    return _DEFAULT[0]


class Stream:
    """An ordered queue of work on an engine: a pyopencl CommandQueue, or
    nothing at all for the host (which runs every call to completion).

    ``Stream(engine, queue=q)`` adopts an existing queue of the engine's context.
    """

    def __init__(self, engine: Engine, queue=None, profiling: bool = False):
        self.engine = engine
        self.queue = None
        if engine.is_opencl:
            if queue is not None:
                if queue.context != engine.context:
                    raise InvalidArgumentError(
                        f"queue {queue!r} belongs to another context than {engine!r}")
                self.queue = queue
            else:
                props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
                self.queue = cl.CommandQueue(engine.context, engine.device, properties=props)
        elif queue is not None:
            raise InvalidArgumentError(f"queue {queue!r}: a host engine has no queue")

    def wait(self):
        """Block until everything enqueued on this stream has finished."""
        if self.queue is not None:
            self.queue.finish()

    def __repr__(self):
        return f"<Stream on {self.engine!r}>"
