"""Program binaries kept across processes (OpenCL engines).

Building a kernel from OpenCL C takes 0.1-0.6 s on a CPU runtime; creating
it from the binary that build made takes a few milliseconds. The binary of a
single-device program goes to the persistent cache (clayout/disk_cache.py),
keyed by the platform, the device, its driver's version, clayout's version,
the build options and what the source is made from (``source_key``); a
binary the driver refuses is removed from the cache and the source built
again.
"""
from __future__ import annotations

import pyopencl as cl

from .. import verbose
from ..disk_cache import code_digest, disk_cache, entry_key, stable_text

KIND = "programs"


def rendered_key(key) -> tuple | None:
    """What a program rendered from ``key`` (a frozen plan, stable across
    processes) is made from: ``key`` with the digest of the code that
    renders it; None when ``key`` has no stable text."""
    if key is None:
        return None
    try:
        return ("rendered", code_digest(), stable_text(key))
    except TypeError:
        return None


def source_key(source, key) -> tuple:
    """What a program's source is made from: ``rendered_key(key)``, so a hit
    renders nothing; else the source itself (``source()`` renders it)."""
    return rendered_key(key) or ("source", source())


def program_key(device, made_from: tuple, options: list[str]) -> str:
    """The cache key of a program made from ``made_from`` built with
    ``options`` for ``device``."""
    platform = device.platform
    return entry_key(KIND, platform.name, platform.version, device.name,
                     device.driver_version, device.version, made_from, tuple(options))


def has_program(context, device, key, options: list[str]) -> bool:
    """Whether the cache holds the program made from ``key`` (a stable key:
    nothing is rendered) for ``device``: a file there, not yet checked."""
    cache = disk_cache()
    made_from = rendered_key(key)
    if cache is None or made_from is None or len(context.devices) != 1:
        return False
    return cache.contains(KIND, program_key(device, made_from, options))


def load_program(context, device, made_from: tuple, options: list[str]):
    """The built pyopencl Program from the cached binary, or None (no cache,
    a miss, a context of several devices, or a binary the driver refuses)."""
    cache = disk_cache()
    if cache is None or len(context.devices) != 1:
        return None
    key = program_key(device, made_from, options)
    binary = cache.load(KIND, key)
    if binary is None:
        return None
    try:
        raw = cl._cl._Program(context, [device], [binary])
        raw._build(options=" ".join(options).encode(), devices=None)
    except cl.Error as error:
        cache.counts[KIND, "hit"] -= 1  # counted by load(): the driver has the last word
        cache.counts[KIND, "rejected"] += 1
        verbose.LOGGER.warning("clayout cache: the driver refuses a cached program binary "
                               "(%s); built from source again", error)
        cache.remove(KIND, key)
        return None
    return cl.Program(raw)


def store_program(context, device, program, made_from: tuple, options: list[str]) -> None:
    """Keep ``program``'s binary for the next process (single-device contexts)."""
    cache = disk_cache()
    if cache is None or len(context.devices) != 1:
        return
    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
    except cl.Error:
        return  # a driver that gives no binaries: nothing to keep
    if binary:
        cache.store(KIND, program_key(device, made_from, options), bytes(binary))
