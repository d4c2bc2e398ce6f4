"""The GPU strategy's kernel shapes (gpu/shapes.py): neighbouring
work-items on neighbouring addresses on both sides.

A box that a work-group transposes through local memory (``plan_tiled``,
gpu/tile.py) where the innermost loop strides through the source, else a
striped walk (``plan_striped``: vectors as wide as the tuning asks for,
typed where proven aligned). A box has its rows chosen
to start on 32-byte sectors, its vectors where masks, padding and the
shuffle allow, its local-memory padding against bank conflicts
(gpu/tile_banks.py).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..memory_desc import MemoryDesc
from .plan_common import (ELEMENTWISE_TYPES, chunks, nibble_mode, offset_bound, source_step,
                          split_at_source_blocks, steps_evenly, typed_vectors, vector_ok)
from .plan_types import KernelArg, KernelPlan, constant_offsets, dim_offset, kind_mask
from .tile import WARP, Tile, crosses, plan_tile
from .tile_banks import bank_conflicts, choose_padding

#: Local-memory bank conflicts (wavefronts over the fewest) past which the
#: planner tries boxes of other sizes.
MAX_CONFLICTS = 1.1


def _tile_vector_ok(levels, j: int, vec: int, reading: bool, src_md: MemoryDesc,
                    dst_md: MemoryDesc, kinds, shuffle, compute: str) -> bool:
    """A tiled phase may move ``vec`` consecutive elements of ``levels[j]``
    as one vector: they are all padding or all data, lie one after another
    in the source (read), need one value (or ``vec`` consecutive values) of
    each per-slice array, read the shuffled axis in order, and convert as a
    vector. ``vec`` None: a vector spans this level's steps (each element
    its own index along it)."""
    level = levels[j]
    if reading and not steps_evenly(src_md, levels, j, vec):
        return False
    if not reading and compute == "double" and (dst_md.data_type == "bf16" or any(
            md.data_type in ELEMENTWISE_TYPES for md in (src_md, dst_md))):
        return False  # (as for striped vectors: no vector helpers in double)
    if level.merged:
        return True  # no dim the kernel indexes
    (d,) = level.dims
    if vec is None:  # a vector across this level's steps: only values staged per box index d
        return (dst_md.own_padded_dims[d] == dst_md.dims[d] and (shuffle is None or d != shuffle[0])
                and (reading or all(not (kind_mask(kind) and kind_mask(kind) >> d & 1)
                                    or (kind_mask(kind) == 1 << d and not isinstance(kind, tuple))
                                    for kind in kinds[:4])))
    if dst_md.own_padded_dims[d] != dst_md.dims[d] and dst_md.dims[d] % (vec * level.mult):
        return False
    if reading:
        return shuffle is None or d != shuffle[0]
    for kind in kinds[:4]:
        mask = kind_mask(kind)
        if not mask or not mask >> d & 1:
            continue
        arg = KernelArg("", "float", "", mask, kind[1] if isinstance(kind, tuple) else None)
        group = arg.group(d, dst_md.ndims)
        if group % (vec * level.mult) and not (
                group == 1 and level.mult == 1 and mask.bit_length() - 1 == d):
            return False
    return True


def _short_runs(src_md: MemoryDesc, levels) -> bool:
    """The innermost loop is short (under 1 KiB), not a whole number of
    32-byte sectors, and the next loop jumps elsewhere in the source: a
    striped warp would straddle runs that share sectors with nobody
    (a shuffle of 3x3 planes: 36-byte runs, half of each sector wasted).
    A tile reads the source's longer rows instead."""
    if len(levels) < 2:
        return False
    inner, outer = levels[-1], levels[-2]
    run = inner.extent * source_step(src_md, inner) * src_md.dtype.bits // 8
    return (source_step(src_md, inner) == 1 and run < 1024 and run % 32 != 0
            and source_step(src_md, outer) != inner.extent)


def _rows_aligned(md: MemoryDesc, levels, tile: Tile, phase, const: int, src: bool,
                  profile, vectors: bool = False) -> bool:
    """Every vector a tiled phase moves starts on its own size in ``md``
    (proven from the plan's numbers, the buffer aligned to the profile's
    base_align), so it may be a typed access: one 16-byte instruction,
    where clang and NVIDIA's compiler split vloadN into elements. A row is
    contiguous and its vectors start at multiples of their size in it, so
    the rows' starts decide: the row's levels stand at multiples of their
    box there, the other levels anywhere. With ``vectors``, every vector's
    start counts, not only the rows': a row of the source may jump at a
    block's end inside it (steps_evenly)."""
    vec = phase.vec
    if vec < 2 or md.dtype.bits * vec // 8 > profile.base_align or const % vec:
        return False
    row = set(phase.order[:phase.row])
    first = phase.order[0] if vectors and phase.order and not crosses(tile, phase) else None

    def step(j):  # (a row's level held whole by the box starts rows at 0 only)
        if j == first:
            return vec
        if first is not None and j in row:
            return 1  # (vectors start at each index of the row's other levels)
        return levels[j].extent if j in row and tile.counts[j] == 1 else \
            tile.box[j] if j in row else 1

    if not src:
        return all(lv.dst_stride * step(j) % vec == 0 for j, lv in enumerate(levels)
                   if step(j) < lv.extent)
    if any(lv.merged and step(j) < lv.extent and lv.src_stride * step(j) % vec
           for j, lv in enumerate(levels)):
        return False
    for d in range(md.ndims):
        own = [(j, lv) for j, lv in enumerate(levels) if not lv.merged and lv.dims == (d,)]
        if not own:
            continue
        index = np.zeros(1, np.int64)  # the dim's logical indices at rows' starts
        for j, lv in own:
            index = (index[:, None] + np.arange(0, lv.extent, step(j)) * lv.mult).ravel()
            if index.size > 1 << 20:
                return False  # (not worth proving)
        if np.any(np.asarray(dim_offset(md, d, index)) % vec):
            return False
    return True


def _vector_widths(src_md: MemoryDesc, dst_md: MemoryDesc, tuning) -> list[int]:
    """The vector widths a striped GPU plan tries, best first: the fewest
    elements that move ``vector_bytes`` on the wider side and
    ``narrow_bytes`` on the narrower one (f32 -> s8: 16 elements; u4 -> f16:
    16, the most), then narrower ones for runs that do not divide."""
    bits = sorted((src_md.dtype.bits, dst_md.dtype.bits))
    want = next((v for v in (2, 4, 8, 16) if v * bits[0] >= 8 * tuning.narrow_bytes
                 and v * bits[1] >= 8 * tuning.vector_bytes), 16)
    return [v for v in (16, 8, 4, 2) if v <= want]


def plan_tiled(loops) -> KernelPlan | None:
    """Where the destination's innermost loop strides through the source
    (or a shuffle reads its axis out of order, or the source's runs are
    short): a box a work-group transposes through local memory
    (gpu/tile.py), or None where no box serves (4-bit types: no nibbles in
    local memory)."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    levels = list(loops.levels)
    src_md, dst_md, shuffle = common["src_md"], common["dst_md"], common["shuffle"]
    tuning = profile.tuning
    inner = levels[-1]
    packed = src_md.dtype.packed or dst_md.dtype.packed  # no nibbles in local memory
    if packed or not (shuffle is not None or source_step(src_md, inner) != 1
                      or _short_runs(src_md, levels)):
        return None
    split = split_at_source_blocks(levels, src_md)
    steps = [source_step(src_md, lv) for lv in split]
    axis_levels = [j for j, lv in enumerate(split) if shuffle and lv.dims == (shuffle[0],)]
    lanes = profile.preferred_multiple if profile.preferred_multiple > 1 else tuning.lanes
    local_bytes = min(tuning.tile_bytes, profile.local_mem // 2)
    src_const, dst_const = constant_offsets(src_md, dst_md, common["linear"])

    def box(whole=(), elements=4 * common["work_group"]):
        return plan_tile(split, steps, src_md, dst_md, axis_levels + list(whole), lanes,
                         local_bytes, elements=elements,
                         vector_bytes=tuning.vector_bytes,
                         vec_ok=lambda level, vec, reading: _tile_vector_ok(
                             split, level, vec, reading, src_md, dst_md,
                             problem.attr_kinds, shuffle, common["compute"]))

    def sectors(t):  # (read, write) rows start on a 32-byte sector
        return tuple(_rows_aligned(md, split, t, replace(rows, vec=256 // md.dtype.bits),
                                   const, src, profile)
                     for rows, md, const, src in ((t.read, src_md, src_const, True),
                                                  (t.write, dst_md, dst_const, False)))

    element_bytes = max(1, src_md.dtype.bits // 8)

    def arranged(elements):
        """(tile, work-group size) for boxes of about ``elements``."""
        tile = box(elements=elements)
        # Rows that stop inside a loop whose steps are not whole sectors
        # (a 14x14 plane of f32 is 24.5 sectors) start mid-sector in every
        # other step: that loop taken whole, where it fits and the rows then
        # start on sectors with vectors as wide, lets them run on across it.
        if tile is not None and not all(sectors(tile)):
            for rows in (tile.read, tile.write):
                last = rows.order[rows.row - 1] if rows.row else None
                if last is None or tile.box[last] == split[last].extent:
                    continue
                trial = box((last,), elements)
                if (trial is not None and all(sectors(trial)) and trial.read.vec >= tile.read.vec
                        and trial.write.vec >= tile.write.vec):
                    tile = trial
                    break
        if tile is None:
            return None
        # A work-group of no more warps than a phase has vectors.
        vectors = max(tile.read.count, tile.write.count)
        group = min(common["work_group"], max(WARP, -(-vectors // WARP) * WARP))
        # (the padding may take local memory past tile_bytes, up to 3/4 of the device's)
        tile = choose_padding(replace(tile, max_groups=profile.max_groups_per_dim),
                              element_bytes, group, profile.local_mem * 3 // 4,
                              None if shuffle is None else (
                                  tuple((j, split[j].mult) for j in axis_levels),
                                  src_md.dims[shuffle[0]] // shuffle[1], shuffle[1]))
        return tile, group, bank_conflicts(tile, element_bytes, group)

    best = arranged(4 * common["work_group"])
    if best is not None and best[2] > MAX_CONFLICTS:
        # Boxes of other sizes lay their rows over the banks otherwise
        # (f32 nchw -> nhwc with 3x3 planes: 1.44 wavefronts in boxes of
        # 1024 elements, 1.0 in boxes of 288).
        for elements in (common["work_group"], 2 * common["work_group"],
                         8 * common["work_group"]):
            other = arranged(elements)
            if other is not None and other[2] < best[2] - 0.01:
                best = other
    if best is not None:
        tile, group, _ = best
        tile = replace(tile, read=replace(tile.read, typed=_rows_aligned(
            src_md, split, tile, tile.read, src_const, True, profile, vectors=True)),
            write=replace(tile.write, typed=_rows_aligned(
                dst_md, split, tile, tile.write, dst_const, False, profile)))
        bound = offset_bound(src_md, dst_md, math.prod(lv.extent for lv in split))
        return KernelPlan(levels=tuple(split), vec=1, items=tile.boxes, chunks=1,
                          wide_index=bound >= 2**31, fastest=(), tile=tile,
                          **dict(common, work_group=group))
    return None


def plan_striped(loops) -> KernelPlan:
    """Work-item t moves the t-th vector (or element) of the destination's
    order, and again t + launch, t + 2 launch, ...: neighbouring
    work-items on neighbouring addresses wherever both sides share the
    innermost loop. Serves every problem."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    levels = list(loops.levels)
    src_md, dst_md, shuffle = common["src_md"], common["dst_md"], common["shuffle"]
    tuning = profile.tuning
    inner = levels[-1]
    fastest = tuple(range(len(levels) - 1, -1, -1))
    linear = common["linear"]
    vec = next((v for v in _vector_widths(src_md, dst_md, tuning)
                if inner.extent % v == 0 and vector_ok(src_md, dst_md, levels, v,
                                                        problem.attr_kinds, linear,
                                                        common["compute"], shuffle)), 1)
    vector = vec > 1
    if vec == 1 and dst_md.dtype.packed and inner.dst_stride == 1 and inner.extent % 2 == 0:
        vec = 2  # two nibbles per work-item: a byte, when the run starts on one
    items = math.prod(lv.extent for lv in levels) // vec
    aligned = vector and typed_vectors(src_md, dst_md, levels, vec, linear, profile)
    bound = offset_bound(src_md, dst_md, items * vec)
    return KernelPlan(levels=tuple(levels), vec=vec, items=items, chunks=chunks(items, profile),
                      wide_index=bound >= 2**31, fastest=fastest,
                      vector=vector, aligned=aligned,
                      nibbles=nibble_mode(src_md, dst_md, levels, vec, common["linear"]),
                      **common)
