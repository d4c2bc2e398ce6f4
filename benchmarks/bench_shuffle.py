"""Shuffle throughput: clayout on the default engine against the same device's
copy kernel (same run), NumPy (reshape/transpose) and PyTorch's channel_shuffle
where installed. GB/s counts bytes read plus bytes written; medians of --repeats.

A second table runs the blocked shuffles whose block cuts across the group
digits (issue 36: C/G not a multiple of the block), nChw16c and nChw8c on
1xCxHxW for each C:G of --cut (H, W of the last --shapes), the channels
padded to the block where it does not divide C.

Usage: python benchmarks/bench_shuffle.py [--repeats N] [--shapes ...] [--groups 4,3]
       [--cut 272:4,116:4,58:2 (the default without --shapes; none with it)]
       [--json PATH (the numbers, for benchmarks/plot.py)]
"""
from __future__ import annotations

import argparse

import numpy as np

from common import (CopyKernel, clayout_run, cly, columns, copy_row, median_seconds, paired,
                    print_table, result_row, shapes, start, write_json)

TAGS = ("nchw", "nhwc", "nChw16c")
DEFAULT_SHAPES = "32x256x56x56,1x272x56x56"
#: C:G of the blocked shuffles whose block cuts the group digits, and their tags.
DEFAULT_CUT = "272:4,116:4,58:2"
CUT_TAGS = ("nChw16c", "nChw8c")


def numpy_shuffle(a, group):
    n, c, h, w = a.shape
    return lambda: np.ascontiguousarray(
        a.reshape(n, group, c // group, h, w).transpose(0, 2, 1, 3, 4)).reshape(n, c, h, w)


def run_row(engine, stream, torch, dims, tag, group, copy, repeats, a):
    """One shuffle timed against ``copy``: its table row (not run: why)."""
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    case = f"{tag} group {group}"
    try:
        prim = cly.Shuffle(md, axis=1, group_size=group, engine=engine)
    except cly.Error as error:
        return {"case": case, "impl": f"not run: {error}"}
    src = cly.Memory.from_numpy(md, engine, a)
    dst = cly.Memory(md, engine)
    t, share = paired(clayout_run(prim, stream, src, dst), copy, 2 * md.size, repeats)
    t_np = median_seconds(numpy_shuffle(a, group), repeats)
    t_pt = None
    if torch:
        x = torch.from_numpy(a)
        if tag == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
        t_pt = median_seconds(lambda: torch.nn.functional.channel_shuffle(x, group), repeats)
    row = result_row(case, prim.impl, t, 2 * md.size, share, t_np, t_pt)
    row["data"]["case"] = f"{case} {'x'.join(map(str, dims))}"  # one list for every shape
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=None, help=f"default {DEFAULT_SHAPES}")
    parser.add_argument("--groups", default="4,3")
    parser.add_argument("--cut", default=None,
                        help=f"C:G[,C:G...]: the blocked shuffles of the second table "
                             f"(default {DEFAULT_CUT} when --shapes is not given, none "
                             f"when it is)")
    args, engine, stream, torch = start(parser)
    cut = args.cut if args.cut is not None else (DEFAULT_CUT if args.shapes is None else "")
    every_row, copies, done = [], [], set()
    for dims in shapes(args.shapes or DEFAULT_SHAPES):
        shape = "x".join(map(str, dims))
        a = np.random.default_rng(0).standard_normal(dims, dtype=np.float32)
        copy = CopyKernel(engine, a.nbytes) if engine.is_opencl else None
        rows = []
        for group in (int(g) for g in args.groups.split(",")):
            for tag in TAGS:
                rows.append(run_row(engine, stream, torch, dims, tag, group, copy,
                                    args.repeats, a))
                done.add((dims, tag, group))
        rows.insert(0, copy_row(copy))
        print_table(f"shuffle {shape} f32, axis 1", rows, columns(torch is not None))
        every_row += rows
        copies.append(copy)
    if cut:
        _, _, h, w = shapes(args.shapes or DEFAULT_SHAPES)[-1]
        rows, cut_copies = [], {}
        for channels, group in (tuple(int(x) for x in c.split(":")) for c in cut.split(",")):
            dims = (1, channels, h, w)
            a = np.random.default_rng(0).standard_normal(dims, dtype=np.float32)
            for tag in CUT_TAGS:
                if (dims, tag, group) in done:  # already in the first tables
                    continue
                copy = None
                if engine.is_opencl:  # as many bytes as the padded layout holds
                    nbytes = cly.MemoryDesc(dims, "f32", tag=tag).size
                    copy = cut_copies.setdefault(nbytes, CopyKernel(engine, nbytes))
                rows.append(run_row(engine, stream, torch, dims, tag, group, copy,
                                    args.repeats, a))
                rows[-1]["case"] = f"{tag} group {group} C={channels}"
        for _, copy in sorted(cut_copies.items(), reverse=True):
            rows.insert(0, copy_row(copy))
            rows[0]["case"] += f" {2 * copy.nbytes / 1e6:.1f} MB moved"
        print_table(f"blocked shuffles whose block cuts the group digits, 1xCx{h}x{w} f32, "
                    f"axis 1", rows, columns(torch is not None))
        every_row += rows
        copies += cut_copies.values()
    write_json(args.json, "shuffle", engine, every_row, copies)


if __name__ == "__main__":
    main()
