"""Tiers: a new shape runs at once on a kernel already built, while its own
kernel builds in the background, as JIT compilers do.

A generated kernel is specialised to one shape: each new shape of a layout
and type pair would wait 0.1-0.6 s for its own build. The runtime-dims
kernel of the pair (gpu/runtime_plan.py) serves every shape, a little
slower. So when a primitive's own kernel is neither built nor in the
persistent cache, the primitive runs on the pair's runtime-dims kernel (the
first tier: built by the pair's first shape, without the compiler's
optimizations where that builds several times quicker (DeviceCaps); or
loaded from the cache) and
its own kernel builds on a background thread, taking over for the
executions after it is ready (the second tier). Both tiers write the same
bytes.

``CLAYOUT_TIERS=off`` turns this off (benchmarks of one tier, debugging):
every primitive then builds its own kernel before it returns.
"""
from __future__ import annotations

import contextlib
import os
import queue
import threading
from concurrent.futures import Future

from .backends.exit_guard import EXIT
from .errors import Error, KernelBuildError, UnimplementedError
from .memory_desc import RUNTIME_DIM, MemoryDesc
from .problem import Problem


_local = threading.local()


def enabled() -> bool:
    """Whether CLAYOUT_TIERS allows tiers now (on unless off, 0 or false),
    and no ``own_kernels()`` block is open in this thread."""
    if getattr(_local, "off", False):
        return False
    return os.environ.get("CLAYOUT_TIERS", "").strip().lower() not in ("off", "0", "false")


@contextlib.contextmanager
def own_kernels():
    """Within the block, primitives this thread creates build their own
    kernels before they return (clayout.build's workers)."""
    before = getattr(_local, "off", False)
    _local.off = True
    try:
        yield
    finally:
        _local.off = before


def runtime_pattern(problem: Problem) -> Problem | None:
    """The runtime-dims problem whose kernel serves ``problem``'s shape: both
    descriptors dense in a tag, the same attributes, every dim runtime but
    those a runtime-dims primitive must know at creation (a shuffle's axis;
    the dims of per-slice values given at creation: their count is fixed);
    None when ``problem`` is not of that kind (a window, strides no tag
    names, compensation)."""
    fixed = _fixed_dims(problem)
    patterns = []
    for md in (problem.src_md, problem.dst_md):
        tag = md.tag if md.format_kind == "blocked" and md.extra is None else None
        if tag is None or md.is_runtime:
            return None
        dims = tuple(n if d in fixed else RUNTIME_DIM for d, n in enumerate(md.dims))
        if RUNTIME_DIM not in dims:
            return None  # nothing left to run at other shapes
        pattern = MemoryDesc(dims, md.data_type, tag=tag)
        try:
            pattern.check_instance(md)
        except Error:
            return None
        patterns.append(pattern)
    return Problem(problem.kind, patterns[0], patterns[1], problem.attr, problem.shuffle)


def _fixed_dims(problem: Problem) -> set:
    """The dims a runtime-dims pattern of ``problem`` must keep (the rules
    arguments.py checks a runtime-dims primitive's creation by)."""
    fixed = {problem.shuffle[0]} if problem.shuffle is not None else set()
    attr = problem.attr
    for name in ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points"):
        value = getattr(attr, name, None) if attr is not None else None
        if value is not None and not value.at_execute:
            fixed.update(value.masked_dims())
    return fixed


class _Worker:
    """One background thread that runs builds in the order they come. At
    exit, builds not started are dropped and the exit waits for the one
    running (a build cannot be interrupted; clayout's exit guard)."""

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def submit(self, build) -> Future:
        """A Future of ``build()``, run on the worker thread."""
        future: Future = Future()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="clayout-tiers",
                                                daemon=True)
                self._thread.start()
        self._queue.put((future, build))
        return future

    def _run(self):
        # Below the caller's threads (Linux schedules threads one by one):
        # a background build must not slow the results it stands aside for.
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                           min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10))
        except (AttributeError, OSError):
            pass  # not Linux, or not allowed: the same priority
        while True:
            future, build = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            if not EXIT.start_work():  # exiting: drop it
                future.set_exception(RuntimeError("not built: the interpreter is exiting"))
                continue
            try:
                future.set_result(build())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks the Future
                future.set_exception(exc)
            finally:
                EXIT.end_work()


WORKER = _Worker()


class OwnKernel:
    """A primitive's own kernel: ``built`` at creation, or built on the
    background thread while a stand-in runs."""

    def __init__(self, engine, plan, built=None):
        self._engine, self._plan = engine, plan
        self._kernel, self._future = built, None
        self._queued = built is not None  # build_after() was called
        self._lock = threading.Lock()

    def ready(self):
        """The kernel if built, else None: never waits."""
        future = self._future
        if self._kernel is None and future is not None and future.done() and \
                future.exception() is None:
            self._kernel = future.result()
        return self._kernel

    def result(self):
        """The kernel, waiting for its build (queued now if it was not)."""
        if self._kernel is None:
            self._kernel = self._build().result()
        return self._kernel

    def build_after(self, event) -> None:
        """Queue the build once ``event`` (the stand-in's first command) is
        done, so that the build never delays that first result: PoCL
        compiles a kernel for its first launch, and builds programs under
        one lock."""
        with self._lock:
            if self._queued:
                return
            self._queued = True
        if event is None:
            self._build()
        else:
            self._engine.backend.when_complete(event, self._build)

    def _build(self) -> Future:
        from .gpu.build import get_kernel

        with self._lock:
            if self._future is None:
                engine, plan = self._engine, self._plan
                self._future = WORKER.submit(lambda: get_kernel(engine, plan))
            return self._future


def stand_in(problem: Problem, engine, runtime_kernel):
    """A RuntimeKernel implementation that runs ``problem`` on the
    runtime-dims kernel of its pair: found built, loaded from the persistent
    cache, or built now (the pair's first shape: the shapes after it run at
    once). None when no runtime-dims kernel serves the problem, or it does
    not build. ``runtime_kernel``: implementations.RuntimeKernel (that
    module imports this one)."""
    from .gpu.runtime_plan import runtime_values

    found = runtime_plan(problem, engine, runtime_kernel)
    if found is None:
        return None
    pattern, plan = found
    if runtime_values(plan, problem.src_md, problem.dst_md)[2]:
        return None  # 64-bit offsets: a second runtime-dims kernel, no gain over its own
    try:
        return runtime_kernel(pattern, engine,
                              optimized=not engine.caps.quick_unoptimized_builds)
    except KernelBuildError:
        return None


def runtime_plan(problem: Problem, engine, runtime_kernel):
    """(runtime pattern, its RuntimePlan) for ``problem``, or None when no
    runtime-dims kernel serves it."""
    from .gpu.runtime_plan import plan_runtime_kernel

    pattern = runtime_pattern(problem)
    if pattern is None or runtime_kernel.decline(pattern, engine) is not None:
        return None
    try:
        return pattern, plan_runtime_kernel(pattern, engine.profile.for_problem(pattern))
    except UnimplementedError:
        return None
