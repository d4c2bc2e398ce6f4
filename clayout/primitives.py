"""Reorder and Shuffle: validate, ask the implementation list, execute."""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import verbose
from .arguments import (check_memory, check_pair, check_reorder, check_shuffle,
                        check_values_apart, refuse_keywords)
from .attr import Attr
from .dtypes import DataTypeLike
from .backends.host import COMPLETE
from .cross_engine import engines_of, setup as cross_engine_setup
from .engine import Engine, Stream, as_engine, as_stream, check_wait_for, default_engine
from .errors import InvalidArgumentError, UnimplementedError, describe
from .execute_values import KEYWORDS, ValuesLike, check_cross_engine, resolve, value_spec
from .implementations import choose
from .memory import Memory
from .memory_io import (locked, record_command, register_cross_engine_reorder,
                        register_device_reorder)
from .memory_desc import MemoryDesc, dims_text
from .problem import Problem


def _describe_attr(attr: Attr | None) -> str:
    if attr is None or attr.is_empty:
        return ""
    parts = []

    def text(arg, v):
        groups = "" if v.groups is None else f":{v.groups[0]}x{v.groups[1]}"
        return f"{arg}:{v.mask}:{v.data_type}{groups}"

    for arg, name in (("src", "src_scales"), ("dst", "dst_scales")):
        v = getattr(attr, name)
        if v is not None:
            parts.append(f"attr-scales:{text(arg, v)}")
    for arg, name in (("src", "src_zero_points"), ("dst", "dst_zero_points")):
        v = getattr(attr, name)
        if v is not None:
            parts.append(f"attr-zero-points:{text(arg, v)}")
    if attr.sum_beta is not None:
        parts.append(f"attr-post-ops:sum:{attr.sum_beta:g}")
    return " ".join(parts)


def _md_text(md: MemoryDesc, arg: str) -> str:
    layout = md.tag or "strides:" + dims_text(md.strides)
    return f"{arg}:{md.data_type}:{layout}"


class _Primitive:
    """What Reorder and Shuffle share: the implementation list, execution."""

    kind = "primitive"

    def _setup(self, src_md, dst_md, engine, attr, shuffle):
        self.engine = as_engine(engine) if engine is not None else default_engine()
        self.src_md, self.dst_md, self.attr, self.shuffle = src_md, dst_md, attr, shuffle
        problem = Problem(self.kind, src_md, dst_md, attr, shuffle)
        # What execute checks its value keywords against (None: it takes none).
        self._value_spec = value_spec(attr, self.engine, Reorder) \
            if attr is not None and attr.at_execute() else None
        self._implementation = choose(problem, self.engine)
        self.impl = self._implementation.impl
        self._label = self._implementation.describe()  # names the generated kernel too
        # The lines' text is made only when a line is written: working out
        # tags for it was most of the cost of a creation.
        if verbose.enabled():  # level 2 (the declines) implies level 1
            if verbose.enabled(2):
                for name, why in self._implementation.declined:
                    verbose.log("decline", self.engine.kind, self.kind, f"{name} ({why})",
                                *self._signature(), min_level=2)
            verbose.log("create", self.engine.kind, self.kind, self._label, *self._signature())

    @property
    def runs_kernel(self) -> bool:
        """True when the device runs it all (a kernel or a copy), without the host."""
        return self._implementation.runs_kernel

    def explain(self) -> str:
        """Which implementation runs, and why each one before it declined;
        for a generated kernel also its strategy, NDRange, bytes per
        work-item, and the 128-byte lines its first warp of 32 work-items
        touches per global load and store against the ideal."""
        lines = [f"{name}: declined: {why}" for name, why in self._implementation.declined]
        lines.append(f"{self._label}: runs")
        report = self._implementation.report()
        return "\n".join(lines + ([report] if report else []))

    def _signature(self) -> tuple[str, str, str]:
        """The verbose columns descriptors, attributes and problem."""
        problem = dims_text(self.src_md.dims)
        if self.shuffle:
            problem += f" axis:{self.shuffle[0]} group:{self.shuffle[1]}"
        return (f"{_md_text(self.src_md, 'src')} {_md_text(self.dst_md, 'dst')}",
                _describe_attr(self.attr), problem)

    def _check_memory(self, mem, md, arg):
        check_memory(mem, md, self.engine, arg,
                     lambda: f", the primitive on {self.engine.describe()}")

    def execute(self, stream: Stream | Any, src: Memory, dst: Memory,
                wait_for: Sequence[Any] | None = None, *,
                src_scales: ValuesLike | None = None, dst_scales: ValuesLike | None = None,
                src_zero_points: ValuesLike | None = None,
                dst_zero_points: ValuesLike | None = None,
                **unknown: Any) -> Any:
        """Enqueue the primitive on ``stream`` (a Stream, or a queue of the
        engine's context: a pyopencl CommandQueue, a dpctl SyclQueue): read
        ``src``, write ``dst``,
        after the events in ``wait_for``, the writes clayout enqueued on
        ``src`` and ``dst``, and the commands it enqueued that still read
        ``dst`` (on any queue, out-of-order ones too). Recorded as a read of
        ``src`` (and of values given as memories): later writes of them wait
        for it.

        ``src_scales``, ``dst_scales``, ``src_zero_points`` and
        ``dst_zero_points`` are the values of the attributes made without
        values (``Scales(mask=...)``): NumPy values, or a Memory, pyopencl
        Array or Buffer, or USM memory on the device (clayout/execute_values.py says which
        types each may hold). Each one the attributes take must be given,
        and no other.

        Returns the event that completes once ``dst`` is written (a pyopencl
        Event, a dpctl SyclEvent) and never blocks, whichever implementation
        runs (the host path for an OpenCL engine runs on a worker thread),
        except where the host must work for a SYCL engine (the host path:
        SYCL has no user events, so that runs in the caller once its inputs
        are ready). The host engine runs the call at once and returns a
        complete ``HostEvent``.
        Raises InvalidArgumentError for arguments that do not match (values
        given at execute included: missing, unexpected, of the wrong count,
        type or engine; arguments.py holds the rules), UnimplementedError
        for source scales on the device into weights with a scale_adjust,
        ExecutionError when an earlier write of ``src`` or ``dst`` failed.
        """
        if unknown:
            refuse_keywords(unknown)
        given = (src_scales, dst_scales, src_zero_points, dst_zero_points)
        if type(stream) is not Stream or stream.engine is not self.engine:
            stream = as_stream(stream, self.engine)
        # The common case first: memories made on the primitive's own
        # descriptors and engine need no more checking.
        if type(src) is not Memory or src.md is not self.src_md or \
                src.engine is not self.engine:
            self._check_memory(src, self.src_md, "src")
        if type(dst) is not Memory or dst.md is not self.dst_md or \
                dst.engine is not self.engine:
            self._check_memory(dst, self.dst_md, "dst")
        check_pair(self.kind, src, dst)
        wait = check_wait_for(wait_for, self.engine)
        values = None
        if self._value_spec is not None or src_scales is not None or dst_scales is not None \
                or src_zero_points is not None or dst_zero_points is not None:
            spec = self._value_spec or value_spec(self.attr, self.engine, Reorder)  # to refuse them
            values = resolve(spec, given, src.md.dims, self.engine,
                             counted=not self.src_md.is_runtime)
            check_values_apart(values, dst)
        log = verbose.enabled()
        start = time.perf_counter() if log else None
        queue = stream.queue
        if queue is None:  # the host engine: storage is NumPy, run now
            # First cross-engine downloads into src or dst, and uploads still reading dst.
            src._host_wait()
            dst._host_wait(write=True)
            self._implementation.execute(None, src, dst, wait, values)
            if log:
                self._log_exec(start)
            return COMPLETE
        # Values given as memories are read too (a copy or a widening of
        # them ends before the command does, so its event covers them).
        read = [src] if not values else \
            [src, *[v.memory for v in values.values() if v.memory is not None]]
        # Record events in the order they are enqueued: the buffers' locks
        # are held from the wait lists to the records.
        with locked(dst, *read):
            wait += src._wait_list(queue)
            wait += dst._wait_list(queue, write=True)  # its pending writes and reads
            event = self.engine.backend.run_after(wait, lambda: self._implementation.execute(
                queue, src, dst, wait, values), queue)
            record_command(event, queue, dst, read)
        if log:
            backend = self.engine.backend
            backend.when_complete(event, lambda: self._log_exec(start, backend.seconds(event)))
        return event

    def _log_exec(self, start, seconds=None):
        """The exec line: the device's time for the command when the queue
        profiles, else the time from the execute() call to completion."""
        if seconds is None:
            seconds = time.perf_counter() - start
        verbose.log("exec", self.engine.kind, self.kind, self._label, *self._signature(),
                    f"{seconds * 1e3:.3f}ms")

    def __repr__(self):
        return f"<{type(self).__name__} {self.impl} {','.join(self._signature())}>"


class Reorder(_Primitive):
    """Copy ``src_md``'s tensor into ``dst_md``'s layout and type, optionally
    quantizing with ``attr`` (scales, zero points, sum).

    A destination of format ``any`` takes the source's layout. Without
    ``engine`` it runs on ``default_engine()``. ``impl`` names the
    implementation chosen. Raises InvalidArgumentError for mismatched dims
    or attributes that do not fit.

    ``src_engine`` and ``dst_engine`` (instead of ``engine``; a side not
    given is the default engine) place the two sides: one the host and one
    a device engine (OpenCL or SYCL) make a cross-engine reorder
    (clayout/cross_engine.py), which runs on streams of the device side
    (``engine``); equal ones, the ordinary reorder. Raises
    InvalidArgumentError when ``engine`` is given with another src or dst
    engine, UnimplementedError for two device engines of different contexts
    or runtimes.
    """

    kind = "reorder"
    _cross = None  # the CrossEngine of a cross-engine reorder

    def __init__(self, src_md: MemoryDesc, dst_md: MemoryDesc, *, engine: Engine | None = None,
                 attr: Attr | None = None, src_engine: Engine | None = None,
                 dst_engine: Engine | None = None):
        dst_md = check_reorder(src_md, dst_md, attr)
        self.src_engine, self.dst_engine = engines_of(engine, src_engine, dst_engine)
        if self.src_engine != self.dst_engine:
            check_cross_engine(attr)
            cross_engine_setup(self, src_md, dst_md, attr, self.src_engine, self.dst_engine)
            return
        self._setup(src_md, dst_md, self.src_engine, attr, None)

    def execute(self, stream: Stream | Any, src: Memory, dst: Memory,
                wait_for: Sequence[Any] | None = None, **values: ValuesLike) -> Any:
        """As every primitive's execute. A cross-engine reorder takes a
        stream (or queue) of its device side, ``src`` on ``src_engine`` and
        ``dst`` on ``dst_engine``, and returns the Event that completes once
        ``dst`` is written (a host dst too), without blocking; it takes no
        values at execute."""
        if self._cross is None:
            return super().execute(stream, src, dst, wait_for, **values)
        if values:
            refuse_keywords({k: v for k, v in values.items() if k not in KEYWORDS})
            raise InvalidArgumentError(
                f"{', '.join(values)} given to a cross-engine reorder's execute: it takes "
                f"its attribute values at creation")
        return self._cross.run(self, stream, src, dst, wait_for)


def reorder(src: Memory | np.ndarray | Any, dst: Memory | None = None,
            attr: Attr | None = None, *, tag: str | None = None,
            data_type: DataTypeLike | None = None,
            engine: Engine | None = None) -> Memory | np.ndarray:
    """Reorder ``src`` into ``dst`` and wait for it to finish: on their
    engine, or across engines (one the host, one a device) as a cross-engine
    reorder on a new stream of the device one. Returns ``dst``.

    The one-line form leaves ``dst`` out: ``reorder(x, tag="nhwc",
    data_type="s8", attr=...)`` makes the destination from ``src``'s dims,
    ``data_type`` (default ``src``'s) and ``tag`` (default plain C order).
    ``src`` may then be a Memory, a NumPy array or a DLPack producer on the
    CPU (its descriptor from its shape and strides, as
    ``Memory.from_numpy(x, engine)``). It runs on ``engine``, default
    ``src``'s engine (the host for an array), and returns a Memory on a
    device engine; on the host engine, an array over the result's bytes
    for a plain tag (strided as the tag lays it out) and the host Memory
    for a blocked one (``np.asarray`` or ``to_numpy`` reads it).
    Raises InvalidArgumentError for arguments that do not fit.
    """
    if dst is not None:
        if tag is not None or data_type is not None or engine is not None:
            raise InvalidArgumentError(
                "reorder(src, dst) takes the destination's layout from dst: tag=, "
                "data_type= and engine= belong to the one-line form reorder(src, tag=...)")
        if not isinstance(src, Memory) or not isinstance(dst, Memory):
            raise InvalidArgumentError(f"reorder(src, dst) needs two Memory objects, got "
                                       f"{describe(src)} and {describe(dst)}")
        primitive = Reorder(src.md, dst.md, src_engine=src.engine, dst_engine=dst.engine,
                            attr=attr)
        stream = Stream(primitive.engine)
        primitive.execute(stream, src, dst)
        stream.wait()
        return dst
    if isinstance(src, Memory):
        engine = src.engine if engine is None else as_engine(engine, "reorder engine")
        if engine != src.engine:
            raise InvalidArgumentError(
                f"reorder(src, engine={engine!r}): src lives on {src.engine!r}; the one-line "
                f"form runs on src's engine (reorder(src, dst) crosses engines)")
    else:
        engine = Engine("host") if engine is None else as_engine(engine, "reorder engine")
        src = Memory.from_numpy(src, engine)
    md = src.md
    dst_md = MemoryDesc(md.dims, md.data_type if data_type is None else data_type,
                        **({} if tag is None else {"tag": tag}))
    dst = Memory(dst_md, engine)
    reorder(src, dst, attr)
    if engine.is_device or dst_md.inner_blks or dst_md.dtype.packed:
        return dst
    return np.asarray(dst)


class Shuffle(_Primitive):
    """Shuffle channels along ``axis`` in groups of ``group_size`` (oneDNN's shuffle).

    Forward: ``dst(.., u + v*C/G, ..) = src(.., u*G + v, ..)``; backward (diff_src
    from diff_dst) is the same with G replaced by C/G. ``dst_md`` None or of
    format ``any`` takes the source's layout; another layout is also accepted
    (shuffle and reorder in one pass). Raises InvalidArgumentError for a bad
    axis or group, or a destination of other dims or type.
    """

    kind = "shuffle"

    def __init__(self, src_md: MemoryDesc, axis: int, group_size: int, *, backward: bool = False,
                 engine: Engine | None = None, dst_md: MemoryDesc | None = None):
        axis, channels, dst_md = check_shuffle(src_md, axis, group_size, backward, dst_md)
        self.axis, self.group_size, self.backward = int(axis), int(group_size), bool(backward)
        group = channels // self.group_size if backward and channels else self.group_size
        # A group of 1 or of the whole axis leaves every element where it is.
        shuffle = None if group in (1, channels) else (self.axis, group)
        self._setup(src_md, dst_md, engine, None, shuffle)

    def _signature(self) -> tuple[str, str, str]:
        descriptors, attributes, problem = super()._signature()
        if not self.shuffle:
            problem += f" axis:{self.axis} group:{self.group_size} (a copy)"
        return descriptors, attributes, problem + (" backward" if self.backward else "")


def shuffle(src: Memory, dst: Memory, axis: int, group_size: int,
            backward: bool = False) -> None:
    """Shuffle ``src`` into ``dst`` on their engine and wait for it to finish."""
    if not isinstance(src, Memory) or not isinstance(dst, Memory):
        raise InvalidArgumentError(f"shuffle needs two Memory objects, got {describe(src)} and {describe(dst)}")
    if src.engine != dst.engine:
        raise UnimplementedError(
            f"shuffle across engines ({src.engine!r} -> {dst.engine!r}) is not implemented")
    primitive = Shuffle(src.md, axis, group_size, backward=backward, engine=src.engine,
                        dst_md=dst.md)
    stream = Stream(src.engine)
    primitive.execute(stream, src, dst)
    stream.wait()


def _kernel_reorder(src_md: MemoryDesc, dst_md: MemoryDesc, engine: Engine):
    """A Reorder of src_md to dst_md on engine that runs as a device kernel,
    or None: what Memory's from_numpy and to_numpy use for big tensors."""
    prim = Reorder(src_md, dst_md, engine=engine)
    return prim if prim.runs_kernel else None


register_device_reorder(_kernel_reorder)
register_cross_engine_reorder(lambda src_md, dst_md, src_engine, dst_engine: Reorder(
    src_md, dst_md, src_engine=src_engine, dst_engine=dst_engine))
