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

Each lane moves a vector of ``Phase.vec`` elements along a row per access
(16 bytes of f32, so that a warp of 32 moves 512 bytes per instruction, as a
copy kernel does). Rows are walked padded to a whole number of warps, so
that no warp instruction spans two rows. Local memory is laid out in the
destination's order, with ``pad_by`` spare elements after every
``pad_every`` (``Tile.local_index``): chosen by replaying the work-group's
local accesses against 32 banks of 4 bytes (gpu/tile_banks.py), so that
the read phase scatters its vectors across the banks, and the write phase
reads whole vectors, contiguous in local memory.

How a lane finds its elements (``Phase.walk``, ``Tile.digits``) and
where a shuffle puts what the read phase reads (``shuffle_target``) are
worked out here once, for ints or numpy arrays: the bank replay
(tile_banks.py) and the access report's replay (access_replay.py) use
them, and the renderer writes the same arithmetic in C. Where a box
starts (``Tile.numbering``) serves the renderer and the replay alike.

Nothing here touches OpenCL: tiles are plain data in the plan.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..memory_desc import MemoryDesc

LINE = 128   #: bytes a GPU moves per cache line (NVIDIA, AMD, Intel alike)
BANKS = 32   #: local-memory banks of 4 bytes (NVIDIA, AMD alike)
WORD = 4     #: bytes of one local-memory bank
WARP = 32    #: work-items that issue one memory instruction together
ROTATED = (2, 4)  #: vector widths whose elements a phase may move in turns


@dataclass(frozen=True)
class Phase:
    """How a work-group walks its box in one phase.

    ``order`` lists the box's levels (indices into the plan's levels),
    innermost first; the first ``row`` of them form rows of ``row_len``
    elements contiguous in memory; ``rows`` such rows make the box. A lane
    moves ``vec`` consecutive elements of a row at a time (on the first
    level of ``order`` where its box divides by ``vec``, else across the
    row's levels); the lanes walk a row's vectors padded to ``row_pad``
    of them.
    """

    order: tuple[int, ...]
    row: int
    row_len: int
    row_pad: int
    rows: int
    vec: int = 1
    typed: bool = False  # every vector starts on its own size in global memory

    @property
    def row_vectors(self) -> int:
        return self.row_len // self.vec

    @property
    def count(self) -> int:
        """Vectors the lanes walk, padding included."""
        return self.rows * self.row_pad

    def walk(self, r):
        """Lane position ``r`` (an int or an array) as (its vector's first
        element in its row, the row, whether it lies in the row: else it
        is one of the row's padding positions, whose lane idles)."""
        row, col = divmod(r, self.row_pad)
        return col * self.vec, row, col < self.row_vectors


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
    pad_every: int = BANKS   # local memory: ``pad_by`` spare elements after every this many
    pad_by: int = 1
    local_order: str = "dst"  # the box in local memory in the destination's order, or "src"
    rotate: bool = False     # lanes move their vector's elements in turns (below)

    @property
    def layout(self) -> tuple[int, ...]:
        """The box's levels in local memory, innermost first."""
        return (self.write if self.local_order == "dst" else self.read).order

    def rotates(self, phase: Phase) -> bool:
        """``phase`` moves each lane's vector element by element, the lane
        at position r starting at element r % vec: the warp's n-th access
        then spreads over more banks (oihw -> OIhw4i16o4i: 1.5 wavefronts
        to 1.0)."""
        return self.rotate and phase.vec in ROTATED and not self.contiguous(phase)

    def contiguous(self, phase: Phase) -> bool:
        """``phase`` walks local memory in its own order: a lane's vector
        is one aligned vector access there (padding never splits it, nor
        moves it off its size)."""
        return (phase.order == self.layout and self.pad_every % phase.vec == 0
                and self.pad_by % phase.vec == 0)

    def digits(self, phase: Phase, element, row) -> dict:
        """Element ``element`` of row ``row`` of ``phase`` (ints or arrays)
        as its index in the box along each of the phase's levels."""
        digits = {}
        for value, levels in ((element, phase.order[:phase.row]), (row, phase.order[phase.row:])):
            for level in levels:
                value, digits[level] = divmod(value, self.box[level])
        return digits

    def numbering(self) -> list[tuple[int, int | None]]:
        """How a box's number splits into where it starts along each loop:
        the levels several boxes cover, the innermost first (neighbouring
        work-groups, neighbouring memory), each with its count of boxes
        (None for the last, which takes the rest of the number)."""
        outer = [j for j in reversed(range(len(self.box))) if self.counts[j] > 1]
        return [(j, None if n == len(outer) - 1 else self.counts[j]) for n, j in enumerate(outer)]

    def local_index(self, k: int) -> int:
        """Where element ``k`` of the box (destination order) lives in local memory."""
        return k + k // self.pad_every * self.pad_by

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
        return self.local_index(self.elements - 1) + 1

    def local_stride(self, level: int) -> int:
        """How far one step of ``level`` moves in local memory (before padding)."""
        layout = self.layout
        if level not in layout:
            return 0  # a level of one step: its index is always 0
        return math.prod(self.box[inner] for inner in layout[:layout.index(level)])


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
        trial = box.copy()
        trial[level] = size
        while size > box[level] and not fits(trial):
            # The row as long as fits: the other side's rows hold the rest
            # of the tile (s8 nchw -> nhwc with C = 256: 64 x 256, not 4 x 256).
            size = max(box[level], 1 << (size - 1).bit_length() - 1)
            trial[level] = size
        if size > box[level]:
            box[level] = size
        if size < _pick(extent, run, box[level], target, lanes):
            return
        run *= box[level]
        if box[level] < extent or (run >= target and _fills_warps(run, lanes)):
            return


def _phase(box, levels, order, stride, lanes: int, vec: int = 1, row_bytes: int = 0) -> Phase:
    """The phase walking ``box`` in ``order`` by vectors of ``vec``: its rows
    are the leading levels contiguous in memory (a partial level ends a row)."""
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
    pad = vectors = row_len // vec
    if vectors % lanes and vectors > lanes and (row_len * row_bytes) % 32:
        pad = -(-vectors // lanes) * lanes
    rows = math.prod(box[level] for level in order[row:])
    return Phase(order, row, row_len, pad, rows, vec)


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


def _whole(box: list, levels, fits) -> None:
    """Take a level whole where its box would leave a tail and the whole
    level is at most 4 boxes and fits: rows then run across its end into
    the next level's (nchw with 14x14 planes: rows of 196 x C elements,
    not of 64 starting anywhere in a sector)."""
    for level, lv in enumerate(levels):
        if box[level] < lv.extent <= 4 * box[level] and lv.extent % box[level]:
            trial = box.copy()
            trial[level] = lv.extent
            if fits(trial):
                box[level] = lv.extent


def _vector(box, levels, phase: Phase, widest: int, vec_ok, crossing: bool, dst) -> int:
    """The widest vector (at most ``widest`` elements) a phase moves: it
    divides the row, and ``vec_ok(level, vec)`` allows it (masks, padding,
    shuffles). It lies inside the first level (its box and extent divide
    by it: no vector crosses the last box's tail), or, where ``crossing``
    (each element then finds its own place in local memory), spans the
    row's levels, none of which has a tail or the destination's padding."""
    if not phase.order:
        return 1
    first = phase.order[0]
    row = phase.order[:phase.row]

    def plain(level):
        return levels[level].merged or all(dst.own_padded_dims[d] == dst.dims[d]
                                           for d in levels[level].dims)

    def spanned(level, vec):
        # A level the vector spans (a step of it is shorter than the vector,
        # or does not hold whole vectors) must keep every element valid.
        inner = math.prod(box[j] for j in row[:row.index(level)])
        return inner % vec != 0

    for vec in (16, 8, 4, 2):
        if vec > widest or phase.row_len % vec or math.prod(box) < vec * WARP:
            continue  # (a box smaller than a warp of vectors keeps elements)
        if box[first] % vec == 0 and levels[first].extent % vec == 0 and vec_ok(first, vec):
            return vec
        if crossing and all(not spanned(level, vec) or (
                levels[level].extent % box[level] == 0 and plain(level)
                and vec_ok(level, None)) for level in row):
            return vec
    return 1


def plan_tile(levels, steps, src: MemoryDesc, dst: MemoryDesc, shuffle_levels,
              lanes: int, tile_bytes: int, elements: int = 1024, vector_bytes: int = 1,
              vec_ok=lambda level, vec, reading: False) -> Tile | None:
    """The box a work-group transposes through local memory, or None when
    no box both fits ``tile_bytes`` and holds a source row.

    ``levels`` are the plan's loops in destination order, ``steps`` how far
    one step of each moves in the source; ``shuffle_levels`` are the levels
    of a shuffled axis (the box holds them whole: any position may feed any
    other). A box with rows long enough is then grown in the destination's
    order towards ``elements``. Each phase then moves vectors of up to
    ``vector_bytes`` per lane where ``vec_ok(level, vec, reading)`` allows
    (``vec`` None: elements along the level differ in everything it indexes).
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
    _whole(box, levels, fits)
    read = _phase(box, levels, src_order, src_stride, lanes)
    write = _phase(box, levels, dst_order, dst_stride, lanes)
    if read.row_len < 2:
        return None
    dst_bytes = max(1, dst.dtype.bits // 8)
    read_vec = _vector(box, levels, read, vector_bytes // src_bytes,
                       lambda level, vec: vec_ok(level, vec, True), True, dst)
    write_vec = _vector(box, levels, write, vector_bytes // dst_bytes,
                        lambda level, vec: vec_ok(level, vec, False), True, dst)
    if read_vec == 1 < vector_bytes // src_bytes or write_vec == 1 < vector_bytes // dst_bytes:
        # A vector across a row may not cross a loop's tail (464 channels in
        # boxes of 32): boxes that divide the row's loops let it.
        even = list(box)
        for phase in (read, write):
            for level in phase.order[:phase.row]:
                while levels[level].extent % even[level] and even[level] % 2 == 0:
                    even[level] //= 2
        if even != box:
            trial = [_phase(even, levels, order, stride, lanes) for order, stride in
                     ((src_order, src_stride), (dst_order, dst_stride))]
            vecs = (_vector(even, levels, trial[0], vector_bytes // src_bytes,
                            lambda level, vec: vec_ok(level, vec, True), True, dst),
                    _vector(even, levels, trial[1], vector_bytes // dst_bytes,
                            lambda level, vec: vec_ok(level, vec, False), True, dst))
            if min(vecs) > min(read_vec, write_vec) and trial[0].row_len >= 2:
                box, (read, write), (read_vec, write_vec) = even, trial, vecs
    read = _phase(box, levels, src_order, src_stride, lanes, read_vec, src_bytes)
    write = _phase(box, levels, dst_order, dst_stride, lanes, write_vec, dst_bytes)
    counts = tuple(-(-lv.extent // b) for lv, b in zip(levels, box))
    return Tile(tuple(box), counts, read, write)


def crosses(tile: Tile, phase: Phase) -> bool:
    """A vector of ``phase`` spans several of the row's levels (each element
    then has its own place in local memory, not one step apart)."""
    return phase.vec > 1 and tile.box[phase.order[0]] % phase.vec != 0


def shuffle_target(i, rows: int, group: int):
    """Where a shuffle of ``group`` (``rows`` = C / group) puts the element
    read at axis position ``i`` (an int or an array): (i % group) * rows +
    i / group, the position the destination wants it at."""
    return (i % group) * rows + i // group
