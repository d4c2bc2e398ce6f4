"""Every kernel the sweep's problems generate, built for every strategy
(tests/test_sweep.py): a template path that does not compile shows, though
the pass runs one strategy and the host path would have answered.

For each problem that a generated kernel serves on the device (the same
decision as clayout's implementation list: not zero elements, not a buffer
copy, a kernel for its types and dims), plans are made and rendered, without
running, for CPU_PROFILE and GPU_PROFILE (clayout.gpu.profile's stand-ins
for a CPU and a GPU) and for the device's profile with the strategy the pass
does not run. Equal plans are built once per session, and the plan the
device run itself used is not built again. The sources of a chunk build as
one program on the device; when that fails, each builds alone, so that the
failure names its kernel and carries the compiler's log.
"""
import traceback

from clayout.gpu.plan import plan_kernel
from clayout.gpu.plan_cache import plan_cache
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE, STRATEGIES
from clayout.gpu.render import render_kernel
from clayout.implementations import BufferCopy, GeneratedKernel, NothingToDo
from clayout.problem import Problem

#: The most compiler log a failure quotes.
LOG_CHARS = 4000


def problem_of(case, mds):
    """The Problem clayout's primitive makes of the case (a backward
    shuffle as its forward twin, a group of 1 or C as a copy)."""
    src, _, dst, _, attr = mds
    if case.kind == "reorder":
        return Problem("reorder", src, dst, attr, None)
    axis, group, backward = case.shuffle
    channels = case.dims[axis]
    g = channels // group if backward and channels else group
    return Problem("shuffle", src, src if dst is None else dst, None,
                   None if g in (1, channels) else (axis, g))


def generated(problem, engine):
    """True when the implementation list gives the problem a generated kernel."""
    return (NothingToDo.decline(problem, engine) is not None
            and BufferCopy.decline(problem, engine) is not None
            and GeneratedKernel.decline(problem, engine) is None)


class KernelBuilds:
    """The kernels of the other profiles, each plan built once per session."""

    def __init__(self, engine, counts):
        self.engine = engine
        own = engine.profile.strategy
        self.profiles = [("CPU_PROFILE", CPU_PROFILE), ("GPU_PROFILE", GPU_PROFILE)] + [
            (f"the device's profile with the {s} strategy", engine.profile.with_strategy(s))
            for s in STRATEGIES if s != own]
        self.built = set()  # the plans built (frozen and hashable)
        self.counts = counts  # a Counter: "built" kernels, "build_programs"

    def _sources(self, case, mds):
        """[(profile, kernel name, source)] of the problem's kernels not built yet."""
        problem = problem_of(case, mds)
        if not generated(problem, self.engine):
            return []
        # What the device run built (the plan cache gives the run's own plan).
        self.built.add(plan_cache.get(problem, self.engine.profile.for_problem(problem)))
        out = []
        for strategy, profile in self.profiles:
            plan = plan_kernel(problem, profile.for_problem(problem))
            if plan not in self.built:
                self.built.add(plan)
                name = f"{plan.name}_k{len(self.built)}"  # unique in a program
                out.append((strategy, name, render_kernel(plan, name)))
        return out

    def _build(self, items):
        self.counts["build_programs"] += 1
        self.engine.backend.build("\n".join(source for _, _, source, _ in items),
                                  [name for _, name, _, _ in items])

    def check(self, problems):
        """Build the kernels of [(case, mds)]; yields (case, where, message)
        for each that does not plan, render or build."""
        items = []
        for case, mds in problems:
            try:
                items += [(s, name, source, case) for s, name, source in self._sources(case, mds)]
            except Exception:
                yield case, "planning and rendering a kernel without running it", \
                    traceback.format_exc(limit=-6)
        if not items:
            return
        self.counts["built"] += len(items)
        try:
            self._build(items)
            return
        except Exception:
            pass  # one at a time, to name each failing kernel
        for item in items:
            try:
                self._build([item])
            except Exception as error:
                strategy, name, _, case = item
                yield case, f"building the kernel {name} of {strategy}", \
                    f"{type(error).__name__}: {str(error)[:LOG_CHARS]}"
