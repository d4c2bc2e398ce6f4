"""The replay behind the access report: every global and local memory access
a kernel's template makes, work-item by work-item, as plain numbers.

The numbers the renderer also works out from the plan come from the
functions it calls (gpu/plan_types.py): the dims the kernel indexes and
pads, the split of an item's number into loop indices, the offset terms
and constant offsets, the per-slice values loaded as vectors or staged
and where a value lies in its array, which conversions need no
attributes; and where a box starts (``Tile.numbering``). Where a lane's
vector lies in its row and in the box (``Phase.walk``, ``Tile.digits``)
and where a shuffle puts what the read phase reads (``shuffle_target``)
come from gpu/tile.py, shared with the planner's bank replay
(gpu/tile_banks.py); the renderer writes that arithmetic as C.

What remains a replay is the templates' loop structure: which loops a
work-item runs (an item's run of elements or vectors, a register
transpose, nibbles in one or two passes, a tile's staging, read and write
phases), in what order, which accesses each branch makes, the sums over
loop indices the templates spell in C (logical indices, offsets), and
where the compiler makes one instruction of two (``_Kernel.store_dst``,
``_Kernel.value``). tests/test_access.py runs kernels under gpusim (the
Oclgrind plugin that watches the real kernel) and checks this replay
against it on every work-group.
"""
from __future__ import annotations

from dataclasses import dataclass

from .plan_types import (KernelPlan, constant_offsets, conversion, dim_offset, indexed_dims,
                         item_loops, offset_terms, padded_dims, slice_strides,
                         striped_vector_values, tile_values)
from .access_replay_blocks import item_indices, replay_unrolled
from .tile import WORD, shuffle_target


@dataclass(frozen=True)
class LaneAccess:
    """One memory access of one work-item, as the template makes it."""

    instruction: str   # "load src", "store dst", "store tile", "load src_scales", ...
    local: bool        # local memory (else global)
    group: object      # the work-group (and, for a two-pass kernel, (group, pass))
    lane: int          # the work-item's linear id in its work-group
    address: int       # first byte, in its own array
    size: int          # bytes
    spelling: object = None  # which of the template's spellings of the instruction


class _Kernel:
    """What both templates compute from a plan (logical indices, offsets,
    per-slice value positions, from plan_types' functions as render.py
    uses them), and the accesses of convert.cl.mako's load, store and
    attribute parts, recorded for the current lane."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        src, dst = plan.src_md, plan.dst_md
        self.needed = indexed_dims(plan)
        self.src_const, self.dst_const = constant_offsets(src, dst, plan.linear)
        self.terms = {d: offset_terms(src, d) for d in self.needed}
        self.padded = padded_dims(plan)
        self.args = {arg.field: arg for arg in plan.args}
        self.slices = {arg.field: slice_strides(arg, dst.dims) for arg in plan.args}
        self.bit_copy, self.saturate_only = conversion(plan)
        self.trace: list[LaneAccess] = []
        self.group = self.lane = None   # who runs the accesses being recorded
        self.lanes = {}                 # per-slice fields loaded as vectors: field -> lanes
        self.staged = {}                # fields staged in local memory: field -> (dim, places)
        self.invariant = set()          # per-slice fields at one index over an item's run
        self.loaded = set()             # (field, index) the current item loaded already

    # -- indices and offsets, as render.py spells them in C --------------

    def logical(self, a) -> dict:
        """Logical index of each dim the kernel indexes, at loop indices ``a``."""
        return {d: sum(a[j] * lv.mult for j, lv in enumerate(self.plan.levels)
                       if lv.dims == (d,)) for d in self.needed}

    def padding(self, i) -> bool:
        return any(i[d] >= self.plan.dst_md.dims[d] for d in self.padded)

    def src_offset(self, a, i, shuffled: bool) -> int:
        """The source offset: constant part, merged levels, and each dim's
        terms (a shuffle's axis read at its shuffled position when ``shuffled``)."""
        plan = self.plan
        total = self.src_const + sum(a[j] * lv.src_stride for j, lv in enumerate(plan.levels)
                                     if lv.merged)
        for d in self.needed:
            p = i[d]
            if shuffled and plan.shuffle and plan.shuffle[0] == d:
                rows = plan.src_md.dims[d] // plan.shuffle[1]
                p = (p % rows) * plan.shuffle[1] + p // rows
            total += dim_offset(plan.src_md, d, p, self.terms[d])
        return total

    def dst_offset(self, a) -> int:
        return self.dst_const + sum(a[j] * lv.dst_stride for j, lv in enumerate(self.plan.levels))

    def slice(self, arg, i) -> int:
        """Where element i's value lies in a per-slice array (C order over
        the masked dims, one value per group: plan_types.slice_strides)."""
        return sum(i[d] // g * stride for d, g, stride in self.slices[arg.field])

    # -- accesses ----------------------------------------------------------

    def access(self, name: str, address: int, size: int, spelling=None,
               local: bool = False) -> None:
        """The current lane runs instruction ``name`` (written out once per
        ``spelling`` in the template) on ``size`` bytes from ``address``."""
        self.trace.append(LaneAccess(name, local, self.group, self.lane, address, size,
                                     spelling))

    def elements(self, name: str, md, offset: int, n: int, spelling=None) -> None:
        """One access of ``n`` elements of ``md`` from element ``offset``
        (4-bit ones: the bytes holding them)."""
        if md.dtype.packed:
            self.access(name, offset >> 1, max(1, n // 2), spelling)
        else:
            size = md.dtype.bits // 8
            self.access(name, offset * size, n * size, spelling)

    def load_src(self, offset: int, n: int, spelling=None) -> None:
        self.elements("load src", self.plan.src_md, offset, n, spelling)

    def store_dst(self, offset: int, n: int, spelling=None, zeros: bool = False) -> None:
        """Converted values, or zeros into the destination's padding: one
        instruction where both branches end in the same store (the compiler
        sinks it into one), two where they differ (f16 values go through
        vstore_half)."""
        apart = zeros and self.plan.dst_md.data_type == "f16" and not self.bit_copy
        self.elements("store zeros" if apart else "store dst", self.plan.dst_md, offset, n,
                      spelling)

    def value(self, field: str, i, spelling=None) -> None:
        """attr_value: element i's value of a per-slice ``field`` (or the
        vector of its lanes' values), from its array or from the box's
        values staged in local memory."""
        arg = self.args[field]
        if field in self.staged:
            d, places = self.staged[field]
            self.access(f"load {arg.name}_box", places[i[d]] * WORD, WORD, spelling, True)
        elif arg.per_slice:
            index = self.slice(arg, i)
            if field in self.invariant:  # the same expression at every step: loaded once
                if (field, index) in self.loaded:
                    return
                self.loaded.add((field, index))
            self.access(f"load {arg.name}", index * WORD, WORD * self.lanes.get(field, 1),
                        spelling)

    def attributes(self, i, n: int, d_off: int | None, spelling=None) -> None:
        """apply_attributes: the formula's values in its order, and the old
        destination for a sum (a value the formula uses twice is loaded once)."""
        args = self.args
        for field in ("src_zero_points", "src_scales"):
            if field in args:
                self.value(field, i, spelling)
        if "sum_beta" in args and d_off is not None:
            self.elements("load dst (sum)", self.plan.dst_md, d_off, n, spelling)
        for field in ("dst_zero_points", "dst_scales"):
            if field in args:
                self.value(field, i, spelling)

    def convert(self, i, s_off: int, d_off: int, n: int, spelling=None) -> None:
        """convert / write_value: n source elements in, converted, n out."""
        self.load_src(s_off, n, spelling)
        if not (self.bit_copy or self.saturate_only):
            self.attributes(i, n, d_off, spelling)
        self.store_dst(d_off, n, spelling)


# -- templates/reorder.cl.mako: striped kernels ----------------------------

def _striped(plan: KernelPlan, k: _Kernel, local: int, groups, parity=None) -> None:
    """Work-item t runs items t, t + launch, ... (``plan.chunks`` of them):
    each a vector, a register-transposed block, or a run of elements."""
    levels, vec, last = plan.levels, plan.vec, len(plan.levels) - 1
    inner = levels[last]
    loops = item_loops(plan)
    vectors, lanes = striped_vector_values(plan)
    k.lanes = {arg.field: lanes for arg in vectors}
    if plan.nibble_words:
        k.lanes = {}  # a nibble transpose: one value per converted row
    k.invariant = {arg.field for arg in plan.args
                   if inner.merged or not arg.mask >> inner.dims[0] & 1}
    for g in groups:
        k.group = g if parity is None else (g, parity)
        for lane in range(local):
            k.lane = lane
            if g * local + lane >= plan.launch_items:
                continue  # past the launch: the work-item returns
            for chunk in range(plan.chunks):
                item = g * local + lane + chunk * plan.launch_items
                a = item_indices(loops, len(levels), item)
                a[last] *= vec
                k.loaded.clear()
                _item(plan, k, a, parity)


def _step(plan: KernelPlan, k: _Kernel, a, step: int):
    """element_offsets: (logical index, source offset, destination offset)
    of step ``step`` of the item's run of the innermost loop."""
    b = list(a)
    b[-1] += step
    i = k.logical(b)
    return i, k.src_offset(b, i, shuffled=True), k.dst_offset(b)


def _item(plan: KernelPlan, k: _Kernel, a, parity) -> None:
    vec = plan.vec
    if plan.vector:  # vectors()
        i, s_off, d_off = _step(plan, k, a, 0)
        if k.padding(i):
            k.store_dst(d_off, vec, zeros=True)
        else:
            k.convert(i, s_off, d_off, vec)
    elif plan.block:  # register_transpose(), nibble_transpose(): B rows in, B out;
        block = plan.block  # nibble_tile(): vec rows of B in, B rows of vec out
        # A 4-bit source converts after the transpose, row by row out.
        late = plan.src_md.dtype.packed and not (k.bit_copy or k.saturate_only)
        for step in range(vec):
            i, s_off, _ = _step(plan, k, a, step)
            if not k.padding(i):
                k.load_src(s_off, block, step)
                if not (k.bit_copy or k.saturate_only or late):
                    k.attributes(i, block, None, step)
        row = plan.levels[-2].dst_stride
        d_base = k.dst_offset(a)
        for j in range(block):
            if late:
                b = list(a)
                b[-2] += j
                k.attributes(k.logical(b), block, d_base + j * row, j)
            for part in range(0, vec, block):  # (a tile's row: vec / B vectors)
                k.store_dst(d_base + j * row + part, block, j)
    elif plan.nibbles:  # nibble_elements(): into a 4-bit destination
        for step in range(vec):
            i, s_off, d_off = _step(plan, k, a, step)
            if plan.nibbles == "passes" and (d_off & 1) != parity:
                continue  # the other pass's nibble
            if not k.padding(i):
                k.load_src(s_off, 1, step)
                if not k.bit_copy:
                    k.attributes(i, 1, d_off, step)
            if plan.nibbles == "pairs":
                if step & 1:  # the even element's nibble goes with this one
                    k.store_dst(d_off, 1, step)
            else:  # the byte read, changed in one nibble, written back
                k.elements("load dst (nibble)", plan.dst_md, d_off, 1, step)
                k.store_dst(d_off, 1, step)
    else:  # elements(): one by one
        for step in range(vec):
            i, s_off, d_off = _step(plan, k, a, step)
            if k.padding(i):
                k.store_dst(d_off, 1, step, zeros=True)
            else:
                k.convert(i, s_off, d_off, 1, step)


# -- templates/tiled.cl.mako: a box through local memory ------------------

def _box_start(plan: KernelPlan, box: int) -> list[int]:
    """Where box number ``box`` starts along each loop (the innermost
    loop's boxes numbered first: Tile.numbering)."""
    tile = plan.tile
    start = [0] * len(plan.levels)
    for j, count in tile.numbering():
        if count is None:
            step = box
        else:
            box, step = divmod(box, count)
        start[j] = step * tile.box[j]
    return start


def _walk(phase, r: int):
    """walk(): lane position ``r`` of ``phase`` as (its vector's first
    element in its row, the row), or None for a lane past the row's end."""
    element, row, inside = phase.walk(r)
    return (element, row) if inside else None


def _place(plan: KernelPlan, phase, element: int, row: int, start):
    """Element ``element`` of row ``row`` of ``phase`` as (loop indices,
    digits in the box), or None past a loop's end (the last box's tail)."""
    levels = plan.levels
    digits = plan.tile.digits(phase, element, row)
    a = list(start)
    for j, digit in digits.items():
        a[j] += digit
    if any(a[j] >= levels[j].extent for j in phase.order):
        return None
    return a, digits


def _stage(plan: KernelPlan, k: _Kernel, local: int, stages: dict, start) -> list:
    """The box's values of each staged array: per value q, the lane that
    copies it and the index along its dim; ``k.staged`` then says where
    the write phase finds each index's value."""
    tile, levels = plan.tile, plan.levels
    copies = []
    k.staged = {}
    for field, (arg, d, own) in stages.items():
        base = sum(start[j] * lv.mult for j, lv in enumerate(levels)
                   if lv.dims == (d,) and j not in own)
        size, places = 1, {}
        for j in own:
            size *= tile.box[j]
        for q in range(size):
            rest, i = q, base
            for j in reversed(own):  # the innermost level's digit varies fastest
                rest, digit = divmod(rest, tile.box[j])
                i += (start[j] + digit) * levels[j].mult
            places[i] = q
            copies.append((q % local, arg, d, q, i))
        k.staged[field] = (d, places)
    return copies


def _moved(plan: KernelPlan, phase, lane: int, local: int, start):
    """(r, (element, row), (loop indices, digits)) of each item of ``phase``
    lane ``lane`` moves in the box at ``start``, those inside the tensor."""
    for r in range(lane, phase.count, local):
        walked = _walk(phase, r)
        placed = walked and _place(plan, phase, *walked, start)
        if placed:
            yield r, walked, placed


def _elements(plan: KernelPlan, tile, phase, r: int, walked, start):
    """(n, placed or None) of each element of item ``r``'s vector, moved one
    at a time, in the turns the phase takes them in (Tile.rotates)."""
    e, row = walked
    turn = r % phase.vec if tile.rotates(phase) else 0
    for n in range(phase.vec):
        yield n, _place(plan, phase, e + (n + turn) % phase.vec, row, start)


def _tiled(plan: KernelPlan, k: _Kernel, local: int, groups) -> None:
    """A work-group stages its box's per-slice values, reads its box row by
    row in the source's order into local memory, then writes it row by row
    in the destination's order."""
    tile, levels = plan.tile, plan.levels
    read, write = tile.read, tile.write
    s_size = max(1, plan.src_md.dtype.bits // 8)  # local memory holds source elements
    axis = plan.shuffle[0] if plan.shuffle else None
    vectors, staged = tile_values(plan)
    k.lanes = {arg.field: write.vec for arg in vectors}
    stages = {arg.field: (arg, d, own) for arg, d, own in staged}

    # A phase that walks local memory in the order the box lies there moves
    # a lane's vector as one access; the other one element by element.
    read_whole = read.vec > 1 and tile.contiguous(read)
    write_whole = write.vec == 1 or tile.contiguous(write)

    def tile_index(a, digits, reading: bool = False) -> int:
        """Where the element at loop indices ``a`` (``digits`` in the box)
        lives in local memory; when ``reading``, a shuffle's axis goes to
        the position the destination wants."""
        place = 0
        for j in digits:
            index = digits[j]
            if reading and levels[j].dims == (axis,):
                i = sum(a[m] * lv.mult for m, lv in enumerate(levels) if lv.dims == (axis,))
                c = shuffle_target(i, plan.src_md.dims[axis] // plan.shuffle[1], plan.shuffle[1])
                index = c // levels[j].mult % levels[j].extent
            place += index * tile.local_stride(j)
        return tile.local_index(place)

    for g in groups:
        if g >= tile.boxes:
            continue  # a spare work-group returns
        k.group, start = g, _box_start(plan, g)
        copies = _stage(plan, k, local, stages, start)
        for lane in range(local):
            k.lane = lane
            for copier, arg, d, q, i in copies:
                if copier == lane:
                    if i < plan.dst_md.dims[d]:  # (past the end: padding, a 0)
                        k.access(f"load {arg.name}", i * WORD, WORD)
                    k.access(f"store {arg.name}_box", q * WORD, WORD, local=True)
            for r, walked, placed in _moved(plan, read, lane, local, start):
                a, _ = placed
                i = k.logical(a)
                if k.padding(i):
                    continue  # destination padding: no source element
                k.load_src(k.src_offset(a, i, shuffled=False), read.vec)
                if read_whole:  # one vector store
                    k.access("store tile", tile_index(a, placed[1], True) * s_size,
                             read.vec * s_size, local=True)
                    continue
                for n, element in _elements(plan, tile, read, r, walked, start):
                    if element:  # each element to its own place
                        k.access("store tile", tile_index(*element, True) * s_size, s_size, n,
                                 True)
            for r, walked, placed in _moved(plan, write, lane, local, start):
                a, digits = placed
                i = k.logical(a)
                d_off = k.dst_offset(a)
                if k.padding(i):
                    k.store_dst(d_off, write.vec, zeros=True)
                    continue
                if write_whole:  # one vector load
                    k.access("load tile", tile_index(a, digits) * s_size, write.vec * s_size,
                             local=True)
                else:  # gathered element by element
                    for n, element in _elements(plan, tile, write, r, walked, start):
                        k.access("load tile", tile_index(*element) * s_size, s_size, n, True)
                if not (k.bit_copy or k.saturate_only):
                    k.attributes(i, write.vec, d_off)
                k.store_dst(d_off, write.vec)


# -- templates/unrolled.cl.mako: a block at constant offsets ---------------

def replay(plan: KernelPlan, local: int, groups: tuple) -> list[LaneAccess]:
    """Every memory access the work-items of work-groups ``groups`` of
    ``local`` work-items make running ``plan``'s kernel (both launches of
    a 4-bit destination written in two passes), each lane's in order."""
    k = _Kernel(plan)
    if plan.tile is not None:
        _tiled(plan, k, local, groups)
    elif plan.unrolled:
        replay_unrolled(plan, k, local, groups)
    elif plan.nibbles == "passes":  # two launches: even nibbles, then odd ones
        for parity in (0, 1):
            _striped(plan, k, local, groups, parity)
    else:
        _striped(plan, k, local, groups)
    return k.trace
