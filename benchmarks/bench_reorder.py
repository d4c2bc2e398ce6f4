"""Reorder throughput: clayout on the default engine against the same device's
copy kernel (same run), NumPy and, where installed, PyTorch.

GB/s counts bytes read plus bytes written. Times are medians of --repeats runs.
Usage: python benchmarks/bench_reorder.py [--repeats N] [--shapes 32x256x56x56,2x64x56x56]
"""
from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

from common import (CopyKernel, clayout_run, cly, columns, copy_row, median_seconds, paired,
                    print_table, result_row, shapes, start)

CASES = [  # name, src type, src tag, dst type, dst tag, attr
    ("nchw->nhwc", "f32", "nchw", "f32", "nhwc", None),
    ("nhwc->nchw", "f32", "nhwc", "f32", "nchw", None),
    ("nchw->nChw16c", "f32", "nchw", "f32", "nChw16c", None),
    ("nChw16c->nchw", "f32", "nChw16c", "f32", "nchw", None),
    ("f32->s8 scale", "f32", "nchw", "s8", "nchw", 0.5),
    ("f32->bf16", "f32", "nchw", "bf16", "nchw", None),
    ("f32->f16", "f32", "nchw", "f16", "nchw", None),
]


def numpy_version(name, a, scale):
    """The same operation in NumPy, on a logical (n, c, h, w) array."""
    n, c, h, w = a.shape
    if name == "nchw->nhwc" or name == "nhwc->nchw":
        return lambda: np.ascontiguousarray(a.transpose(0, 2, 3, 1))
    if name == "nchw->nChw16c":
        return lambda: np.ascontiguousarray(a.reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2))
    if name == "nChw16c->nchw":
        b = np.ascontiguousarray(a.reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2))
        return lambda: np.ascontiguousarray(b.transpose(0, 1, 4, 2, 3)).reshape(n, c, h, w)
    if name == "f32->s8 scale":
        return lambda: np.clip(np.rint(a * np.float32(scale)), -128, 127).astype(np.int8)
    if name == "f32->bf16":
        return lambda: a.astype(ml_dtypes.bfloat16)
    return lambda: a.astype(np.float16)


def torch_version(torch, name, a, scale):
    t = torch.from_numpy(a)
    if name in ("nchw->nhwc", "nhwc->nchw"):
        return lambda: t.permute(0, 2, 3, 1).contiguous()
    if name in ("nchw->nChw16c", "nChw16c->nchw"):
        n, c, h, w = a.shape
        return lambda: t.reshape(n, c // 16, 16, h, w).permute(0, 1, 3, 4, 2).contiguous()
    if name == "f32->s8 scale":
        return lambda: torch.clamp(torch.round(t * scale), -128, 127).to(torch.int8)
    return lambda: t.to(torch.bfloat16 if name == "f32->bf16" else torch.float16)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="32x256x56x56,2x64x56x56")
    args, engine, stream, torch = start(parser)
    for dims in shapes(args.shapes):
        shape = "x".join(map(str, dims))
        a = np.random.default_rng(0).standard_normal(dims, dtype=np.float32) * 64
        nbytes = a.nbytes
        copy = CopyKernel(engine, nbytes) if engine.is_opencl else None
        rows = []
        for name, sdt, stag, ddt, dtag, scale in CASES:
            src_md = cly.MemoryDesc(dims, sdt, tag=stag)
            dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
            attr = cly.Attr(src_scales=scale) if scale else None
            prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
            src = cly.Memory.from_numpy(src_md, engine, a)
            dst = cly.Memory(dst_md, engine)
            moved = src_md.size + dst_md.size
            t, share = paired(clayout_run(prim, stream, src, dst), copy, moved, args.repeats)
            t_np = median_seconds(numpy_version(name, a, scale), args.repeats)
            t_pt = (median_seconds(torch_version(torch, name, a, scale), args.repeats)
                    if torch else None)
            rows.append(result_row(name, prim.impl, t, moved, share, t_np, t_pt))
        rows.insert(0, copy_row(copy))
        print_table(f"reorder {shape} (f32 source, {nbytes / 1e6:.1f} MB)", rows,
                    columns(torch is not None))


if __name__ == "__main__":
    main()
