"""``python -m clayout.explain``: how a reorder or shuffle would run.

Prints the plan's strategy, NDRange and local size, bytes per work-item,
and its access report (clayout/gpu/access.py): the kernel's memory
accesses by its first work-group (``--all-groups``: every one), replayed
from the plan and counted as the gpusim plugin counts the real kernel's,
per instruction and for the kernel: distinct bytes per warp-level global
load and store, sector efficiency, local-memory bank conflicts. Without
``--device`` it plans for a stand-in profile (``--strategy cpu``: PoCL on
a CPU, ``gpu``: an NVIDIA H200's numbers), so no OpenCL device is needed;
with ``--device`` it creates the primitive on the OpenCL device and prints
its ``explain()``.

Example::

    python -m clayout.explain --src f32:nchw --dst f32:nhwc --dims 8x256x56x56
    python -m clayout.explain --src f32:nChw16c --dims 1x272x56x56 --shuffle 1:4
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from .attr import Attr, Scales
from .errors import Error
from .memory_desc import MemoryDesc


def _md(text: str, dims) -> MemoryDesc:
    data_type, _, tag = text.partition(":")
    return MemoryDesc(dims, data_type, tag=tag or None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clayout.explain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", required=True, help="TYPE:TAG, e.g. f32:nchw")
    parser.add_argument("--dst", help="TYPE:TAG (default: the source's)")
    parser.add_argument("--dims", required=True, help="e.g. 8x256x56x56")
    parser.add_argument("--scales", choices=("tensor", "per-channel"),
                        help="source scales on the whole tensor or per dim 1")
    parser.add_argument("--shuffle", metavar="AXIS:GROUP", help="a shuffle instead of a reorder")
    parser.add_argument("--strategy", choices=("cpu", "gpu"), default="gpu",
                        help="the stand-in profile to plan for (default: gpu)")
    parser.add_argument("--device", action="store_true",
                        help="create the primitive on the OpenCL device instead")
    parser.add_argument("--all-groups", action="store_true",
                        help="replay every work-group of a stand-in plan, not only the first "
                             "(slow for big launches)")
    args = parser.parse_args(argv)
    if args.all_groups and args.device:
        parser.error("--all-groups replays a stand-in profile's plan: not with --device")
    try:
        dims = tuple(int(n) for n in args.dims.split("x"))
        src = _md(args.src, dims)
        dst = _md(args.dst, dims) if args.dst else src
        attr = None
        if args.scales == "tensor":
            attr = Attr(src_scales=2.0)
        elif args.scales == "per-channel":
            attr = Attr(src_scales=Scales(np.linspace(0.5, 2, dims[1], dtype=np.float32), mask=2))
        print(_explain(src, dst, attr, args))
    except (Error, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _explain(src, dst, attr, args) -> str:
    dims = src.dims
    if args.device:
        from . import Engine, Reorder, Shuffle
        engine = Engine("opencl")
        if args.shuffle:
            axis, group = (int(n) for n in args.shuffle.split(":"))
            return Shuffle(src, axis=axis, group_size=group, engine=engine).explain()
        return Reorder(src, dst, attr=attr, engine=engine).explain()
    from .gpu.access import format_report
    from .gpu.plan import plan_kernel
    from .gpu.profile import CPU_PROFILE, GPU_PROFILE
    from .problem import Problem
    if args.shuffle:
        axis, group = (int(n) for n in args.shuffle.split(":"))
        moves = group not in (1, dims[axis])  # else every element stays where it is
        problem = Problem("shuffle", src, src, None, (axis, group) if moves else None)
    else:
        problem = Problem("reorder", src, dst, attr)
    profile = GPU_PROFILE if args.strategy == "gpu" else CPU_PROFILE
    plan = plan_kernel(problem, profile)
    report = format_report(plan, all_groups=args.all_groups)
    return f"{plan.name} on the {profile.name} stand-in profile\n{report}"


if __name__ == "__main__":
    sys.exit(main())
