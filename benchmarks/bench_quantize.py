"""Dynamic quantization throughput (cly.Quantize): scales, zero points and
values computed on the default engine, timed in alternation with the same
device's float4 copy kernel of the same bytes. GB/s counts the source plus
the values, scales and zero points written; medians of --repeats.

Cases (issue 38's speed target: each >= 0.7 of the copy, the first two):
  f32 -> u4, groups of 1x128 along the last dim, asymmetric (f32 scales, u4 zero points)
  f32 -> f4_e2m1, MXFP4 (an e8m0 scale per 32)
  f16 and bf16 -> u4 as the first: the CPU strategy's vector kernel reads
  them itself; elsewhere a device reorder into an f32 copy runs first
  (clayout/quantize_route.py), into a buffer the Quantize keeps

Usage: python benchmarks/bench_quantize.py [--repeats N] [--shapes 4096x4096]
       [--json PATH (the numbers, for benchmarks/plot.py)]
"""
from __future__ import annotations

import argparse

import numpy as np

from common import (CopyKernel, columns, copy_row, kernel_seconds, median_seconds, paired,
                    print_table, result_row, shapes, start, write_json)

import clayout as cly
from clayout.host.quantize import check_quantize, quantize

CASES = (
    ("u4 1x128 asymmetric", dict(dst_data_type="u4", scheme="asymmetric", mask=3,
                                 groups=(1, 128))),
    ("MXFP4 (f4_e2m1, e8m0 per 32)", dict(dst_data_type="f4_e2m1", scheme="mx", mask=3,
                                         groups=(1, 32))),
    ("f16 u4 1x128 asymmetric", dict(dst_data_type="u4", scheme="asymmetric", mask=3,
                                     groups=(1, 128), src="f16")),
    ("bf16 u4 1x128 asymmetric", dict(dst_data_type="u4", scheme="asymmetric", mask=3,
                                      groups=(1, 128), src="bf16")),
)


def run_row(engine, stream, dims, case, kwargs, repeats, x):
    kwargs = dict(kwargs)
    md = cly.MemoryDesc(dims, kwargs.pop("src", "f32"))
    x = x.astype(md.dtype.numpy)
    q = cly.Quantize(md, engine=engine, **kwargs)
    src = cly.Memory.from_numpy(md, engine, x)
    outs = [cly.Memory(q.dst_md, engine), cly.Memory(q.scales_md, engine)]
    if q.zero_points_md is not None:
        outs.append(cly.Memory(q.zero_points_md, engine))
    moved = md.size + sum(m.md.size for m in outs)

    def run():
        event = q.execute(stream, src, *outs)
        stream.wait()
        return kernel_seconds(event, q)  # (--kernel-time: the last launch's)

    copy = CopyKernel(engine, moved // 2 // 16 * 16) if engine.is_opencl else None
    t, share = paired(run, copy, moved, repeats)
    spec = check_quantize(md, kwargs["dst_data_type"], kwargs["scheme"], kwargs["mask"],
                          kwargs["groups"], "e8m0" if kwargs["scheme"] == "mx" else "f32",
                          None, None)
    t_np = median_seconds(lambda: quantize(x, spec), max(1, repeats // 2))
    row = result_row(case, q.impl, t, moved, share, t_np)
    row["data"]["case"] = f"{case} {'x'.join(map(str, dims))}"
    return row, copy


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="4096x4096")
    args, engine, stream, _ = start(parser)
    rows, copies = [], []
    for dims in shapes(args.shapes):
        x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
        for case, kwargs in CASES:
            row, copy = run_row(engine, stream, dims, case, kwargs, args.repeats, x)
            rows.append(row)
            copies.append(copy)
    print_table("quantize: share of the copy kernel's rate timed alongside (>= 70% wanted)",
                [copy_row(c) for c in copies[:1]] + rows, columns(False))
    write_json(args.json, "bench_quantize.py", engine, rows, copies)


if __name__ == "__main__":
    main()
