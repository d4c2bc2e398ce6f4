"""Ahead-of-time builds: the kernels of many primitives built at once, in
parallel, into the persistent cache (clayout/disk_cache.py).

A model load that knows its weights' shapes, a server that knows its
problems, or a test run pays each compile once, before the first result is
asked for, on every core; the processes after it load the binaries.
``python -m clayout build FILE`` does the same for the problems of a
benchdnn batch file.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from . import tiers
from .errors import InvalidArgumentError, describe
from .memory_desc import MemoryDesc


def build(items, engine=None, *, workers: int | None = None) -> list:
    """Make the primitives ``items`` stand for, each with its own kernel
    built (or loaded from the persistent cache), on ``workers`` threads
    (one per core unless given); returns them in order.

    Each item is a primitive (Reorder or Shuffle: its own kernel is waited
    for where a tier stands in), a pair or triple ``(src_md, dst_md[,
    attr])`` (a Reorder on ``engine``), or a function ``engine ->
    primitive``. ``engine``: the default engine when None.

    Raises InvalidArgumentError for an item of none of these kinds, and
    what creating a primitive raises (the first such error, after every
    item was tried).
    """
    from .engine import default_engine

    items = list(items)
    engine = default_engine() if engine is None else engine
    makers = [_maker(item, i) for i, item in enumerate(items)]

    def make(maker):
        with tiers.own_kernels():
            primitive = maker(engine)
            implementation = getattr(primitive, "_implementation", None)
            if getattr(implementation, "stand_in", None) is not None:
                implementation.kernel  # noqa: B018 - waits for its background build
            return primitive

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1,
                            thread_name_prefix="clayout-build") as pool:
        futures = [pool.submit(make, maker) for maker in makers]
    return [future.result() for future in futures]


def _maker(item, index: int):
    """A function ``engine -> primitive`` for one item of ``build``."""
    from .primitives import Reorder, Shuffle

    if isinstance(item, (Reorder, Shuffle)):
        return lambda engine: item
    if callable(item):
        return item
    if isinstance(item, tuple) and len(item) in (2, 3) and \
            all(isinstance(md, MemoryDesc) for md in item[:2]):
        attr = item[2] if len(item) == 3 else None
        return lambda engine: Reorder(item[0], item[1], engine=engine, attr=attr)
    raise InvalidArgumentError(
        f"build item {index} {describe(item)}: expected a Reorder or Shuffle, a (src_md, dst_md"
        f"[, attr]) tuple of MemoryDescs, or a function engine -> primitive")
