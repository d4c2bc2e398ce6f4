"""Tiers: a new shape runs at once on a kernel already built, while its own
kernel builds in the background, as JIT compilers do.

A generated kernel is specialised to one shape: a second shape of the same
layout and type pair would wait 0.1-0.6 s for its own build. The runtime-dims
kernel of the pair (gpu/runtime_plan.py) serves every shape, a little
slower. So when a primitive's own kernel is neither built nor in the
persistent cache but the pair's runtime-dims kernel is built, the primitive
runs on it (the first tier) and its own kernel builds on a background thread,
taking over for the executions after it is ready (the second tier). The
first primitive of a pair, which builds its own kernel, queues the pair's
runtime-dims kernel for the shapes after it. Both tiers write the same bytes.

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
    descriptors dense in a tag, every dim runtime, the same attributes; None
    when ``problem`` is not of that kind (a window, strides no tag names,
    compensation)."""
    patterns = []
    for md in (problem.src_md, problem.dst_md):
        tag = md.tag if md.format_kind == "blocked" and md.extra is None else None
        if tag is None or md.is_runtime:
            return None
        pattern = MemoryDesc((RUNTIME_DIM,) * md.ndims, md.data_type, tag=tag)
        try:
            pattern.check_instance(md)
        except Error:
            return None
        patterns.append(pattern)
    return Problem(problem.kind, patterns[0], patterns[1], problem.attr, problem.shuffle)


class _Worker:
    """One background thread that runs builds in the order they come. At
    exit, builds not started are dropped and the exit waits for the one
    running (a build cannot be interrupted; clayout's exit guard)."""

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self._once: dict = {}  # key -> Future of submit_once

    def submit_once(self, key, build) -> Future:
        """``submit(build)``, unless a build under ``key`` was submitted
        already: then that one's Future."""
        with self._lock:
            future = self._once.get(key)
        if future is None:
            future = self.submit(build)
            with self._lock:
                future = self._once.setdefault(key, future)
            # Forgotten once done (the key may hold a context: not kept alive).
            future.add_done_callback(lambda f: self._forget(key, f))
        return future

    def _forget(self, key, future):
        with self._lock:
            if self._once.get(key) is future:
                del self._once[key]

    def running(self, key) -> Future | None:
        """The Future of the build submitted under ``key`` while it runs, else None."""
        with self._lock:
            future = self._once.get(key)
        return future if future is not None and future.running() else None

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


def stand_in(problem: Problem, engine, runtime_kernel):
    """A RuntimeKernel implementation that runs ``problem`` on the
    runtime-dims kernel of its pair if that kernel is built (in this process,
    or on the background thread now, or in the persistent cache), else None.
    ``runtime_kernel``: implementations.RuntimeKernel (that module imports this one)."""
    from .gpu.build import built_kernel
    from .gpu.runtime_plan import runtime_values

    found = runtime_plan(problem, engine, runtime_kernel)
    if found is None:
        return None
    pattern, plan = found
    if built_kernel(engine, plan) is None and not engine.backend.has_program(
            ("runtime", plan, plan.name)):  # else loaded below, in milliseconds
        building = WORKER.running(_runtime_key(engine, plan))
        if building is None:
            return None
        try:  # started before any build this shape could start: done sooner
            building.result()
        except Exception:  # noqa: BLE001 - it does not build: this shape builds its own
            return None
    if runtime_values(plan, problem.src_md, problem.dst_md)[2]:
        return None  # 64-bit offsets: another runtime-dims kernel, not built
    try:
        return runtime_kernel(pattern, engine)  # finds its kernel built, or loads it
    except KernelBuildError:
        return None


def prepare_runtime(problem: Problem, engine, runtime_kernel) -> None:
    """Queue the runtime-dims kernel of ``problem``'s pair on the background
    thread, unless built: the next new shape of the pair runs on it at once."""
    from .gpu.build import built_kernel, get_runtime_kernel

    found = runtime_plan(problem, engine, runtime_kernel)
    if found is not None and built_kernel(engine, found[1]) is None:
        plan = found[1]
        WORKER.submit_once(_runtime_key(engine, plan),
                                 lambda: get_runtime_kernel(engine, plan))


def _runtime_key(engine, plan):
    return (engine.backend.kernel_scope, engine.backend.device_key, plan)


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
