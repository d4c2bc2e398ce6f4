"""Runtime dims: the one kernel built for a runtime pattern against the kernel
baked for one shape, both timed in alternation with the device's copy kernel
(same run); then 50 shapes through one runtime primitive, counting builds.

"% copy" is the median over the pairs of the case's GB/s over the copy
kernel's; "runtime / baked" is the ratio of those two medians.
Usage: python benchmarks/bench_runtime_dims.py [--repeats N] [--shapes 8x256x56x56]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from common import CopyKernel, clayout_run, cly, copy_row, paired, print_table, shapes, start

R = cly.RUNTIME_DIM
CASES = [  # name, src tag, dst tag, which dims are runtime (mask over n, c, h, w)
    ("nchw->nhwc", "nchw", "nhwc", 0b1111),
    ("nchw->nhwc, c fixed", "nchw", "nhwc", 0b1101),
    ("nchw->nChw16c", "nchw", "nChw16c", 0b1111),
    ("nchw->nChw16c, c fixed", "nchw", "nChw16c", 0b1101),
]


def pattern(dims, tag, mask):
    return cly.MemoryDesc(tuple(R if mask >> d & 1 else n for d, n in enumerate(dims)),
                          "f32", tag=tag)


def fifty_shapes(engine, stream):
    """One runtime primitive on 50 shapes: builds, and per-shape times
    against creating a baked primitive for each shape."""
    src_p = cly.MemoryDesc((R, 64, R, R), "f32", tag="nchw")
    dst_p = cly.MemoryDesc((R, 64, R, R), "f32", tag="nChw16c")
    rng = np.random.default_rng(0)
    dims_list = [(int(rng.integers(1, 5)), 64, int(rng.integers(1, 40)), int(rng.integers(1, 40)))
                 for _ in range(50)]
    memories = [(cly.Memory.from_numpy(src_p.with_dims(dims), engine,
                                       rng.standard_normal(dims).astype(np.float32)),
                 cly.Memory(dst_p.with_dims(dims), engine)) for dims in dims_list]
    stream.wait()
    before = cly.kernel_cache.builds
    t0 = time.perf_counter()
    primitive = cly.Reorder(src_p, dst_p, engine=engine)
    created = cly.kernel_cache.builds
    create_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for src, dst in memories:
        primitive.execute(stream, src, dst)
    stream.wait()
    runtime_s = time.perf_counter() - t0
    after = cly.kernel_cache.builds
    t0 = time.perf_counter()
    for dims in dims_list[:10]:  # a baked primitive per shape: one build each
        src = cly.Memory(src_p.with_dims(dims), engine)
        dst = cly.Memory(dst_p.with_dims(dims), engine)
        cly.Reorder(src.md, dst.md, engine=engine).execute(stream, src, dst)
    stream.wait()
    baked_s = (time.perf_counter() - t0) / 10
    print(f"\n50 shapes, one runtime primitive (f32 nchw->nChw16c, n/h/w runtime): "
          f"{created - before} build at creation ({create_s * 1e3:.0f} ms), "
          f"{after - created} during the 50 executions ({runtime_s * 1e3:.0f} ms in all).")
    print(f"A baked primitive per shape: {baked_s * 1e3:.0f} ms per shape (build and run), "
          f"{cly.kernel_cache.builds - after} builds for 10 shapes.")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="8x256x56x56", help="one NxCxHxW shape")
    args, engine, stream, _ = start(parser)
    dims = shapes(args.shapes)[0]
    nbytes = 4 * int(np.prod(dims))
    copy = CopyKernel(engine, nbytes)
    rows = []
    for name, stag, dtag, mask in CASES:
        src_md = cly.MemoryDesc(dims, "f32", tag=stag)
        dst_md = cly.MemoryDesc(dims, "f32", tag=dtag)
        src = cly.Memory.from_numpy(src_md, engine, np.ones(dims, np.float32))
        dst = cly.Memory(dst_md, engine)
        baked = cly.Reorder(src_md, dst_md, engine=engine)
        runtime = cly.Reorder(pattern(dims, stag, mask), pattern(dims, dtag, mask), engine=engine)
        moved = nbytes + dst_md.size
        shares = {}
        for label, primitive in (("baked", baked), ("runtime", runtime)):
            seconds, share = paired(clayout_run(primitive, stream, src, dst), copy, moved,
                                    args.repeats)
            shares[label] = share
            rows.append({"case": name, "kernel": label, "impl": primitive.impl,
                         "ms": f"{seconds * 1e3:.2f}", "% copy": f"{100 * share:.0f}%"})
        rows[-1]["runtime / baked"] = f"{shares['runtime'] / shares['baked']:.2f}"
    rows.insert(0, copy_row(copy))
    print_table(f"runtime dims against baked kernels, f32 {'x'.join(map(str, dims))}", rows,
                ["case", "kernel", "impl", "ms", "% copy", "runtime / baked"])
    fifty_shapes(engine, stream)


if __name__ == "__main__":
    main()
