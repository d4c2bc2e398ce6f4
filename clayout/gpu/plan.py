"""Kernel plans: everything a generated reorder/shuffle kernel bakes in, as plain data.

A plan walks the destination in its own physical order (its "levels": each
outer dim, then each inner block, outermost first), so consecutive work-items
write consecutive addresses. The source offset of an element is the sum of
per-dim offset terms (the layout is separable), each with constant divisor,
modulus and stride, so divisions are by constants only.

``plan_kernel(problem, profile)`` chooses, from the device profile, how each
work-item moves its elements:

- ``vector``: the innermost loop is contiguous on both sides: vloadN/vstoreN;
- ``block``: the destination's innermost loop strides through the source:
  B vectors loaded along the source, converted, transposed in registers and
  stored as B vectors along the destination;
- otherwise element by element over a run of the innermost loop.

Each work-item then repeats this for ``chunks`` items spaced by the global
size, so that a launch has about as many work-items as the device runs well.
Nothing here touches OpenCL: plans can be made and rendered without a device.

This module builds the levels (a shuffle seen as a reorder of one more
dim) and hands them to the strategy's kernel shapes, tried in order
(shapes.py): for the CPU strategy register transposes, unrolled blocks,
runs per work-item (plan_cpu.py, plan_unrolled.py); for the GPU strategy
boxes tiled through local memory (tile.py), striped walks (plan_gpu.py);
all with plan_common.py's checks of vectors, alignment and 4-bit
destinations. The plan's types, and the queries the
renderer and the access report share, are in plan_types.py.
"""
from __future__ import annotations

from ..memory_desc import MemoryDesc
from ..problem import Problem
from .plan_types import KernelPlan, Level, kernel_args, kind_mask
from .profile import DeviceProfile
from .shapes import Loops, first_plan


def _dst_levels(md: MemoryDesc) -> list[Level]:
    """The destination's loops, outermost first, over its own padded extent."""
    blocks = md.blocks
    own = md.own_padded_dims
    order = sorted(range(md.ndims), key=lambda d: (-md.strides[d], d))
    levels = [Level((d,), own[d] // blocks[d], md.strides[d], blocks[d]) for d in order]
    stride = 1
    inner = []
    mult = [1] * md.ndims
    for size, d in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        inner.append(Level((d,), size, stride, mult[d]))
        mult[d] *= size
        stride *= size
    return levels + inner[::-1]


def _split_axis(md: MemoryDesc, axis: int, sizes: tuple[int, int], low: int):
    """``md`` with dim ``axis`` seen as two dims of ``sizes`` (at ``axis`` and
    ``axis + 1``); new dim ``low`` (0 or 1) is the low digit of the position
    along the axis, the other the high one. A block on the axis must fall on
    the digits whole: inside the low digit, or holding it whole. Returns the
    view, or None when the block does not fall so."""
    lo, hi = axis + low, axis + 1 - low
    lo_range = sizes[low]
    stride, block = md.strides[axis], md.blocks[axis]
    blocks = [(size, d + (d > axis)) for size, d in zip(md.inner_blks, md.inner_idxs)]
    on_axis = [i for i, (_, d) in enumerate(blocks) if d == axis]
    if block == 1:
        strides = {lo: stride, hi: stride * lo_range}
    elif len(on_axis) != 1 or md.dims[axis] % block or md.padded_offsets[axis] % block:
        return None
    elif lo_range % block == 0:  # the block lies inside the low digit
        blocks[on_axis[0]] = (block, lo)
        strides = {lo: stride, hi: stride * (lo_range // block)}
    elif block % lo_range == 0:  # the low digit lies inside the block
        blocks[on_axis[0]:on_axis[0] + 1] = [(block // lo_range, hi), (lo_range, lo)]
        strides = {hi: stride, lo: stride * (sizes[1 - low] * lo_range // block)}
    else:
        return None

    def put(values, new):
        return values[:axis] + tuple(new) + values[axis + 1:]

    return md._replace(
        dims=put(md.dims, sizes), padded_dims=put(md.padded_dims, sizes),
        padded_offsets=put(md.padded_offsets, (0, 0)),
        strides=put(md.strides, (strides[axis], strides[axis + 1])),
        offset0=md.offset0 + md.padded_offsets[axis] // block * stride,
        inner_blks=tuple(size for size, _ in blocks), inner_idxs=tuple(d for _, d in blocks))


def shuffle_as_reorder(src_md: MemoryDesc, dst_md: MemoryDesc, axis: int, group: int):
    """A shuffle is a plain reorder of one more dim: with C = rows x group,
    the source holds (u, v) at position u*G + v along the axis, the
    destination at u + v*rows. Seen so, the kernel plan finds its vectors and
    register transposes by itself. Returns (src view, dst view), or None when
    a block on the axis cuts across the two digits."""
    rows = src_md.dims[axis] // group
    src = _split_axis(src_md, axis, (rows, group), low=1)
    dst = _split_axis(dst_md, axis, (rows, group), low=0)
    return None if src is None or dst is None else (src, dst)


def plan_kernel(problem: Problem, profile: DeviceProfile) -> KernelPlan:
    """Plan the kernel that runs ``problem`` on a device of ``profile``."""
    src_md, dst_md, shuffle = problem.src_md, problem.dst_md, problem.shuffle
    tuning = profile.tuning
    kinds = problem.attr_kinds
    if shuffle is not None:
        views = shuffle_as_reorder(src_md, dst_md, *shuffle)
        if views is not None:  # a shuffle has no attributes
            (src_md, dst_md), shuffle = views, None
    special = set()  # dims whose logical index the kernel needs on its own
    for kind in kinds[:4]:
        mask = kind_mask(kind)
        special |= {d for d in range(dst_md.ndims) if mask and mask >> d & 1}
    if shuffle is not None:
        special.add(shuffle[0])
    padded = {d for d in range(dst_md.ndims) if dst_md.own_padded_dims[d] != dst_md.dims[d]}
    special |= padded

    # A dim the source does not block, and the kernel needs no index of, is
    # linear: each destination loop over it steps the source by a constant.
    linear = {d for d in range(src_md.ndims) if src_md.blocks[d] == 1 and d not in special}
    levels = []
    for level in _dst_levels(dst_md):
        if level.extent == 1:
            continue  # a loop of one step adds nothing
        (d,) = level.dims
        if d in linear:
            level = Level(level.dims, level.extent, level.dst_stride, level.mult,
                          level.mult * src_md.strides[d])
        prev = levels[-1] if levels else None
        if (level.merged and prev is not None and prev.merged
                and prev.dst_stride == level.dst_stride * level.extent
                and prev.src_stride == level.src_stride * level.extent):
            levels[-1] = Level(prev.dims + level.dims, prev.extent * level.extent,
                               level.dst_stride, 1, level.src_stride)
        else:
            levels.append(level)
    if not levels:
        levels.append(Level((0,), 1, 0, 1, 0 if 0 in linear else None))

    compute = "double" if "f64" in (src_md.data_type, dst_md.data_type) else "float"
    common = dict(name=problem.name, strategy=profile.strategy, src_md=src_md, dst_md=dst_md,
                  attr_kinds=kinds, shuffle=shuffle, compute=compute, linear=frozenset(linear),
                  args=kernel_args(kinds),
                  work_group=min(tuning.work_group, profile.max_work_group_size))
    return first_plan(Loops(problem, profile, tuple(levels), frozenset(special),
                            frozenset(padded), common))
