"""Two of the CPU strategy's kernel shapes (gpu/shapes.py), each work-item
its own part of the destination: a BxB block transposed in registers
where the destination's innermost loop strides through the source
(``plan_register_transpose``), and runs of the innermost loop
(``plan_runs``), moved as one vector where both sides allow, the
source's most contiguous loop tiled next to it where it is not, so that
work-items running together read whole cache lines.
"""
from __future__ import annotations

import math

from ..memory_desc import MemoryDesc
from .plan_common import (ELEMENTWISE_TYPES, aligned, chunks, innermost_block, nibble_mode,
                          offset_bound, source_order, source_step, typed_vectors,
                          vector_ok)
from .plan_types import KernelArg, KernelPlan, Level, constant_offsets, kind_mask


def _tile_for_source(src: MemoryDesc, levels: list[Level], tuning) -> tuple[list[Level], bool]:
    """When the destination's innermost loop strides through the source, bring
    a tile of the source's most contiguous loop next to it, so that the work-
    items running together read whole cache lines of the source too (a
    transpose through the cache, no local memory needed)."""
    inner = levels[-1]
    # A sweep of a short innermost loop stays in cache anyway (measured on PoCL:
    # tiling nchw->nhwc with C = 256 made it slower, nhwc->nchw faster).
    if len(levels) < 2 or source_step(src, inner) <= 1 or inner.extent <= tuning.short_loop:
        return levels, False
    j = source_order(src, levels, range(len(levels) - 1))[0]
    level = levels[j]
    if source_step(src, level) >= source_step(src, inner):
        return levels, False
    tile = next((t for t in (16, 8, 4, 2) if level.extent % t == 0 and level.extent > t), None)
    if tile is None:
        return levels[:j] + levels[j + 1:-1] + [level, inner], True
    outer, part = level.split(tile)
    return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], True


def _block_transpose(src: MemoryDesc, levels: list[Level], special: set, sizes):
    """When the destination's innermost loop strides through the source:
    split B steps off the source's contiguous loop, so each work-item loads B
    vectors along the source and stores B vectors along the destination,
    transposing BxB elements in registers (converted on the way). Measured on
    PoCL for nhwc->nchw, 32x256x56x56: 11.5 ms against 20-30 ms element by
    element. The source's loop must hold no dim the kernel indexes (masks,
    shuffle, padding): those stay the same along a loaded vector.
    Returns (levels, B, the index of the part of that loop left outside
    the block) or None."""
    inner = levels[-1]
    if len(levels) < 2 or inner.dst_stride != 1 or source_step(src, inner) <= 1:
        return None
    for j in reversed(range(len(levels) - 1)):
        level = levels[j]
        if source_step(src, level) != 1:
            continue
        if not level.merged:
            (d,) = level.dims
            if level.mult != 1 or d in special:
                return None
        for b in sizes:
            if inner.extent % b or level.extent % b:
                continue
            if not level.merged and (src.blocks[d] > 1 and innermost_block(src, d) % b
                                     or src.padded_offsets[d] % b):
                continue
            outer, part = level.split(b)
            return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], b, j
        return None
    return None


def block_order(levels) -> tuple[int, ...]:
    """The order work-items step a block transpose's loops, fastest first:
    the destination's innermost, then the others outward. The block's steps
    of the source's loop (``levels[-2]``, from ``_block_transpose``) live
    inside the work-item, not in its number."""
    return (len(levels) - 1,) + tuple(range(len(levels) - 3, -1, -1))


def transposes_in_registers(loops) -> bool:
    """Whether the problem's vectors may be transposed in registers: not a
    shuffle, no sum, float arithmetic, no 4-bit or converted 8-bit float
    (their elements go one by one; moved bit for bit they are bytes like
    any other), not converted into f16."""
    problem, common = loops.problem, loops.common
    src_md, dst_md = common["src_md"], common["dst_md"]
    narrow = [md.data_type for md in (src_md, dst_md) if md.data_type in ELEMENTWISE_TYPES
              and (md.dtype.packed or not problem.moves_bits)]
    return (common["shuffle"] is None and not problem.attr_kinds[4]
            and common["compute"] == "float" and not narrow
            and (problem.moves_bits or dst_md.data_type != "f16"))


def plan_register_transpose(loops) -> KernelPlan | None:
    """Where the destination's innermost loop strides through the source:
    each work-item a BxB block transposed in registers (``_block_transpose``),
    or None where no block serves. A register transpose converts whole
    vectors: not into f16 (no vector store rounds to it without
    cl_khr_fp16 arithmetic), not with a sum (the old destination would be
    read transposed), not in double, not a shuffle."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    src_md, dst_md, kinds = common["src_md"], common["dst_md"], problem.attr_kinds
    if not transposes_in_registers(loops):
        return None
    # The loaded vectors may run along a masked dim when its values are
    # consecutive in every per-slice array (the mask's last dim): they are
    # then loaded as vectors too (per-channel scales for nChw16c -> nchw).
    # Grouped values are not: one value covers several lanes.
    masks = [kind_mask(kind) for kind in kinds[:4]]
    lanes_ok = {d for d in range(dst_md.ndims) if d not in loops.padded and all(
        not (mask and mask >> d & 1) or mask.bit_length() - 1 == d and not isinstance(kind, tuple)
        for mask, kind in zip(masks, kinds[:4]))}
    tuning = profile.tuning
    sizes = tuning.byte_block_sizes if dst_md.dtype.bits == 8 else tuning.block_sizes
    blocked = _block_transpose(src_md, list(loops.levels), loops.special - lanes_ok, sizes)
    if not blocked:
        return None
    levels, block, _ = blocked
    return _plan(loops, levels, block, block, block_order(levels), vector=False)


#: The other side's types a converting nibble transpose loads or stores as
#: vectors of B elements.
NIBBLE_PARTNERS = ("f32", "f16", "bf16", "s8", "u8", "s32")


def plan_nibble_transpose(loops) -> KernelPlan | None:
    """A 4-bit type where the destination's innermost loop strides through
    the source: each work-item a BxB block of nibbles, moved as words of B
    nibbles (a uint or a ulong) transposed with shifts and masks, so no
    nibble is read or written alone (measured on PoCL, s4 4096x4096 ab->ba:
    0.06 of copy a nibble at a time). Moved bit for bit, or converted on
    the way (``_converts``): a 4-bit source unpacked after the transpose,
    a 4-bit destination packed before it. The 4-bit side's rows must start
    on a word (proven from the plan's numbers, as for typed vectors), on a
    little-endian device. Neighbouring work-items form a grid
    (``Tuning.nibble_grid``, ``_lane_grid``; ``nibble_pack_grid`` into a
    4-bit destination from a wider type). None where no block serves.
    Both strategies use it (gpu/shapes.py)."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    src_md, dst_md = common["src_md"], common["dst_md"]
    bits = problem.moves_bits and src_md.dtype.packed
    if (not (bits or _converts(loops)) or common["shuffle"] is not None
            or not profile.little_endian):
        return None
    src_const, dst_const = constant_offsets(src_md, dst_md, common["linear"])
    # A conversion applies per-slice values per row: their dims are checked
    # below, not refused as the loaded vector's.
    special = set(loops.special) if bits else set(loops.padded)
    for b in profile.tuning.nibble_block_sizes:
        if b not in (8, 16) or b // 2 > profile.base_align:
            continue
        blocked = _block_transpose(src_md, list(loops.levels), special, (b,))
        if not blocked:
            continue
        levels, _, j = blocked
        part, inner = levels[-2], levels[-1]
        if src_md.dtype.packed and not aligned(src_md, levels, part, common["linear"], b,
                                               src_const, True):
            continue
        if dst_md.dtype.packed and not aligned(dst_md, levels, inner, common["linear"], b,
                                               dst_const, False):
            continue
        # The converted vectors' lanes: the destination's rows (a 4-bit
        # source) or the source's (a 4-bit destination); each per-slice
        # value must hold for B lanes from a multiple of B.
        if not bits and not _one_value_per_run(problem.attr_kinds, dst_md.ndims,
                                               inner if src_md.dtype.packed else part, b):
            continue
        packs = dst_md.dtype.packed and not src_md.dtype.packed
        grid = profile.tuning.nibble_pack_grid if packs else profile.tuning.nibble_grid
        levels, fastest = _lane_grid(levels, j, b, grid)
        return _plan(loops, levels, b, b, fastest, vector=False)
    return None


def _converts(loops) -> bool:
    """A converting nibble transpose serves: s4 or u4 on one side, a type
    loaded or stored as vectors (NIBBLE_PARTNERS) on the other, float
    arithmetic, no sum (the old destination would be read transposed), no
    padding (converted zeros need not stay zero)."""
    problem, common = loops.problem, loops.common
    types = {common["src_md"].data_type, common["dst_md"].data_type}
    nibbles = types & {"s4", "u4"}
    return (len(nibbles) == 1 and len(types - nibbles) == 1
            and (types - nibbles) <= set(NIBBLE_PARTNERS)
            and common["compute"] == "float" and not problem.attr_kinds[4]
            and not loops.padded)


def _one_value_per_run(kinds, ndims: int, level: Level, b: int) -> bool:
    """Every per-slice value is one for each run of ``b`` steps of ``level``
    (from a multiple of ``b``): the level's dims are masked by none, or the
    level is one dim stepped by one, grouped by a multiple of ``b``."""
    for kind in kinds[:4]:
        mask = kind_mask(kind)
        if not mask or not any(mask >> d & 1 for d in level.dims):
            continue
        if level.merged or level.mult != 1:
            return False
        (d,) = level.dims
        arg = KernelArg("", "float", "", mask, kind[1] if isinstance(kind, tuple) else None)
        if arg.group(d, ndims) % b:
            return False
    return True


def _lane_grid(levels: list[Level], j: int, b: int, grid: tuple[int, int]):
    """The levels and work-item order of a nibble transpose whose
    neighbouring work-items form a grid of blocks: ``grid[0]`` along the
    destination's contiguous loop (``levels[-1]``) fastest, then
    ``grid[1]`` along the source's (whose outer part is ``levels[j]``),
    where both loops divide (else one block after another along the
    destination's loop). A grid keeps the rows a work-group touches few:
    measured on PoCL and Intel's runtime, s4 4096x4096 ab->ba, 16x16 blocks:
    0.13 and 0.09 of copy one after another, 0.24 and 0.34 in a grid of
    16x16; on a GPU, 8x4 makes a warp's every load and store whole sectors."""
    along_dst, along_src = grid
    outer, inner = levels[j], levels[-1]
    if outer.extent % along_src or inner.extent % (b * along_dst):
        return levels, block_order(levels)
    outer_hi, outer_lo = outer.split(along_src)
    inner_hi, inner_lo = inner.split(b * along_dst)
    out = levels[:j] + levels[j + 1:-2] + [outer_hi, inner_hi, outer_lo, levels[-2], inner_lo]
    n = len(out)
    # inner_lo (in blocks), outer_lo, then inner_hi, outer_hi, the others.
    return out, (n - 1, n - 3, n - 4, n - 5) + tuple(range(n - 6, -1, -1))


def plan_runs(loops) -> KernelPlan:
    """Each work-item its own run of the destination's innermost loop (PoCL
    runs work-items of a group one after another, so a run per work-item
    reads as a loop), moved as one vector where both sides allow; where
    that loop strides through the source, a tile of the source's most
    contiguous loop next to it (``_tile_for_source``). Serves every problem."""
    problem, common = loops.problem, loops.common
    src_md, dst_md, kinds = common["src_md"], common["dst_md"], problem.attr_kinds
    levels, tiled = _tile_for_source(src_md, list(loops.levels), loops.profile.tuning)
    # Work-items step the innermost loop fastest, or the source tile when there is one.
    fastest = tuple(range(len(levels) - 1, -1, -1))
    if tiled:
        fastest = (fastest[1], fastest[0]) + fastest[2:]
    inner = levels[-1]
    if (not tiled and source_step(src_md, inner) == 1 and inner.extent * src_md.dtype.bits
            >= 8 * loops.profile.tuning.source_order_bytes):
        # Long runs, contiguous on both sides: the other loops in the
        # source's order, so that the reads go through it in sequence.
        fastest = (fastest[0],) + tuple(source_order(src_md, levels, fastest[1:]))
    # Measured on PoCL: a work-item that also ran the next loop out (64
    # elements for OIhw4i16o4i) was 1.8x slower than 4 elements per item.
    # Whole vectors where both sides are contiguous along the innermost
    # loop (measured on PoCL, f32->s8: 8.7 ms against 13.7 ms): the
    # longest run that moves as one (a group of 8 values: 8), else the
    # longest run.
    runs = [v for v in (16, 8, 4, 2, 1) if inner.extent % v == 0]
    vec = next((v for v in runs if vector_ok(src_md, dst_md, levels, v, kinds,
                                              common["linear"], common["compute"],
                                              common["shuffle"])), runs[0])
    vector = vector_ok(src_md, dst_md, levels, vec, kinds, common["linear"],
                       common["compute"], common["shuffle"])
    return _plan(loops, levels, vec, 0, fastest, vector)


def _plan(loops, levels, vec: int, block: int, fastest, vector: bool) -> KernelPlan:
    """The CPU strategy's plan of these loops: items, chunks, index width,
    typed stores and 4-bit writes, the same for both of its shapes."""
    common, profile = loops.common, loops.profile
    src_md, dst_md = common["src_md"], common["dst_md"]
    items = math.prod(lv.extent for lv in levels) // vec // max(block, 1)
    # PoCL splits vstoreN of 1- and 2-byte elements into N stores (f32 ->
    # f8_e4m3: 0.5 of copy, 0.85 with one typed store): typed stores where
    # every vector or transposed row provably starts on its size.
    typed_store = ((vector or block > 0) and dst_md.dtype.bits < 32
                   and dst_md.data_type != "f16"  # (vstore_half, not a vector store)
                   and typed_vectors(src_md, dst_md, levels, vec, common["linear"], profile,
                                      sides=("dst",)))
    bound = offset_bound(src_md, dst_md, items * vec * max(block, 1))
    return KernelPlan(levels=tuple(levels), vec=vec, items=items,
                      chunks=chunks(items, profile), wide_index=bound >= 2**31,
                      fastest=fastest, block=block, vector=vector, typed_store=typed_store,
                      nibbles=nibble_mode(src_md, dst_md, levels, vec, common["linear"]),
                      **common)
