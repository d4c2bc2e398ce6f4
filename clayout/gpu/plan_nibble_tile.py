"""The CPU strategy's tile shape for 4-bit transposes (gpu/shapes.py): each
work-item moves a tile of R rows of T nibbles bit for bit, T = 16 x lanes.

A 16x16 block a work-item (``plan_nibble_transpose``) loads and stores
8-byte words: lines 2 KiB apart on a 4096x4096 tensor fall into two sets
of the L1 cache, and each of its 64-byte lines is reused by 8 work-items
after it has been evicted. A tile loads whole 64-byte lines of the source
(one ulong8 of 8 words a row, for T = 128) and stores whole lines of the
destination: 16 rows at a time are transposed with shifts and masks as
T/16 independent 16x16 blocks, one per lane; the R/16 sets of rows are
kept, and each of the 16 lanes' matrices of words (T/16 sets x lane) is
transposed with ``shuffle2`` before it is stored, R/T vectors a
destination row. Measured in a prototype harness on PoCL and Intel's
runtime (2 cores, AMD EPYC, s4 4096x4096 ab->ba, in turns with the float4
copy): 128x128 tiles 0.29-0.41 of copy, against 0.11-0.12 with 16x16
blocks; 0.56 on 4224x4224, whose rows are no power of two apart. The
plan also serves 4-bit shuffles that are such transposes
(``shuffle_as_reorder``) and blocked destinations whose rows are words.
"""
from __future__ import annotations

from dataclasses import replace

from .plan_common import aligned, heavy_work_group
from .plan_cpu import _block_transpose, _plan, block_order
from .plan_types import constant_offsets


def plan_nibble_tile(loops):
    """A 4-bit type moved bit for bit where the destination's innermost loop
    strides through the source: a tile of R source rows of T nibbles a
    work-item, T the first of ``Tuning.nibble_tile_sizes`` that divides
    both loops, R the largest power-of-two multiple of T up to
    ``Tuning.nibble_tile_rows`` that divides the destination's. The
    tile's rows start on a word (16 nibbles) on both sides, proven from the
    plan's numbers, on a little-endian device; every loop's source step is
    constant (a plain source), with no padding and no shuffle left (one
    that is a transpose comes as a reorder: ``shuffle_as_reorder``). None
    otherwise."""
    problem, profile, common = loops.problem, loops.profile, loops.common
    src_md, dst_md = common["src_md"], common["dst_md"]
    if (not (problem.moves_bits and src_md.dtype.packed) or common["shuffle"] is not None
            or loops.padded or not profile.little_endian or profile.base_align < 8
            or not all(level.merged for level in loops.levels)):
        return None
    src_const, dst_const = constant_offsets(src_md, dst_md, common["linear"])
    tuning = profile.tuning
    for size in tuning.nibble_tile_sizes:
        blocked = _block_transpose(src_md, list(loops.levels), set(loops.special), (size,))
        if not blocked:
            continue
        levels, _, _ = blocked
        part, inner = levels[-2], levels[-1]
        if not (aligned(src_md, levels, part, common["linear"], 16, src_const, True)
                and aligned(dst_md, levels, inner, common["linear"], 16, dst_const, False)):
            continue
        # Taller tiles store longer runs of each destination row (measured
        # on Intel's runtime, 4096x4096: 128 rows 0.27-0.29 of copy, 256
        # rows 0.37-0.38, 512 rows 0.46, 1024 rows 0.35; on PoCL 0.32-0.41,
        # 0.37-0.38, 0.38-0.42, 0.35).
        rows = size
        while rows * 2 <= tuning.nibble_tile_rows and inner.extent % (rows * 2) == 0:
            rows *= 2
        # The destination's rows of tiles fastest (measured on PoCL,
        # 4096x4096: 0.35-0.37 of copy, against 0.29-0.32 with the source's).
        plan = _plan(loops, levels, rows, size, block_order(levels), vector=False)
        # (a tile moves 512 B to 32 KiB each way: a heavy work-item)
        return replace(plan, work_group=heavy_work_group(plan.launch_items, plan.work_group,
                                                         profile))
    return None
