"""Build generated kernels once per (context, kernel key) and launch them,
through the engine's backend (clayout/backends): the same kernels for
OpenCL and SYCL engines."""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import threading

import numpy as np
import pyopencl as cl

from .. import verbose
from ..errors import KernelBuildError
from .cache import kernel_cache
from .plan_types import KernelPlan
from .runtime_plan import RuntimePlan


# Rendering imports Mako (and Mako its error pages' highlighter): 40 ms that
# a process whose kernels all come from the persistent cache never pays.
def _render_kernel(plan, name):
    from .render import render_kernel
    return render_kernel(plan, name)


def _render_runtime_kernel(plan, name):
    from .render_runtime import render_runtime_kernel
    return render_runtime_kernel(plan, name)


def render_template(template: str, **values) -> str:
    """gpu/render.render_template, imported when first needed."""
    from .render import render_template as render
    return render(template, **values)

#: The most work-items one launch enqueues: a global size past 2^32 does not
#: fit a 32-bit size_t, and the kernels count items in 32 bits.
MAX_LAUNCH_ITEMS = 2**32 - 2**16


def build_options(device) -> list[str]:
    """Exact division where the device can do it: the formula divides by dst scales."""
    options = []
    if device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        options.append("-cl-fp32-correctly-rounded-divide-sqrt")
    return options


def _dump(source: str) -> None:
    """With ``CLAYOUT_DUMP_KERNELS=DIR``, write a program's source to
    ``DIR/<sha1 of source>.cl`` (for scripts/ptx_check.py). Written under a
    temporary name and renamed, so threads and processes sharing DIR never
    see half a file; a folder that cannot be written is logged, never fatal."""
    folder = os.environ.get("CLAYOUT_DUMP_KERNELS")
    if not folder:
        return
    path = os.path.join(folder, hashlib.sha1(source.encode()).hexdigest() + ".cl")
    part = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(part, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(part, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(part)
        verbose.LOGGER.warning("CLAYOUT_DUMP_KERNELS: cannot write %s: %s", path, exc)


def compile_program(context, source: str, options: list[str]) -> tuple:
    """(built pyopencl Program, the compiler's log) for ``source``.

    The log is returned, not warned about: pyopencl's ``Program.build``
    turns any compiler output into a CompilerWarning on stderr, and some
    compilers (Intel's) always say something. A failed build raises
    pyopencl's RuntimeError with the log in its message, as pyopencl does.
    """
    raw = cl._cl._Program(context, source)
    try:
        raw._build(options=" ".join(options).encode(), devices=None)
    except cl.Error as error:
        log = _logs(raw)
        raise cl.RuntimeError(cl._cl._ErrorRecord(
            msg=f"{error}\n\n{log}", code=error.code, routine=error.routine)) from None
    return cl.Program(raw), _logs(raw)


def _logs(raw) -> str:
    return "\n".join(f"{device.name}: {log.strip()}" for device, log in raw._get_build_logs()
                     if log and log.strip())


def _build(engine, source, names: list[str], key=None, options=()) -> list:
    """Build one program on ``engine``; its kernels named ``names``.
    ``source`` is its source, or a function that renders it when needed:
    the backend first looks for the program under ``key`` (what the source
    is made from) in the persistent cache (clayout/disk_cache.py).
    ``options``: build options past the device's own (build_options).

    Raises KernelBuildError when the compiler refuses it: the compiler's
    messages go to the ``clayout`` logger as a warning (a generated kernel
    that does not build is a bug to report), and the implementation list
    declines the kernel (implementations.Implementation.create)."""
    source = _rendered_once(source_function(source))
    if os.environ.get("CLAYOUT_DUMP_KERNELS"):
        _dump(source())
    label = names[0] if len(names) == 1 else f"{len(names)} kernels"
    try:
        kernels = engine.backend.build(source, names, key, options)
    except engine.backend.build_errors as error:
        failure = KernelBuildError(label, str(error))
        verbose.LOGGER.warning(
            "%s on %s; the next implementation runs the problem (a clayout bug: please "
            "report it with CLAYOUT_VERBOSE=2's source and log)\n%s", failure,
            engine.describe(), failure.log)
        raise failure from None
    if verbose.enabled(2):
        verbose.log("source", engine.kind, "", label, min_level=2, text=source())
    return kernels


def source_function(source):
    """``source`` (a str, or a function that renders it) as a function."""
    return (lambda: source) if isinstance(source, str) else source


def _rendered_once(render):
    """``render`` as a function that renders at most once."""
    done = []

    def source() -> str:
        if not done:
            done.append(render())
        return done[0]
    return source


class _LockedKernel:
    """A kernel whose launches are safe from any thread: OpenCL kernel
    arguments are state of the kernel object until the enqueue captures
    them, so setting them and enqueuing happen under one lock.

    ``render()`` makes its source (``source`` renders it when asked); ``key``
    is what that source is made from, hashable and printed the same in every
    process (a frozen plan): the persistent cache finds the built program by
    it without rendering anything.

    Built at once, unless a ``batch_builds()`` block is open in this thread:
    then it is built with the block's other kernels when the block ends (or
    when first launched, if that comes first).
    """

    def __init__(self, engine, render, name: str, key, options=()):
        self.name, self.key, self.options = name, key, tuple(options)
        self._render = _rendered_once(render)
        # The backend's class: its launch needs no engine (a kernel must not
        # keep its context alive through the cache).
        self._runtime = type(engine.backend)
        self._kernel = None
        self._engine = None  # held only until built: the cache must not keep a context alive
        self._lock = threading.Lock()
        batch = getattr(_batch, "pending", None)
        if batch is None:
            self._kernel = _build(engine, self._render, [name], key, self.options)[0]
        else:
            self._engine = engine
            batch.append(self)

    @property
    def source(self) -> str:
        """The kernel's OpenCL C source (rendered on first use)."""
        return self._render()

    @property
    def kernel(self):
        with self._lock:
            if self._kernel is None:
                self._kernel = _build(self._engine, self._render, [self.name], self.key,
                                      self.options)[0]
                self._engine = None
            return self._kernel

    def _enqueue(self, queue, global_size, local_size, args, wait_for=None, offset=None):
        kernel = self._kernel or self.kernel  # the lock only while it may still need building
        if not self._runtime.args_are_state:
            return self._runtime.enqueue(queue, kernel, global_size, local_size, args,
                                         wait_for, offset)
        with self._lock:
            return self._runtime.enqueue(queue, kernel, global_size, local_size, args,
                                         wait_for, offset)


_batch = threading.local()


@contextlib.contextmanager
def batch_builds():
    """Within the block, kernels this thread creates are built together, in
    one OpenCL program per context, when the block ends: a program's fixed
    cost (about 0.1 s warm, 0.5 s cold on PoCL) is then paid once for all of
    them. A build error is raised by the first launch of the failing kernel."""
    if getattr(_batch, "pending", None) is not None:  # nested: the outer block builds
        yield
        return
    _batch.pending = pending = []
    try:
        yield
    finally:
        _batch.pending = None
        _build_together(pending)


def _build_together(kernels):
    by_context = {}
    for k in kernels:
        engine = k._engine
        if engine is not None:  # else already built by a launch
            group = (engine.backend.kernel_scope, k.options)  # one program, one set of options
            by_context.setdefault(group, (engine, []))[1].append(k)
    for engine, group in by_context.values():
        todo = [k for k in group if k._kernel is None]
        if not todo:
            continue
        try:
            built = _build(engine, lambda todo=todo: "\n".join(k.source for k in todo),
                           [k.name for k in todo], tuple(k.key for k in todo), todo[0].options)
        except KernelBuildError:
            continue  # each kernel is built alone on first launch, to name its error
        for k, kernel in zip(todo, built):
            with k._lock:
                if k._kernel is None:
                    k._kernel, k._engine = kernel, None


def _named(render, plan) -> tuple:
    """(render(), kernel name) of ``plan``, where ``render(plan, name)`` renders it."""
    if getattr(_batch, "pending", None) is None:
        return (lambda: render(plan, None)), plan.name
    # A batch's program holds several kernels: each needs its own name,
    # the same in every run, so PoCL's disk cache still finds the program.
    name = f"{plan.name}_{hashlib.sha1(repr(plan).encode()).hexdigest()[:10]}"
    return (lambda: render(plan, name)), name


class Kernel(_LockedKernel):
    """A generated reorder/shuffle kernel and the NDRange its plan needs."""

    def __init__(self, engine, plan: KernelPlan):
        self.plan = plan
        render, name = _named(_render_kernel, plan)
        self._device = engine.device
        self._ndrange = self._launches = None
        super().__init__(engine, render, name, ("kernel", plan, name))

    def ndrange(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(global, local) sizes: work-groups of the plan's size, or fewer
        where the built kernel allows fewer (CL_KERNEL_WORK_GROUP_SIZE: a
        register-heavy kernel can), laid out by ``KernelPlan.ndrange``."""
        if self._ndrange is None:
            allowed = self._runtime.work_group_limit(self.kernel, self._device)
            self._ndrange = self.plan.ndrange(max(1, min(self.plan.work_group, allowed)))
        return self._ndrange

    def _parts(self) -> list[tuple[tuple[int, ...], tuple[int, ...] | None]]:
        """(global size, global offset) of each launch: one, unless the
        NDRange holds more than MAX_LAUNCH_ITEMS work-items. Worked out once
        per limit (tests lower it)."""
        if self._launches is None or self._launches[0] != MAX_LAUNCH_ITEMS:
            global_size, local_size = self.ndrange()
            dim = len(global_size) - 1  # the dim that counts items, boxes or layers of boxes
            group = local_size[dim]
            step = max(group, MAX_LAUNCH_ITEMS // math.prod(global_size[:dim]) // group * group)
            total = global_size[dim]
            if total <= step:
                parts = [(global_size, None)]
            else:
                parts = [(global_size[:dim] + (min(step, total - first),), (0,) * dim + (first,))
                         for first in range(0, total, step)]
            self._launches = (MAX_LAUNCH_ITEMS, parts)
        return self._launches[1]

    def launch(self, queue, src, dst, args, wait_for=None):
        """Enqueue the kernel on buffers src and dst with the values of
        ``plan.args`` in order; returns its Event. A launch of more than
        MAX_LAUNCH_ITEMS work-items goes as several, each with its global
        offset (the kernels read their position from get_global_id); a
        plan in nibble "passes" launches twice, the second after the first."""
        local_size = self.ndrange()[1]
        if self.plan.nibbles == "passes":
            # Even nibbles, then odd ones: no two work-items of one launch
            # store the same byte, and the second launch sees the first's.
            first = self._launch(queue, local_size, (src, dst, *args, np.uint32(0)), wait_for)
            return self._launch(queue, local_size, (src, dst, *args, np.uint32(1)), [first])
        return self._launch(queue, local_size, (src, dst, *args), wait_for)

    def _launch(self, queue, local_size, args, wait_for):
        events = [self._enqueue(queue, size, local_size, args, wait_for, offset)
                  for size, offset in self._parts()]
        return events[0] if len(events) == 1 else self._runtime.marker_on(queue, events)


class RuntimeKernel(_LockedKernel):
    """A runtime-dims kernel (gpu/runtime_plan.py): one build for every
    shape; each launch passes the shape and sizes its NDRange to it."""

    def __init__(self, engine, plan: RuntimePlan):
        self.plan = plan
        render, name = _named(_render_runtime_kernel, plan)
        self._device = engine.device
        self._local = None
        super().__init__(engine, render, name, ("runtime", plan, name),
                         () if plan.optimized else ("-cl-opt-disable",))

    def launch(self, queue, src, dst, args, items: int, wait_for=None):
        """Enqueue the kernel on buffers src and dst with ``args`` (the
        attribute values, then the runtime values) for ``items`` work-items
        (in parts past MAX_LAUNCH_ITEMS); returns its Event."""
        if self._local is None:
            allowed = self._runtime.work_group_limit(self.kernel, self._device)
            self._local = max(1, min(self.plan.work_group, allowed))
        local = self._local
        total = -(-items // local) * local
        step = MAX_LAUNCH_ITEMS // local * local
        events = [self._enqueue(queue, (min(step, total - first),), (local,), (src, dst, *args),
                                wait_for, None if first == 0 else (first,))
                  for first in range(0, total, step)]
        return events[0] if len(events) == 1 else self._runtime.marker_on(queue, events)


def get_runtime_kernel(engine, plan: RuntimePlan) -> RuntimeKernel:
    """The runtime-dims kernel for ``plan`` on ``engine``, built on first use
    only; raises KernelBuildError as get_kernel does."""
    return _built(kernel_cache.get(engine.backend.kernel_scope, _kernel_key(engine, plan),
                                   lambda: _or_failure(lambda: RuntimeKernel(engine, plan))))


def batching() -> bool:
    """Whether a batch_builds() block is open in this thread."""
    return getattr(_batch, "pending", None) is not None


def built_kernel(engine, plan):
    """The kernel of ``plan`` (a KernelPlan or RuntimePlan) if this process
    has built it on ``engine`` already, else None: never builds."""
    kernel = kernel_cache.peek(engine.backend.kernel_scope, _kernel_key(engine, plan))
    return None if isinstance(kernel, KernelBuildError) else kernel


def kernel_ready(engine, plan: KernelPlan) -> bool:
    """Whether ``plan``'s kernel comes without compiling: built in this
    process, or its program in the persistent cache."""
    return built_kernel(engine, plan) is not None or \
        engine.backend.has_program(("kernel", plan, plan.name))


def _kernel_key(engine, key):
    # Per device too: a kernel's NDRange and build options are the device's.
    return (engine.backend.device_key, key)


def get_kernel(engine, plan: KernelPlan) -> Kernel:
    """The kernel for ``plan`` on ``engine``'s context and device, built on
    first use only (the plan, strategy included, is the key). Raises
    KernelBuildError when the compiler refuses it, each time it is asked
    for, without building it again."""
    return _built(kernel_cache.get(engine.backend.kernel_scope, _kernel_key(engine, plan),
                                   lambda: _or_failure(lambda: Kernel(engine, plan))))


def _or_failure(build):
    """What ``build()`` makes, or the KernelBuildError it raised: the cache
    keeps a failure too, so a kernel that does not build is not rebuilt
    at every creation (a second or more each)."""
    try:
        return build()
    except KernelBuildError as error:
        return error


def _built(kernel):
    """A kernel from the cache, or the KernelBuildError kept there raised again."""
    if isinstance(kernel, KernelBuildError):
        raise KernelBuildError(kernel.kernel, kernel.log)
    return kernel


class _MaskedWrite(_LockedKernel):
    """The masked byte copy of templates/masked_write.cl.mako."""

    def __init__(self, engine):
        super().__init__(engine, lambda: render_template("masked_write.cl.mako"),
                         "masked_write", ("template", "masked_write.cl.mako"))
        self.local = min(256, engine.profile.max_work_group_size)

    def launch(self, queue, dst, first: int, image, mask, count: int, image_first: int = 0,
               wait_for=None):
        size = -(-count // self.local) * self.local
        args = (dst, image, mask, np.uint64(first), np.uint64(image_first), np.uint64(count))
        return self._enqueue(queue, (size,), (self.local,), args, wait_for)


def masked_write_kernel(engine) -> _MaskedWrite:
    """The masked byte copy for ``engine``, built on first use only."""
    return kernel_cache.get(engine.backend.kernel_scope, _kernel_key(engine, ("masked_write",)),
                            lambda: _MaskedWrite(engine))


class _ZeroFill(_LockedKernel):
    """Zeroes bytes (templates/zero_fill.cl.mako): a new memory's fill where
    the runtime has no fill command of its own (dpctl's memset blocks)."""

    def __init__(self, engine):
        super().__init__(engine, lambda: render_template("zero_fill.cl.mako"), "zero_fill",
                         ("template", "zero_fill.cl.mako"))
        self.local = min(256, engine.profile.max_work_group_size)

    def launch(self, queue, buffer, count: int, wait_for=None):
        items = -(-count // 16)  # 16 bytes a work-item
        size = -(-items // self.local) * self.local
        return self._enqueue(queue, (size,), (self.local,), (buffer, np.uint64(count)),
                             wait_for)


def zero_fill_kernel(engine) -> _ZeroFill:
    """The zero fill for ``engine``, built on first use only."""
    return kernel_cache.get(engine.backend.kernel_scope, _kernel_key(engine, ("zero_fill",)),
                            lambda: _ZeroFill(engine))


def write_masked(engine, queue, buffer, first: int, image: np.ndarray, mask=None):
    """Enqueue writing ``image`` into ``buffer`` from byte ``first``: every
    byte, or (with ``mask``) only the bits the mask sets; returns the Event."""
    if mask is None:
        return engine.backend.write_async(queue, buffer, first, image)
    kernel = masked_write_kernel(engine)
    image_buffer, mask_buffer = engine.backend.upload(image), engine.backend.upload(mask)
    return kernel.launch(queue, buffer, first, image_buffer, mask_buffer, image.size)


def copy_masked(engine, queue, dst, src, first: int, mask, wait_for=None):
    """Enqueue copying bytes from ``first`` of device buffer ``src`` into the
    same bytes of ``dst``, only the bits set in ``mask`` (a device buffer,
    one byte per byte copied: see the backend's ``upload``); returns its Event. For bytes
    a destination shares with another tensor (a 4-bit neighbour)."""
    count = mask.size
    return masked_write_kernel(engine).launch(queue, dst, first, src, mask, count,
                                              image_first=first, wait_for=wait_for)
