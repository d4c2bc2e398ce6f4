"""The access report of every benchmark case, CPU plans against GPU plans.

For each case of bench_reorder.py and bench_shuffle.py, the figures gpusim
measures on a kernel, from the access report (clayout/gpu/access.py: the
plan's accesses replayed for its first work-group, warps of 32): distinct
bytes per warp-level global load and store, their sector efficiency
(fewest 32-byte sectors over sectors touched), and the local-memory bank
conflicts (wavefronts over the fewest). Plans come from the stand-in
profiles, so no device is needed; nothing is timed.

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
GROUPS = (1, 32)  # the grouped cases' scales (and u4 zero points): one per 1x32


def attr(kind, sdt, dims):
    """The attribute of a benchmark case (values do not change the plan)."""
    if kind == "scale":
        return cly.Attr(src_scales=0.5)
    if kind == "per-channel":
        return cly.Attr(src_scales=cly.Scales(np.ones(dims[1], np.float32), mask=2))
    if kind == "groups":
        count = dims[0] * dims[1] // GROUPS[1]
        scales = cly.Scales(np.ones(count, np.float32), mask=3, groups=GROUPS)
        zero_points = (cly.ZeroPoints(np.zeros(count, np.int32), mask=3, groups=GROUPS)
                       if sdt == "u4" else None)
        return cly.Attr(src_scales=scales, src_zero_points=zero_points)
    return None


def problems(dims):
    for name, sdt, stag, ddt, dtag, kind, weights in CASES:
        d = weights or dims
        yield (f"{name} {'x'.join(map(str, d))}",
               Problem("reorder", cly.MemoryDesc(d, sdt, tag=stag),
                       cly.MemoryDesc(d, ddt, tag=dtag), attr(kind, sdt, d)))
    for d, tag, group in SHUFFLES:
        md = cly.MemoryDesc(d, "f32", tag=tag)
        yield f"shuffle {tag} C={d[1]} g{group}", Problem("shuffle", md, md, None, (1, group))


def kind(plan) -> str:
    if plan.tile is not None:
        return f"tiled {plan.tile.read.vec}/{plan.tile.write.vec}"
    if plan.block:
        return f"{plan.shape} {plan.block}x{plan.block}"
    return f"striped x{plan.vec}" + (" typed" if plan.aligned else "")


def cells(plan, local: bool) -> str:
    r = access_report(plan)
    text = (f"{kind(plan)} | {r.load_bytes:.0f} | {r.load_efficiency:.2f} "
            f"| {r.store_bytes:.0f} | {r.store_efficiency:.2f}")
    return text + (f" | {r.bank_conflicts:.2f}" if local else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="8x256x56x56")
    args = parser.parse_args()
    for dims in shapes(args.shapes):
        print("| case | cpu plan | ld B | ld eff | st B | st eff "
              "| gpu plan | ld B | ld eff | st B | st eff | lds conf |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, problem in problems(dims):
            cpu = plan_kernel(problem, CPU_PROFILE)
            gpu = plan_kernel(problem, GPU_PROFILE)
            print(f"| {name} | {cells(cpu, False)} | {cells(gpu, True)} |")


if __name__ == "__main__":
    main()
