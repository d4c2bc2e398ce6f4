"""Shared timing helpers for the benchmark scripts: medians, GB/s, the copy baseline."""
from __future__ import annotations

import statistics
import time

import numpy as np

import clayout as cly

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


def copy_kernel_seconds(engine, nbytes: int, repeats: int) -> float:
    """Median time of the device's own float4 copy kernel over ``nbytes``."""
    import pyopencl as cl

    queue = cl.CommandQueue(engine.context)
    program = cl.Program(engine.context, COPY_KERNEL).build()
    src = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.uint8(1), 0, nbytes)
    kernel = program.copy_float4

    def run():
        kernel(queue, (nbytes // 16,), None, src, dst)
        queue.finish()

    return median_seconds(run, repeats)


class CopyBaseline:
    """The device copy kernel's GB/s, measured again between cases: PoCL's
    copy rate moves by up to 2x from one allocation to the next, so the table
    compares against the best rate seen in the run (the strictest baseline)."""

    def __init__(self, engine, nbytes: int, repeats: int):
        self.engine, self.nbytes, self.repeats = engine, nbytes, repeats
        self.rates = []
        self.measure()

    def measure(self):
        if self.engine.is_opencl:
            seconds = copy_kernel_seconds(self.engine, self.nbytes, self.repeats)
            self.rates.append(gbps(2 * self.nbytes, seconds))

    @property
    def best(self):
        return max(self.rates) if self.rates else None

    @property
    def median(self):
        return statistics.median(self.rates) if self.rates else None

    def row(self) -> dict:
        shown = ", ".join(f"{r:.1f}" for r in self.rates)
        return {"case": "device copy kernel",
                "GB/s": f"{self.median:.2f}" if self.rates else "-",
                "impl": f"median of {len(self.rates)} runs ({shown} GB/s)" if self.rates else ""}


def result_row(case, impl, seconds, moved, copy: CopyBaseline, numpy_seconds,
               torch_seconds=None):
    """One table row: time, GB/s, share of the copy kernel's median and best
    rate in the run, speed-up over NumPy and PyTorch."""
    rate = gbps(moved, seconds)
    row = {"case": case, "impl": impl, "ms": f"{seconds * 1e3:.2f}", "GB/s": f"{rate:.2f}",
           "% copy": f"{100 * rate / copy.median:.0f}%" if copy.rates else "-",
           "% best copy": f"{100 * rate / copy.best:.0f}%" if copy.rates else "-",
           "numpy ms": f"{numpy_seconds * 1e3:.2f}", "vs numpy": f"{numpy_seconds / seconds:.2f}x"}
    if torch_seconds is not None:
        row.update({"torch ms": f"{torch_seconds * 1e3:.2f}",
                    "vs torch": f"{torch_seconds / seconds:.2f}x"})
    return row


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def clayout_seconds(primitive, stream, src, dst, repeats: int) -> float:
    def run():
        primitive.execute(stream, src, dst)
        stream.wait()

    return median_seconds(run, repeats)


def columns(with_torch: bool) -> list[str]:
    names = ["case", "impl", "ms", "GB/s", "% copy", "% best copy", "numpy ms", "vs numpy"]
    return names + (["torch ms", "vs torch"] if with_torch else [])


def start(parser):
    """Parse the arguments (--repeats, --shapes and the script's own), make the
    default engine and a stream, and say what runs: (args, engine, stream, torch)."""
    parser.add_argument("--repeats", type=int, default=5)
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
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))


__all__ = ["cly", "CopyBaseline", "median_seconds", "copy_kernel_seconds", "gbps", "torch_or_none",
           "clayout_seconds", "print_table", "result_row", "columns", "start", "shapes"]
