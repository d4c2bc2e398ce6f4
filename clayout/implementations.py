"""The implementation list: who runs a Problem on an engine, as oneDNN's lists do.

Each implementation's ``create(problem, engine)`` returns the implementation,
ready to execute, or a string that says why it declines. ``choose`` walks
``IMPLEMENTATIONS`` in order and takes the first that accepts: nothing to do,
a buffer copy, a generated kernel, the host path. A new capability (another
kernel strategy, a new type) is a new entry, not a new branch elsewhere.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import tiers
from .compensation import data_problem
from .errors import KernelBuildError, UnimplementedError
from .gpu.plan_cache import plan_cache  # plain Python: no OpenCL needed to import it
from .host import reorder as host_reorder
from .problem import Problem

#: The generated kernels index tensors of up to this many dims (as oneDNN's GPU shuffle).
MAX_KERNEL_NDIMS = 6
#: The data types the generated kernels serve.
KERNEL_TYPES = ("f32", "f16", "bf16", "s32", "s8", "u8", "f64",
                "f8_e5m2", "f8_e4m3", "s4", "u4", "f4_e2m1", "e8m0")
#: Converted through f32 helper functions: not with f64 (that would round twice).
_F32_ONLY = ("f8_e5m2", "f8_e4m3", "f4_e2m1", "e8m0")
#: What a device implementation's name starts with on each kind of engine
#: ("ocl:generated", "sycl:generated").
PREFIX = {"opencl": "ocl", "sycl": "sycl", "host": "host"}


class Implementation:
    """One way to run a problem. ``name`` names the kind; ``impl`` is what
    ``Reorder.impl`` shows and ``describe()`` what verbose lines show."""

    name = "?"
    #: Runs on the device, without the host's help.
    runs_kernel = False

    @classmethod
    def label(cls, engine) -> str:
        """``name`` as on ``engine``: "ocl:..." says OpenCL, "sycl:..." SYCL."""
        if cls.name.startswith("ocl:"):
            return f"{PREFIX[engine.kind]}:{cls.name[4:]}"
        return cls.name

    def __init__(self, problem: Problem, engine):
        self.problem, self.engine = problem, engine
        self.declined = []  # (name, reason) of the implementations tried before

    @classmethod
    def decline(cls, problem: Problem, engine) -> str | None:
        """Why this implementation cannot run ``problem`` on ``engine``, or None."""
        raise NotImplementedError

    @classmethod
    def create(cls, problem: Problem, engine):
        """The implementation for ``problem``, or the reason (a str) it
        declines: a kernel the device's compiler refuses is declined too
        (gpu/build.py logs the compiler's messages)."""
        reason = cls.decline(problem, engine)
        if reason is not None:
            return reason
        try:
            return cls(problem, engine)
        except KernelBuildError as error:
            return str(error)

    def execute(self, queue, src, dst, wait_for: list, values: dict | None = None):
        """Enqueue the work on ``queue`` after ``wait_for``; returns its Event
        (None on the host engine, where the work is done on return).
        ``values``: the attribute values given at execute, {field: ExecValue}
        (clayout/execute_values.py)."""
        raise NotImplementedError

    @property
    def impl(self) -> str:
        return self.label(self.engine)

    def describe(self) -> str:
        return self.impl

    def report(self) -> str:
        """More about how it runs, for explain(): empty unless a kernel runs."""
        return ""


class NothingToDo(Implementation):
    """A tensor of zero elements: nothing to read or write, nothing to build."""

    name = "none (zero elements)"

    @classmethod
    def decline(cls, problem, engine):
        n = problem.src_md.nelems()
        return None if n == 0 else f"{n} elements to move"

    def execute(self, queue, src, dst, wait_for, values=None):
        if queue is None:
            return None
        return self.engine.backend.marker(queue, wait_for)


class BufferCopy(Implementation):
    """Same layout and type, nothing to convert: the device copies the bytes
    the destination owns whole; a 4-bit tensor of an odd element count
    shares its last byte with whatever follows it, and that byte's low
    nibble goes through the masked write (gpu/build.py: copy_masked)."""

    name = "ocl:copy"
    runs_kernel = True

    @classmethod
    def decline(cls, problem, engine):
        if not engine.is_device:
            return "the host engine has no device buffers"
        if problem.is_buffer_copy:
            return _padding_nibble(problem.dst_md)
        s, d = problem.src_md, problem.dst_md
        if not problem.moves_bits:
            return "the values are converted"
        if problem.shuffle is not None:
            return "a shuffle moves elements"
        if s != d:
            return "the layouts differ"
        return "the layout has padding, gaps or an offset"

    def __init__(self, problem, engine):
        super().__init__(problem, engine)
        md = problem.dst_md
        self.whole, self.tail_mask = md.size, None
        if md.dtype.packed and md.nelems() % 2:
            from .gpu.build import masked_write_kernel
            masked_write_kernel(engine)  # built now: an execution builds nothing
            self.whole -= 1
            self.tail_mask = engine.backend.upload(np.array([0x0F], np.uint8))

    def execute(self, queue, src, dst, wait_for, values=None):
        from .gpu.build import copy_masked
        event = None
        if self.whole:
            event = self.engine.backend.copy(queue, dst.storage, src.storage, self.whole,
                                             wait_for)
        if self.tail_mask is not None:
            # After the copy, so that one Event (this one) tells both are done.
            event = copy_masked(self.engine, queue, dst.storage, src.storage, self.whole,
                                self.tail_mask, [event] if event is not None else wait_for)
        return event


def _padding_nibble(md) -> str | None:
    """Why a buffer copy cannot write md although its bytes are as many as its
    elements': a 4-bit padding nibble (dims (3,) blocked by 2) that must be 0,
    not the source's."""
    if md.dtype.packed and md.padded_dims != md.dims:
        return (f"{md!r}: its padding nibble shares a byte with an element and must be "
                f"written 0, not copied")
    return None


class GeneratedKernel(Implementation):
    """A kernel generated for the problem (gpu/plan.py, gpu/render.py), built
    once per context and cached; the attribute values are its arguments."""

    name = "ocl:generated"
    runs_kernel = True

    @classmethod
    def decline(cls, problem, engine):
        if not engine.is_device:
            return "host engine"
        if problem.src_md.ndims > MAX_KERNEL_NDIMS:
            return (f"{problem.src_md.ndims} dims: OpenCL kernels serve up to "
                    f"{MAX_KERNEL_NDIMS}")
        for md in (problem.src_md, problem.dst_md):
            if md.data_type not in KERNEL_TYPES:
                return f"{md.data_type}: no OpenCL kernel is generated for it yet"
            if md.data_type == "f64" and not engine.profile.fp64:
                return "f64: the device lacks cl_khr_fp64"
        types = {problem.src_md.data_type, problem.dst_md.data_type}
        if "f64" in types and types & set(_F32_ONLY) and not problem.moves_bits:
            return (f"f64 with {(types & set(_F32_ONLY)).pop()}: the kernels convert "
                    f"these through f32, which would round twice")
        return None

    def __init__(self, problem, engine):
        super().__init__(problem, engine)
        from .gpu.build import batching, get_kernel, kernel_ready
        from .gpu.compensation import get_compensation_kernel

        # Weights with extra: the data kernel writes the s8 values (into the
        # descriptor without extra, scale_adjust folded into the src scale),
        # then the compensation kernel sums them (clayout/compensation.py).
        data = data_problem(problem)
        self.plan = plan = plan_cache.get(data, engine.profile.for_problem(data))  # once per shape
        # Tiers (clayout/tiers.py): a kernel that must compile builds in the
        # background while the runtime-dims kernel of the pair stands in.
        self.stand_in = None
        if tiers.enabled() and engine.backend.background_builds and \
                problem.dst_md.extra is None and not batching() and \
                not kernel_ready(engine, plan):
            self.stand_in = tiers.stand_in(problem, engine, RuntimeKernel)
        self.own = tiers.OwnKernel(engine, plan, built=None if self.stand_in is not None
                                   else get_kernel(engine, plan))
        self.compensation = (get_compensation_kernel(engine, problem.dst_md)
                             if problem.dst_md.extra is not None else None)
        self.args = _attr_args(engine, self.plan.args, data.attr)
        self.scale_adjust = problem.dst_md.extra.scale_adjust \
            if problem.dst_md.extra is not None else 1.0

    @property
    def kernel(self):
        """The problem's own kernel (gpu/build.Kernel), waiting for its
        background build if the runtime-dims kernel still stands in."""
        return self.own.result()

    def execute(self, queue, src, dst, wait_for, values=None):
        kernel = self.own.ready()
        if kernel is None:
            event = self.stand_in.execute(queue, src, dst, wait_for, values)
            self.own.build_after(event)
            return event
        args = self.args
        if values:
            if self.scale_adjust != 1.0:
                from .compensation import adjusted_values
                values = adjusted_values(values, self.scale_adjust, self.problem, src.md.dims)
            args, wait_for = _execute_args(self.engine, queue, args, self.plan.args, values,
                                           wait_for)
        event = kernel.launch(queue, src.storage, dst.storage, args, wait_for)
        if self.compensation is not None:  # reads the weights just written
            event = self.compensation.launch(queue, dst.storage, [event])
        return event

    def describe(self):
        text = f"{self.impl}:{self.plan.name}"
        return text + "+compensation" if self.compensation is not None else text

    def report(self):
        """The kernel's strategy, NDRange, and lines its first warp touches
        per load and store (gpu/access.py)."""
        from .gpu.access import format_report
        local = self.kernel.ndrange()[1][0]
        return format_report(self.plan, local)


def _attr_args(engine, args, attr) -> list:
    """The kernel arguments of ``args`` (KernelArg) from ``attr``'s values:
    scalars, or device buffers of per-slice values; None for values that
    come at execute."""
    out = []
    for arg in args:
        value = getattr(attr, arg.field)
        np_type = np.float32 if arg.c_type == "float" else np.int32
        if arg.field == "sum_beta":
            out.append(np_type(value))
        elif value.at_execute:
            out.append(None)
        elif arg.per_slice:
            out.append(engine.backend.upload(value.values))
        else:
            out.append(np_type(value.values[0]))
    return out


def _execute_args(engine, queue, fixed: list, args, values: dict, wait_for: list):
    """(kernel arguments, wait list) of one execution: ``fixed`` (from
    _attr_args) with the values given at execute in place of its Nones."""
    out, wait = fixed.copy(), wait_for
    for i, value in enumerate(fixed):
        if value is None:
            out[i], events = values[args[i].field].kernel_arg(engine, queue, wait_for)
            if events:
                wait = wait + events
    return out, wait


def _host_attr(problem, values, dims, engine):
    """The problem's attr with the values given at execute in it (NumPy;
    values on the device are read back: call where blocking is allowed)."""
    attr = problem.attr
    if not values:
        return attr
    return attr.with_values({field: v.host_values(dims, engine) for field, v in values.items()})


def _host_work(problem, values=None, engine=None):
    bound = []  # the attr with its execute values, read once on the worker thread

    def work(region, src_bytes, src_base, dst_bytes, dst_base, written):
        if not bound:
            bound.append(_host_attr(problem, values, problem.src_md.dims, engine))
        host_reorder.reorder(problem.src_md, src_bytes, problem.dst_md, dst_bytes,
                             bound[0], problem.shuffle, src_base, dst_base, written, region)
    return work


class HostFallback(Implementation):
    """NumPy on a worker thread, for an OpenCL engine: the bytes come from the
    device region by region and go back with a masked write; never blocks."""

    name = "host:numpy"

    @classmethod
    def decline(cls, problem, engine):
        if not engine.is_device:
            return "the host engine runs NumPy directly"
        if problem.dst_md.extra is not None:
            return "compensation runs in the generated kernels or on the host engine"
        return None

    @property
    def impl(self) -> str:
        """Says why the device does not run it: the generated kernel's reason."""
        why = dict(self.declined).get(GeneratedKernel.label(self.engine))
        return f"{self.name} ({why})" if why else self.name

    def execute(self, queue, src, dst, wait_for, values=None):
        from .gpu import host_fallback
        p = self.problem

        def regions():
            return host_reorder.staging_regions(p.src_md, p.dst_md, p.shuffle)

        read_dst = p.attr is not None and p.attr.sum_beta is not None
        if values:  # values on the device: copied now, read by the worker later
            snapshots = {f: v.snapshot(self.engine, queue, wait_for) for f, v in values.items()}
            values = {f: v for f, (v, _) in snapshots.items()}
            wait_for = wait_for + [e for _, e in snapshots.values() if e is not None]
        return host_fallback.run(self.engine, queue, src.storage, dst.storage, regions,
                                 read_dst, _host_work(p, values, self.engine), wait_for)


class HostNumpy(Implementation):
    """NumPy on the host engine, at once."""

    name = "host:numpy"

    @classmethod
    def decline(cls, problem, engine):
        return f"an {engine.kind} engine" if engine.is_device else None

    def execute(self, queue, src, dst, wait_for, values=None):
        from .compensation import write_host

        p = self.problem
        if values:
            p = dataclasses.replace(p, attr=_host_attr(p, values, src.md.dims, self.engine))
        data = data_problem(p)  # p itself unless dst has extra
        host_reorder.reorder(data.src_md, src.storage, data.dst_md, dst.storage, data.attr,
                             p.shuffle)
        if p.dst_md.extra is not None:  # from the weights just written
            write_host(p.dst_md, dst.storage)
        return None


#: Tried in order; the first that accepts runs the problem.
IMPLEMENTATIONS = (NothingToDo, BufferCopy, GeneratedKernel, HostFallback, HostNumpy)
#: What serves one execution's shape without building anything.
_NO_BUILD = (NothingToDo, BufferCopy, HostFallback, HostNumpy)


def _concrete(problem: Problem, src, dst) -> Problem:
    """The problem one execution of a runtime-dims primitive runs (its
    values given at execute stay ExecValues: passed to that execute)."""
    return Problem(problem.kind, src.md, dst.md, problem.attr, problem.shuffle)


class RuntimeKernel(Implementation):
    """One kernel for every shape of runtime-dims patterns (gpu/runtime_plan.py),
    built at creation; each execution passes its dims and strides. Shapes
    with nothing to convert or move go as a buffer copy or no-op."""

    name = "ocl:runtime"
    runs_kernel = True

    @classmethod
    def decline(cls, problem, engine):
        reason = GeneratedKernel.decline(problem, engine)
        if reason is not None:
            return reason
        if problem.dst_md.dtype.packed:
            return (f"{problem.dst_md.data_type}: runtime-dims kernels do not write 4-bit "
                    f"types (two share a byte)")
        return None

    def __init__(self, problem, engine, optimized: bool = True):
        super().__init__(problem, engine)
        from .gpu.build import get_runtime_kernel
        from .gpu.runtime_plan import plan_runtime_kernel, unoptimized

        self.plan = plan_runtime_kernel(problem, engine.profile.for_problem(problem))
        if not optimized:  # a stand-in for a few executions (tiers.py)
            self.plan = unoptimized(self.plan)
        self.kernel = get_runtime_kernel(engine, self.plan)
        self.args = _attr_args(engine, self.plan.args, problem.attr)

    def execute(self, queue, src, dst, wait_for, values=None):
        from .gpu.build import get_runtime_kernel
        from .gpu.runtime_plan import runtime_values, wide

        concrete = _concrete(self.problem, src, dst)
        if concrete.is_empty or concrete.is_buffer_copy:
            chosen = choose(concrete, self.engine, (NothingToDo, BufferCopy))
            return chosen.execute(queue, src, dst, wait_for)
        shape, items, wide_index = runtime_values(self.plan, src.md, dst.md)
        kernel = self.kernel
        if wide_index:  # a second kernel, built once, for offsets past 2^31
            kernel = get_runtime_kernel(self.engine, wide(self.plan))
        np_type = np.uint64 if wide_index else np.uint32
        args = self.args
        if values:
            args, wait_for = _execute_args(self.engine, queue, args, self.plan.args, values,
                                           wait_for)
        args = args + [np_type(v) for v in shape]
        return kernel.launch(queue, src.storage, dst.storage, args, items, wait_for)

    def describe(self):
        return f"{self.impl}:{self.plan.name}"


class RuntimeNoBuild(Implementation):
    """Runtime-dims patterns the kernels decline: each execution's shape
    runs on what builds nothing (the host path, a buffer copy)."""

    name = "per-shape"

    @classmethod
    def decline(cls, problem, engine):
        return None

    def __init__(self, problem, engine):
        super().__init__(problem, engine)
        if engine.is_device:
            # The host path writes bytes it shares with other elements (gaps,
            # 4-bit neighbours) through a small kernel: built now, not per shape.
            from .gpu.build import masked_write_kernel
            masked_write_kernel(engine)

    @property
    def impl(self) -> str:
        why = dict(self.declined).get(RuntimeKernel.label(self.engine))
        host = "host:numpy"
        return f"{host} ({why})" if why else host

    def execute(self, queue, src, dst, wait_for, values=None):
        chosen = choose(_concrete(self.problem, src, dst), self.engine, _NO_BUILD)
        return chosen.execute(queue, src, dst, wait_for, values)


#: The list for runtime-dims patterns.
RUNTIME_IMPLEMENTATIONS = (RuntimeKernel, RuntimeNoBuild)


def choose(problem: Problem, engine, implementations=None):
    """The first implementation that accepts ``problem`` on ``engine``; its
    ``declined`` lists the (name, reason) of each one before it. The list is
    IMPLEMENTATIONS, or RUNTIME_IMPLEMENTATIONS for runtime-dims patterns.

    Raises UnimplementedError when none accepts.
    """
    if implementations is None:
        implementations = RUNTIME_IMPLEMENTATIONS if problem.is_runtime else IMPLEMENTATIONS
    declined = []
    for cls in implementations:
        chosen = cls.create(problem, engine)
        if not isinstance(chosen, str):
            chosen.declined = declined
            return chosen
        declined.append((cls.label(engine), chosen))
    reasons = "; ".join(f"{name}: {why}" for name, why in declined)
    raise UnimplementedError(f"no implementation runs {problem.name}: {reasons}")
