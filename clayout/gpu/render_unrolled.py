"""Render an unrolled plan (gpu/plan_unrolled.py) with templates/unrolled.cl.mako.

Python works out every element of the block: its offsets from the
work-item's bases on both sides (numbers), whether it lies in the
destination's padding (never, always, or a test on its indices), and
which consecutive elements go out as one vector store. The template
spells them; no device is needed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from .plan_types import (KernelPlan, constant_offsets, conversion, dim_offset, indexed_dims,
                         item_loops, offset_terms, padded_dims)
from .plan_run_transpose import run_tables
from .plan_unrolled import has_outer, padding_kind


@dataclass(frozen=True)
class Element:
    """One element of the block: source and destination offsets from the
    bases, its indices (name, C expression) where needed, and its padding
    ("always", a C test, or "")."""

    src: int
    dst: int
    indices: tuple
    padding: str
    kind: str = "element"


@dataclass(frozen=True)
class Pair:
    """Two consecutive elements of a 4-bit destination: one byte, the
    first in the low nibble (its offset is even)."""

    elements: tuple
    dst: int
    kind: str = "pair"


@dataclass(frozen=True)
class RunTile:
    """A BxB tile of a run transpose (gpu/plan_run_transpose.py): the
    source offset of each of its rows and the destination offset of each
    of its columns, from the bases (fewer than B columns where the rows
    overlap: those it keeps); each row's loads, (offset in the row, n)
    each: one of B elements, or the pieces of a row cut short."""

    src: tuple
    dst: tuple
    pieces: tuple


@dataclass(frozen=True)
class Run:
    """Consecutive destination elements stored as one vector: their source
    offsets, the first's destination offset; all padding or none."""

    src: tuple
    dst: int
    padding: bool
    kind: str = "run"

    @property
    def consecutive(self) -> bool:
        """Whether the source elements are consecutive too (one vector load)."""
        return consecutive(self.src)


def block_elements(plan: KernelPlan):
    """Every element of ``plan``'s block, in the destination's order of the
    block's loops: (logical index of each indexed dim inside
    the block, source offset from the base, destination offset). A dim's
    source offset at outer index o and block index l is off(o) + off(l) -
    off(0) (plan_unrolled.separable): the base holds off(o), the element
    off(l) - off(0)."""
    levels, src = plan.levels, plan.src_md
    needed = indexed_dims(plan)
    shuffle = plan.shuffle
    for a in itertools.product(*(range(levels[j].extent) for j in plan.unrolled)):
        at = dict(zip(plan.unrolled, a))
        local = {d: sum(at[j] * levels[j].mult for j in at if levels[j].dims == (d,)
                        and not levels[j].merged) for d in needed}
        s_off = sum(at[j] * levels[j].src_stride for j in at if levels[j].merged)
        for d in needed:
            p = local[d]
            if shuffle is not None and shuffle[0] == d:  # (the axis lies in the block whole)
                rows = src.dims[d] // shuffle[1]
                p = (p % rows) * shuffle[1] + p // rows
            s_off += dim_offset(src, d, p) - dim_offset(src, d, 0)  # (the bases add off(0))
        d_off = sum(at[j] * levels[j].dst_stride for j in at)
        yield local, s_off, d_off


def block_parts(plan: KernelPlan, c) -> list:
    """The block as the template writes it: Runs of ``plan.vec`` elements
    where the plan has vectors, Pairs into a 4-bit destination, else
    Elements."""
    dst = plan.dst_md
    padded = padded_dims(plan)
    valued = {d for arg in plan.args if arg.per_slice for d in range(dst.ndims)
              if arg.mask >> d & 1}
    elements = []
    for local, s_off, d_off in block_elements(plan):
        kinds = {d: padding_kind(plan, d, local[d]) for d in padded}
        always = any(k == "always" for k in kinds.values())
        tests = [d for d, k in kinds.items() if k == "test"]
        names = sorted(set(tests) | valued) if not always else []
        indices = tuple((f"i{d}", c.sum([f"i{d}_base" if has_outer(plan, d) else None],
                                        local[d])) for d in names)
        test = " || ".join(f"i{d} >= {c.lit(dst.dims[d])}" for d in tests)
        elements.append(Element(s_off, d_off, indices, "always" if always else test))
    if plan.vec == 1:
        return elements
    if dst.dtype.packed:
        return [Pair((a, b), a.dst) for a, b in zip(elements[::2], elements[1::2])]
    parts = []
    for k in range(0, len(elements), plan.vec):
        group = elements[k:k + plan.vec]
        kinds = {e.padding for e in group}
        if kinds in ({""}, {"always"}):
            parts.append(Run(tuple(e.src for e in group), group[0].dst, kinds == {"always"}))
        else:
            parts += group  # (padding in part of the run, or tested: one by one)
    return parts


#: The bytes of a source line a block loads whole (one AVX register), and
#: of its half where whole lines do not come (nChw8c's 8 channels of f32
#: then still do). Lines of 64 bytes did as well on PoCL but worse on Intel's
#: runtime: nhwc shuffled in groups of 3 (288 channels, 8x288x56x56) 0.72-0.78
#: of copy against 0.88-1.01 (blocked shuffles the same, 0.37-0.48).
LINE_BYTES = 32

#: Blocks that hold more source elements in lines than this are meant for
#: CPUs: a GPU thread has 255 registers of 32 bits, one an element even of
#: 2 bytes. NVIDIA's compiler kept nChw16c's 34 lines of 8 floats (272)
#: without spills, and spilled 296 bytes of an f16 shuffle's 20 lines of
#: 16 (320), 1120 of nChw8c's 68 lines of 8 floats (make ptx).
CPU_LINE_ELEMENTS = 288


def source_lines(runs, element_bytes: int) -> tuple[int, dict]:
    """The source lines that ``runs`` (each a tuple of source offsets from
    the base) read whole: (W, {offset: (line, lane)}) for the widest W
    (LINE_BYTES, else half of it; up to 16 elements) of which some aligned
    group of W consecutive offsets from the base is read in full (W 0 and
    no lanes where none is). Such a line loads as one vector and its
    elements are its lanes: the blocked shuffles read every element of 17
    lines 200 KiB apart at strides of 4, which as scalar loads came back to
    each line after the 12-way L1 cache had evicted it. Runs consecutive in
    the source are one vector load of their own."""
    offsets = {o for run in runs if not consecutive(run) for o in run}
    widest = min(16, LINE_BYTES // element_bytes)
    for width in (widest, widest // 2):
        starts = {o - o % width for o in offsets if o >= 0}
        whole = sorted(k for k in starts if all(k + j in offsets for j in range(width)))
        if whole:
            return width, {k + j: (n, j) for n, k in enumerate(whole) for j in range(width)}
    return 0, {}


def block_lines(plan: KernelPlan) -> tuple[int, dict]:
    """``source_lines`` of the block's runs of source elements that are
    vectors (bit copies and saturation; no padding), (0, {}) in blocks
    without: what the template loads whole and the access replay
    (access_replay.py) counts."""
    if (plan.vec == 1 or plan.dst_md.dtype.packed or plan.src_md.dtype.packed
            or not any(conversion(plan))):
        return 0, {}
    elements = list(block_elements(plan))
    offsets = [s for _, s, _ in elements]
    return source_lines([tuple(offsets[k:k + plan.vec]) for k in data_runs(plan, elements)],
                        plan.src_md.dtype.bits // 8)


def data_runs(plan: KernelPlan, elements=None) -> list[int]:
    """Where each run of ``plan.vec`` elements free of padding starts in the
    block (the template's Runs of source elements; none where elements go
    one by one or in pairs); ``elements``: block_elements', if at hand."""
    if plan.vec == 1 or plan.dst_md.dtype.packed:
        return []
    padded = padded_dims(plan)
    elements = list(block_elements(plan)) if elements is None else elements
    return [k for k in range(0, len(elements), plan.vec)
            if all(padding_kind(plan, d, local[d]) == "never"
                   for local, _, _ in elements[k:k + plan.vec] for d in padded)]


def row_pieces(b: int, kept: int, start: int, span: int) -> tuple:
    """The loads of a tile's row of ``b`` elements from source offset
    ``start``: one of b, except where the rows overlap (``kept`` < b
    columns, a block of ``span`` consecutive source elements) and b would
    pass the block: then the kept columns alone, in pieces of powers of
    two (9 as 8 + 1), so that no load passes the block (nor the buffer,
    at the last block)."""
    if kept >= b or start + b <= span:
        return ((0, b),)
    pieces, at = [], 0
    for n in (8, 4, 2, 1):
        while kept - at >= n:
            pieces.append((at, n))
            at += n
    return tuple(pieces)


def consecutive(offsets) -> bool:
    """Whether the offsets follow one another (one vector load)."""
    return all(b == a + 1 for a, b in zip(offsets, offsets[1:]))


def unrolled_values(plan: KernelPlan, c, dst_type: str) -> dict:
    """What templates/unrolled.cl.mako needs of an unrolled plan beyond
    every template's values: the item's loops and bases, the block's
    parts, the description, the vector hint (``dst_type``: the
    destination's storage type)."""
    levels = plan.levels
    loops = item_loops(plan)
    decomposition = [(f"l{j}", steps) for j, steps in loops]
    src_const, dst_const = constant_offsets(plan.src_md, plan.dst_md, plan.linear)
    outer = [j for j, _ in loops]
    bases, s_terms = [], []
    for d in indexed_dims(plan):
        own = [c.times(f"l{j}", levels[j].mult) for j in outer
               if levels[j].dims == (d,) and not levels[j].merged]
        if not own:
            continue
        bases.append((f"i{d}_base", c.sum(own)))
        p = f"i{d}_base"
        if plan.src_md.padded_offsets[d]:
            p = f"(i{d}_base + {c.lit(plan.src_md.padded_offsets[d])})"
        s_terms += [c.term(p, t) for t in offset_terms(plan.src_md, d)]
    const = src_const + sum(dim_offset(plan.src_md, d, 0) for d in indexed_dims(plan)
                            if not has_outer(plan, d))
    s_terms += [c.times(f"l{j}", levels[j].src_stride) for j in outer if levels[j].merged]
    bases.append(("s_base", c.sum(s_terms, const)))
    bases.append(("d_base", c.sum([c.times(f"l{j}", levels[j].dst_stride) for j in outer],
                                  dst_const)))
    common = dict(decomposition=decomposition, bases=bases, items=plan.items,
                  chunks=plan.chunks, launch=plan.launch_items, block=plan.block)
    if plan.block:  # a run transpose: tiles, no parts
        rows, columns = run_tables(plan)
        b = plan.block
        # Tile (m, r): columns m.. of the source's run, rows r.. of the
        # destination's; the source's run outermost.
        span = len(rows) * len(columns)  # (the block's source elements)
        tiles = [RunTile(tuple(rows[r + k] + m for k in range(b)),
                         tuple(columns[m + j] + r for j in range(min(b, len(columns)))),
                         tuple(row_pieces(b, len(columns), rows[r + k] + m, span)
                               for k in range(b)))
                 for m in range(0, len(columns), b) for r in range(0, len(rows), b)]
        # (NVIDIA's compiler spilled f32 -> bf16's 16 converted rows of 16: make ptx)
        bit_copy, saturate_only = conversion(plan)
        held = "" if bit_copy or saturate_only else (
            f"each tile holds {b} converted rows of {b} elements until it stores them")
        return dict(common, tiles=tiles, parts=[], strided_src=False, line_width=0, lines=[],
                    cpu_only=held, typed_store=plan.typed_store,
                    line_lane={}, hint=f"__attribute__((vec_type_hint({dst_type}{b}))) ",
                    work=f"transposes {len(tiles)} tile{'s' if len(tiles) > 1 else ''} of {b}x{b} "
                         f"in registers, a run of {len(columns)} source elements by one of "
                         f"{len(rows)} destination elements"
                         + (", rows overlapping in the source" if len(columns) < b else ""))
    work = f"moves a block of {plan.item_elements} elements at constant offsets"
    if plan.dst_md.dtype.packed:
        work += ", two to a byte"
    elif plan.vec > 1:
        work += f", {plan.vec} at a time into the destination"
    hint = (f"__attribute__((vec_type_hint({dst_type}{plan.vec}))) "
            if plan.vec > 1 and not plan.dst_md.dtype.packed else "")
    parts = block_parts(plan, c)
    width, lanes = block_lines(plan)  # (the rest as below)
    line_lane = {o: f"line{n}.s{'0123456789abcdef'[j]}" for o, (n, j) in lanes.items()}
    lines = sorted({(n, o - j) for o, (n, j) in lanes.items()})
    # A run's loads at constant strides stay scalar loads through a volatile
    # view of the source: PoCL's LLVM makes each run's loads one gather
    # (vgatherqps), which held oihw -> OIhw16i16o and eight other weights
    # reorders to 0.29-0.45 of copy on an AMD EPYC, against 0.47-0.62 so.
    # Not where a helper taking a plain pointer reads them (4-bit types, f16
    # converted).
    helper_read = plan.src_md.dtype.packed or (plan.src_md.data_type == "f16"
                                               and not conversion(plan)[0])
    strided_src = not helper_read and any(
        p.kind == "run" and not p.padding and not p.consecutive
        and any(o not in line_lane for o in p.src) for p in parts)
    held = (f"the block holds {len(lines)} source lines of {width} elements"
            if len(lines) * width > CPU_LINE_ELEMENTS else "")
    return dict(common, work=work, hint=hint, parts=parts, tiles=[], strided_src=strided_src,
                line_width=width, lines=lines, line_lane=line_lane, cpu_only=held)
