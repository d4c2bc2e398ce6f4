"""The host backend: NumPy storage, no queue; every call runs at once."""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, describe


class HostEvent:
    """What the host engine returns where a device engine returns its
    runtime's event (``execute``, ``Memory.write`` and ``read``): the work
    is done when the call returns, so the event is complete from the start.
    ``wait()`` returns at once; the host engine takes it in ``wait_for``."""

    __slots__ = ()
    is_complete = True

    def wait(self) -> None:
        """Return at once: the work this event stands for is done."""

    def __repr__(self):
        return "<HostEvent complete>"


#: The one HostEvent (all are alike).
COMPLETE = HostEvent()


class HostBackend:
    """An Engine("host") (see clayout/backends): storage is a uint8 NumPy
    array; there are no queues, events or kernels."""

    kind = "host"
    is_device = False
    kernel_scope = device_key = None
    background_builds = False  # builds nothing

    def __init__(self, engine, device=None, context=None, queue=None):
        given = {k: v for k, v in (("device", device), ("context", context), ("queue", queue))
                 if v is not None}
        if given:
            name, value = next(iter(given.items()))
            raise InvalidArgumentError(
                f"{name}={value!r}: a host engine takes no device=, context= or queue=")
        self.engine = engine
        engine.device = engine.context = engine.caps = engine.profile = None

    def identity(self):
        return ("host",)

    def describe(self) -> str:
        return "<Engine host>"

    def context_text(self) -> str:
        return ""

    def own_queue(self, purpose: str):
        return None

    def stream_queue(self, profiling: bool):
        return None

    def is_queue(self, value) -> bool:
        return False

    def adopt_queue(self, queue, what: str = "stream queue"):
        raise InvalidArgumentError(f"queue {queue!r}: a host engine has no queue")

    def finish(self, queue) -> None:
        pass

    def check_wait_for(self, wait_for) -> list:
        others = [event for event in wait_for if not isinstance(event, HostEvent)]
        if others:
            raise InvalidArgumentError(
                f"wait_for {others!r} on <Engine host>: the host engine runs each call at "
                f"once and cannot wait for device events; wait for them first")
        return []  # HostEvents are complete

    def allocate(self, md, nbytes: int, data=None):
        if data is not None:
            return np.array(data.reshape(-1).view(np.uint8))
        try:
            return np.zeros(nbytes, dtype=np.uint8)
        except MemoryError:
            raise InvalidArgumentError(
                f"{md!r} needs {nbytes} bytes, more than this machine can allocate") from None

    def address(self, storage) -> int:
        return storage.__array_interface__["data"][0]

    def adopt(self, md, buffer):
        if isinstance(buffer, np.ndarray) and buffer.dtype == np.uint8 and buffer.ndim == 1 \
                and buffer.flags.c_contiguous:
            return buffer, buffer.nbytes, ()
        raise InvalidArgumentError(
            f"buffer {describe(buffer)}: expected a Memory or a contiguous 1-d uint8 NumPy array")
