"""Local-memory tiles: how a GPU work-group transposes a box of elements.

When the destination's innermost loop strides through the source, a warp of
work-items writing neighbouring destination elements would read a different
source line each. A tiled kernel instead gives each work-group a *box*: a
part of every loop of the plan (its "levels"), chosen so that the box holds
rows contiguous in the source and rows contiguous in the destination, each
at least a cache line (128 bytes) long. The work-group

1. reads the box in the source's order, row by row, into local memory,
2. waits at a barrier,
3. writes it in the destination's order, converting on the way.

Rows are walked padded to a whole number of warps, so that no warp
instruction spans two rows. Local memory is laid out in the destination's
order with one spare word after every 32 (``padded_index``): the read phase
then strides through it without hitting one memory bank 32 times.

Nothing here touches OpenCL: tiles are plain data in the plan.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..memory_desc import MemoryDesc

LINE = 128   #: bytes a GPU moves per cache line (NVIDIA, AMD, Intel alike)
BANKS = 32   #: local-memory banks: one spare element after this many


def padded_index(index: int) -> int:
    """Where element ``index`` of the box lives in local memory."""
    return index + index // BANKS


@dataclass(frozen=True)
class Phase:
    """How a work-group walks its box in one phase.

    ``order`` lists the box's levels (indices into the plan's levels),
    innermost first; the first ``row`` of them form rows of ``row_len``
    elements contiguous in memory, which the lanes walk padded to
    ``row_pad``; ``rows`` such rows make the box.
    """

    order: tuple[int, ...]
    row: int
    row_len: int
    row_pad: int
    rows: int

    @property
    def count(self) -> int:
        """Positions the lanes walk, padding included."""
        return self.rows * self.row_pad


#: Work-groups along NDRange dimensions 1 and 2: NVIDIA's OpenCL maps them
#: onto CUDA's grid dimensions y and z, which hold at most 65,535 blocks.
MAX_GROUPS_PER_DIM = 65535


@dataclass(frozen=True)
class Tile:
    """A box of the plan's levels and the two phases that move it."""

    box: tuple[int, ...]     # per level of the plan: the box's extent along it
    counts: tuple[int, ...]  # per level: how many boxes cover it
    read: Phase              # source order
    write: Phase             # destination order
    max_groups: int = MAX_GROUPS_PER_DIM  # work-groups an NDRange dimension may hold

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, layers): the boxes laid over NDRange dimensions 1 and 2,
        each at most ``max_groups``, with the fewest spare (a spare
        work-group finds its box past the last and returns)."""
        layers = -(-self.boxes // self.max_groups)
        return -(-self.boxes // layers), layers

    @property
    def elements(self) -> int:
        return math.prod(self.box)

    @property
    def boxes(self) -> int:
        """Boxes (work-groups) the whole problem needs."""
        return math.prod(self.counts)

    @property
    def local_elements(self) -> int:
        """Elements of local memory the box takes, padding included."""
        return padded_index(self.elements - 1) + 1

    def local_stride(self, level: int) -> int:
        """How far one step of ``level`` moves in local memory (destination order)."""
        return math.prod(self.box[level + 1:])


def _fills_warps(run: int, lanes: int) -> bool:
    """A row of ``run`` elements keeps at least 85% of its warps' lanes busy."""
    return run % lanes == 0 or run / (-(-run // lanes) * lanes) >= 0.85


def _pick(extent: int, run: int, current: int, target: int, lanes: int) -> int:
    """A box extent (a multiple of ``current``) along a level of ``extent``
    steps that makes a row of ``run`` such steps reach ``target`` elements
    and fill its warps: a power-of-two multiple, the whole level when that
    is near, else the power of two (the last box then has a tail)."""
    size = current
    while size < extent and (run * size < target or not _fills_warps(run * size, lanes)):
        size *= 2
    if size >= extent or (extent % size and extent <= 2 * size):
        return extent
    return size


def _grow(box: list, levels, order, stride, target: int, lanes: int, fits) -> None:
    """Grow ``box`` along ``order`` (innermost first) until its run that is
    contiguous in memory (``stride(level)`` is where a level's step lands)
    reaches ``target`` elements and fills whole warps."""
    run = 1
    for level in order:
        if stride(level) != run:
            return
        extent = levels[level].extent
        size = _pick(extent, run, box[level], target, lanes)
        if size > box[level]:
            trial = box.copy()
            trial[level] = size
            if not fits(trial):
                return
            box[level] = size
        run *= box[level]
        if box[level] < extent or (run >= target and _fills_warps(run, lanes)):
            return


def _phase(box, levels, order, stride, lanes: int) -> Phase:
    """The phase walking ``box`` in ``order``: its rows are the leading
    levels contiguous in memory (a partial level ends a row)."""
    order = tuple(level for level in order if box[level] > 1)
    run, row = 1, 0
    for level in order:
        if stride(level) != run:
            break
        run *= box[level]
        row += 1
        if box[level] < levels[level].extent:
            break
    row_len = math.prod(box[level] for level in order[:row])
    pad = row_len
    if row_len % lanes and row_len > lanes:
        pad = -(-row_len // lanes) * lanes
    rows = math.prod(box[level] for level in order[row:])
    return Phase(order, row, row_len, pad, rows)


def _fill(box: list, levels, order, elements: int, fits) -> None:
    """Grow ``box`` along ``order`` (innermost first), doubling, until it
    holds ``elements``: a work-group then has several elements per lane
    to move between barriers."""
    for level in order:
        while math.prod(box) < elements and box[level] < levels[level].extent:
            trial = box.copy()
            trial[level] = min(box[level] * 2, levels[level].extent)
            if not fits(trial):
                return
            box[level] = trial[level]


def plan_tile(levels, steps, src: MemoryDesc, dst: MemoryDesc, shuffle_levels,
              lanes: int, tile_bytes: int, elements: int = 1024) -> Tile | None:
    """The box a work-group transposes through local memory, or None when
    no box both fits ``tile_bytes`` and holds a source row.

    ``levels`` are the plan's loops in destination order, ``steps`` how far
    one step of each moves in the source; ``shuffle_levels`` are the levels
    of a shuffled axis (the box holds them whole: any position may feed any
    other). A box with rows long enough is then grown in the destination's
    order towards ``elements``.
    """
    n = len(levels)
    if not any(step == 1 for step in steps):
        return None  # no source row to read
    src_bytes = max(1, src.dtype.bits // 8)
    box = [1] * n
    for level in shuffle_levels:
        box[level] = levels[level].extent

    def fits(trial):
        return math.prod(trial) * src_bytes <= tile_bytes

    if not fits(box):
        return None
    dst_order = tuple(reversed(range(n)))
    src_order = tuple(sorted(range(n), key=lambda level: (steps[level], -level)))

    def dst_stride(level):
        return levels[level].dst_stride

    def src_stride(level):
        return steps[level]

    dst_target = max(lanes, LINE // max(1, dst.dtype.bits // 8))
    src_target = max(lanes, LINE // src_bytes)
    _grow(box, levels, dst_order, dst_stride, dst_target, lanes, fits)
    _grow(box, levels, src_order, src_stride, src_target, lanes, fits)
    _fill(box, levels, dst_order, elements, fits)
    read = _phase(box, levels, src_order, src_stride, lanes)
    write = _phase(box, levels, dst_order, dst_stride, lanes)
    if read.row_len < 2:
        return None
    counts = tuple(-(-lv.extent // b) for lv, b in zip(levels, box))
    return Tile(tuple(box), counts, read, write)
