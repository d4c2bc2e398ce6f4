"""The access report: which 128-byte lines a warp's loads and stores touch.

A GPU moves global memory in lines of 128 bytes; a warp instruction whose
32 work-items touch more lines than their bytes need wastes bandwidth. This
module replays a plan's addresses for the first warp (work-items 0..31 of
the first work-group), from the plan's numbers as the kernel computes them,
and counts the lines each global load and store instruction touches against
the ideal (its active work-items' bytes, packed into whole lines).

Width: an aligned typed vector access (``plan.aligned``) is one instruction;
``vloadN``/``vstoreN`` are counted as N element accesses, which is what
clang's NVPTX back end emits for them (OpenCL only promises element
alignment there).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .plan import KernelPlan, constant_offsets, offset_terms
from .tile import LINE

WARP = 32


@dataclass(frozen=True)
class Access:
    """One global load or store instruction of the kernel, over every time
    the first warp runs it."""

    instruction: str   # "load src", "store dst", "load dst (sum)", "load src_scales"
    width: int         # bytes one work-item moves per execution
    runs: int          # times the warp runs it
    lines: int         # lines touched, summed over the runs
    ideal: int         # lines the same bytes need at least

    @property
    def ratio(self) -> float:
        return self.lines / self.ideal if self.ideal else 1.0


def _bytes(md) -> int:
    return max(1, md.dtype.bits // 8)


def _span(md, offset: int, elements: int) -> tuple[int, int]:
    """(byte address, bytes) of ``elements`` elements of ``md`` from element
    ``offset`` (4-bit elements: the bytes holding them)."""
    return offset * md.dtype.bits // 8, max(1, elements * md.dtype.bits // 8)


class _Offsets:
    """A plan's element offsets from its loop indices, as its kernel forms them."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        src, dst = plan.src_md, plan.dst_md
        self.src_const, self.dst_const = constant_offsets(src, dst, plan.linear)
        self.needed = [d for d in range(dst.ndims) if d not in plan.linear]
        self.terms = {d: offset_terms(src, d) for d in self.needed}

    def logical(self, a) -> dict:
        return {d: sum(a[j] * lv.mult for j, lv in enumerate(self.plan.levels) if lv.dims == (d,))
                for d in self.needed}

    def padding(self, i) -> bool:
        dst = self.plan.dst_md
        return any(i[d] >= dst.dims[d] for d in self.needed
                   if dst.own_padded_dims[d] != dst.dims[d])

    def src(self, a, i, shuffled=True) -> int:
        plan = self.plan
        off = self.src_const + sum(a[j] * lv.src_stride for j, lv in enumerate(plan.levels)
                                   if lv.merged)
        for d in self.needed:
            p = i[d]
            if shuffled and plan.shuffle and plan.shuffle[0] == d:
                rows = plan.src_md.dims[d] // plan.shuffle[1]
                p = (p % rows) * plan.shuffle[1] + p // rows
            p += plan.src_md.padded_offsets[d]
            off += sum(t.at(p) for t in self.terms[d])
        return off

    def dst(self, a) -> int:
        return self.dst_const + sum(a[j] * lv.dst_stride for j, lv in enumerate(self.plan.levels))

    def slices(self, i) -> dict:
        """The per-slice arrays' positions for logical index i."""
        out = {}
        for arg in self.plan.args:
            if arg.per_slice:
                pos, stride = 0, 1
                dims = self.plan.dst_md.dims
                for d in reversed(range(len(dims))):
                    if arg.mask >> d & 1:
                        g = arg.group(d, len(dims))
                        pos += i[d] // g * stride
                        stride *= dims[d] // g
                out[arg.field] = pos
        return out


class _Recorder:
    """Collects, per instruction and run, the byte ranges the warp's work-items touch."""

    def __init__(self):
        self.runs = OrderedDict()   # (instruction, width) -> {run: [byte addresses]}

    def add(self, instruction: str, run, width: int, address: int):
        self.runs.setdefault((instruction, width), {}).setdefault(run, []).append(address)

    def report(self) -> list[Access]:
        out = []
        for (instruction, width), runs in self.runs.items():
            lines = ideal = 0
            for addresses in runs.values():
                touched = set()
                for a in addresses:
                    touched.update(range(a // LINE, (a + width - 1) // LINE + 1))
                lines += len(touched)
                ideal += -(-len(addresses) * width // LINE)
            out.append(Access(instruction, width, len(runs), lines, ideal))
        return out


def _record_values(rec, offsets, plan, run, i, d_off, parts: int = 1, width: int = 1):
    """The loads a destination value needs besides its source: per-slice
    attribute values and, for a sum, the old destination (``parts``
    accesses of ``width`` elements)."""
    for field, pos in offsets.slices(i).items():
        rec.add(f"load {field}", run, 4, pos * 4)
    if plan.attr_kinds[4]:
        size = _bytes(plan.dst_md)
        for e in range(parts):
            rec.add("load dst (sum)", (run, e), width * size, (d_off + e * width) * size)


def _item_kernel(plan: KernelPlan, rec: _Recorder) -> None:
    levels, vec, last = plan.levels, plan.vec, len(plan.levels) - 1
    offsets = _Offsets(plan)
    s_size, d_size = _bytes(plan.src_md), _bytes(plan.dst_md)
    steps = {j: levels[last].extent // vec if j == last else levels[j].extent
             for j in plan.fastest}
    indexed = [j for j in plan.fastest if steps[j] > 1]
    lanes = 1 if plan.aligned else None  # vector widths: see the module docstring
    for chunk in range(plan.chunks):
        for t in range(WARP):
            item = t + chunk * plan.launch_items
            if item >= plan.items:
                continue
            a, rest = [0] * len(levels), item
            for n, j in enumerate(indexed):
                a[j], rest = (rest, 0) if n == len(indexed) - 1 else divmod(rest, steps[j])[::-1]
            a[last] *= vec
            if plan.block:
                _register_block(plan, offsets, rec, a, chunk)
                continue
            if plan.vector:
                i = offsets.logical(a)
                pad = offsets.padding(i)
                if not pad:
                    parts = _vector_parts(plan.dst_md, vec, lanes)  # the sum's old values
                    _record_values(rec, offsets, plan, chunk, i, offsets.dst(a), parts,
                                   vec // parts)
                    _record_vector(rec, "load src", chunk, plan.src_md, offsets.src(a, i), vec,
                                   _vector_parts(plan.src_md, vec, lanes))
                parts = _vector_parts(plan.dst_md, vec, lanes or plan.typed_store or None)
                _record_vector(rec, "store dst", chunk, plan.dst_md, offsets.dst(a), vec, parts)
                continue
            for k in range(vec):
                b = list(a)
                b[last] += k
                i = offsets.logical(b)
                d_off = offsets.dst(b)
                if not offsets.padding(i):
                    rec.add("load src", (chunk, k), s_size, offsets.src(b, i) * s_size)
                    _record_values(rec, offsets, plan, (chunk, k), i, d_off)
                rec.add("store dst", (chunk, k), d_size, d_off * d_size)


def _vector_parts(md, vec: int, typed) -> int:
    """The accesses a vector of ``vec`` elements of ``md`` takes: one when
    typed, else one per element (one per byte for 4-bit elements)."""
    if typed:
        return 1
    return vec // 2 if md.dtype.packed else vec


def _record_vector(rec, instruction, chunk, md, offset: int, vec: int, parts: int):
    width = vec // parts
    for e in range(parts):
        address, size = _span(md, offset + e * width, width)
        rec.add(instruction, (chunk, e), size, address)


def _register_block(plan, offsets, rec, a, chunk):
    """A BxB register transpose: B rows of B source elements loaded, B rows
    of B destination elements stored (each vloadB/vstoreB as B accesses)."""
    last, block = len(plan.levels) - 1, plan.block
    s_size, d_size = _bytes(plan.src_md), _bytes(plan.dst_md)
    for k in range(block):
        for e in range(block):
            b = list(a)
            b[last] += k
            b[last - 1] += e
            i = offsets.logical(b)
            if not offsets.padding(i):
                rec.add("load src", (chunk, k, e), s_size, offsets.src(b, i) * s_size)
            if plan.typed_store:  # each transposed row by one store
                if e == 0:
                    b = list(a)
                    b[last - 1] += k
                    rec.add("store dst", (chunk, k), block * d_size, offsets.dst(b) * d_size)
                continue
            b = list(a)
            b[last - 1] += k
            b[last] += e
            rec.add("store dst", (chunk, k, e), d_size, offsets.dst(b) * d_size)


def _tiled_kernel(plan: KernelPlan, rec: _Recorder, lanes: int) -> None:
    tile, levels = plan.tile, plan.levels
    offsets = _Offsets(plan)
    s_size, d_size = _bytes(plan.src_md), _bytes(plan.dst_md)
    for reading, phase in ((True, tile.read), (False, tile.write)):
        for run in range(-(-phase.count // lanes)):
            for lane in range(WARP):
                r = run * lanes + lane
                if r >= phase.count:
                    continue
                a = [0] * len(levels)  # the first box starts at zero everywhere
                if phase.row_pad != phase.row_len:
                    row, col = divmod(r, phase.row_pad)
                    if col >= phase.row_len:
                        continue
                    parts = ((col, phase.order[:phase.row]), (row, phase.order[phase.row:]))
                else:
                    parts = ((r, phase.order),)
                for value, seq in parts:
                    for j in seq:
                        value, a[j] = divmod(value, tile.box[j])
                if any(a[j] >= levels[j].extent for j in phase.order):
                    continue
                i = offsets.logical(a)
                pad = offsets.padding(i)
                if reading:
                    if not pad:
                        rec.add("load src", run, s_size, offsets.src(a, i, shuffled=False) * s_size)
                    continue
                d_off = offsets.dst(a)
                if not pad:
                    _record_values(rec, offsets, plan, run, i, d_off)
                rec.add("store dst", run, d_size, d_off * d_size)


def access_report(plan: KernelPlan) -> list[Access]:
    """Lines touched per global load and store instruction of ``plan``'s
    kernel by its first warp of 32 work-items, against the ideal."""
    rec = _Recorder()
    if plan.tile is not None:
        _tiled_kernel(plan, rec, plan.work_group)
    else:
        _item_kernel(plan, rec)
    return rec.report()


def format_report(plan: KernelPlan, work_group: int | None = None) -> str:
    """The plan's strategy, NDRange, bytes per work-item and access report, as text."""
    local = work_group or plan.work_group
    moved = (_bytes(plan.src_md) + _bytes(plan.dst_md))
    if plan.tile is not None:
        tile = plan.tile
        kind = (f"tiled: a box of {tile.elements} elements per work-group through "
                f"{tile.local_elements * _bytes(plan.src_md)} bytes of local memory")
        ndrange = "NDRange {}, local {}".format(*plan.ndrange(local))
        per_item = tile.elements * moved / local
    else:
        if plan.block:
            kind = f"{plan.block}x{plan.block} register transposes"
        elif plan.strategy == "gpu":
            kind = (f"striped: {plan.vec} elements per access"
                    f"{' (typed: aligned vectors)' if plan.aligned else ''}, "
                    f"{plan.chunks} per work-item spaced by the launch")
        else:
            kind = f"a run of {plan.vec} elements per work-item"
        ndrange = "NDRange {}, local {}".format(*plan.ndrange(local))
        per_item = plan.items * plan.vec * max(plan.block, 1) * moved / plan.launch_items
    lines = [f"strategy {plan.strategy}: {kind}",
             f"{ndrange}; {per_item:.0f} bytes read and written per work-item",
             f"first warp of {WARP} work-items, 128-byte lines per instruction:",
             f"  {'instruction':<22}{'bytes':>6}{'runs':>7}{'lines':>8}{'ideal':>8}{'ratio':>7}"]
    for a in access_report(plan):
        lines.append(f"  {a.instruction:<22}{a.width:>6}{a.runs:>7}{a.lines:>8}{a.ideal:>8}"
                     f"{a.ratio:>7.2f}")
    return "\n".join(lines)
