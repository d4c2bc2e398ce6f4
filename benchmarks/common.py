"""Shared timing helpers for the benchmark scripts: medians, GB/s, the copy kernel."""
from __future__ import annotations

import json
import os
import statistics
import time

import numpy as np

# Each case times its own kernel: no runtime-dims kernel standing in while
# it builds (clayout/tiers.py). CLAYOUT_TIERS=on in the environment keeps them.
os.environ.setdefault("CLAYOUT_TIERS", "off")

import clayout as cly
from clayout.gpu.build import compile_program

COPY_KERNEL = """
__kernel void copy_float4(__global const float4 *restrict src, __global float4 *restrict dst)
{
    const size_t i = get_global_id(0);
    dst[i] = src[i];
}
"""


def median_seconds(run, repeats: int, warmup: int = 1) -> float:
    """Median wall time of ``run()`` (which must finish its work before returning)."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


#: --kernel-time: time the device's kernels by their queues' profiling
#: events, not whole calls (on a GPU a small case's call is mostly the
#: host's own work: checks, events, the launch). The event is the one
#: ``execute`` returns: the last command of work in several (a second
#: launch, a compensation, a Quantize's reorder out) counts alone.
KERNEL_TIME = False
#: Runs timed as whole calls although KERNEL_TIME asked for kernels (an
#: event without profiling counters: the host path's, a gated launch's).
FELL_BACK = []


def event_seconds(event) -> float | None:
    """The run time of an OpenCL event from its profiling counters, or None
    (an event of no profiling queue, a host event)."""
    try:
        return (event.profile.end - event.profile.start) * 1e-9
    except (AttributeError, TypeError, cl_error()):  # no counters: the caller times the call
        return None


def cl_error():
    import pyopencl as cl

    return cl.Error


def kernel_seconds(event, what) -> float | None:
    """With KERNEL_TIME, ``event``'s own seconds, or None (then the call is
    timed whole, and ``what`` is noted in FELL_BACK); None without."""
    if not KERNEL_TIME:
        return None
    seconds = event_seconds(event)
    if seconds is None and str(what) not in FELL_BACK:
        FELL_BACK.append(str(what))
    return seconds


class CopyKernel:
    """The device's own float4 copy kernel over ``nbytes``, built once and
    timed next to each case: on PoCL the copy rate moves between about 28 and
    56 GB/s from minute to minute, so a case is compared with copies timed in
    the same moments (pairs), not with one copy timed at the start. With
    KERNEL_TIME, ``run`` returns the kernel's own seconds."""

    def __init__(self, engine, nbytes: int):
        import pyopencl as cl

        self.nbytes = nbytes
        properties = cl.command_queue_properties.PROFILING_ENABLE if KERNEL_TIME else 0
        self.queue = cl.CommandQueue(engine.context, properties=properties)
        program, _ = compile_program(engine.context, COPY_KERNEL, [])
        self.src = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
        self.dst = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
        cl.enqueue_fill_buffer(self.queue, self.src, np.uint8(1), 0, nbytes)
        self.kernel = cl.Kernel(program, "copy_float4")
        self.rates = []  # GB/s of every timed copy

    def run(self):
        event = self.kernel(self.queue, (self.nbytes // 16,), None, self.src, self.dst)
        self.queue.finish()
        return event_seconds(event) if KERNEL_TIME else None


def _timed(run) -> float:
    """Seconds of ``run()``: what it returns (a kernel's own time, with
    --kernel-time) or else the wall time of the call."""
    start = time.perf_counter()
    seconds = run()
    return seconds if seconds is not None else time.perf_counter() - start


def paired(run, copy, moved: int, repeats: int):
    """Time ``run`` and the copy kernel alternately. Returns the median seconds
    of ``run`` and the median, over the pairs, of its GB/s (``moved`` bytes)
    over the copy's (None without a copy kernel). A ``run`` that returns
    seconds (its kernel's, --kernel-time) is timed by them."""
    run()
    if copy:
        copy.run()
    times, shares = [], []
    for _ in range(repeats):
        times.append(_timed(run))
        if copy:
            rate = gbps(2 * copy.nbytes, _timed(copy.run))
            copy.rates.append(rate)
            shares.append(gbps(moved, times[-1]) / rate)
    return statistics.median(times), (statistics.median(shares) if shares else None)


def copy_row(copy) -> dict:
    """The table's first row: what the copy kernel did while the cases ran."""
    if not copy or not copy.rates:
        return {"case": "device copy kernel", "GB/s": "-"}
    return {"case": "device copy kernel", "GB/s": f"{statistics.median(copy.rates):.2f}",
            "impl": f"median of {len(copy.rates)} copies, "
                    f"{min(copy.rates):.1f} to {max(copy.rates):.1f} GB/s"}


def clayout_run(primitive, stream, src, dst):
    """A callable that runs the primitive to completion; with KERNEL_TIME
    (and a profiling stream: ``start``) it returns the seconds of the
    primitive's event, its kernel's run time where it is one launch."""
    def run():
        event = primitive.execute(stream, src, dst)
        stream.wait()
        return kernel_seconds(event, primitive)

    return run


def result_row(case, impl, seconds, moved, copy_share, numpy_seconds, torch_seconds=None):
    """One table row: time, GB/s, share of the copy kernel's rate timed
    alongside, speed-up over NumPy and PyTorch."""
    rate = gbps(moved, seconds)
    row = {"case": case, "impl": impl, "ms": f"{seconds * 1e3:.2f}", "GB/s": f"{rate:.2f}",
           "% copy": f"{100 * copy_share:.0f}%" if copy_share else "-",
           "numpy ms": f"{numpy_seconds * 1e3:.2f}", "vs numpy": f"{numpy_seconds / seconds:.2f}x",
           # The numbers themselves, for --json (the table shows the strings).
           "data": {"case": case, "impl": impl, "seconds": seconds, "gbps": rate,
                    "share_of_copy": copy_share, "numpy_seconds": numpy_seconds,
                    "torch_seconds": torch_seconds}}
    if torch_seconds is not None:
        row.update({"torch ms": f"{torch_seconds * 1e3:.2f}",
                    "vs torch": f"{torch_seconds / seconds:.2f}x"})
    return row


def columns(with_torch: bool) -> list[str]:
    names = ["case", "impl", "ms", "GB/s", "% copy", "numpy ms", "vs numpy"]
    return names + (["torch ms", "vs torch"] if with_torch else [])


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9



def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch



def start(parser):
    """Parse the arguments (--repeats, --shapes and the script's own), make the
    default engine and a stream, and say what runs: (args, engine, stream, torch)."""
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the results to PATH (read by benchmarks/plot.py)")
    parser.add_argument("--kernel-time", action="store_true",
                        help="time kernels by their profiling events, clayout's and the "
                             "copy's alike, not whole calls (for a GPU, where a small "
                             "case's call is mostly host work)")
    args = parser.parse_args()
    global KERNEL_TIME
    KERNEL_TIME = args.kernel_time
    engine = cly.Engine()
    torch = torch_or_none()
    print(f"engine: {engine}; PyTorch: {torch.__version__ if torch else 'not installed'}; "
          f"timing {'kernels (profiling events)' if KERNEL_TIME else 'whole calls'}")
    stream = cly.Stream(engine, profiling=True) if KERNEL_TIME and engine.is_opencl \
        else cly.Stream(engine)
    return args, engine, stream, torch



def shapes(text: str):
    """'32x256x56x56,2x64x56x56' as tuples of ints."""
    return [tuple(int(x) for x in shape.split("x")) for shape in text.split(",")]



def print_table(title: str, rows: list[dict], columns: list[str]):
    """A plain fixed-width table (and the cases --kernel-time had to time
    as whole calls)."""
    print(f"\n{title}")
    for what in FELL_BACK:
        print(f"(--kernel-time: no profiling counters, timed as whole calls: {what})")
    if not rows:
        print("(no case was selected)")
        return
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))




def write_json(path, script: str, engine, rows: list[dict], copies=()):
    """Write the rows' numbers (``row["data"]``) to ``path``, with what ran
    them: the script, engine, kernel strategy, clayout version and the copy
    kernel's median rate. Does nothing when ``path`` is None."""
    if path is None:
        return
    rates = [rate for copy in copies if copy for rate in copy.rates]
    document = {
        "script": script,
        "engine": repr(engine),
        "device": engine.profile.name if engine.is_opencl else "host",
        "strategy": engine.profile.strategy if engine.is_opencl else "host",
        "clayout": cly.__version__,
        "timing": "kernel" if KERNEL_TIME else "call",
        "timed_as_calls": list(FELL_BACK),
        "copy_gbps": statistics.median(rates) if rates else None,
        "rows": [row["data"] for row in rows if "data" in row],
    }
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


__all__ = ["cly", "CopyKernel", "paired", "copy_row", "clayout_run", "kernel_seconds",
           "median_seconds", "gbps",
           "torch_or_none", "print_table", "result_row", "columns", "start", "shapes", "write_json"]
