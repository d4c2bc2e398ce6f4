"""The CPU strategy's run transpose (gpu/shapes.py): register transposes
over runs that are contiguous on one side and gathered from several loops
on the other.

A register transpose (``plan_register_transpose``) needs one loop that the
source steps by one and divides by B. A weights format's does not: oihw ->
OIhw16i16o's source runs are hw (9) then i (16 steps of 9), 144 floats in
one piece; in the destination hw steps by 256 and i by 16. So the columns
here are such a run of the source (levels whose source steps chain 1, e1,
e1 x e2, ...) and the rows a run of the destination (levels whose
destination steps chain the same way from the innermost loop). Each
work-item holds both runs whole and moves them as BxB tiles: B rows loaded
as vectors of B consecutive source elements, transposed, and stored as B
vectors of B consecutive destination elements, at offsets from constant
tables (``run_tables``). OIhw16i16o -> oihw is the same with the sides'
roles swapped (rows hw, i; columns o). Where the source's run would need
the destination's innermost loop (oihw -> IOhw16o16i: i steps 9 and hw
holds 9), bit copies take rows that overlap in the source instead
(``_overlapped``): each row loads B elements from its start, the tile
keeps e of its columns.

Measured on PoCL and Intel's runtime (2 cores, AMD EPYC), f32 oihw ->
OIhw16i16o 256x256x3x3, a prototype on the same buffers in turns with the
float4 copy: 0.87-0.89 and 0.66-0.70 of copy, against 0.58 and 0.43-0.44
for the unrolled block of 16 x 16 scalar loads (gpu/plan_unrolled.py);
oihw -> IOhw16o16i 0.77-0.83 and 0.73-0.76, against 0.50 and 0.41.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .plan_common import (chunks, heavy_work_group, offset_bound, source_step,
                          split_at_source_blocks)
from .plan_cpu import transposes_in_registers
from .plan_types import KernelPlan, constant_offsets, dim_offset
from .plan_unrolled import separable


def plan_run_transpose(loops) -> KernelPlan | None:
    """The run-transpose plan of the problem of ``loops`` (gpu/shapes.Loops),
    or None where no B of ``Tuning.block_sizes`` (``byte_block_sizes`` into
    bytes) gives both runs, each within 16 x ``Tuning.unroll_elements``
    elements a work-item, free of the dims the kernel indexes (padding,
    per-slice values)."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    src_md, dst_md = common["src_md"], common["dst_md"]
    if not transposes_in_registers(loops) or any(arg.per_slice for arg in common["args"]):
        return None  # (per-slice values would need each row's indices)
    tuning = profile.tuning
    sizes = tuning.byte_block_sizes if dst_md.dtype.bits == 8 else tuning.block_sizes
    for b in sizes:
        found = _runs(src_md, split_at_source_blocks(list(loops.levels), src_md),
                      loops.special, b, 16 * tuning.unroll_elements, problem.moves_bits)
        if found is None:
            continue
        levels, unrolled = found
        dims = {lv.dims[0] for j, lv in enumerate(levels) if j in unrolled and not lv.merged}
        if not all(separable(src_md, levels, set(unrolled), d) for d in dims):
            continue
        outer = [j for j in range(len(levels)) if j not in unrolled]
        items = math.prod(levels[j].extent for j in outer)
        if items < profile.compute_units:
            continue
        # Work-items in the destination's order: neighbours store next to
        # each other (oihw -> IOhw16o16i on Intel's runtime: 0.058 ms, against
        # 0.083 reading next to each other; PoCL level, weights whose runs
        # do not overlap the same either way).
        fastest = tuple(sorted(outer, key=lambda j: levels[j].dst_stride))
        size = math.prod(levels[j].extent for j in unrolled)
        plan = KernelPlan(levels=tuple(levels), vec=b, block=b, items=items,
                          chunks=chunks(items, profile),
                          wide_index=offset_bound(src_md, dst_md, items * size) >= 2**31,
                          fastest=fastest, unrolled=unrolled, **common)
        tables = run_tables(plan)
        if tables is not None:  # (blocks of up to 16 KiB: heavy work-items)
            return replace(plan, typed_store=_typed_store(plan, tables[1], profile),
                           work_group=heavy_work_group(plan.launch_items, plan.work_group,
                                                       profile))
    return None


def _typed_store(plan: KernelPlan, columns, profile) -> bool:
    """Whether every column a tile stores starts on its own size (the
    constant part of the destination's offset, each outer loop's step and
    each column's offset in the block are multiples of B; rows go by B):
    then a typed store, which PoCL makes one instruction where it splits
    vstore16 of 2-byte elements into 16 (oihw -> bf16 OIhw16i16o: 21,000
    instructions a work-item, 2,600 of them vpextrd). Elements of 4 bytes
    store whole either way."""
    dst, b = plan.dst_md, plan.block
    if dst.dtype.bits >= 32 or b * dst.dtype.bits // 8 > profile.base_align:
        return False
    _, dst_const = constant_offsets(plan.src_md, dst, plan.linear)
    steps = [lv.dst_stride for j, lv in enumerate(plan.levels) if j not in plan.unrolled]
    return all(x % b == 0 for x in [dst_const, *steps, *columns])


def _runs(src, levels, special, b: int, most: int, overlap: bool):
    """(levels, the block's level indices) for tiles of ``b``: the source's
    run from the loop it steps by one, the destination's from its innermost
    loop (a loop split where a part of it completes a multiple of b), or
    None. With ``overlap`` (bit copies), where the source's run reaches the
    innermost loop before b, ``_overlapped``'s."""
    levels = list(levels)
    inner = levels[-1]
    if inner.dst_stride != 1 or source_step(src, inner) == 1:
        return None
    start = next((lv for lv in levels[:-1] if source_step(src, lv) == 1), None)
    if start is None:
        return None
    found = list(levels)
    columns = _chain(found, start, lambda lv: source_step(src, lv), b, special, ())
    rows = None if columns is None else _chain(found, found[-1], lambda lv: lv.dst_stride, b,
                                               special, columns)
    if rows is not None:
        levels = found
    elif overlap:
        rows, columns = _overlapped(src, levels, special, b) or (None, None)
    if rows is None:
        return None
    block = rows + columns
    if math.prod(lv.extent for lv in block) > most or len(block) == len(levels):
        return None
    return levels, tuple(j for j, lv in enumerate(levels) if any(lv is x for x in block))


def _overlapped(src, levels: list, special, b: int):
    """(rows, columns) where the destination's innermost loop steps the
    source by e < b, and the loops chained by source step from 1 fill
    exactly e (oihw -> IOhw16o16i: i steps 9, hw holds 9): each of b rows
    (b steps of that loop) reads b elements from its start, the next rows'
    first elements with them, and the tile keeps e of its columns; rows
    whose b elements would pass the block's b x e read e. ``levels`` is
    changed in place where the innermost loop is split. None where not."""
    inner = levels[-1]
    e = source_step(src, inner)
    if not 1 < e < b or inner.extent % b or set(inner.dims) & set(special):
        return None
    columns, length = [], 1
    while length < e:
        level = next((lv for lv in levels[:-1] if source_step(src, lv) == length
                      and not any(lv is x for x in columns)), None)
        if level is None or set(level.dims) & set(special) or e % (length * level.extent):
            return None
        columns.append(level)
        length *= level.extent
    if inner.extent > b:
        levels[-1:] = inner.split(b)
    return [levels[-1]], columns


def _chain(levels: list, start, step, b: int, special, taken):
    """The loops of one run, from ``start``: each next loop the one whose
    step (``step``) is the run's length so far, until the length divides by
    ``b`` (a loop split where its inner part gets there). ``levels`` is
    changed in place where a loop is split. None where the run stops short,
    or holds a dim the kernel indexes, or a loop of ``taken``."""
    chain, length, level = [], 1, start
    while True:
        if level is None or any(level is x for x in taken) or set(level.dims) & set(special):
            return None
        part = next((t for t in range(1, level.extent + 1)
                     if level.extent % t == 0 and length * t % b == 0), level.extent)
        if part < level.extent:
            j = next(k for k, lv in enumerate(levels) if lv is level)
            levels[j:j + 1] = level.split(part)
            level = levels[j + 1]
        chain.append(level)
        length *= part
        if length % b == 0:
            return chain
        level = next((lv for lv in levels if step(lv) == length
                      and not any(lv is x for x in chain)), None)


def run_tables(plan: KernelPlan):
    """(rows, columns) of a run-transpose plan: the source offset of each
    row of the destination's run (its position in that run: the
    destination's offset), and the destination offset of each column of
    the source's run (likewise), both from the work-item's bases; None
    where an element's offsets are not row + column (the plan is then
    refused). Element (r, m) is read at rows[r] + m and written at
    columns[m] + r."""
    levels, src = plan.levels, plan.src_md
    block = [levels[j] for j in plan.unrolled]
    row_levels, length = [], 1
    while length % plan.block:  # the destination's run: steps 1, e1, e1 x e2, ...
        level = next((lv for lv in block if lv.dst_stride == length
                      and not any(lv is x for x in row_levels)), None)
        if level is None:
            return None
        row_levels.append(level)
        length *= level.extent
    column_levels = [lv for lv in block if not any(lv is x for x in row_levels)]
    row_dims = {d for lv in row_levels for d in lv.dims}
    if not column_levels or row_dims & {d for lv in column_levels for d in lv.dims}:
        return None
    rows = _offsets(src, row_levels, length)
    columns = _offsets(src, column_levels, math.prod(lv.extent for lv in column_levels))
    if rows is None or columns is None:
        return None
    # rows: position -> (source, destination offset); columns the same.
    if any(d != r for r, (_, d) in enumerate(rows)) or any(
            s != m for m, (s, _) in enumerate(sorted(columns, key=lambda sd: sd[0]))):
        return None
    by_source = sorted(columns, key=lambda sd: sd[0])
    return [s for s, _ in rows], [d for _, d in by_source]


def _offsets(src, levels, count: int):
    """(source offset, destination offset) from the base of every element
    the ``levels`` reach together, ordered by destination offset; None
    where two share an offset."""
    out = [(0, 0)]
    for level in levels:
        out = [(s + _source_step(src, level, a), d + a * level.dst_stride)
               for s, d in out for a in range(level.extent)]
    if len(out) != count or len({d for _, d in out}) != count or len({s for s, _ in out}) != count:
        return None
    return sorted(out, key=lambda sd: sd[1])


def _source_step(src, level, a: int) -> int:
    """The source offset of step ``a`` of ``level`` from its first (the run's
    levels hold one dim each, or merged dims at one stride)."""
    if level.merged:
        return a * level.src_stride
    (d,) = level.dims
    return dim_offset(src, d, a * level.mult) - dim_offset(src, d, 0)
