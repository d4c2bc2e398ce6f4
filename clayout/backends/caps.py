"""What every device backend reads from its device: limits (DeviceCaps) and
the planner's profile with the tuning table that applies to it."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..errors import InvalidArgumentError


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

    ``quick_unoptimized_builds``: the driver builds a kernel without its
    optimizations (-cl-opt-disable) in a fraction of the time, so a tier's
    stand-in is built so (clayout/tiers.py). Measured on Intel's OpenCL CPU
    runtime: a runtime-dims kernel in 47 ms against 274; PoCL builds in about
    the same time either way (and then runs the unoptimized kernel slower).
    """

    name: str
    max_alloc: int
    address_bits: int
    global_mem: int = 0
    shares_host_memory: bool = False
    convert_on_device_bytes: int = 8 << 20
    runs_when_waited: bool = False
    quick_unoptimized_builds: bool = False

    def check_allocation(self, md, nbytes: int, unit: str) -> None:
        """Raise InvalidArgumentError when ``nbytes`` for md are more than the
        device allows in one ``unit`` ("buffer", "allocation")."""
        if nbytes > self.max_alloc:
            raise InvalidArgumentError(
                f"{md!r} needs {nbytes} bytes, more than the {self.max_alloc} bytes "
                f"{self.name} allows in one {unit}")


def env_bytes(name: str, default: int) -> int:
    """A byte count from the environment variable ``name``, else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise InvalidArgumentError(f"{name}={text!r}: expected a number of bytes")
    return int(text)


_WITH_TABLE: dict = {}


def with_tuning_table(profile, identity):
    """``profile`` with the tuning table that applies to the device
    ``identity`` names (clayout/tuning_table.py), if one does."""
    from ..tuning_table import load

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
