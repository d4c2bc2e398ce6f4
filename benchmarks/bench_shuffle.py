"""Shuffle throughput: clayout on the default engine against the same device's
copy kernel (same run), NumPy (reshape/transpose) and PyTorch's channel_shuffle
where installed. GB/s counts bytes read plus bytes written; medians of --repeats.

Usage: python benchmarks/bench_shuffle.py [--repeats N] [--shapes ...] [--groups 4,3]
       [--json PATH (the numbers, for benchmarks/plot.py)]
"""
from __future__ import annotations

import argparse

import numpy as np

from common import (CopyKernel, clayout_run, cly, columns, copy_row, median_seconds, paired,
                    print_table, result_row, shapes, start, write_json)

TAGS = ("nchw", "nhwc", "nChw16c")


def numpy_shuffle(a, group):
    n, c, h, w = a.shape
    return lambda: np.ascontiguousarray(
        a.reshape(n, group, c // group, h, w).transpose(0, 2, 1, 3, 4)).reshape(n, c, h, w)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="32x256x56x56,1x272x56x56")
    parser.add_argument("--groups", default="4,3")
    args, engine, stream, torch = start(parser)
    every_row, copies = [], []
    for dims in shapes(args.shapes):
        shape = "x".join(map(str, dims))
        a = np.random.default_rng(0).standard_normal(dims, dtype=np.float32)
        copy = CopyKernel(engine, a.nbytes) if engine.is_opencl else None
        rows = []
        for group in (int(g) for g in args.groups.split(",")):
            for tag in TAGS:
                md = cly.MemoryDesc(dims, "f32", tag=tag)
                case = f"{tag} group {group}"
                try:
                    prim = cly.Shuffle(md, axis=1, group_size=group, engine=engine)
                except cly.Error as error:
                    rows.append({"case": case, "impl": f"not run: {error}"})
                    continue
                src = cly.Memory.from_numpy(md, engine, a)
                dst = cly.Memory(md, engine)
                t, share = paired(clayout_run(prim, stream, src, dst), copy, 2 * md.size,
                                  args.repeats)
                t_np = median_seconds(numpy_shuffle(a, group), args.repeats)
                t_pt = None
                if torch:
                    x = torch.from_numpy(a)
                    if tag == "nhwc":
                        x = x.contiguous(memory_format=torch.channels_last)
                    t_pt = median_seconds(lambda: torch.nn.functional.channel_shuffle(x, group),
                                          args.repeats)
                rows.append(result_row(case, prim.impl, t, 2 * md.size, share, t_np, t_pt))
                rows[-1]["data"]["case"] = f"{case} {shape}"  # one list for every shape
        rows.insert(0, copy_row(copy))
        print_table(f"shuffle {shape} f32, axis 1", rows, columns(torch is not None))
        every_row += rows
        copies.append(copy)
    write_json(args.json, "shuffle", engine, every_row, copies)


if __name__ == "__main__":
    main()
