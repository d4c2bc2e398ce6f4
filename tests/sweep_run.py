"""Running the sweep's problems (tests/test_sweep.py) on an engine and
checking each destination with tests/sweep_check.py.

A chunk of problems runs this way: every problem's bytes and expected values
are made first; the device engine's primitives are created inside one
`batch_builds()` block (their kernels build as one program), then each runs
once into its prefilled destination and is checked; then the same on the
host engine; then tests/sweep_builds.py builds the problems' kernels for
the other profiles. Each failure is kept with the problem's seed, index and
the Python that makes it, and the chunk goes on.

A creation that raises clayout's InvalidArgumentError or UnimplementedError
is a refusal: counted, and a failure only when the problem is not one clayout
must refuse (Case.refusal). Any other exception, at creation or execution,
is a failure: a raw pyopencl error there is a bug. So is the host path
running on the device where a generated kernel applies (clayout declines a
kernel its compiler refuses, and the host's right answer would hide that).
"""
import collections
import os
import time
import traceback

import numpy as np

import clayout as cly
from clayout.gpu.build import batch_builds
from conftest import DEVICE_IMPL, TEST_PLATFORM
from sweep_builds import generated, problem_of
from sweep_check import Expectation

REFUSED = (cly.InvalidArgumentError, cly.UnimplementedError)
#: The pass's device engine, as Python (for the reproductions a failure prints).
ENGINE = "cly.Engine('sycl', device='opencl:cpu')" if TEST_PLATFORM == "sycl" else \
    "cly.Engine('opencl')"


def descriptors(case):
    """(src_md, its parent or None, dst_md (None: a shuffle's default), its
    parent or None, attr): a window's buffer is its parent's."""
    def make(layout, dt):
        if layout is None:
            return None, None
        whole = cly.MemoryDesc(layout.parent or case.dims, dt, tag=layout.tag,
                               strides=layout.strides)
        if layout.parent is None:
            return whole, None
        return whole.submemory(case.dims, layout.offsets), whole

    src, src_parent = make(case.src, case.sdt)
    dst, dst_parent = make(case.dst, case.ddt)
    kw = {}
    for name, cls in (("src_scales", cly.Scales), ("dst_scales", cly.Scales),
                      ("src_zero_points", cly.ZeroPoints), ("dst_zero_points", cly.ZeroPoints)):
        v = getattr(case, name)
        if v is not None:
            extra = {"data_type": v.data_type} if v.data_type else {}
            if v.groups:
                extra["groups"] = v.groups
            values = None if case.at_execute else list(v.values)
            kw[name] = cls(values, mask=v.mask, **extra)
    if case.sum_beta is not None:
        kw["sum_beta"] = case.sum_beta
    return src, src_parent, dst, dst_parent, (cly.Attr(**kw) if kw else None)


def create(case, engine, mds):
    src, _, dst, _, attr = mds
    if case.kind == "shuffle":
        axis, group, backward = case.shuffle
        return cly.Shuffle(src, axis=axis, group_size=group, backward=backward, engine=engine,
                           dst_md=dst)
    return cly.Reorder(src, dst, engine=engine, attr=attr)


def rerun_hint(case):
    strategy = os.environ.get("CLAYOUT_STRATEGY", "")
    env = f"CLAYOUT_TEST_PLATFORM={TEST_PLATFORM} " if TEST_PLATFORM else ""
    env += f"CLAYOUT_STRATEGY={strategy} " if strategy else ""
    return (f"{env}CLAYOUT_SWEEP_SEED={case.seed} CLAYOUT_SWEEP_ONLY={case.index} "
            f".venv/bin/python -m pytest -q -p no:cacheprovider tests/test_sweep.py")


class Prepared:
    """One case with its descriptors and bytes (made once for both engines)."""

    def __init__(self, case):
        self.case = case
        rng = np.random.default_rng((case.seed, case.index, 1))
        self.mds = src, src_parent, dst, dst_parent, _ = descriptors(case)
        # A shuffle's dst_md=None is the source's descriptor (never a window here).
        dst_buffer = dst_parent or dst or src
        self.expect = Expectation(case, (src_parent or src).size, dst_buffer.size, rng)


class Sweep:
    """Counts and failures of the problems run so far (one per session)."""

    def __init__(self):
        self.counts = collections.Counter()
        self.impls = collections.Counter()
        self.shapes = collections.Counter()  # the kernel shapes run (gpu/shapes.py)
        self.failures = []
        self.seconds = 0.0

    def fail(self, case, where, message):
        self.counts["failed"] += 1
        self.failures.append(f"{case.short()}\n  {where}: {message.strip()}\n"
                             f"  rerun: {rerun_hint(case)}\n"
                             + "\n".join("    " + line for line in case.code(ENGINE).splitlines()))

    def summary(self):
        c = self.counts
        each = self.seconds / max(c["problems"], 1)
        text = (f"{c['problems']} problems in {self.seconds:.0f} s ({each:.3f} s each): "
                f"{c['checked']} runs checked, {c['refused']} creations refused "
                f"(as they must be), {c['failed']} failures; kernels of other profiles "
                f"built without running: {c['built']} ({c['build_programs']} programs)")
        if self.impls:
            text += "; device implementations: " + ", ".join(
                f"{k} {v}" for k, v in self.impls.most_common())
        if self.shapes:
            text += "; kernel shapes: " + ", ".join(
                f"{k} {v}" for k, v in self.shapes.most_common())
        return text

    # -- running -------------------------------------------------------------

    def prepare(self, case):
        self.counts["problems"] += 1
        try:
            return Prepared(case)
        except REFUSED as error:  # descriptors and attributes refuse a problem too
            self._refused(case, "descriptors", error)
        except Exception:
            self.fail(case, "making the descriptors and bytes", traceback.format_exc(limit=6))
        return None

    def _refused(self, case, where, error):
        if case.refusal is None:
            self.fail(case, where, f"refused a valid problem: {type(error).__name__}: {error}")
        else:
            self.counts["refused"] += 1

    def create(self, problem, engine):
        case = problem.case
        try:
            prim = create(case, engine, problem.mds)
        except REFUSED as error:
            self._refused(case, f"creation on {engine!r}", error)
            return None
        except Exception as error:
            self.fail(case, f"creation on {engine!r} raised a raw error",
                      f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-4)}")
            return None
        if case.refusal is not None:
            self.fail(case, f"creation on {engine!r}",
                      f"accepted a problem it must refuse ({case.refusal})")
            return None
        return prim

    def execute(self, problem, engine, prim):
        case, expect = problem.case, problem.expect
        _, src_parent, _, dst_parent, _ = problem.mds
        try:
            src_buf = cly.Memory(src_parent or prim.src_md, engine, raw=expect.src_raw)
            dst_buf = cly.Memory(dst_parent or prim.dst_md, engine, raw=expect.dst_raw)
            src = src_buf if src_parent is None else \
                cly.Memory(prim.src_md, engine, buffer=src_buf)
            dst = dst_buf if dst_parent is None else \
                cly.Memory(prim.dst_md, engine, buffer=dst_buf)
            stream = cly.Stream(engine)
            prim.execute(stream, src, dst, **case.execute_values())
            stream.wait()
            got = dst_buf.raw()
        except Exception as error:
            self.fail(case, f"execution on {engine!r} ({prim.impl})",
                      f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-4)}")
            return
        try:
            expect.check(got)
        except AssertionError as error:
            self.fail(case, f"wrong result on {engine!r} ({prim.impl})", str(error))
            return
        self.counts["checked"] += 1

    def _check_impl(self, problem, engine, prim):
        """A problem a generated kernel serves must run one: clayout declines
        a kernel its compiler refuses (KernelBuildError) and runs the host
        path instead, which would hide the failure."""
        try:
            wanted = generated(problem_of(problem.case, problem.mds), engine)
        except Exception:  # the builds' check names it
            return
        if wanted and not prim.impl.startswith(DEVICE_IMPL + "generated"):
            self.fail(problem.case, f"creation on {engine!r}",
                      f"a generated kernel applies, but {prim.impl} runs")

    def run_chunk(self, cases, device, host, builds=None):
        start = time.perf_counter()
        try:
            self._run_chunk(cases, device, host, builds)
        finally:
            self.seconds += time.perf_counter() - start

    def _run_chunk(self, cases, device, host, builds):
        problems = [p for p in map(self.prepare, cases) if p is not None]
        with batch_builds():
            prims = [self.create(p, device) for p in problems]
        for problem, prim in zip(problems, prims):
            if prim is not None:
                self.impls[prim.impl.split(" ")[0]] += 1
                plan = getattr(getattr(prim, "_implementation", None), "plan", None)
                if getattr(plan, "shape", ""):
                    self.shapes[plan.shape] += 1
                self._check_impl(problem, device, prim)
                self.execute(problem, device, prim)
        for problem in problems:
            prim = self.create(problem, host)
            if prim is not None:
                self.execute(problem, host, prim)
        if builds is not None:
            for case, where, message in builds.check([(p.case, p.mds) for p in problems]):
                self.fail(case, where, message)
