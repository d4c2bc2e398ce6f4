"""Engine (an OpenCL device, or the host) and Stream (an OpenCL command queue).

Also the argument checks every public call shares: ``as_engine`` (an Engine or
a pyopencl Context), ``as_stream`` (a Stream or a pyopencl CommandQueue) and
``check_wait_for`` (a list of pyopencl Events of the engine's context).
"""
from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass

from .errors import InvalidArgumentError, UnimplementedError
from .gpu.profile import read_profile

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
    """What clayout's memory and event handling need to know about a device,
    read once (the kernel planner reads ``Engine.profile`` instead).

    ``convert_on_device_bytes``: ``Memory.from_numpy`` and ``to_numpy`` move
    tensors at least this big as dense bytes and change the layout with a
    generated kernel (a kernel build, ~0.1 s once, buys a conversion several
    times faster than NumPy's strided copy); smaller ones convert on the host.
    Set by CLAYOUT_CONVERT_ON_DEVICE_BYTES (default 8 MiB).

    ``runs_when_waited``: the device runs commands only when the host waits
    for them (Oclgrind, a simulator, does), so clayout's threads must wait
    in OpenCL rather than poll an event's status.

    ``global_mem`` and ``max_alloc`` bound what the device holds, in bytes;
    ``shares_host_memory`` says its buffers take the host's RAM (a CPU device).
    """

    name: str
    max_alloc: int
    address_bits: int
    global_mem: int = 0
    shares_host_memory: bool = False
    convert_on_device_bytes: int = 8 << 20
    runs_when_waited: bool = False


def _env_bytes(name: str, default: int) -> int:
    """A byte count from the environment variable ``name``, else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise InvalidArgumentError(f"{name}={text!r}: expected a number of bytes")
    return int(text)


def _shares_host_memory(device) -> bool:
    """True when the device's buffers live in the host's RAM."""
    if device.type & cl.device_type.CPU:
        return True
    try:  # deprecated since OpenCL 2.0; some drivers no longer answer
        return bool(device.host_unified_memory)
    except (cl.Error, AttributeError):
        return False


class Engine:
    """Where primitives run: ``Engine("opencl", device=...)``, ``Engine("host")``
    or ``Engine()`` (PYOPENCL_CTX if set, else the first OpenCL GPU, else the
    first OpenCL device, else the host).

    ``Engine("opencl", context=ctx)`` adopts an existing pyopencl Context (and
    ``device=``, one of its devices; else its first). Two engines are equal
    when they are the same kind on the same context and device. Raises
    InvalidArgumentError for arguments of the wrong kind, UnimplementedError
    when OpenCL is asked for and no device exists.

    ``profile`` (a DeviceProfile: device type, work-group limits, local
    memory, extensions, strategy) is what the kernel planner reads;
    ``caps`` the device limits memory and events honour. Both are None on
    the host.
    """

    def __init__(self, kind: str | None = None, device: cl.Device | None = None,
                 context: cl.Context | None = None) -> None:
        if kind is not None and not (isinstance(kind, str) and kind in ("opencl", "host")):
            raise InvalidArgumentError(f"engine kind {kind!r}: expected 'opencl' or 'host'")
        if device is not None and (cl is None or not isinstance(device, cl.Device)):
            raise InvalidArgumentError(f"engine device {device!r}: expected a pyopencl Device")
        if context is not None and (cl is None or not isinstance(context, cl.Context)):
            raise InvalidArgumentError(f"engine context {context!r}: expected a pyopencl Context")
        if kind == "host" and (device is not None or context is not None):
            raise InvalidArgumentError("a host engine takes no device= or context=")
        if kind is None:
            kind = "opencl" if (device is not None or context is not None
                                or "PYOPENCL_CTX" in os.environ or opencl_devices()) else "host"
        self.kind = kind
        self.context = None
        self.device = None
        self.caps = None
        self.profile = None
        self._lock = threading.Lock()
        self._queues = {}
        if kind == "host":
            return
        if cl is None:
            raise UnimplementedError("engine 'opencl': pyopencl cannot be imported")
        if context is not None:
            if device is not None and device not in context.devices:
                raise InvalidArgumentError(
                    f"engine device {device.name.strip()!r} is not a device of context {context!r}")
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
            max_alloc=d.max_mem_alloc_size,
            address_bits=d.address_bits,
            global_mem=d.global_mem_size,
            shares_host_memory=_shares_host_memory(d),
            convert_on_device_bytes=_env_bytes("CLAYOUT_CONVERT_ON_DEVICE_BYTES", 8 << 20),
            runs_when_waited="Oclgrind" in d.platform.name,
        )
        self.profile = _tuned_profile(d)

    def _own_queue(self, purpose: str):
        with self._lock:
            queue = self._queues.get(purpose)
            if queue is None and self.is_opencl:
                queue = self._queues[purpose] = cl.CommandQueue(self.context, self.device)
            return queue

    @property
    def queue(self) -> cl.CommandQueue | None:
        """The engine's own in-order queue, for Memory's fills and copies
        (None on the host)."""
        return self._own_queue("transfer")

    @property
    def host_queue(self) -> cl.CommandQueue | None:
        """The queue that carries only the writes of host-path results: they
        wait on nothing, so no event held back elsewhere can stall them."""
        return self._own_queue("host")

    @property
    def is_opencl(self) -> bool:
        return self.kind == "opencl"

    def _identity(self):
        if self.kind == "host":
            return ("host",)
        return ("opencl", self.context.int_ptr, self.device.int_ptr)

    def __eq__(self, other):
        if not isinstance(other, Engine):
            return NotImplemented
        return self is other or self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def describe(self) -> str:
        """repr plus the context's address: tells apart engines whose reprs are equal."""
        if self.kind == "host":
            return repr(self)
        return f"{self!r} (context {self.context.int_ptr:#x})"

    def __repr__(self):
        if self.kind == "host":
            return "<Engine host>"
        return f"<Engine opencl: {self.caps.name} ({self.device.platform.name.strip()})>"


_DEFAULT = []
_DEFAULT_LOCK = threading.Lock()
# Engines made for pyopencl Contexts passed where an Engine is expected, so
# that the same context gives the same engine (and its queues) while in use.
_FOR_CONTEXT: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


_IDENTITIES: dict = {}
_WITH_TABLE: dict = {}


def _tuned_profile(device):
    """The device's profile, with the tuning table that applies to it
    (clayout/tuning_table.py), if one does."""
    from dataclasses import replace

    from .tuning_table import Identity, load

    profile = read_profile(device)
    identity = _IDENTITIES.get(device.int_ptr)
    if identity is None:
        identity = _IDENTITIES[device.int_ptr] = Identity.of(device)
    table = load(identity)
    if table is None or not table.tuned:
        return profile
    forced = bool(os.environ.get("CLAYOUT_STRATEGY", "").strip())
    # One object per (profile, table): plan caches key profiles by identity.
    key = (id(profile), id(table), forced)
    kept = _WITH_TABLE.get(key)
    if kept is None or kept[0] is not profile or kept[1] is not table:
        kept = _WITH_TABLE[key] = (profile, table,
                                   replace(profile, tuned=table.tuned, forced=forced))
    return kept[2]


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
        f"{what} {value!r}: expected a clayout Engine or a pyopencl Context")


class Stream:
    """An ordered queue of work on an engine: a pyopencl CommandQueue, or
    nothing at all for the host (which runs every call to completion).

    ``engine`` may be a pyopencl Context; ``Stream(engine, queue=q)`` adopts an
    existing queue of the engine's context. Raises InvalidArgumentError for
    arguments of the wrong kind or context.
    """

    def __init__(self, engine: Engine | cl.Context, queue: cl.CommandQueue | None = None,
                 profiling: bool = False) -> None:
        self.engine = engine = as_engine(engine, "stream engine")
        self.queue = None
        if engine.is_opencl:
            if queue is not None:
                if not isinstance(queue, cl.CommandQueue):
                    raise InvalidArgumentError(
                        f"stream queue {queue!r}: expected a pyopencl CommandQueue")
                if not in_context(queue, engine, "stream queue"):
                    raise InvalidArgumentError(
                        f"queue {queue!r} belongs to another context than {engine.describe()}")
                self.queue = queue
            else:
                props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
                self.queue = cl.CommandQueue(engine.context, engine.device, properties=props)
        elif queue is not None:
            raise InvalidArgumentError(f"queue {queue!r}: a host engine has no queue")

    def wait(self) -> None:
        """Block until everything enqueued on this stream has finished, and
        the events clayout handed out for it are set."""
        if self.queue is not None:
            self.queue.finish()
            from .gpu.events import wait_settled

            wait_settled(self.queue, self.engine.caps)

    def __repr__(self):
        return f"<Stream on {self.engine!r}>"


def as_stream(value, engine: Engine) -> Stream:
    """``value`` as a Stream of ``engine``: a Stream of an equal engine, or a
    pyopencl CommandQueue of its context. Raises InvalidArgumentError otherwise."""
    if isinstance(value, Stream) and value.engine == engine:
        return value
    if cl is not None and isinstance(value, cl.CommandQueue) and engine.is_opencl \
            and in_context(value, engine, "stream"):
        return Stream(engine, queue=value)
    raise InvalidArgumentError(
        f"stream {value!r} is neither a Stream of {engine.describe()} nor a "
        f"pyopencl CommandQueue of its context")


def in_context(obj, engine: Engine, what: str) -> bool:
    """Whether the pyopencl object ``obj`` (a queue, event, buffer or Array)
    belongs to ``engine``'s context. Raises InvalidArgumentError, naming it
    as ``what``, when its context can no longer be read (the context was
    released: some implementations then refuse the query)."""
    try:
        return obj.context == engine.context
    except cl.Error as error:
        raise InvalidArgumentError(
            f"{what} {obj!r} belongs to another context than {engine.describe()}: its "
            f"context cannot even be read ({error}), it was released") from None


def check_wait_for(wait_for, engine: Engine) -> list:
    """``wait_for`` as a list of pyopencl Events of ``engine``'s context.

    None and [] mean nothing to wait for. The host engine runs each call at
    once, so it takes no events. Raises InvalidArgumentError otherwise.
    """
    if wait_for is None:
        return []
    if not isinstance(wait_for, (list, tuple)):
        raise InvalidArgumentError(
            f"wait_for {wait_for!r}: expected a list of pyopencl Events (or None)")
    if wait_for and not engine.is_opencl:
        raise InvalidArgumentError(
            f"wait_for {wait_for!r} on {engine!r}: the host engine runs each call at once "
            f"and cannot wait for events; wait for them first")
    for event in wait_for:
        if not isinstance(event, cl.Event):
            raise InvalidArgumentError(
                f"wait_for entry {event!r}: expected a pyopencl Event")
        if not in_context(event, engine, "wait_for event"):
            raise InvalidArgumentError(
                f"wait_for event {event!r} belongs to another context than {engine.describe()}")
    return list(wait_for)
