"""Cross-engine reorder: the source on the host and the destination on a
device engine, OpenCL or SYCL (``cpu2gpu``), or back (``gpu2cpu``), in one
primitive, as oneDNN's reorder between a CPU and a GPU engine.

A cross-engine Reorder runs one of these (``impl`` names it):

- ``upload`` / ``download``: same layout and type, nothing to convert, no
  padding (dst's is written 0, never copied from src's), and dst's bytes
  are all its own: the bytes of the tensor's span move once.
- ``upload+<device implementation>``: the host bytes go into a device staging
  buffer of src's layout, and the implementation the device engine chooses
  for the reorder (``implementations.choose``) converts into dst;
  ``<device implementation>+download``: it converts into a staging buffer of
  dst's layout, whose bytes then come down.
- ``host:numpy+upload``: NumPy converts into dst's layout, and that goes up;
  ``download+host:numpy``: src's bytes come down and NumPy converts into dst.

Which of the last two kinds runs is measured (benchmarks/bench_cross_engine.py,
PoCL 3.1 on 2 cores): see ``_prefer_host``. An upload of a whole span is
only made where it writes nothing but dst's own bytes (dst fills its span:
no gaps, no byte shared with another tensor) and no sum needs dst's old
values; a download into a host dst with gaps goes through a scratch array
and writes dst's elements one by one.

Every variant is a short host job (wait for the inputs, blocking copies on
the engine's host queue, NumPy where the host converts) ordered with the
caller's queue by the device engine's backend (``host_job``): on OpenCL a
worker thread between markers, so ``execute`` never blocks; on SYCL, which
has no user events, the caller runs it once its inputs are ready. A host memory remembers the device commands that
read it (uploads) and write it (downloads), so clayout's later reads and
writes of it wait for them (``Memory._host_events``); a device memory
remembers the downloads reading it, and an upload into it waits for its
pending reads, as every command on a device memory does. No non-blocking
pyopencl copy is made: its event, dropped before it completes, waits in its
destructor holding the GIL (a deadlock when a Python thread was to complete
it).
"""
from __future__ import annotations

import os
import time

import numpy as np

from . import verbose
from .arguments import check_memory
from .compensation import data_problem, write_host
from .engine import (RUNTIME_NAMES, Engine, Stream, as_engine, as_stream, check_wait_for,
                     default_engine)
from .errors import InvalidArgumentError, UnimplementedError
from .host import reorder as host_reorder
from .host.layout import fills_span, to_byte_span
from .implementations import PREFIX, HostFallback, choose
from .memory import uninitialised
from .memory_io import locked
from .md_addressing import element_span
from .problem import Problem

#: CLAYOUT_CROSS_CONVERT=device|host makes the device or the host convert
#: wherever both may, bit copies included (for measuring and testing every
#: way); unset, bit copies move once and ``_prefer_host`` decides the rest.
FORCE_ENV = "CLAYOUT_CROSS_CONVERT"


def engines_of(engine, src_engine, dst_engine) -> tuple[Engine, Engine]:
    """(src engine, dst engine) of a Reorder: each side's own, else
    ``engine``, else ``default_engine()``.

    Raises InvalidArgumentError when ``engine`` is given with a src or dst
    engine that is another engine, and UnimplementedError for two device
    engines of different contexts or runtimes (go through a host memory).
    """
    if src_engine is None and dst_engine is None:
        return (as_engine(engine),) * 2 if engine is not None else (default_engine(),) * 2
    sides = [None if e is None else as_engine(e, name)
             for e, name in ((src_engine, "src_engine"), (dst_engine, "dst_engine"))]
    if engine is not None:
        engine = as_engine(engine)
        for side, name in zip(sides, ("src_engine", "dst_engine")):
            if side is not None and side != engine:
                raise InvalidArgumentError(
                    f"engine={engine!r} with {name}={side!r}: engine= is the one engine of "
                    f"both sides; for a cross-engine reorder give src_engine= and "
                    f"dst_engine= alone")
    # A side not given is ``engine`` (then both are), else the default engine.
    src, dst = (side if side is not None else engine if engine is not None else default_engine()
                for side in sides)
    if src != dst and src.is_device and dst.is_device:
        if src.kind != dst.kind:
            why = ("a reorder between a SYCL and an OpenCL engine is not implemented: "
                   "dpctl does not expose the OpenCL context under a SYCL queue, so the "
                   "two cannot share memory")
        else:
            runtime = RUNTIME_NAMES[src.kind]
            why = (f"a reorder between two {runtime} engines of different contexts or "
                   f"devices is not implemented")
        raise UnimplementedError(
            f"reorder from {src.describe()} to {dst.describe()}: {why}; reorder into a "
            f"host memory (dst_engine=Engine('host')), then from it to the other engine")
    return src, dst


def _span(md):
    """(first byte, end byte, element at the first byte) of md's elements."""
    return to_byte_span(md, *element_span(md))


def _convert_on_host(problem, src_bytes, src_base, dst_bytes, dst_base):
    """The reorder in NumPy, from ``src_bytes`` (holding src from element
    ``src_base``) into ``dst_bytes`` (dst from ``dst_base``); compensation too,
    where ``dst_bytes`` is dst's whole buffer."""
    data = data_problem(problem)
    host_reorder.reorder(data.src_md, src_bytes, data.dst_md, dst_bytes, data.attr, None,
                         src_base, dst_base)
    if problem.dst_md.extra is not None:
        write_host(problem.dst_md, dst_bytes)


def _to_device(engine, buffer, first: int, data: np.ndarray):
    engine.backend.write(engine.host_queue, buffer, first, data)


def _from_device(engine, buffer, first: int, end: int) -> np.ndarray:
    out = np.empty(end - first, dtype=np.uint8)
    engine.backend.read(engine.host_queue, buffer, first, out)
    return out


class CrossEngine:
    """What a cross-engine Reorder runs (the module's docstring lists the
    variants): ``impl``, ``describe()``, ``declined`` and ``report()`` as an
    Implementation has them, and ``run`` for execute."""

    def __init__(self, problem: Problem, src_engine: Engine, dst_engine: Engine):
        self.problem = problem
        self.src_engine, self.dst_engine = src_engine, dst_engine
        self.uploads = dst_engine.is_device
        self.engine = dst_engine if self.uploads else src_engine  # the device side
        self.direction = "cpu2gpu" if self.uploads else "gpu2cpu"
        self.kind = f"{src_engine.kind}2{dst_engine.kind}"  # verbose's engine column
        self.device = None  # the device implementation, where the device converts
        self.declined = []  # (name, why) of the variants before the one chosen
        self.variant = self._choose()

    # -- choosing -------------------------------------------------------------------

    def _name(self, variant: str, short: bool = True) -> str:
        device = PREFIX[self.engine.kind] if self.device is None else (
            self.device.impl if short else self.device.describe())
        text = {"none": "none (zero elements)",
                "copy": "upload" if self.uploads else "download",
                "device": f"upload+{device}" if self.uploads else f"{device}+download",
                "host": "host:numpy+upload" if self.uploads else "download+host:numpy",
                }[variant]
        return f"cross:{self.direction} {text}"

    def _why_not_copy(self):
        p = self.problem
        if not p.moves_bits:
            return "the values are converted"
        if p.src_md != p.dst_md:
            return "the layouts differ"
        if p.dst_md.extra is not None:
            return "compensation is computed"
        if not fills_span(p.dst_md):
            return ("dst has gaps or shares bytes with other tensors: a copy of its span "
                    "would write them")
        if p.dst_md.padded_dims != p.dst_md.dims:
            return "dst has padding, which must be written 0, not copied from src's"
        return None

    def _why_not_host(self):
        """Why the host may not convert (None: it may)."""
        p = self.problem
        if not self.uploads:
            return None  # NumPy writes only dst's elements, and reads its old values
        if p.attr is not None and p.attr.sum_beta is not None:
            return "the sum post-op reads dst's old values, which are on the device"
        if p.dst_md.extra is not None:
            return "compensation is computed on the device for a device dst"
        if not fills_span(p.dst_md):
            return ("dst has gaps or shares bytes with other tensors: an upload of its span "
                    "would overwrite them")
        return None

    def _why_not_device(self):
        """Why the device may not convert (None: it may)."""
        p = self.problem
        if self.uploads:
            return None
        if p.attr is not None and p.attr.sum_beta is not None:
            return "the sum post-op reads dst's old values, which are on the host"
        if p.dst_md.extra is not None:
            return "compensation is computed on the host for a host dst"
        return None

    def _choose(self) -> str:
        p = self.problem
        if p.is_empty:
            return "none"
        forced = os.environ.get(FORCE_ENV, "").strip()
        if forced not in ("", "device", "host"):
            raise InvalidArgumentError(f"{FORCE_ENV}={forced!r}: expected device or host")
        why = f"{FORCE_ENV}={forced}" if forced else self._why_not_copy()
        if why is None:
            return "copy"
        self.declined.append((self._name("copy"), why))
        host_why, device_why = self._why_not_host(), self._why_not_device()
        if device_why is None:
            try:
                self.device = choose(p, self.engine)
            except UnimplementedError as error:
                if host_why is not None:
                    raise
                device_why = str(error)
        if host_why is None and device_why is None:
            if forced:
                host = forced == "host"
                why = f"{FORCE_ENV}={forced}"
            else:
                host, why = _prefer_host(self.device)
            if host:
                self.declined.append((self._name("device", short=False), why))
                return "host"
            self.declined.append((self._name("host"), why))
            return "device"
        if device_why is None:
            self.declined.append((self._name("host"), host_why))
            return "device"
        self.declined.append((self._name("device"), device_why))
        return "host"

    # -- what Reorder shows -----------------------------------------------------------

    @property
    def impl(self) -> str:
        return self._name(self.variant)

    def describe(self) -> str:
        return self._name(self.variant, short=False)

    def report(self) -> str:
        """For a device conversion, how the device engine's implementation
        list chose and what its kernel does."""
        if self.variant != "device":
            return ""
        lines = [f"on the device: {name}: declined: {why}" for name, why in self.device.declined]
        lines.append(f"on the device: {self.device.describe()}: runs")
        report = self.device.report()
        return "\n".join(lines + ([report] if report else []))

    # -- running ---------------------------------------------------------------------

    def _check_memory(self, mem, md, engine, arg):
        check_memory(mem, md, engine, arg, lambda: f"; this cross-engine reorder "
                     f"({self.direction}) takes its {arg} on {engine.describe()}")

    def run(self, primitive, stream, src, dst, wait_for):
        """Execute for ``primitive`` (see Reorder.execute)."""
        if isinstance(stream, Stream) and not stream.engine.is_device:
            raise InvalidArgumentError(
                f"stream {stream!r}: a cross-engine reorder ({self.direction}) runs on a "
                f"stream of its {RUNTIME_NAMES[self.engine.kind]} engine, "
                f"{self.engine.describe()}")
        stream = as_stream(stream, self.engine)
        self._check_memory(src, self.problem.src_md, self.src_engine, "src")
        self._check_memory(dst, self.problem.dst_md, self.dst_engine, "dst")
        wait = check_wait_for(wait_for, self.engine)
        start = time.perf_counter()
        queue = stream.queue
        event = (self._up if self.uploads else self._down)(queue, src, dst, wait)
        if verbose.enabled():
            def log():
                verbose.log("exec", self.kind, primitive.kind, primitive._label,
                            *primitive._signature(),
                            f"{(time.perf_counter() - start) * 1e3:.3f}ms")
            self.engine.backend.when_complete(event, log)
        return event

    def _up(self, queue, src, dst, wait):
        p, engine = self.problem, self.engine
        backend = engine.backend
        job = None
        try:  # the job starts even if the rest fails: its marker must complete
            # src's lock orders this upload's record against downloads into src.
            with locked(src, dst):
                src_waits = src._host_events()  # downloads into src still running
                dst_waits = dst._wait_list(queue, write=True)  # writes and reads of dst
                if self.variant == "none":
                    event = read = backend.run_after(wait + dst_waits, lambda: backend.marker(
                        queue, wait + dst_waits), queue)
                elif self.variant == "device":
                    staging = uninitialised(p.src_md, engine)
                    first, end, _ = _span(p.src_md)

                    def work():
                        _to_device(engine, staging.storage, first, src.storage[first:end])

                    job = backend.host_job(queue, wait, src_waits, work)
                    read = job.enqueue()
                    event = backend.run_after([read] + dst_waits, lambda: self.device.execute(
                        queue, staging, dst, [read] + dst_waits), queue)
                else:
                    first, end, base = _span(p.dst_md)
                    copy = self.variant == "copy"

                    def work():
                        if copy:
                            data = src.storage[first:end]
                        else:
                            data = np.zeros(end - first, dtype=np.uint8)
                            _convert_on_host(p, src.storage, 0, data, base)
                        _to_device(engine, dst.storage, first, data)

                    job = backend.host_job(queue, wait + dst_waits, src_waits, work)
                    event = read = job.enqueue()
                dst._wrote(event, queue)
                src._host_recorded(read, queue, False, backend)
        finally:
            if job is not None:
                job.start()
        return event

    def _down(self, queue, src, dst, wait):
        p, engine = self.problem, self.engine
        backend = engine.backend
        job = None
        try:  # the job starts even if the rest fails: its marker must complete
            with locked(src, dst):
                wait = wait + src._wait_list(queue)
                dst_waits = dst._host_events(write=True)  # downloads into it, uploads from it
                if self.variant == "none":
                    event = read = backend.run_after(wait, lambda: backend.marker(queue, wait),
                                                     queue)
                elif self.variant == "device":
                    staging = uninitialised(p.dst_md, engine)
                    converted = read = self.device.execute(queue, src, staging, wait)
                    first, end, base = _span(p.dst_md)
                    dense = fills_span(p.dst_md)

                    def work():
                        data = _from_device(engine, staging.storage, first, end)
                        if dense:
                            dst.storage[first:end] = data
                        else:  # only dst's elements: a copy through the layout
                            host_reorder.reorder(p.dst_md, data, p.dst_md, dst.storage, None, None,
                                                 base, 0)

                    job = backend.host_job(queue, [converted], dst_waits, work, upstream=wait)
                    event = job.enqueue()
                else:
                    first, end, base = _span(p.src_md)
                    copy = self.variant == "copy"

                    def work():
                        data = _from_device(engine, src.storage, first, end)
                        if copy:
                            dst.storage[first:end] = data
                        else:
                            _convert_on_host(p, data, base, dst.storage, 0)

                    job = backend.host_job(queue, wait, dst_waits, work)
                    event = read = job.enqueue()
                dst._host_recorded(event, queue, True, backend)
                src._was_read(read, queue)  # a later write of src waits for it
        finally:
            if job is not None:
                job.start()
        return event


def _prefer_host(device) -> tuple[bool, str]:
    """(True when the host should convert, the reason), where both may and
    ``device`` is the device engine's implementation for the problem.

    The rule: the device converts wherever a device kernel serves the
    problem; the host only where the device's implementation would be the
    host path anyway (which adds device round trips). Measured with
    benchmarks/bench_cross_engine.py on PoCL 3.1, 2 cores, 2x64x56x56,
    16x64x56x56 and 8x256x56x56, both directions, each way timed in pairs
    with the device's copy kernel: the device's share of copy over the
    host's was 2.4-4.2 for f32 -> s8 with per-channel scales, 1.0-3.9 for
    s8 -> f32, 0.9-2.0 for f32 nchw -> nChw16c, never clearly below 1 (0.89
    and 0.92 were within the run's noise; reruns gave 1.5-2.0 and 1.0-1.3).
    NumPy converts on one core, at 0.5-1.5 GB/s; a GPU converts far faster
    still, and the bytes that cross the bus differ by at most the ratio of
    the types' sizes.
    """
    if isinstance(device, HostFallback):
        return True, ("no device kernel serves it (the host path would do the work through "
                      "device copies anyway)")
    return False, "the device converts faster where a kernel serves it (measured on PoCL)"


def setup(primitive, src_md, dst_md, attr, src_engine: Engine, dst_engine: Engine):
    """Make ``primitive`` (a Reorder being created) the cross-engine reorder
    from ``src_engine`` to ``dst_engine`` (one the host, one a device
    engine): its ``engine`` is the device side, whose streams it runs on. Raises
    UnimplementedError for runtime dims and for a problem neither the device
    nor the host serves."""
    for arg, md in (("src", src_md), ("dst", dst_md)):
        if md.is_runtime:
            raise UnimplementedError(
                f"{arg} {md!r}: runtime dims in a cross-engine reorder are not implemented")
    cross = CrossEngine(Problem("reorder", src_md, dst_md, attr, None), src_engine, dst_engine)
    primitive.engine, primitive.src_engine, primitive.dst_engine = \
        cross.engine, src_engine, dst_engine
    primitive.src_md, primitive.dst_md, primitive.attr, primitive.shuffle = \
        src_md, dst_md, attr, None
    primitive._implementation = primitive._cross = cross
    primitive.impl = cross.impl
    primitive._label = cross.describe()
    if verbose.enabled():  # the text only when a line is written
        if verbose.enabled(2):
            for name, why in cross.declined:
                verbose.log("decline", cross.kind, primitive.kind, f"{name} ({why})",
                            *primitive._signature(), min_level=2)
        verbose.log("create", cross.kind, primitive.kind, primitive._label,
                    *primitive._signature())
