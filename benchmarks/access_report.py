"""The access report of every benchmark case, CPU plans against GPU plans.

For each case of bench_reorder.py and bench_shuffle.py: the 128-byte lines
the first warp of 32 work-items touches per global load and store,
summed over the warp's runs, against the ideal (clayout/gpu/access.py). Plans
come from the stand-in profiles, so no device is needed; nothing is timed.

Usage: python benchmarks/access_report.py [--shapes 8x256x56x56]
"""
import argparse

import numpy as np

from bench_reorder import CASES
from common import cly, shapes

from clayout.gpu.access import access_report
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.problem import Problem

SHUFFLES = [((32, 256, 56, 56), "nchw", 4), ((32, 256, 56, 56), "nhwc", 4),
            ((32, 256, 56, 56), "nChw16c", 4), ((1, 272, 56, 56), "nchw", 4),
            ((1, 272, 56, 56), "nhwc", 4), ((1, 272, 56, 56), "nChw16c", 4)]


def problems(dims):
    for name, sdt, stag, ddt, dtag, attr, weights in CASES:
        d = weights or dims
        scales = None
        if attr == "scale":
            scales = cly.Attr(src_scales=0.5)
        elif attr == "per-channel":
            scales = cly.Attr(src_scales=cly.Scales(np.ones(d[1], np.float32), mask=2))
        yield (f"{name} {'x'.join(map(str, d))}",
               Problem("reorder", cly.MemoryDesc(d, sdt, tag=stag),
                       cly.MemoryDesc(d, ddt, tag=dtag), scales))
    for d, tag, group in SHUFFLES:
        md = cly.MemoryDesc(d, "f32", tag=tag)
        yield f"shuffle {tag} C={d[1]} g{group}", Problem("shuffle", md, md, None, (1, group))


def cell(plan, instruction):
    access = [a for a in access_report(plan) if a.instruction == instruction]
    if not access:
        return "-"
    a = access[0]
    return f"{a.lines}/{a.ideal} ({a.ratio:.2f}x)"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="8x256x56x56")
    args = parser.parse_args()
    for dims in shapes(args.shapes):
        print("| case | cpu plan: load src | cpu: store dst | gpu plan | gpu: load src "
              "| gpu: store dst |\n|---|---|---|---|---|---|")
        for name, problem in problems(dims):
            cpu = plan_kernel(problem, CPU_PROFILE)
            gpu = plan_kernel(problem, GPU_PROFILE)
            kind = "tiled" if gpu.tile else f"striped x{gpu.vec}" + (" typed" if gpu.aligned else "")
            print(f"| {name} | {cell(cpu, 'load src')} | {cell(cpu, 'store dst')} | {kind} "
                  f"| {cell(gpu, 'load src')} | {cell(gpu, 'store dst')} |")


if __name__ == "__main__":
    main()
