"""Memory.from_numpy / to_numpy / write / read against pyopencl's own transfers.

For each layout, clayout's transfer and pyopencl's (a new Buffer plus
enqueue_copy up; enqueue_copy into a new array down) are timed alternately,
and "% pyopencl" is the median over those pairs of pyopencl's time over
clayout's. Memory.write and read (into existing memory, plain layouts) go
against pyopencl's Array.set and get(ary=) of the same bytes. Memory: tracemalloc's peak of host (NumPy) scratch, and the growth
of the process's peak resident memory (which on a CPU device also counts the
device buffers) beyond the bytes the call returns.
Usage: python benchmarks/bench_transfer.py [--repeats N] [--shapes 32x256x64x64]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
import tracemalloc

import numpy as np

from common import cly, print_table, shapes, start

TAGS = ("nchw", "nhwc", "nChw16c")


def peak_rss() -> int:
    """The process's peak resident memory in bytes (Linux), or -1."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def current_rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_of(run, returned_bytes: int, returned_on_host: bool):
    """(tracemalloc peak, peak RSS growth) of one ``run()``, both beyond the
    ``returned_bytes`` of its result (traced only when ``returned_on_host``)."""
    import gc
    gc.collect()
    base = current_rss()
    tracked = reset_peak_rss()
    tracemalloc.start()
    result = run()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = peak_rss() - base - returned_bytes if tracked else -1
    del result
    return traced - (returned_bytes if returned_on_host else 0), grown


def timed_pairs(case, reference, repeats):
    """Median seconds of ``case`` and ``reference`` run alternately, and the
    median of reference/case over the pairs."""
    case(), reference()
    case_times, ref_times = [], []
    for _ in range(repeats):
        for run, times in ((case, case_times), (reference, ref_times)):
            start_time = time.perf_counter()
            run()
            times.append(time.perf_counter() - start_time)
    shares = [r / c for r, c in zip(ref_times, case_times)]
    return statistics.median(case_times), statistics.median(ref_times), statistics.median(shares)


def main():
    import pyopencl as cl
    import pyopencl.array  # noqa: F401 - cl.array

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="32x256x64x64")
    parser.add_argument("--convert-on-device-bytes", type=int, default=None,
                        help="override the engine's threshold for converting on the device")
    args, engine, _, _ = start(parser)
    if not engine.is_opencl:
        print("no OpenCL device: nothing to compare with")
        return
    if args.convert_on_device_bytes is not None:
        engine.caps = dataclasses.replace(engine.caps,
                                          convert_on_device_bytes=args.convert_on_device_bytes)
    print(f"layouts change on the device from {engine.caps.convert_on_device_bytes} bytes")
    queue = cl.CommandQueue(engine.context)
    rows = []
    for dims in shapes(args.shapes):
        values = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
        nbytes = values.nbytes
        for tag in TAGS:
            md = cly.MemoryDesc(dims, "f32", tag=tag)

            def upload():
                mem = cly.Memory.from_numpy(md, engine, values)
                if mem.events:
                    cl.wait_for_events(mem.events)
                return mem

            def cl_upload():
                buffer = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, nbytes)
                cl.enqueue_copy(queue, buffer, values, is_blocking=True)
                return buffer

            mem = upload()
            assert np.array_equal(mem.to_numpy(), values)
            device = cl_upload()

            def download():
                return mem.to_numpy()

            def cl_download():
                out = np.empty_like(values)
                cl.enqueue_copy(queue, out, device, is_blocking=True)
                return out

            # Into and out of existing memory (issue 37): Memory.write and
            # read against pyopencl's Array.set and get into an existing
            # array, each waited for. The arrays lie as the memory does
            # (an nhwc tensor's logical view), so no staging is needed.
            lying = np.empty_like(mem.read()[0])
            lying[...] = values
            cl_array = cl.array.to_device(queue, values)
            got = np.empty_like(values)

            def write():
                mem.write(lying).wait()

            def cl_set():
                cl_array.set(values, queue=queue)

            def read():
                mem.read(lying)[1].wait()

            def cl_get():
                cl_array.get(queue=queue, ary=got)

            cases = [("from_numpy", upload, cl_upload, md.size, False),
                     ("to_numpy", download, cl_download, nbytes, True)]
            if not md.inner_blks:
                cases += [("write", write, cl_set, 0, False), ("read", read, cl_get, 0, True)]
            for name, case, reference, returned, on_host in cases:
                seconds, ref_seconds, share = timed_pairs(case, reference, args.repeats)
                traced, grown = memory_of(case, returned, on_host)
                rows.append({
                    "case": f"{name} {tag} {'x'.join(map(str, dims))}",
                    "ms": f"{seconds * 1e3:.1f}", "MB/s": f"{nbytes / seconds / 1e6:.0f}",
                    "pyopencl ms": f"{ref_seconds * 1e3:.1f}",
                    "pyopencl MB/s": f"{nbytes / ref_seconds / 1e6:.0f}",
                    "% pyopencl": f"{100 * share:.0f}%",
                    "host scratch MiB": f"{traced / 2**20:.1f}",
                    "extra RSS MiB": f"{grown / 2**20:.0f}" if grown >= 0 else "-",
                })
    print_table("Transfers, f32 (MB/s of the tensor's bytes)", rows,
                ["case", "ms", "MB/s", "pyopencl ms", "pyopencl MB/s", "% pyopencl",
                 "host scratch MiB", "extra RSS MiB"])


if __name__ == "__main__":
    main()
