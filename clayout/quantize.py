"""Quantize: scales (and zero points) computed from the data, then the values.

``Quantize(src_md, dst_data_type, scheme=, mask=, groups=, scale_data_type=,
zero_point_data_type=, dst_md=, engine=)`` checks everything at creation and
chooses the device kernel (templates/quantize.cl.mako, planned and rendered
by gpu/render_quantize.py) or the NumPy path (host/quantize.py, which also
holds the formulas). ``execute(stream, src, dst, scales, zero_points=None)``
returns an event and never blocks (the host engine runs it at once).

The three memories are what the grouped decompression reorder takes:
``Reorder(dst_md, f32_md, attr=Attr(src_scales=Scales(mask=m, groups=g,
data_type=scale type), src_zero_points=ZeroPoints(mask=m, groups=g,
data_type=zero-point type)))`` executed with ``src_scales=scales,
src_zero_points=zero_points`` dequantizes them (MX too: Scales take e8m0).
"""
from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import verbose
from .backends.host import COMPLETE
from .engine import Engine, Stream, as_engine, as_stream, check_wait_for, default_engine
from .errors import InvalidArgumentError, describe
from .gpu.build import _build
from .gpu.cache import kernel_cache
from .gpu.render_quantize import describe_plan, plan_quantize, render_quantize, why_not
from .host import layout
from .host.quantize import QuantizeSpec, check_quantize, quantize
from .memory import Memory
from .memory_io import locked, record_command
from .memory_desc import MemoryDesc
from .quantize_route import Temporaries, plan_route
from .quantize_route import launch as launch_route


class _Kernels:
    """The built kernel(s) of one QuantizePlan on one context and device."""

    def __init__(self, engine, plan):
        self.plan = plan
        self._runtime = type(engine.backend)
        names = [plan.name] + ([plan.name + "_partials"] if plan.parts > 1 else [])
        built = _build(engine, lambda: render_quantize(plan), names, ("quantize", plan))
        self.main = built[0]
        self.partials = built[1] if plan.parts > 1 else None
        self._lock = threading.Lock()

    def _enqueue(self, queue, kernel, args, wait_for):
        size = (self.plan.items,)
        local = (self.plan.lanes,) if self.plan.lanes else None
        if not self._runtime.args_are_state:
            return self._runtime.enqueue(queue, kernel, size, local, args, wait_for)
        with self._lock:
            return self._runtime.enqueue(queue, kernel, size, local, args, wait_for)

    def launch(self, engine, queue, buffers, wait_for):
        """Enqueue on ``buffers`` (src, dst, scales[, zero points]); returns
        the last event and the scratch storage it uses (keep it alive until then)."""
        if self.partials is None:
            return self._enqueue(queue, self.main, buffers, wait_for), None
        scratch = engine.backend.allocate(
            MemoryDesc((2 * self.plan.items,), "f32"), 8 * self.plan.items)
        first = self._enqueue(queue, self.partials, (buffers[0], scratch), wait_for)
        return self._enqueue(queue, self.main, (*buffers, scratch), [first]), scratch


def _kernels(engine, plan) -> _Kernels:
    key = (engine.backend.device_key, ("quantize", plan))
    return kernel_cache.get(engine.backend.kernel_scope, key, lambda: _Kernels(engine, plan))


class Quantize:
    """Dynamic quantization of ``src_md``'s tensor to ``dst_data_type``.

    ``scheme``: "symmetric" (absmax; dst s8, s4, f8_e4m3, f8_e5m2,
    f4_e2m1), "asymmetric" (min/max with zero points; dst s8, u8, s4, u4)
    or "mx" (OCP MX v1.0: an e8m0 scale per 32 elements of the last dim;
    dst f8_e4m3, f8_e5m2, f4_e2m1, or s8 for MXINT8). ``mask`` and
    ``groups`` mean what they mean for ``Scales``: per tensor ``mask=0``,
    per channel ``mask=1``, per group ``mask=0b11, groups=(1, 128)``; MX
    takes every dim in the mask and ``groups=(1, 32)``. ``scale_data_type``
    f32, bf16 or f16 (e8m0 for MX, its default); ``zero_point_data_type``
    (asymmetric only; default the dst type) s32, s8, u8, s4 or u4, holding
    the dst's range. ``dst_md`` (default plain C order) may be any layout
    of the dims and dst type. Raises InvalidArgumentError naming the value
    and the rule, before anything runs.

    ``dst_md``, ``scales_md`` and ``zero_points_md`` (None without zero
    points) describe the three memories ``execute`` writes; the scales and
    zero points are 1-d and dense, ``Scales.count(dims)`` of them in C order
    over the masked dims (one per tensor). ``impl`` names the implementation ("ocl:quantize", or
    "host:numpy" with the reason the kernel declined).
    """

    def __init__(self, src_md: MemoryDesc, dst_data_type, *, scheme: str = "symmetric",
                 mask: int = 0, groups: tuple[int, int] | None = None,
                 scale_data_type=None, zero_point_data_type=None,
                 dst_md: MemoryDesc | None = None, engine: Engine | None = None):
        if scale_data_type is None:
            scale_data_type = "e8m0" if scheme == "mx" else "f32"
        self.spec: QuantizeSpec = check_quantize(src_md, dst_data_type, scheme, mask, groups,
                                                 scale_data_type, zero_point_data_type, dst_md)
        self.engine = as_engine(engine) if engine is not None else default_engine()
        spec = self.spec
        self.src_md, self.dst_md = spec.src_md, spec.dst_md
        self.scheme, self.mask, self.groups = spec.scheme, spec.mask, spec.groups
        # 1-d and dense, as the decompression reorder takes values at execute
        count = math.prod(spec.counts)
        self.scales_md = MemoryDesc((count,), spec.scale_data_type, tag="a")
        self.zero_points_md = None if spec.zero_point_data_type is None else \
            MemoryDesc((count,), spec.zero_point_data_type, tag="a")
        self._kernels = None
        self.plan = None
        self._route = None
        self._temporaries = None  # the route's buffers (quantize_route.Temporaries)
        why = ("the host engine" if not self.engine.is_device
               else why_not(spec, self.engine.profile.strategy,
                            self.engine.profile.max_work_group_size,
                            self.engine.profile.little_endian))
        if why is None and self.src_md.nelems() == 0:
            why = "zero-size: nothing to do"
        kernel_spec = spec
        if why is not None and self.engine.is_device and self.src_md.nelems():
            # Device reorders around the kernel (quantize_route.py), where it serves then.
            route = plan_route(spec, self.engine)
            if isinstance(route, str):
                why = f"{why}; {route}"
            else:
                why, kernel_spec, self._route = None, route.spec, route
                self._temporaries = Temporaries(self.engine.backend)
        if why is None:
            profile = self.engine.profile
            self.plan = plan_quantize(kernel_spec, profile.strategy,
                                      profile.max_work_group_size, profile.little_endian,
                                      profile.prefetch)
            try:
                self._kernels = _kernels(self.engine, self.plan)
            except Exception as error:  # noqa: BLE001 - a build failure: the host runs it
                why = f"the kernel did not build: {str(error).splitlines()[0]}"
                self.plan = self._route = None
        if self._kernels is not None:
            prefix = "sycl" if self.engine.kind == "sycl" else "ocl"
            route = f"{self._route.describe()}: " if self._route is not None else ""
            self.impl = f"{prefix}:quantize ({route}{describe_plan(self.plan)})"
        else:
            self.impl = "host:numpy" if not self.engine.is_device else f"host:numpy ({why})"
        verbose.log("create", self.engine.kind, "quantize", self.impl,
                    f"src:{self.src_md.data_type} dst:{self.dst_md.data_type}",
                    f"scheme:{scheme} mask:{self.mask} groups:{self.groups}", "")

    @property
    def runs_kernel(self) -> bool:
        return self._kernels is not None

    def _check(self, mem, md, arg):
        if not isinstance(mem, Memory):
            raise InvalidArgumentError(f"Quantize {arg} {describe(mem)} is not a clayout Memory")
        if mem.md != md:
            raise InvalidArgumentError(
                f"Quantize {arg} memory {mem.md!r} does not match the primitive's {arg} {md!r}")
        if mem.engine != self.engine:
            raise InvalidArgumentError(f"Quantize {arg} memory lives on "
                                       f"{mem.engine.describe()}, the primitive on "
                                       f"{self.engine.describe()}")

    def execute(self, stream: Stream | Any, src: Memory, dst: Memory, scales: Memory,
                zero_points: Memory | None = None,
                wait_for: Sequence[Any] | None = None) -> Any:
        """Enqueue on ``stream``: read ``src``, write ``dst``, ``scales`` and
        ``zero_points`` (required exactly when ``zero_points_md`` is not
        None), after ``wait_for``, the writes clayout enqueued on them and
        the reads still running on the three it writes. Returns the event
        (a complete one on the host engine, which runs it at once); never
        blocks. Raises InvalidArgumentError for memories that do not match."""
        stream = as_stream(stream, self.engine) if type(stream) is not Stream \
            or stream.engine is not self.engine else stream
        self._check(src, self.src_md, "src")
        self._check(dst, self.dst_md, "dst")
        self._check(scales, self.scales_md, "scales")
        if self.zero_points_md is None:
            if zero_points is not None:
                raise InvalidArgumentError(
                    f"Quantize zero_points {describe(zero_points)}: scheme={self.scheme!r} "
                    f"writes none")
        else:
            self._check(zero_points, self.zero_points_md, "zero_points")
        outs = [m for m in (dst, scales, zero_points) if m is not None]
        mems = [src] + outs
        for i, a in enumerate(mems):
            for b in mems[i + 1:]:
                if a.shares_bytes_with(b):
                    raise InvalidArgumentError(
                        f"Quantize memories {a.md!r} and {b.md!r} share bytes of one buffer")
        wait = check_wait_for(wait_for, self.engine)
        queue = stream.queue
        if queue is None:  # the host engine: run now
            src._host_wait()
            for m in outs:
                m._host_wait(write=True)
            self._host_run(src, outs)
            return COMPLETE
        backend = self.engine.backend
        with locked(src, *outs):
            wait += src._wait_list(queue)
            for m in outs:
                wait += m._wait_list(queue, write=True)
            if self.src_md.nelems() == 0:
                event = backend.marker(queue, wait)
            elif self._kernels is not None:
                kept = []

                def enqueue():
                    taken = []
                    if self._route is not None:
                        event, taken, buffers = launch_route(
                            self._route, self.engine, queue, self._kernels, src, outs, wait,
                            self._temporaries)
                        kept.extend(buffers)
                    else:
                        event, scratch = self._kernels.launch(
                            self.engine, queue, [m.storage for m in [src] + outs], wait)
                        if scratch is not None:
                            kept.append(scratch)
                    if kept or taken:
                        temporaries = self._temporaries

                        def done():  # scratch lives until then; kept buffers go back
                            kept.clear()
                            if taken:
                                temporaries.give_back(taken)
                        backend.when_complete(event, done)
                    return event
                event = backend.run_after(wait, enqueue, queue)
            else:
                event = self._device_host_job(queue, wait, src, outs)
            for m in outs:
                record_command(event, queue, m, [src] if m is dst else [])
        return event

    # -- the NumPy path ----------------------------------------------------------------

    def _results(self, x):
        values, scales, zps = quantize(x, self.spec)
        return [values, scales.reshape(self.scales_md.dims)] + \
            ([] if zps is None else [zps.reshape(self.zero_points_md.dims)])

    def _host_run(self, src, outs):
        if self.src_md.nelems() == 0:
            return
        x = layout.gather(self.src_md, src.storage)
        for mem, array in zip(outs, self._results(x)):
            layout.scatter(mem.md, array, mem.storage)

    def _device_host_job(self, queue, wait, src, outs):
        """The NumPy path for a device engine: host work ordered with ``queue``."""
        engine = self.engine
        backend = engine.backend
        host_queue = engine.host_queue

        def read(mem):
            first, end = layout.byte_span(mem.md)
            raw = np.empty(end - first, dtype=np.uint8)
            backend.read(host_queue, mem.storage, first, raw)
            return raw, first, layout.span_base(mem.md)

        def work():
            raw, _, base = read(src)
            results = self._results(layout.gather(self.src_md, raw, base))
            for mem, array in zip(outs, results):
                out, first, base = read(mem)  # the bytes around its elements kept
                layout.scatter(mem.md, array, out, base)
                backend.write(host_queue, mem.storage, first, out)

        job = backend.host_job(queue, list(wait), [], work)
        try:
            return job.enqueue()
        finally:
            job.start()

    def __repr__(self):
        return (f"<Quantize {self.impl} {self.src_md!r} -> {self.dst_md.data_type} "
                f"scheme={self.scheme} mask={self.mask:#b} groups={self.groups}>")
