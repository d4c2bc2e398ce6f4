"""Running problems: create, fill, execute, check or time, and count.

Each problem ends in one of benchdnn's statuses. Anything a problem raises
becomes its own FAILED (the batch goes on to its summary); a problem whose
buffers would not fit in memory is SKIPPED before anything is allocated.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import re
import sys
import time
from dataclasses import dataclass, field

from .. import Engine, Memory, MemoryDesc, Stream
from ..engine import opencl_devices
from ..errors import Error, InvalidArgumentError, UnimplementedError
from . import check
from .cases import Case, Declined, prepare
from .options import Problem, UsageError

STATUSES = ("passed", "skipped", "mistrusted", "unimplemented", "invalid_arguments",
            "failed", "listed", "initialized", "executed")
FAILURES = ("failed", "invalid_arguments")
BUILD_WINDOW = 32  # problems whose kernels are built as one program


@dataclass
class Outcome:
    status: str
    reason: str = ""
    details: list = field(default_factory=list)
    impl: str = ""
    perf: tuple | None = None  # (min ms, average ms, bytes moved)


def available_host_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gib(n):
    return f"{n / 2**30:.1f} GiB"


class Runner:
    """Runs Problems in order, prints a line for each and keeps the counts."""

    def __init__(self, out=sys.stdout, err=sys.stderr):
        self.out, self.err = out, err
        self.counts = dict.fromkeys(["tests"] + list(STATUSES), 0)
        self.times = dict.fromkeys(("create", "fill", "execute", "check"), 0.0)
        self.perf = []
        self._engines = {}
        self._template_shown = False
        self.engines_used = set()
        self.failing = 0

    # -- engines ------------------------------------------------------------------

    def engine(self, settings) -> Engine:
        key = (settings.engine, settings.engine_index)
        if key not in self._engines:
            if settings.engine == "host":
                self._engines[key] = Engine("host")
            elif settings.engine == "sycl":
                self._engines[key] = _sycl_engine(settings.engine_index)
            else:
                devices = opencl_devices()
                if settings.engine_index >= len(devices):
                    raise UsageError(f"--engine=opencl:{settings.engine_index}: there are "
                                     f"{len(devices)} OpenCL devices")
                self._engines[key] = Engine("opencl", device=devices[settings.engine_index])
        engine = self._engines[key]
        self.engines_used.add("host" if engine.caps is None
                              else f"{engine.kind} ({engine.caps.name})")
        return engine

    # -- the batch ------------------------------------------------------------------

    def run(self, problems: list[Problem]) -> None:
        selected = [p for p in problems if p.index >= p.settings.start
                    and (not p.settings.match or re.search(p.settings.match, p.text()))]
        for settings in {p.settings for p in selected if p.settings.mode != "L"}:
            try:
                self.engine(settings)  # a missing device stops the run before it starts
            except Error as error:
                raise UsageError(f"--engine={settings.engine}: {error}") from None
        progress = hasattr(self.err, "isatty") and self.err.isatty() and len(selected) > 20
        started = time.perf_counter()
        windows = [selected[i:i + BUILD_WINDOW] for i in range(0, len(selected), BUILD_WINDOW)]
        # A background thread creates the primitives of the next window of
        # problems (their kernels built as one program) while this thread
        # fills, executes and checks the current one.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="benchdnn-create") as pool:
            futures = [pool.submit(self._prepare_window, w) for w in windows[:2]]
            done = 0
            for n, window in enumerate(windows):
                prepared = futures[n].result()
                if n + 2 < len(windows):
                    futures.append(pool.submit(self._prepare_window, windows[n + 2]))
                for problem, result in zip(window, prepared):
                    if problem.settings.verbose >= 1:  # before running: a crash still names it
                        print(f"run: {problem.repro()}", file=self.out, flush=True)
                    for _ in range(problem.settings.repeats):
                        self.report(problem, self.problem(problem, result))
                    done += 1
                    if progress:
                        elapsed = time.perf_counter() - started
                        self.err.write(f"\r[{done}/{len(selected)}] {elapsed:.0f} s\x1b[K")
                        self.err.flush()
                futures[n] = None
        if progress:
            self.err.write("\r\x1b[K")

    def _prepare_window(self, problems):
        start = time.perf_counter()
        batch = contextlib.nullcontext()
        if any(p.settings.engine != "host" and p.settings.mode != "L" for p in problems):
            from ..gpu.build import batch_builds
            batch = batch_builds()
        with batch:
            results = [self._prepare(p) for p in problems]
        self.times["create"] += time.perf_counter() - start
        return results

    def _prepare(self, problem: Problem):
        """(Case or Declined, primitive or error): the part that runs ahead, in
        the background thread."""
        try:
            case = prepare(problem)
        except (Declined, Error) as error:
            return error, None
        if problem.settings.mode == "L":
            return case, None
        try:
            engine = self.engine(problem.settings)
            if problem.settings.mem_check:
                self._check_memory(case, engine)
            primitive = case.create(engine)
        except Exception as error:  # noqa: BLE001 - reported as the problem's outcome
            return case, error
        return case, primitive

    def _check_memory(self, case: Case, engine: Engine):
        """Raise Declined(SKIPPED) when the problem's buffers would not fit."""
        buffers = (check.buffer_bytes(case.src), check.buffer_bytes(case.dst))
        device, host = sum(buffers), check.host_bytes(case)
        caps = engine.caps
        if caps is None or caps.shares_host_memory:
            host += device
        elif device > 0.9 * caps.global_mem:
            raise Declined("SKIPPED", f"not enough device memory: needs {_gib(device)}, the "
                                      f"device has {_gib(caps.global_mem)}")
        if caps is not None and max(buffers) > caps.max_alloc:
            raise Declined("SKIPPED", f"not enough device memory: a buffer of "
                                      f"{_gib(max(buffers))} is more than the "
                                      f"{_gib(caps.max_alloc)} the device allocates at once")
        free = available_host_bytes()
        if case.problem.settings.verbose >= 6:
            print(f"memory: {_gib(host)} on the host, {_gib(device)} in device buffers, "
                  f"{_gib(free or 0)} available", file=self.out)
        if free is not None and host > 0.9 * free:
            raise Declined("SKIPPED", f"not enough memory: needs {_gib(host)} of host memory, "
                                      f"{_gib(free)} available")

    # -- one problem ----------------------------------------------------------------

    def problem(self, problem: Problem, prepared) -> Outcome:
        try:
            case, primitive = prepared
            if isinstance(case, Declined):
                return Outcome(case.status, case.reason)
            if isinstance(case, Error):
                return _error_outcome(case)
            if problem.settings.mode == "L":
                return Outcome("LISTED")
            if isinstance(primitive, Declined):
                return Outcome(primitive.status, primitive.reason)
            if isinstance(primitive, BaseException):
                return _error_outcome(primitive)
            return self.execute(problem, case, primitive)
        except Exception as error:  # noqa: BLE001 - one problem's failure, not the batch's
            return Outcome("FAILED", f"{type(error).__name__}: {error}")

    def execute(self, problem: Problem, case: Case, primitive) -> Outcome:
        s = problem.settings
        impl = primitive.impl
        if s.skip_impl and any(p in impl for p in s.skip_impl):
            return Outcome("SKIPPED", f"SKIP_IMPL_HIT: {impl}", impl=impl)
        if s.impl and not any(p in impl for p in s.impl):
            return Outcome("SKIPPED", f"SKIP_IMPL_HIT: {impl} does not match --impl", impl=impl)
        if s.mode == "I":
            return Outcome("INITIALIZED", impl=impl)
        engine = self.engine(s)
        # A cross-engine reorder's sides live on its own engines (one the host).
        src_engine = getattr(primitive, "src_engine", engine)
        dst_engine = getattr(primitive, "dst_engine", engine)
        start = time.perf_counter()
        src = Memory(case.src.md, src_engine, raw=check.source_buffer(case))
        parent = Memory(MemoryDesc((check.buffer_bytes(case.dst),), "u8", tag="a"), dst_engine,
                        raw=check.destination_buffer(case))
        dst = Memory(case.dst.md, dst_engine, buffer=parent)
        self.times["fill"] += time.perf_counter() - start
        stream = Stream(engine, profiling="P" in s.mode)
        start = time.perf_counter()
        primitive.execute(stream, src, dst, **case.values)
        stream.wait()
        got = parent.raw()
        self.times["execute"] += time.perf_counter() - start
        outcome = Outcome("EXECUTED", impl=impl)
        if "C" in s.mode:
            start = time.perf_counter()
            outcome = self.compare(case, got, impl, s.verbose)
            self.times["check"] += time.perf_counter() - start
        del got
        if "P" in s.mode and outcome.status != "FAILED":
            outcome.perf = self.time_it(primitive, stream, src, dst, s,
                                        case.src.md.size + case.dst.md.size, case.values)
        return outcome

    def compare(self, case: Case, got, impl, verbose) -> Outcome:
        verdict = check.check(case, got, limit=10**9 if verbose >= 99 else check.SHOWN)
        if verdict.wrong:
            return Outcome("FAILED", f"{verdict.wrong} wrong of {verdict.checked} elements "
                                     f"and the bytes around them", verdict.details, impl)
        if check.mistrusted(verdict):
            return Outcome("MISTRUSTED", f"{verdict.zeros} of {verdict.checked} results are "
                                         f"zero", impl=impl)
        return Outcome("PASSED", impl=impl)

    def time_it(self, primitive, stream, src, dst, settings, nbytes, values):
        """(min ms, average ms, bytes): device time from profiling events on
        OpenCL, wall clock on the host engine."""
        times, total = [], 0.0
        primitive.execute(stream, src, dst, **values)  # warm-up
        stream.wait()
        limit = settings.fix_times or 10**9
        while len(times) < limit and (settings.fix_times or total * 1e3 < settings.max_ms):
            start = time.perf_counter()
            event = primitive.execute(stream, src, dst, **values)
            stream.wait()
            seconds = None if event is None else primitive.engine.backend.seconds(event)
            seconds = time.perf_counter() - start if seconds is None else seconds
            times.append(seconds)
            total += seconds
            if len(times) >= 10**4:
                break
        return min(times) * 1e3, total / len(times) * 1e3, nbytes

    # -- output ----------------------------------------------------------------------

    def report(self, problem: Problem, outcome: Outcome) -> None:
        s = problem.settings
        self.counts["tests"] += 1
        self.counts[outcome.status.lower()] += 1
        if outcome.status.lower() in FAILURES or (
                outcome.status == "UNIMPLEMENTED" and s.fail_unimplemented):
            self.failing += 1
        reason = f" ({outcome.reason})" if outcome.reason else ""
        impl = f" [{outcome.impl}]" if outcome.impl and s.verbose >= 5 else ""
        print(f"{problem.index}:{outcome.status}{reason}{impl} __REPRO: {problem.repro()}",
              file=self.out, flush=True)
        for line in outcome.details:
            print(f"  {line}", file=self.out)
        if outcome.perf is not None:
            self.print_perf(problem, outcome)

    def print_perf(self, problem, outcome):
        low, avg, nbytes = outcome.perf
        self.perf.append((low, avg))
        if not self._template_shown:
            print("Output template: perf,%engine%,%impl%,%prb%,%-time%,%0time%,%-GBps%",
                  file=self.out)
            self._template_shown = True
        print(f"perf,{problem.settings.engine},{outcome.impl},{problem.text()},{low:.6g},"
              f"{avg:.6g},{nbytes / low / 1e6:.6g}", file=self.out, flush=True)

    def summary(self) -> list[str]:
        c = self.counts
        lines = [" ".join(f"{k}:{v}" for k, v in c.items() if k in ("tests",) + STATUSES[:7]
                          or v) + f" engine:{' + '.join(sorted(self.engines_used)) or 'none'}"]
        if self.perf:
            lines.append(f"total perf: min(ms):{sum(p[0] for p in self.perf):.6g} "
                         f"avg(ms):{sum(p[1] for p in self.perf):.6g}")
        t = self.times
        lines.append("time (s): " + " ".join(f"{k}:{v:.2f}" for k, v in t.items()))
        return lines

    def exit_status(self) -> int:
        """1 if a problem FAILED (or was INVALID_ARGUMENTS, or UNIMPLEMENTED
        under --fail-unimplemented=true), else 0."""
        return 1 if self.failing else 0


def _sycl_engine(index: int) -> Engine:
    """The SYCL engine on dpctl's device ``index``."""
    from ..backends.sycl import require_dpctl

    try:
        devices = require_dpctl().get_devices()
    except ImportError as error:
        raise UsageError(f"--engine=sycl: {error}") from None
    if index >= len(devices):
        raise UsageError(f"--engine=sycl:{index}: there are {len(devices)} SYCL devices")
    return Engine("sycl", device=devices[index])


def _error_outcome(error) -> Outcome:
    if isinstance(error, UnimplementedError):
        return Outcome("UNIMPLEMENTED", str(error))
    if isinstance(error, InvalidArgumentError):
        return Outcome("INVALID_ARGUMENTS", str(error))
    if isinstance(error, MemoryError):
        return Outcome("FAILED", "MemoryError: the host ran out of memory")
    return Outcome("FAILED", f"{type(error).__name__}: {error}")
