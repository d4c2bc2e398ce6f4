"""The unrolled kernel shape: each work-item moves one block of elements
whose offsets inside the block are compile-time constants.

The block is a few of the destination's loops (``KernelPlan.unrolled``):
its innermost ones, up to ``Tuning.unroll_elements`` elements, plus a tile
of the loop the source steps by one, so that both sides' contiguous runs
fall inside the block; a shuffle's axis lies in it whole (its order is then
a table of constants). The work-item splits its number into the other
loops' indices once, and every element of the block is then one load and
one store at ``base + constant``: no division per element, which is what
made weights formats (OIhw4i16o4i: divisions by 16, 4 and 9 per element)
and blocked shuffles whose block cuts the group digits (C=272, G=4 over
nChw16c) instruction-bound. Measured on PoCL and Intel's CPU runtime,
f32 oihw -> OIhw4i16o4i 512x512x3x3 in turns with a float4 copy: 0.82-0.92
of copy with float4 stores of four gathered elements (0.14-0.25 before).

The block's constant offsets need each dim's offset to split into the
part of the loops outside the block plus the part of the loops inside
(``separable``: a block of a dim holds whole source blocks of it, or lies
inside one); a problem where it does not is left to the other shapes.
"""
from __future__ import annotations

import math

import numpy as np

from ..memory_desc import MemoryDesc
from .plan_common import (chunks, offset_bound, source_order, source_step,
                          split_at_source_blocks)
from .plan_types import KernelPlan, Level, constant_offsets, dim_offset

#: A shuffle's whole axis lies in one block: up to this many elements.
_MAX_SHUFFLE_BLOCK = 4096


def _indices(levels, chosen) -> np.ndarray:
    """Every logical index the loops ``chosen`` (of one dim) reach together."""
    index = np.zeros(1, np.int64)
    for j in chosen:
        index = (index[:, None] + np.arange(levels[j].extent) * levels[j].mult).ravel()
    return index


def separable(src: MemoryDesc, levels, unrolled: set, d: int) -> bool:
    """Dim d's source offset at outer index o plus block index l is its
    offset at o plus a constant of l, over every (o, l) the loops reach
    (False past 2^22 pairs: not worth proving)."""
    own = [j for j, lv in enumerate(levels) if not lv.merged and lv.dims == (d,)]
    outer = _indices(levels, [j for j in own if j not in unrolled])
    inner = _indices(levels, [j for j in own if j in unrolled])
    if outer.size * inner.size > 1 << 22:
        return False

    def at(i):  # (a dim without offset terms adds 0: a scalar, broadcast)
        return np.broadcast_to(np.asarray(dim_offset(src, d, i), np.int64), i.shape)

    table = at(outer[:, None] + inner[None, :]) - at(outer)[:, None]
    return bool(np.all(table == (at(inner) - at(np.zeros(1, np.int64)))[None, :]))


def choose_block(src: MemoryDesc, levels: list[Level], shuffle, budget: int, total: int,
                 most: int = _MAX_SHUFFLE_BLOCK):
    """(levels, the block's level indices), or None: a shuffle's whole axis
    (up to ``most`` elements), then the destination's innermost loops while
    the block stays within ``budget`` elements (a tile of the innermost one
    where it alone is longer), then a tile of the loop the source steps by
    one where the block lacks it (up to 16 steps, ``total`` elements in
    all). None where the block would take every loop, or a dim's offset
    does not split into outer and block parts (``separable``)."""
    levels = list(levels)
    inner = levels[-1]
    if inner.extent > budget:  # (a long innermost loop: a tile of it)
        part = next((t for t in (256, 128, 64, 32, 16, 8, 4, 2) if t <= budget
                     and inner.extent % t == 0), None)
        if part is None:
            return None
        levels[-1:] = inner.split(part)
    chosen, size = set(), 1
    if shuffle is not None:  # the axis first, whole: the rest fills what is left
        chosen = {j for j, lv in enumerate(levels) if not lv.merged and lv.dims == (shuffle[0],)}
        size = math.prod(levels[j].extent for j in chosen)
        if size > most:
            return None
    for j in reversed(range(len(levels))):
        if j in chosen:
            continue
        if size * levels[j].extent > budget:
            break
        chosen.add(j)
        size *= levels[j].extent
    steps = [source_step(src, lv) for lv in levels]
    if 1 in steps and not any(steps[j] == 1 for j in chosen):
        j = steps.index(1)
        level = levels[j]
        tile = next((t for t in (level.extent, 16, 8, 4, 2) if level.extent % t == 0
                     and t <= 16 and size * t <= total), 1)
        # (none fits: the loop stays outside, stepped fastest by work-items)
        if 1 < tile < level.extent:  # the tile as a loop of its own, inside the rest
            outer, part = level.split(tile)
            levels[j:j + 1] = [outer, part]
            chosen = {k + (k > j) for k in chosen} | {j + 1}
        elif tile > 1:
            chosen.add(j)
        size *= tile
    if len(chosen) == len(levels) or size < 4:
        return None  # (no loop left to spread over work-items, or no block worth it)
    dims = {lv.dims[0] for j, lv in enumerate(levels) if j in chosen and not lv.merged}
    if not all(separable(src, levels, chosen, d) for d in dims):
        return None
    return levels, tuple(sorted(chosen))


def serves(common, levels) -> bool:
    """The problems the unrolled shape is for: a shuffle whose block cuts
    across the group's digits (the shapes before it serve the others), a
    reorder between layouts of which one is blocked (weights formats), one
    of 4-bit elements (whose runs otherwise go element by element), or a
    transpose the register transposes left, whose destination's innermost
    loop steps through the source (nchw -> nhwc with 3 channels: 0.10-0.14
    of copy element by element on PoCL and Intel's runtime, 0.55-0.82 as
    blocks of 3 x 96 reading whole source lines). Double arithmetic keeps
    the other shapes; ``plan_unrolled`` then leaves the problems whose
    innermost loop vectors serve."""
    src, dst = common["src_md"], common["dst_md"]
    if common["compute"] != "float":
        return False
    if common["shuffle"] is not None:
        return True
    return bool(src.inner_blks or dst.inner_blks or src.dtype.packed or dst.dtype.packed
                or source_step(src, levels[-1]) != 1)


def plan_unrolled(loops) -> KernelPlan | None:
    """The unrolled plan of the problem of ``loops`` (gpu/shapes.Loops), or
    None where the shape does not serve it (see ``serves`` and
    ``choose_block``)."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    src_md, dst_md = common["src_md"], common["dst_md"]
    if profile.tuning.unroll_elements < 4 or not serves(common, loops.levels):
        return None
    levels = split_at_source_blocks(list(loops.levels), src_md)
    weights = max(sum(b > 1 for b in md.blocks) for md in (src_md, dst_md)) >= 2
    if (source_step(src_md, levels[-1]) == 1 and common["shuffle"] is None
            and not (weights and levels[-1].extent < 64)):
        # The innermost loop is contiguous on both sides: vectors serve it.
        # Not the short runs of a weights format (hwio -> OIhw16i16o: 16
        # floats a work-item, 0.42 of copy on Intel's runtime; its block of
        # 16 x 16 at 0.66).
        return None
    budget = profile.tuning.unroll_elements
    # (a source tile up to twice the budget: at 4x, gfx90a spilled 900-1200
    # bytes of OIhw16i16o -> oihw's 576-element blocks to scratch, make gcn)
    chosen = choose_block(src_md, levels, common["shuffle"], budget, 2 * budget)
    if chosen is None:
        return None
    vec = _run_width(problem, common, *chosen)
    if (vec == 1 or problem.attr_kinds[4] or any(arg.per_slice for arg in common["args"])
            or dst_md.dtype.packed or src_md.dtype.packed):
        # Elements written one by one (a load, a conversion, per-slice values,
        # a padding test each) make a long kernel: a block of a quarter the
        # elements (PoCL took minutes to build a block of 616 f16 -> u8
        # elements with a sum, 126 KB of C). So do nibbles, each its own
        # byte load: NVIDIA's compiler spilled 288 bytes of an s4 block of
        # 512 nibbles (OIhw16i16o -> oihw, make ptx).
        chosen = choose_block(src_md, levels, common["shuffle"], budget // 4, budget // 4,
                              _MAX_SHUFFLE_BLOCK // 4)
        if chosen is None:
            return None
        vec = _run_width(problem, common, *chosen)
    levels, unrolled = chosen
    if dst_md.dtype.packed and not (vec == 2 and _whole_bytes(common, levels, unrolled)):
        return None
    outer = [j for j in range(len(levels)) if j not in unrolled]
    items = math.prod(levels[j].extent for j in outer)
    if items < profile.compute_units:
        return None  # (blocks for fewer work-items than the device runs: other shapes)
    # Work-items step the outer loop that moves least in the source fastest
    # (neighbours read neighbouring source lines), then the destination's order.
    first = source_order(src_md, levels, outer)[0]
    tile = _line_tile(common, levels, first, profile.tuning.line_tile_lines)
    if tile > 1:  # the block takes whole lines of the fastest loop
        levels[first:first + 1] = levels[first].split(tile)
        unrolled = tuple(sorted({j + (j > first) for j in unrolled} | {first + 1}))
        outer = [j for j in range(len(levels)) if j not in unrolled]
        items = math.prod(levels[j].extent for j in outer)
        first = source_order(src_md, levels, outer)[0]
    fastest = (first,) + tuple(j for j in reversed(outer) if j != first)
    size = math.prod(levels[j].extent for j in unrolled)
    bound = offset_bound(src_md, dst_md, items * size)
    return KernelPlan(levels=tuple(levels), vec=vec,
                      items=items, chunks=chunks(items, profile), wide_index=bound >= 2**31,
                      fastest=fastest, unrolled=unrolled, **common)


#: The bytes of a CPU's cache line (every x86 and Arm CPU OpenCL runs on).
CACHE_LINE = 64


def _line_tile(common, levels, first: int, fewest: int) -> int:
    """The steps of loop ``first`` (the one work-items step fastest) that a
    blocked shuffle's block takes so that each source line it reads is
    read whole (1: none). A block of nChw8c's 272 channels reads 34 lines,
    planes 100,352 bytes apart, 32 bytes of each a pixel: those planes
    share two sets of the 12-way L1 cache, so the next pixel found its
    lines evicted. Only for 4-byte elements (a block of 2- or 1-byte
    elements spends more on lanes than the lines save) reading at least
    ``fewest`` lines of the shuffle's axis a step."""
    src = common["src_md"]
    if common["shuffle"] is None or src.dtype.bits != 32:
        return 1
    axis = common["shuffle"][0]
    step = source_step(src, levels[first]) * 4
    per_line = CACHE_LINE // 4
    lines = {dim_offset(src, axis, p) // per_line for p in range(src.dims[axis])}
    if not 0 < step < CACHE_LINE or CACHE_LINE % step or len(lines) < fewest:
        return 1
    tile = CACHE_LINE // step
    return tile if levels[first].extent % tile == 0 and levels[first].extent > tile else 1


def _whole_bytes(common, levels, unrolled) -> bool:
    """A 4-bit destination's pairs start on a byte: the block's own offsets
    of each pair's first element are even (``_run_width``), and so is every
    other part of its offset (the constant part, each outer loop's step)."""
    _, dst_const = constant_offsets(common["src_md"], common["dst_md"], common["linear"])
    return dst_const % 2 == 0 and all(lv.dst_stride % 2 == 0 for j, lv in enumerate(levels)
                                      if j not in unrolled)


def block_dst_offsets(levels, unrolled) -> list[int]:
    """The destination offset of each element of the block from the
    work-item's base, in the block's order (its last loop fastest)."""
    offsets = [0]
    for j in unrolled:
        offsets = [o + a * levels[j].dst_stride for o in offsets
                   for a in range(levels[j].extent)]
    return offsets


def _dense(offsets, width: int) -> bool:
    """Each aligned group of ``width`` elements lies at consecutive offsets."""
    return len(offsets) % width == 0 and all(
        offsets[k + i] == offsets[k] + i for k in range(0, len(offsets), width)
        for i in range(1, width))


def _run_width(problem, common, levels, unrolled) -> int:
    """How many of a block's elements go out as one vector store: up to 16
    bytes of elements that lie one after another in the destination
    (across the block's loops: OIhw16i16o -> oihw's 16 i x 9 hw is one run
    of 144), found from the block's own offsets (Intel's compiler keeps
    such a kernel's vectors with vec_type_hint; element stores were 0.45
    of copy there against 0.82); 1 where an element needs its own indices
    (per-slice values, a sum, a padding test at run time), a one-value
    helper (8-bit floats converted, 4-bit sources) or vstore_half (into
    f16: one store per element on PoCL, whatever n); into 4-bit elements 2,
    a byte of two nibbles, where pairs lie together from even offsets."""
    dst_md = common["dst_md"]
    offsets = block_dst_offsets(levels, unrolled)
    if dst_md.dtype.packed:
        ok = _dense(offsets, 2) and all(o % 2 == 0 for o in offsets[::2])
        return 2 if ok else 1
    if (common["src_md"].dtype.packed or problem.attr_kinds[4]
            or any(arg.per_slice for arg in common["args"])
            or any(md.data_type.startswith("f8") for md in (common["src_md"], dst_md))
            and not problem.moves_bits
            or dst_md.data_type == "f16" and not problem.moves_bits):
        return 1
    width = min(16, 16 * 8 // dst_md.dtype.bits)
    while width > 1 and not _dense(offsets, width):
        width //= 2
    return width


def padding_kind(plan: KernelPlan, d: int, local: int) -> str:
    """Whether the element at block index ``local`` of dim d lies in the
    destination's padding: "never", "always" or "test" (it depends on the
    loops outside the block)."""
    levels = plan.levels
    outer = _indices(levels, [j for j, lv in enumerate(levels)
                              if j not in plan.unrolled and lv.dims == (d,) and not lv.merged])
    past = outer + local >= plan.dst_md.dims[d]
    return "always" if past.all() else "never" if not past.any() else "test"


def has_outer(plan: KernelPlan, d: int) -> bool:
    """Dim d has loops outside the block (its index has a run-time part)."""
    return any(j not in plan.unrolled and lv.dims == (d,) and not lv.merged
               for j, lv in enumerate(plan.levels))
