"""Host-side overhead of a small quantized reorder: what a creation and an
execute cost the caller when the data is tiny (1x64x8x8), so copy speed
is decided by the Python on the way to the queue.

Three tables:
(a) creating a primitive on descriptors seen before (kernel built, plan
    kept): median microseconds over --count creations, with the builds and
    plans made during them (both should be 0);
(b) the first creation of a new shape, which builds its kernel: cold (a
    shape with a random width, never built on this machine) and from
    pyopencl's disk cache (the same shapes again after clearing clayout's
    in-process kernel and plan caches): median milliseconds over --repeats;
(c) execute on an existing primitive: median microseconds per call over
    --count calls, the host-side cost of the call (it enqueues and returns;
    the queue is drained every 64 calls, outside the timing), next to
    pyopencl's own enqueue of a bare kernel.

The reference problem: f32 nchw -> s8 nChw16c with per-channel source
scales (0.5) on the default engine; also the same without attributes, an
f32 nchw -> nhwc reorder, a shuffle and a host-engine reorder. A "values at
execute" row (scales given to each execute from NumPy) runs where this
clayout has Scales(mask=...) without values; else it says why it is skipped.
Usage: python benchmarks/bench_overhead.py [--count 2000] [--repeats 5] [--json PATH]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from common import COPY_KERNEL, cly, compile_program, print_table, start, write_json

DIMS = (1, 64, 8, 8)
#: Execute calls between two waits (untimed): the queue stays short.
DRAIN_EVERY = 64


def _md(dtype, tag, dims=DIMS):
    return cly.MemoryDesc(dims, dtype, tag=tag)


def _scales():
    return np.full(DIMS[1], 0.5, np.float32)


def _per_channel():
    return cly.Attr(src_scales=cly.Scales(_scales(), mask=0b10))


def _median_us(call, count: int) -> float:
    """Median microseconds of one ``call()`` over ``count`` calls (one warm-up)."""
    call()
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def _row(table, case, value, unit, note="", **data):
    return {"case": case, unit: f"{value:.1f}", "note": note,
            "data": {"table": table, "case": case, unit.split()[0]: value, **data}}


def _counters():
    from clayout.gpu.plan_cache import plan_cache
    return cly.kernel_cache.builds, plan_cache.misses


def at_execute_attr():
    """The per-channel attribute without values (values come to each
    execute), or (None, why) when this clayout does not have it yet."""
    try:
        return cly.Attr(src_scales=cly.Scales(mask=0b10)), None
    except (TypeError, ValueError) as e:
        return None, f"skipped: Scales(mask=0b10) raises {type(e).__name__}: {e}"


def creation_rows(engine, count: int) -> list[dict]:
    """(a): creations on descriptors seen before."""
    host = cly.Engine("host")
    src, s8, nhwc = _md("f32", "nchw"), _md("s8", "nChw16c"), _md("f32", "nhwc")
    attr = _per_channel()
    cases = [
        ("reorder f32 nchw->s8 nChw16c per-channel scales (values at creation)",
         lambda: cly.Reorder(src, s8, engine=engine, attr=attr)),
        ("reorder f32 nchw->s8 nChw16c, no attributes",
         lambda: cly.Reorder(src, s8, engine=engine)),
        ("reorder f32 nchw->nhwc", lambda: cly.Reorder(src, nhwc, engine=engine)),
        ("shuffle f32 nchw axis 1 group 4", lambda: cly.Shuffle(src, 1, 4, engine=engine)),
        ("host engine: reorder f32 nchw->s8 nChw16c per-channel",
         lambda: cly.Reorder(src, s8, engine=host, attr=attr)),
    ]
    runtime_attr, why = at_execute_attr()
    if runtime_attr is not None:
        cases.insert(1, ("reorder f32 nchw->s8 nChw16c per-channel scales (values at execute)",
                         lambda: cly.Reorder(src, s8, engine=engine, attr=runtime_attr)))
    rows = []
    for case, create in cases:
        create()  # builds and plans what the creations then find
        builds, plans = _counters()
        us = _median_us(create, count)
        builds, plans = (a - b for a, b in zip(_counters(), (builds, plans)))
        rows.append(_row("creation", case, us, "us", f"{builds} builds, {plans} plans made",
                         builds=builds, plans=plans, impl=create().impl))
    if runtime_attr is None:
        rows.append({"case": "reorder ... (values at execute)", "note": why})
    if engine.is_opencl:
        # Part of a creation with values: their device buffer.
        values = _scales()
        rows.append(_row("creation", "  of which: upload of 64 float scales (device buffer)",
                         _median_us(lambda: engine.backend.upload(values), count), "us"))
    return rows


def build_rows(engine, repeats: int) -> list[dict]:
    """(b): the first creation of a new shape (a kernel build)."""
    from clayout.gpu.plan_cache import plan_cache

    rng = np.random.default_rng()  # unseeded: widths this machine has not built
    widths = [int(w) for w in rng.choice(np.arange(9, 1 << 20), repeats, replace=False)]
    attr = _per_channel()

    def create(w):
        dims = (1, 64, 8, w)
        start = time.perf_counter()
        cly.Reorder(_md("f32", "nchw", dims), _md("s8", "nChw16c", dims), engine=engine,
                    attr=attr)
        return time.perf_counter() - start

    cold = [create(w) for w in widths]
    cly.kernel_cache.clear()  # the same sources again: pyopencl finds their binaries on disk
    plan_cache.clear()
    disk = [create(w) for w in widths]
    note = f"{repeats} shapes 1x64x8xW, W random; PYOPENCL_NO_CACHE " + \
        ("set: no disk cache" if os.environ.get("PYOPENCL_NO_CACHE") else "unset")
    return [_row("build", "new shape: cold build", statistics.median(cold) * 1e3, "ms",
                 note, samples=cold),
            _row("build", "new shape: from pyopencl's disk cache",
                 statistics.median(disk) * 1e3, "ms", "same shapes after clearing "
                 "clayout's kernel and plan caches", samples=disk)]


def _enqueue_us(call, count: int, wait) -> float:
    """Median microseconds of ``call()`` (an enqueue), draining the queue
    with ``wait()`` every DRAIN_EVERY calls, outside the timing."""
    call()
    wait()
    times = []
    for i in range(count):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
        if i % DRAIN_EVERY == DRAIN_EVERY - 1:
            wait()
    wait()
    return statistics.median(times) * 1e6


def execute_rows(engine, stream, count: int) -> list[dict]:
    """(c): execute on an existing primitive, and pyopencl's bare enqueue."""
    src_md, dst_md = _md("f32", "nchw"), _md("s8", "nChw16c")
    x = np.random.default_rng(0).standard_normal(DIMS).astype(np.float32)
    src = cly.Memory.from_numpy(src_md, engine, x)
    dst = cly.Memory(dst_md, engine)
    prim = cly.Reorder(src_md, dst_md, engine=engine, attr=_per_channel())
    rows = [_row("execute", "execute: per-channel reorder, values at creation",
                 _enqueue_us(lambda: prim.execute(stream, src, dst), count, stream.wait),
                 "us", prim.impl)]
    rows += values_at_execute_rows(engine, stream, src, dst, count)
    if engine.is_opencl:
        rows += bare_enqueue_rows(engine, stream, count)
    return rows


# -- values at execute ---------------------------------------------------------
# Scales given to each execute (oneDNN v3's execution arguments) come with
# another part of issue 21; this row runs where that part is in.

def values_at_execute_rows(engine, stream, src, dst, count: int) -> list[dict]:
    """The execute row for 64 float scales given from NumPy at each call."""
    case = "execute: per-channel reorder, 64 scales from NumPy at execute"
    attr, why = at_execute_attr()
    if attr is None:
        return [{"case": case, "note": why}]
    prim = cly.Reorder(src.md, dst.md, engine=engine, attr=attr)
    scales = _scales()
    try:
        prim.execute(stream, src, dst, src_scales=scales)
    except TypeError as e:
        return [{"case": case, "note": f"skipped: execute(..., src_scales=) raises {e}"}]
    us = _enqueue_us(lambda: prim.execute(stream, src, dst, src_scales=scales), count,
                     stream.wait)
    return [_row("execute", case, us, "us", prim.impl)]


def bare_enqueue_rows(engine, stream, count: int) -> list[dict]:
    """pyopencl's own enqueue of a small copy kernel (16 KiB), the floor
    under any execute: with its arguments set on each call, and set once."""
    import pyopencl as cl

    nbytes = 16 << 10
    program, _ = compile_program(engine.context, COPY_KERNEL, [])
    kernel = cl.Kernel(program, "copy_float4")
    a = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
    queue = stream.queue
    size = (nbytes // 16,)
    called = _enqueue_us(lambda: kernel(queue, size, None, a, b), count, queue.finish)
    kernel.set_args(a, b)
    bare = _enqueue_us(lambda: cl.enqueue_nd_range_kernel(queue, kernel, size, None), count,
                       queue.finish)
    return [_row("execute", "pyopencl: kernel(queue, ...) with its 2 arguments", called, "us"),
            _row("execute", "pyopencl: enqueue_nd_range_kernel, arguments set once", bare,
                 "us")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000,
                        help="creations and executes timed per row")
    args, engine, stream, _ = start(parser)
    if os.environ.get("CLAYOUT_VERBOSE"):
        print("CLAYOUT_VERBOSE is set: the times include writing verbose lines")
    rows = creation_rows(engine, args.count)
    print_table(f"(a) creation on descriptors seen before, {'x'.join(map(str, DIMS))}, "
                f"median of {args.count}", rows, ["case", "us", "note"])
    every = list(rows)
    if engine.is_opencl:
        rows = build_rows(engine, args.repeats)
        print_table(f"(b) first creation of a new shape (kernel build), median of "
                    f"{args.repeats}", rows, ["case", "ms", "note"])
        every += rows
    rows = execute_rows(engine, stream, args.count)
    print_table(f"(c) execute, host-side cost of the call, median of {args.count}", rows,
                ["case", "us", "note"])
    every += rows
    write_json(args.json, "bench_overhead.py", engine, every)


if __name__ == "__main__":
    main()
