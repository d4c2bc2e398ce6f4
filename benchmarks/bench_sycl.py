"""The SYCL engine against the OpenCL engine on one device: the same kernels,
launched through dpctl (USM pointers, SyclEvents) or pyopencl (buffers).

Both engines run on Intel's OpenCL CPU runtime (the SYCL queue on its
OpenCL backend): set OCL_ICD_VENDORS to the folder naming it (`make
intel-opencl` writes .venv/etc/OpenCL/clayout/intel). Two tables:

(a) every case of bench_reorder.py: the OpenCL engine, then the SYCL engine,
    then the device's copy kernel, in turns (--repeats rounds); "sycl/ocl"
    is the median over the rounds of the SYCL time over the OpenCL time,
    and each engine's "% copy" the median of its GB/s over the copy's
    timed next to it;
(b) execute's host-side cost on a tiny problem (1x64x8x8 f32 nchw -> s8
    nChw16c, per-channel scales): median microseconds per call over --count
    calls, the two engines in turns of 64 calls (the queue drained between
    turns, outside the timing).
Usage: python benchmarks/bench_sycl.py [--repeats 7] [--shapes 8x256x56x56]
       [--f8-shapes 16x256x56x56] (bench_reorder.py's, `make bench`'s)
       [--count 2000] [--only TEXT[,TEXT...]] [--json PATH]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench_reorder import CASES, F8_SHAPE, GROUP, source_values
from common import CopyKernel, cly, gbps, print_table, shapes

#: Execute calls in one turn of table (b).
TURN = 64


def engines():
    """(OpenCL engine, SYCL engine) on the same device."""
    sycl = cly.Engine("sycl", device="opencl:cpu")
    device = sycl.backend.cl_device
    if device is None:
        raise SystemExit(f"{sycl!r}: pyopencl sees no device of the same platform and name; "
                         f"point OCL_ICD_VENDORS at a folder naming Intel's runtime")
    return cly.Engine("opencl", device=device), sycl


def attribute(kind, dims, sdt, rng):
    if kind == "groups":
        count = dims[0] * dims[1] // GROUP
        scales = rng.uniform(0.01, 0.1, count).astype(np.float16).astype(np.float32)
        scale = cly.Scales(scales, mask=0b11, groups=(1, GROUP), data_type="f16")
        if sdt != "u4":
            return cly.Attr(src_scales=scale)
        return cly.Attr(src_scales=scale, src_zero_points=cly.ZeroPoints(
            rng.integers(0, 16, count).astype(np.int32), mask=0b11, groups=(1, GROUP),
            data_type="u4"))
    if kind == "scale":
        return cly.Attr(src_scales=0.5)
    if kind == "per-channel":
        return cly.Attr(src_scales=cly.Scales(rng.uniform(0.5, 2, dims[1]).astype(np.float32),
                                              mask=0b10))
    return None


def prepared(engine, src_md, dst_md, attr, values):
    prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    src = cly.Memory.from_numpy(src_md, engine, values)
    dst = cly.Memory(dst_md, engine)
    stream = cly.Stream(engine)

    def run():
        prim.execute(stream, src, dst)
        stream.wait()
    return prim, dst, run


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def kernel_row(case, dims, ocl, sycl, copies, repeats):
    name, sdt, stag, ddt, dtag, kind, _ = case
    rng = np.random.default_rng(0)
    values = source_values(dims, sdt, rng)
    attr = attribute(kind, dims, sdt, rng)
    src_md, dst_md = cly.MemoryDesc(dims, sdt, tag=stag), cly.MemoryDesc(dims, ddt, tag=dtag)
    p_ocl, d_ocl, run_ocl = prepared(ocl, src_md, dst_md, attr, values)
    p_sycl, d_sycl, run_sycl = prepared(sycl, src_md, dst_md, attr, values)
    run_ocl(), run_sycl()
    same = d_ocl.raw().tobytes() == d_sycl.raw().tobytes()
    moved = src_md.size + dst_md.size
    nbytes = max(16, moved // 32 * 16)
    copy = copies.setdefault(nbytes, CopyKernel(ocl, nbytes))
    copy.run()
    ratios, shares_ocl, shares_sycl = [], [], []
    for _ in range(repeats):
        t_ocl = timed(run_ocl)
        t_sycl = timed(run_sycl)
        t_copy = timed(copy.run)
        rate = gbps(2 * nbytes, t_copy)
        ratios.append(t_sycl / t_ocl)
        shares_ocl.append(gbps(moved, t_ocl) / rate)
        shares_sycl.append(gbps(moved, t_sycl) / rate)
    ratio = statistics.median(ratios)
    return {"case": f"{name} {'x'.join(map(str, dims))}", "impl": p_sycl.impl,
            "ocl % copy": f"{100 * statistics.median(shares_ocl):.0f}%",
            "sycl % copy": f"{100 * statistics.median(shares_sycl):.0f}%",
            "sycl/ocl": f"{ratio:.3f}", "same bytes": "yes" if same else "NO",
            "data": {"case": name, "dims": dims, "sycl_over_ocl": ratio,
                     "ocl_share": statistics.median(shares_ocl),
                     "sycl_share": statistics.median(shares_sycl), "same_bytes": same}}


def overhead_rows(ocl, sycl, count):
    dims = (1, 64, 8, 8)
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, "s8", tag="nChw16c")
    attr = cly.Attr(src_scales=cly.Scales(np.full(64, 0.5, np.float32), mask=0b10))
    values = np.ones(dims, np.float32)
    calls = {}
    for engine in (ocl, sycl):
        prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
        src = cly.Memory.from_numpy(src_md, engine, values)
        dst, stream = cly.Memory(dst_md, engine), cly.Stream(engine)
        calls[engine.kind] = (prim, stream, src, dst, [])
    for _ in range(max(1, count // TURN)):
        for prim, stream, src, dst, times in calls.values():
            for _ in range(TURN):
                start = time.perf_counter()
                prim.execute(stream, src, dst)
                times.append(time.perf_counter() - start)
            stream.wait()
    out = {kind: statistics.median(entry[4]) * 1e6 for kind, entry in calls.items()}
    rows = [{"case": f"execute, {kind} engine", "us": f"{us:.1f}",
             "data": {"case": f"execute {kind}", "us": us}} for kind, us in out.items()]
    rows.append({"case": "  sycl - opencl", "us": f"{out['sycl'] - out['opencl']:+.1f}",
                 "data": {"case": "execute sycl - opencl", "us": out["sycl"] - out["opencl"]}})
    # The runtimes' own enqueue of the same built kernel, without clayout:
    # what is left of the difference once clayout's own steps are gone.
    bare = {kind: _bare_enqueue_us(*entry[:4], count) for kind, entry in calls.items()}
    rows += [{"case": f"bare enqueue, {kind} (the runtime alone)", "us": f"{us:.1f}",
              "data": {"case": f"bare enqueue {kind}", "us": us}} for kind, us in bare.items()]
    rows.append({"case": "  sycl - opencl", "us": f"{bare['sycl'] - bare['opencl']:+.1f}",
                 "data": {"case": "bare sycl - opencl", "us": bare["sycl"] - bare["opencl"]}})
    return rows


def _bare_enqueue_us(prim, stream, src, dst, count):
    """Median microseconds of the runtime's own launch of the primitive's
    built kernel (pyopencl set_args + enqueue_nd_range_kernel, or dpctl
    submit_async), its arguments made once."""
    impl = prim._implementation  # a benchmark may look inside
    kernel, runtime = impl.kernel, type(prim.engine.backend)
    global_size, local_size = kernel.ndrange()
    args = (src.storage, dst.storage, *impl.args)
    raw = kernel.kernel
    times = []
    for _ in range(max(1, count // TURN)):
        for _ in range(TURN):
            start = time.perf_counter()
            runtime.enqueue(stream.queue, raw, global_size, local_size, args)
            times.append(time.perf_counter() - start)
        stream.wait()
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--shapes", default="8x256x56x56")
    parser.add_argument("--f8-shapes", default="x".join(map(str, F8_SHAPE)))
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", metavar="PATH", default=None)
    args = parser.parse_args()
    ocl, sycl = engines()
    print(f"OpenCL engine: {ocl!r}\nSYCL engine: {sycl!r}")
    only = [t for t in args.only.split(",") if t]
    rows, copies = [], {}
    for case in CASES:
        if only and not any(t in case[0] for t in only):
            continue
        weights = case[6]
        for dims in (shapes(args.f8_shapes) if weights == F8_SHAPE
                     else [weights] if weights else shapes(args.shapes)):
            rows.append(kernel_row(case, dims, ocl, sycl, copies, args.repeats))
            print(rows[-1]["case"], rows[-1]["sycl/ocl"], flush=True)
    print_table("(a) the same kernels: SYCL engine time over OpenCL engine time (median of "
                "pairs)", rows, ["case", "impl", "ocl % copy", "sycl % copy", "sycl/ocl",
                                 "same bytes"])
    ratios = [r["data"]["sycl_over_ocl"] for r in rows]
    print(f"sycl/ocl over the cases: median {statistics.median(ratios):.3f}, "
          f"{min(ratios):.3f} to {max(ratios):.3f}")
    over = overhead_rows(ocl, sycl, args.count)
    print_table("(b) execute's host-side cost, median microseconds per call", over,
                ["case", "us"])
    if args.json:
        import json
        with open(args.json, "w") as out:
            json.dump({"script": "bench_sycl.py", "opencl": repr(ocl), "sycl": repr(sycl),
                       "clayout": cly.__version__,
                       "rows": [r["data"] for r in rows + over]}, out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
