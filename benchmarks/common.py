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


class CopyKernel:
    """The device's own float4 copy kernel over ``nbytes``, built once and
    timed next to each case: on PoCL the copy rate moves between about 28 and
    56 GB/s from minute to minute, so a case is compared with copies timed in
    the same moments (pairs), not with one copy timed at the start."""

    def __init__(self, engine, nbytes: int):
        import pyopencl as cl

        self.nbytes = nbytes
        self.queue = cl.CommandQueue(engine.context)
        program, _ = compile_program(engine.context, COPY_KERNEL, [])
        self.src = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
        self.dst = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
        cl.enqueue_fill_buffer(self.queue, self.src, np.uint8(1), 0, nbytes)
        self.kernel = cl.Kernel(program, "copy_float4")
        self.rates = []  # GB/s of every timed copy

    def run(self):
        self.kernel(self.queue, (self.nbytes // 16,), None, self.src, self.dst)
        self.queue.finish()


def paired(run, copy, moved: int, repeats: int):
    """Time ``run`` and the copy kernel alternately. Returns the median seconds
    of ``run`` and the median, over the pairs, of its GB/s (``moved`` bytes)
    over the copy's (None without a copy kernel)."""
    run()
    if copy:
        copy.run()
    times, shares = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        if copy:
            start = time.perf_counter()
            copy.run()
            rate = gbps(2 * copy.nbytes, time.perf_counter() - start)
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
    """A callable that runs the primitive to completion."""
    def run():
        primitive.execute(stream, src, dst)
        stream.wait()

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
    args = parser.parse_args()
    engine = cly.Engine()
    torch = torch_or_none()
    print(f"engine: {engine}; PyTorch: {torch.__version__ if torch else 'not installed'}")
    return args, engine, cly.Stream(engine), torch



def shapes(text: str):
    """'32x256x56x56,2x64x56x56' as tuples of ints."""
    return [tuple(int(x) for x in shape.split("x")) for shape in text.split(",")]



def print_table(title: str, rows: list[dict], columns: list[str]):
    """A plain fixed-width table."""
    print(f"\n{title}")
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
        "copy_gbps": statistics.median(rates) if rates else None,
        "rows": [row["data"] for row in rows if "data" in row],
    }
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


__all__ = ["cly", "CopyKernel", "paired", "copy_row", "clayout_run", "median_seconds", "gbps",
           "torch_or_none", "print_table", "result_row", "columns", "start", "shapes", "write_json"]
