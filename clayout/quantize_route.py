"""Quantize on a device where its kernel does not serve the memories as
they are (gpu/render_quantize.py ``why_not``): device reorders around it.

The quantize kernel reads f32 (its vector and coalesced kernels also f16
and bf16) in plain C order and writes plain C order, with every group a run
of consecutive elements. A ``Route`` reorders the source into that first
and the values out of it after, each a generated reorder kernel, through
buffers of its own:

- groups of consecutive elements (groups along the last dim, rows, the
  tensor) with a source or destination in another layout or type (a
  blocked destination, a strided window, an f16 source the kernel does not
  read itself): the source to a C-order f32 copy, the values from a
  C-order copy into the destination;
- groups that are no such run (two-dim groups, groups along a column):
  each dim split in (groups, extent) in plain strided views of both sides,
  the source copied with every group's elements next to each other (the
  NumPy path's order, host/quantize.py ``_grouped``), quantized as one
  row per group, and the values copied back the same way. The scales and
  zero points come out in their own order (C order over the groups).

``plan_route`` says why it does not serve (a str) where a side of
non-consecutive groups is blocked or a window, or a reorder would not be a
generated kernel. ``Temporaries`` keeps the buffers between the commands
for the next execute.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from .gpu.render_quantize import c_order, why_not
from .host.quantize import QuantizeSpec, check_quantize
from .memory_desc import MemoryDesc


@dataclass(frozen=True)
class Route:
    """The reorders around the quantize kernel and the buffers between."""

    spec: QuantizeSpec        # the kernel's own problem (C order, consecutive groups)
    pre: object               # src (view) -> the kernel's source, or None
    post: object              # the kernel's values -> dst (view), or None
    src_view: MemoryDesc      # how ``pre`` reads the source's buffer
    dst_view: MemoryDesc      # how ``post`` writes the destination's buffer
    pre_out: MemoryDesc | None   # ``pre``'s destination: the kernel's source buffer
    post_in: MemoryDesc | None   # ``post``'s source: the kernel's values buffer

    def describe(self) -> str:
        """What runs, in order, e.g. "reorder in + quantize + reorder out"."""
        return " + ".join((["reorder in"] if self.pre is not None else []) + ["quantize"]
                          + (["reorder out"] if self.post is not None else []))


@dataclass(frozen=True)
class _Buffer:
    """A buffer as an implementation's ``execute`` reads a Memory: its
    descriptor and storage (the route's views and temporaries are no
    Memory: nothing else waits on them)."""

    md: MemoryDesc
    storage: object


def _plain(md: MemoryDesc) -> bool:
    """Plain strides over the whole buffer: no blocks, padding, window or offset."""
    return (not md.inner_blks and not md.offset0 and not md.is_submemory
            and md.padded_dims == md.dims)


def _split(md: MemoryDesc, extents) -> MemoryDesc:
    """``md`` (plain) with each dim d split in (dims[d] / e, e), e = extents[d]."""
    dims, strides = [], []
    for n, e, s in zip(md.dims, extents, md.strides):
        dims += [n // e, e]
        strides += [s * e, s]
    return MemoryDesc(tuple(dims), md.data_type, strides=tuple(strides))


def _grouped_order(dims, extents, data_type) -> MemoryDesc:
    """The split dims, laid out groups first: every group's elements next to
    each other, the groups in C order (the NumPy path's ``_grouped``)."""
    split = []
    for n, e in zip(dims, extents):
        split += [n // e, e]
    order = list(range(0, len(split), 2)) + list(range(1, len(split), 2))
    strides = [0] * len(split)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= split[axis]
    return MemoryDesc(tuple(split), data_type, strides=tuple(strides))


def plan_route(spec: QuantizeSpec, engine) -> Route | str:
    """The route of ``spec`` on ``engine``, or why there is none (a str).
    Creates (and so builds) the reorders it takes, after the kernel's own
    spec is known to serve; a reorder that cannot be created, or would not
    be a generated kernel, is a reason."""
    from .primitives import Reorder

    dims, ext = spec.src_md.dims, spec.extents
    dst_dt = spec.dst_md.data_type
    profile = engine.profile
    serves = (profile.strategy, profile.max_work_group_size, profile.little_endian)
    if spec.contiguous_groups():
        def inner_of(src_dt):
            return check_quantize(MemoryDesc(dims, src_dt), dst_dt, spec.scheme, spec.mask,
                                  spec.groups, spec.scale_data_type,
                                  spec.zero_point_data_type, None)

        # A C-order source the kernel reads as it is (f32, or f16 and bf16
        # where it widens them itself) needs no reorder in.
        inner = inner_of(spec.src_md.data_type) if c_order(spec.src_md) else None
        if inner is None or why_not(inner, *serves) is not None:
            inner = inner_of("f32")
        src_view, dst_view = spec.src_md, spec.dst_md
        pre_out = None if inner.src_md.data_type == spec.src_md.data_type \
            and c_order(spec.src_md) else inner.src_md
        post_in = None if c_order(spec.dst_md) else inner.dst_md
    else:
        for side, md in (("src", spec.src_md), ("dst", spec.dst_md)):
            if not _plain(md):
                return (f"groups of extents {ext} are not runs of consecutive elements, and "
                        f"{side} {md!r} is not plain strides over its whole buffer")
        length = math.prod(ext)
        rows = spec.src_md.nelems() // length
        inner = check_quantize(MemoryDesc((rows, length), "f32"), dst_dt, spec.scheme,
                               0b11, (1, length), spec.scale_data_type,
                               spec.zero_point_data_type, None)
        src_view, dst_view = _split(spec.src_md, ext), _split(spec.dst_md, ext)
        pre_out = _grouped_order(dims, ext, "f32")
        post_in = _grouped_order(dims, ext, dst_dt)
    why = why_not(inner, *serves)
    if why is not None:
        return why
    try:
        pre = None if pre_out is None else Reorder(src_view, pre_out, engine=engine)
        post = None if post_in is None else Reorder(post_in, dst_view, engine=engine)
    except Exception as error:  # noqa: BLE001 - no device reorder: the host path runs it
        return f"a reorder around the kernel was refused: {str(error).splitlines()[0]}"
    for r in (pre, post):
        if r is not None and not r._implementation.runs_kernel:
            return f"a reorder around the kernel would run as {r.impl}"
    return Route(inner, pre, post, src_view, dst_view, pre_out, post_in)


class Temporaries:
    """A route's buffers between its commands (the source's f32 copy, the
    values' copy), kept from one execute to the next: a new buffer costs
    more than the route's kernels on a CPU device (bench_quantize.py's f16
    row as it was routed in session 45, 4096x4096 to u4 in groups of 128,
    on PoCL and Intel's runtime: 21.9 ms an execute with new buffers, whose
    pages are touched anew each time, 10.2-12.0 ms with kept ones). An
    execute ``take``s its buffers and ``give_back`` returns them once its
    last command has completed (``when_complete``),
    so executes in flight on several queues or threads never share one;
    while every kept buffer is in flight a new one is allocated. At most
    ``keep`` free buffers of each size stay, for as long as the Quantize."""

    def __init__(self, backend, keep: int = 2):
        self._backend = backend
        self._keep = keep
        self._free: dict[int, list] = {}
        self._lock = threading.Lock()

    def take(self, md: MemoryDesc):
        """A buffer of ``md.size`` bytes no command in flight uses."""
        with self._lock:
            free = self._free.get(md.size)
            if free:
                return free.pop()
        return self._backend.allocate(md, md.size)

    def give_back(self, taken: list) -> None:
        """Return ``taken`` ((size, buffer) pairs) once their commands completed."""
        with self._lock:
            for size, storage in taken:
                free = self._free.setdefault(size, [])
                if len(free) < self._keep:
                    free.append(storage)

    def free_count(self) -> int:
        """How many buffers wait for the next execute (for the tests)."""
        with self._lock:
            return sum(len(f) for f in self._free.values())


def launch(route: Route, engine, queue, kernels, src, outs, wait,
           temporaries: Temporaries):
    """Enqueue the route on ``queue`` after ``wait``: (the last event, the
    ``temporaries`` it took as (size, buffer) pairs, to give back once that
    event completes, and other buffers to keep alive until then). ``src``
    and ``outs`` (dst, scales, zero points) are the Quantize's memories."""
    taken = []

    def buffer(md):
        storage = temporaries.take(md)
        taken.append((md.size, storage))
        return storage

    source = src.storage
    if route.pre is not None:
        source = buffer(route.pre_out)
        event = route.pre._implementation.execute(
            queue, _Buffer(route.src_view, src.storage), _Buffer(route.pre_out, source),
            list(wait))
        wait = [event]
    values = outs[0].storage if route.post is None else buffer(route.post_in)
    event, scratch = kernels.launch(engine, queue, [source, values] +
                                    [m.storage for m in outs[1:]], wait)
    if route.post is not None:
        event = route.post._implementation.execute(
            queue, _Buffer(route.post_in, values), _Buffer(route.dst_view, outs[0].storage),
            [event])
    return event, taken, [] if scratch is None else [scratch]
