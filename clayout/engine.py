"""Engine (an OpenCL device, a SYCL queue's device, or the host) and Stream
(a queue of one of them).

What differs between the runtimes is the engine's backend
(clayout/backends). Also the argument checks every public call shares:
``as_engine`` (an Engine or a pyopencl Context), ``as_stream`` (a Stream or
a queue of the engine's runtime) and ``check_wait_for`` (a list of events
of the engine's runtime and context).
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from .backends.host import HostBackend
from .errors import InvalidArgumentError, UnimplementedError, describe

try:  # pyopencl is a dependency, but a broken install should leave the host path usable
    import pyopencl as cl

    from .backends.opencl import OpenCLBackend, opencl_devices
except ImportError:  # pragma: no cover - exercised only without pyopencl
    cl = OpenCLBackend = None

    def opencl_devices() -> list:
        return []

#: The kinds of engine, and their backends (the SYCL one imports dpctl when used).
KINDS = ("opencl", "sycl", "host")
#: How messages name each kind's runtime.
RUNTIME_NAMES = {"opencl": "OpenCL", "sycl": "SYCL", "host": "host"}


def _backend_class(kind: str):
    if kind == "host":
        return HostBackend
    if kind == "sycl":
        from .backends.sycl import SyclBackend
        return SyclBackend
    if OpenCLBackend is None:
        raise UnimplementedError("engine 'opencl': pyopencl cannot be imported")
    return OpenCLBackend


class Engine:
    """Where primitives run: ``Engine("opencl", device=...)``, ``Engine("sycl")``,
    ``Engine("host")`` or ``Engine()`` (PYOPENCL_CTX if set, else the first
    OpenCL GPU, else the first OpenCL device, else the host).

    ``Engine("opencl", context=ctx)`` adopts an existing pyopencl Context (and
    ``device=``, one of its devices; else its first). ``Engine("sycl")`` runs
    on a new in-order queue of the default SYCL device (``device=``: a dpctl
    SyclDevice or filter string such as "opencl:cpu"; ``context=``: a dpctl
    SyclContext); ``Engine("sycl", queue=q)`` adopts a dpctl SyclQueue, whose
    memories are USM on its context. Two engines are equal when they are the
    same kind on the same context and device. Raises InvalidArgumentError
    for arguments of the wrong kind, UnimplementedError when the runtime
    asked for has no device, ImportError naming ``clayout[sycl]`` when the
    SYCL engine is asked for without dpctl.

    ``profile`` (a DeviceProfile: device type, work-group limits, local
    memory, extensions, strategy) is what the kernel planner reads;
    ``caps`` the device limits memory and events honour; ``backend`` does
    what differs between the runtimes. Profile and caps are None on the host.
    """

    def __init__(self, kind: str | None = None, device: Any = None, context: Any = None,
                 queue: Any = None) -> None:
        if kind is not None and not (isinstance(kind, str) and kind in KINDS):
            raise InvalidArgumentError(
                f"engine kind {kind!r}: expected 'opencl', 'sycl' or 'host'")
        if kind is None:
            if queue is not None:
                kind = "sycl"
            else:
                kind = "opencl" if (device is not None or context is not None
                                    or "PYOPENCL_CTX" in os.environ or opencl_devices()) \
                    else "host"
        self.kind = kind
        self.context = self.device = self.caps = self.profile = None
        self.backend = _backend_class(kind)(self, device=device, context=context, queue=queue)

    @property
    def queue(self) -> Any:
        """The engine's own in-order queue, for Memory's fills and copies
        (None on the host); on a SYCL engine, the queue it runs on."""
        return self.backend.own_queue("transfer")

    @property
    def host_queue(self) -> Any:
        """The queue that carries only the writes of host-path results: they
        wait on nothing, so no event held back elsewhere can stall them."""
        return self.backend.own_queue("host")

    @property
    def is_opencl(self) -> bool:
        """True for an OpenCL engine (pyopencl objects)."""
        return self.kind == "opencl"

    @property
    def is_device(self) -> bool:
        """True for an engine with a device and queues (OpenCL or SYCL)."""
        return self.backend.is_device

    def _identity(self):
        return self.backend.identity()

    def __eq__(self, other):
        if not isinstance(other, Engine):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def describe(self) -> str:
        """repr plus the context's address: tells apart engines whose reprs are equal."""
        text = self.backend.context_text()
        return f"{self!r} ({text})" if text else repr(self)

    def __repr__(self):
        return self.backend.describe()


_DEFAULT = []
_DEFAULT_LOCK = threading.Lock()
# Engines made for pyopencl Contexts passed where an Engine is expected, so
# that the same context gives the same engine (and its queues) while in use.
_FOR_CONTEXT: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def default_engine() -> Engine:
    """The process's shared ``Engine()``, made on first use: what a primitive
    created without ``engine=`` runs on (so its kernels are built once)."""
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            _DEFAULT.append(Engine())
        return _DEFAULT[0]


def as_engine(value, what: str = "engine") -> Engine:
    """``value`` as an Engine: an Engine, or a pyopencl Context (its first device).

    Raises InvalidArgumentError for anything else.
    """
    if isinstance(value, Engine):
        return value
    if cl is not None and isinstance(value, cl.Context):
        key = (value.int_ptr, value.devices[0].int_ptr)
        with _DEFAULT_LOCK:
            engine = _FOR_CONTEXT.get(key)
            if engine is None:
                engine = _FOR_CONTEXT[key] = Engine("opencl", context=value)
        return engine
    raise InvalidArgumentError(
        f"{what} {describe(value)}: expected a clayout Engine or a pyopencl Context")


class Stream:
    """An ordered queue of work on an engine: a pyopencl CommandQueue, a dpctl
    SyclQueue (the SYCL engine's own by default), or nothing at all for the
    host (which runs every call to completion).

    ``engine`` may be a pyopencl Context; ``Stream(engine, queue=q)`` adopts an
    existing queue of the engine's context. Raises InvalidArgumentError for
    arguments of the wrong kind or context.
    """

    def __init__(self, engine: Engine | Any, queue: Any = None, profiling: bool = False) -> None:
        self.engine = engine = as_engine(engine, "stream engine")
        backend = engine.backend
        if queue is not None:
            self.queue = backend.adopt_queue(queue, "stream queue")
        else:
            self.queue = backend.stream_queue(profiling)

    def wait(self) -> None:
        """Block until everything enqueued on this stream has finished, and
        the events clayout handed out for it are set. Raises ExecutionError
        when the driver says finishing failed (NVIDIA's does once a command's
        wait list failed; others finish, and the failure shows in events)."""
        if self.queue is not None:
            self.engine.backend.finish(self.queue)

    def __repr__(self):
        return f"<Stream on {self.engine!r}>"


def as_stream(value, engine: Engine) -> Stream:
    """``value`` as a Stream of ``engine``: a Stream of an equal engine, or a
    queue of its runtime and context. Raises InvalidArgumentError otherwise."""
    if isinstance(value, Stream) and value.engine == engine:
        return value
    if engine.backend.is_queue(value):
        return Stream(engine, queue=value)
    raise InvalidArgumentError(
        f"stream {describe(value)} is neither a Stream of {engine.describe()} nor a "
        f"{'pyopencl CommandQueue' if engine.kind == 'opencl' else engine.kind + ' queue'} "
        f"of its context")


def check_wait_for(wait_for, engine: Engine) -> list:
    """``wait_for`` as a list of events of ``engine``'s runtime and context
    (pyopencl Events, dpctl SyclEvents).

    None and [] mean nothing to wait for. The host engine runs each call at
    once, so it takes no events. Raises InvalidArgumentError otherwise.
    """
    if wait_for is None:
        return []
    if not isinstance(wait_for, (list, tuple)):
        raise InvalidArgumentError(
            f"wait_for {describe(wait_for)}: expected a list of events (or None)")
    return engine.backend.check_wait_for(wait_for)
