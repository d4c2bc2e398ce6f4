"""The access report: what a kernel's warps ask of a GPU's memory system.

The report replays, from the plan (the numbers render.py fills the
templates with: the levels, the tile's phases and padding, the offset
terms and constant offsets, the per-slice arguments), every global and
local memory access the kernel's template makes for the work-items of
some of its work-groups, and groups them as gpusim does (the Oclgrind
plugin in ../shared/gpu-offline, which watches the real kernel run): a
warp is 32 consecutive work-items of a work-group, and one warp-level
access is one memory instruction of the template run by one warp, the
n-th time each of its lanes runs it (a lane that skips an instruction
falls out of step with the others). Per warp-level access it counts

- global memory: the distinct bytes asked for, and the 32-byte sectors they
  touch against the fewest they fit in (``ceil(bytes / 32)``);
- local memory: wavefronts, the most distinct 4-byte words one of the 32
  banks serves, against the fewest (``ceil(words / 32)``).

A vector access (``vloadN``, a typed vector, ``vload_halfN``) is one access
of its whole width, as Oclgrind runs the OpenCL C. (clang's NVPTX back end
splits ``vloadN``, which promises element alignment only, into element
loads; typed vectors, ``plan.aligned``, stay whole.) Where the compiler
makes one instruction of two in the template, the replay does too: a value
loaded at every step of a work-item's run at the same index is loaded
once, and a padding's zeros are stored by the same instruction as the
data.

By default the report replays the first work-group: every other but the
last (a tail, or the destination's padding) repeats it at other addresses.
tests/test_access.py runs kernels under gpusim and checks that every
work-group's replay counts what gpusim counts.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidArgumentError
from ..problem import NO_ATTR_KINDS
from .plan import KernelPlan, constant_offsets, offset_terms, tile_values, vector_values
from .render import INTEGERS
from .tile import BANKS

WARP = 32     #: work-items that issue one memory instruction together
SECTOR = 32   #: the fewest bytes of global memory a GPU moves
WORD = 4      #: bytes of one local-memory bank


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


@dataclass(frozen=True)
class Access:
    """One instruction of the kernel (a load or a store of one array, in
    every spelling the template has for it), over its warp-level accesses."""

    instruction: str
    local: bool             # local memory (else global)
    width: int              # bytes one lane moves per access (the widest)
    warp_instructions: int  # warp-level accesses
    bytes: int              # distinct bytes asked for, summed over them
    units: int              # 32-byte sectors touched (global) or wavefronts (local)
    ideal: int              # the fewest sectors or wavefronts those bytes need

    @property
    def store(self) -> bool:
        return self.instruction.startswith("store")

    @property
    def bytes_per_instruction(self) -> float:
        return self.bytes / self.warp_instructions if self.warp_instructions else 0.0

    @property
    def efficiency(self) -> float:
        """Fewest sectors over sectors touched (global; 1.0 is ideal)."""
        return self.ideal / self.units if self.units else 1.0

    @property
    def conflicts(self) -> float:
        """Wavefronts over the fewest (local; 1.0 is no bank conflict)."""
        return self.units / self.ideal if self.ideal else 1.0


@dataclass(frozen=True)
class Report:
    """The accesses of the replayed work-groups (``groups``, of
    ``local_size`` work-items each), and gpusim's per-kernel figures."""

    accesses: tuple[Access, ...]
    local_size: int
    groups: tuple[int, ...]

    def _total(self, store: bool | None, local: bool) -> tuple[int, int, int, int]:
        picked = [a for a in self.accesses
                  if a.local == local and (store is None or a.store == store)]
        return (sum(a.warp_instructions for a in picked), sum(a.bytes for a in picked),
                sum(a.units for a in picked), sum(a.ideal for a in picked))

    def _bytes(self, store: bool) -> float:
        count, moved, _, _ = self._total(store, False)
        return moved / max(count, 1)

    def _efficiency(self, store: bool) -> float:
        _, _, units, ideal = self._total(store, False)
        return ideal / units if units else 1.0

    @property
    def load_bytes(self) -> float:
        """Distinct bytes per warp-level global load (512: 16 bytes a lane)."""
        return self._bytes(False)

    @property
    def store_bytes(self) -> float:
        """Distinct bytes per warp-level global store."""
        return self._bytes(True)

    @property
    def load_efficiency(self) -> float:
        """Fewest sectors over sectors touched, over every global load."""
        return self._efficiency(False)

    @property
    def store_efficiency(self) -> float:
        """Fewest sectors over sectors touched, over every global store."""
        return self._efficiency(True)

    @property
    def bank_conflicts(self) -> float:
        """Local-memory wavefronts over the fewest, loads and stores together."""
        _, _, units, ideal = self._total(None, True)
        return units / ideal if ideal else 1.0

    def figures(self) -> dict[str, float]:
        """The five figures, under gpusim's column names."""
        return {"ld B/wi": self.load_bytes, "st B/wi": self.store_bytes,
                "ld eff": self.load_efficiency, "st eff": self.store_efficiency,
                "lds conf": self.bank_conflicts}


def _warp_accesses(trace: list[LaneAccess]) -> tuple[Access, ...]:
    """``trace`` grouped into warp-level accesses as gpusim groups them (by
    instruction and its spelling in the template, work-group, warp, and
    the times the lane ran it before), counted per instruction."""
    runs = defaultdict(int)
    grouped = defaultdict(list)
    for access in trace:
        site = (access.instruction, access.local, access.spelling)
        key = (access.group, access.lane, site)
        run = runs[key]
        runs[key] = run + 1
        grouped[(site, access.group, access.lane // WARP, run)].append(access)
    rows = {}
    for (site, *_), accesses in grouped.items():
        name, local, _ = site
        moved = set()
        for a in accesses:
            moved.update(range(a.address, a.address + a.size))
        if local:
            words = {b // WORD for b in moved}
            per_bank = defaultdict(int)
            for w in words:
                per_bank[w % BANKS] += 1
            units, ideal = max(per_bank.values()), -(-len(words) // BANKS)
        else:
            units, ideal = len({b // SECTOR for b in moved}), -(-len(moved) // SECTOR)
        row = rows.setdefault(name, [local, 0, 0, 0, 0, 0])
        row[1] = max(row[1], max(a.size for a in accesses))
        row[2] += 1
        row[3] += len(moved)
        row[4] += units
        row[5] += ideal
    return tuple(Access(name, *row) for name, row in rows.items())


class _Kernel:
    """What both templates compute from a plan (logical indices, offsets,
    per-slice value positions), and the accesses of convert.cl.mako's
    load, store and attribute parts, recorded for the current lane."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        src, dst = plan.src_md, plan.dst_md
        self.needed = [d for d in range(dst.ndims) if d not in plan.linear]
        self.src_const, self.dst_const = constant_offsets(src, dst, plan.linear)
        self.terms = {d: offset_terms(src, d) for d in self.needed}
        self.padded = [d for d in self.needed if dst.own_padded_dims[d] != dst.dims[d]]
        self.args = {arg.field: arg for arg in plan.args}
        no_attr = plan.attr_kinds == NO_ATTR_KINDS
        self.bit_copy = no_attr and src.data_type == dst.data_type
        self.saturate_only = no_attr and src.data_type in INTEGERS and dst.data_type in INTEGERS
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
            p += plan.src_md.padded_offsets[d]
            total += sum(t.at(p) for t in self.terms[d])
        return total

    def dst_offset(self, a) -> int:
        return self.dst_const + sum(a[j] * lv.dst_stride for j, lv in enumerate(self.plan.levels))

    def slice(self, arg, i) -> int:
        """Where element i's value lies in a per-slice array (C order over
        the masked dims, one value per group)."""
        dims = self.plan.dst_md.dims
        pos, stride = 0, 1
        for d in reversed(range(len(dims))):
            if arg.mask >> d & 1:
                g = arg.group(d, len(dims))
                pos += i[d] // g * stride
                stride *= dims[d] // g
        return pos

    def lane_values(self, level, n: int) -> dict:
        """The per-slice fields loaded as vectors of ``n`` along ``level``
        (plan.vector_values)."""
        return {arg.field: n for arg in vector_values(self.plan, level)}

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
        for field in ("src_zero_point", "src_scales"):
            if field in args:
                self.value(field, i, spelling)
        if "sum_beta" in args and d_off is not None:
            self.elements("load dst (sum)", self.plan.dst_md, d_off, n, spelling)
        for field in ("dst_zero_point", "dst_scales"):
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
    steps = {j: inner.extent // vec if j == last else levels[j].extent for j in plan.fastest}
    indexed = [j for j in plan.fastest if steps[j] > 1]
    k.lanes = k.lane_values(levels[last - 1] if plan.block else inner if plan.vector else None,
                            plan.block or vec)
    k.invariant = {arg.field for arg in plan.args
                   if inner.merged or not arg.mask >> inner.dims[0] & 1}
    for g in groups:
        k.group = g if parity is None else (g, parity)
        for lane in range(local):
            k.lane = lane
            for chunk in range(plan.chunks):
                item = g * local + lane + chunk * plan.launch_items
                if item >= plan.items:
                    break
                a, rest = [0] * len(levels), item
                for n, j in enumerate(indexed):  # the item's loop indices, fastest first
                    if n == len(indexed) - 1:
                        a[j] = rest
                    else:
                        rest, a[j] = divmod(rest, steps[j])
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
    elif plan.block:  # register_transpose(): B rows in, B transposed rows out
        block = plan.block
        for step in range(block):
            i, s_off, _ = _step(plan, k, a, step)
            if not k.padding(i):
                k.load_src(s_off, block, step)
                if not (k.bit_copy or k.saturate_only):
                    k.attributes(i, block, None, step)
        row = plan.levels[-2].dst_stride
        d_base = k.dst_offset(a)
        for j in range(block):
            k.store_dst(d_base + j * row, block, j)
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
    loop's boxes numbered first)."""
    tile = plan.tile
    start = [0] * len(plan.levels)
    outer = [j for j in reversed(range(len(plan.levels))) if tile.counts[j] > 1]
    for n, j in enumerate(outer):
        if n == len(outer) - 1:
            step = box
        else:
            box, step = divmod(box, tile.counts[j])
        start[j] = step * tile.box[j]
    return start


def _walk(phase, r: int):
    """walk(): lane position ``r`` of ``phase`` as (its vector's first
    element in its row, the row), or None for a lane past the row's end."""
    row, col = divmod(r, phase.row_pad)
    if col >= phase.row_vectors:
        return None
    return col * phase.vec, row


def _place(plan: KernelPlan, phase, element: int, row: int, start):
    """Element ``element`` of row ``row`` of ``phase`` as (loop indices,
    digits in the box), or None past a loop's end (the last box's tail)."""
    box, levels = plan.tile.box, plan.levels
    digits = {}
    for value, seq in ((element, phase.order[:phase.row]), (row, phase.order[phase.row:])):
        for j in seq:
            value, digits[j] = divmod(value, box[j])
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
                rows = plan.src_md.dims[axis] // plan.shuffle[1]
                c = (i % plan.shuffle[1]) * rows + i // plan.shuffle[1]
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
            for r in range(lane, read.count, local):
                walked = _walk(read, r)
                placed = walked and _place(plan, read, *walked, start)
                if not placed:
                    continue
                a, _ = placed
                i = k.logical(a)
                if k.padding(i):
                    continue  # destination padding: no source element
                k.load_src(k.src_offset(a, i, shuffled=False), read.vec)
                e, row = walked
                if read_whole:  # one vector store
                    k.access("store tile", tile_index(a, placed[1], True) * s_size,
                             read.vec * s_size, local=True)
                    continue
                turn = r % read.vec if tile.rotates(read) else 0  # (Tile.rotates)
                for n in range(read.vec):  # each element to its own place
                    element = _place(plan, read, e + (n + turn) % read.vec, row, start)
                    if element:
                        k.access("store tile", tile_index(*element, True) * s_size, s_size, n,
                                 True)
            for r in range(lane, write.count, local):
                walked = _walk(write, r)
                placed = walked and _place(plan, write, *walked, start)
                if not placed:
                    continue
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
                    e, row = walked
                    turn = r % write.vec if tile.rotates(write) else 0
                    for n in range(write.vec):
                        element = _place(plan, write, e + (n + turn) % write.vec, row, start)
                        k.access("load tile", tile_index(*element) * s_size, s_size, n, True)
                if not (k.bit_copy or k.saturate_only):
                    k.attributes(i, write.vec, d_off)
                k.store_dst(d_off, write.vec)


# -- the report --------------------------------------------------------------

def work_groups(plan: KernelPlan, local: int | None = None) -> int:
    """How many work-groups with any work a launch of ``plan`` runs, with
    ``local`` work-items each (default ``plan.work_group``)."""
    local = plan.work_group if local is None else local
    if plan.tile is not None:
        return plan.tile.boxes
    return -(-plan.launch_items // local)


def _replay(plan: KernelPlan, local: int, groups: tuple) -> _Kernel:
    k = _Kernel(plan)
    if plan.tile is not None:
        _tiled(plan, k, local, groups)
    elif plan.nibbles == "passes":  # two launches: even nibbles, then odd ones
        for parity in (0, 1):
            _striped(plan, k, local, groups, parity)
    else:
        _striped(plan, k, local, groups)
    return k


def _arguments(plan: KernelPlan, local, groups) -> tuple[int, tuple]:
    local = plan.work_group if local is None else local
    if local < 1:
        raise InvalidArgumentError(f"work-group size {local}: must be at least 1")
    return local, tuple(range(1) if groups is None else groups)


def lane_accesses(plan: KernelPlan, local: int | None = None,
                  groups: Iterable[int] | None = None) -> list[LaneAccess]:
    """Every memory access the work-items of work-groups ``groups`` (default:
    the first) of ``local`` work-items (default ``plan.work_group``) make
    running ``plan``'s kernel, each lane's in the order it makes them."""
    local, groups = _arguments(plan, local, groups)
    return _replay(plan, local, groups).trace


def access_report(plan: KernelPlan, local: int | None = None,
                  groups: Iterable[int] | None = None) -> Report:
    """The memory accesses of ``plan``'s kernel by work-groups ``groups``
    (launch order; default: the first, which is not the last when there
    are several) of ``local`` work-items each (default ``plan.work_group``),
    grouped and counted as gpusim counts them (see the module's text). A
    4-bit destination written in two passes replays both launches.
    Raises InvalidArgumentError for a work-group size below 1."""
    local, groups = _arguments(plan, local, groups)
    k = _replay(plan, local, groups)
    return Report(_warp_accesses(k.trace), local, groups)


def _kind(plan: KernelPlan) -> str:
    if plan.tile is not None:
        tile = plan.tile
        return (f"tiled: a box of {tile.elements} elements per work-group through "
                f"{tile.local_elements * max(1, plan.src_md.dtype.bits // 8)} bytes of local "
                f"memory, read {tile.read.vec} and written {tile.write.vec} per access")
    if plan.block:
        return f"{plan.block}x{plan.block} register transposes"
    if plan.strategy == "gpu":
        return (f"striped: {plan.vec} elements per access"
                f"{' (typed: aligned vectors)' if plan.aligned else ''}, "
                f"{plan.chunks} per work-item spaced by the launch")
    return f"a run of {plan.vec} elements per work-item"


def format_report(plan: KernelPlan, work_group: int | None = None,
                  all_groups: bool = False) -> str:
    """The plan's strategy, NDRange, bytes per work-item and access report
    (work-groups of ``work_group`` work-items, default the plan's; the
    first work-group, or with ``all_groups`` every one), as text."""
    local = plan.work_group if work_group is None else work_group
    moved = (plan.src_md.dtype.bits + plan.dst_md.dtype.bits) / 8
    if plan.tile is not None:
        per_item = plan.tile.elements * moved / local
    else:
        per_item = plan.items * plan.vec * max(plan.block, 1) * moved / plan.launch_items
    count = work_groups(plan, local)
    report = access_report(plan, local, range(count) if all_groups else None)
    which = f"all {count} work-groups" if all_groups else f"work-group 0 of {count}"
    lines = [f"strategy {plan.strategy}: {_kind(plan)}",
             "NDRange {}, local {}".format(*plan.ndrange(local))
             + f"; {per_item:.0f} bytes read and written per work-item",
             f"memory accesses of {which} ({local} work-items, warps of {WARP}), "
             "as gpusim counts them:",
             f"  {'instruction':<22}{'memory':>7}{'lane B':>7}{'warp instr':>11}"
             f"{'B/instr':>8}{'sectors':>9}{'fewest':>8}  figure"]
    for a in report.accesses:
        figure = f"conf {a.conflicts:.2f}" if a.local else f"eff {a.efficiency:.2f}"
        lines.append(f"  {a.instruction:<22}{'local' if a.local else 'global':>7}{a.width:>7}"
                     f"{a.warp_instructions:>11}{a.bytes_per_instruction:>8.0f}"
                     f"{a.units:>9}{a.ideal:>8}  {figure}")
    lines.append("  (local memory: wavefronts instead of sectors)" if any(
        a.local for a in report.accesses) else "")
    lines.append("kernel: " + ", ".join(
        f"{name} {value:.0f}" if "B/wi" in name else f"{name} {value:.2f}"
        for name, value in report.figures().items()))
    return "\n".join(line for line in lines if line)
