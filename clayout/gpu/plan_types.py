"""A kernel plan as plain data, and the small queries on it that the planner,
the renderer (render.py) and the access report's replay (access_replay.py)
share.

The plan (``KernelPlan``) walks the destination in its own physical order:
its ``Level`` loops, each outer dim then each inner block, outermost first.
The source offset of an element is the sum of per-dim offset ``Term``s
(the layout is separable), each with constant divisor, modulus and stride.
Each piece of arithmetic both the renderer (as C) and the access report
(as numbers) need from a plan lives here once: the offset terms and the
constant offsets, the dims the kernel indexes and pads, the split of a
work-item's number into loop indices, the per-slice values loaded as
vectors or staged, where a value lies in its array, and which conversions
need no attributes. gpu/plan.py makes plans (with plan_cpu.py or
plan_gpu.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..memory_desc import MemoryDesc, dims_text
from ..problem import NO_ATTR_KINDS
from .tile import Tile, crosses

#: Integer types: converting between them (no attributes) only saturates.
INTEGERS = ("s32", "s8", "u8")


@dataclass(frozen=True)
class Term:
    """One term of a dim's offset: ``((p / divisor) % modulus) * stride`` for
    the padded index p (no modulo when ``modulus`` is None)."""

    divisor: int
    modulus: int | None
    stride: int

    def at(self, p: int) -> int:
        q = p // self.divisor
        return (q if self.modulus is None else q % self.modulus) * self.stride


def offset_terms(md: MemoryDesc, d: int) -> tuple[Term, ...]:
    """The terms whose sum is the offset (elements) dim ``d`` of ``md`` adds at
    padded index ``index + md.padded_offsets[d]``. Terms that are always
    zero, and modulos the index never reaches, are left out."""
    limit = md.padded_offsets[d] + md.own_padded_dims[d]  # p stays below this
    blocks = md.blocks[d]
    terms = []
    if md.strides[d] and limit > blocks:
        terms.append(Term(blocks, None, md.strides[d]))
    inner_stride, divisor = 1, 1
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            terms.append(Term(divisor, size if limit > divisor * size else None, inner_stride))
            divisor *= size
        inner_stride *= size
    return tuple(terms)


def dim_offset(md: MemoryDesc, d: int, index, terms: tuple[Term, ...] | None = None):
    """The offset dim ``d`` adds at logical ``index`` (an int or an array),
    from its terms (``offset_terms(md, d)``, worked out when not given)."""
    p = index + md.padded_offsets[d]
    return sum(t.at(p) for t in (offset_terms(md, d) if terms is None else terms))


@dataclass(frozen=True)
class Level:
    """One loop of the destination's physical order.

    ``dims`` has one logical dim, or several merged dims that move together in
    both layouts (then ``src_stride`` is their common source stride). ``mult``
    is what one step of this level adds to its dim's logical index.
    """

    dims: tuple[int, ...]
    extent: int
    dst_stride: int
    mult: int
    src_stride: int | None = None

    @property
    def merged(self) -> bool:
        return self.src_stride is not None

    def split(self, part: int) -> tuple["Level", "Level"]:
        """This loop as an outer loop of extent/part steps and an inner one of ``part``."""
        scaled = None if self.src_stride is None else self.src_stride * part
        outer = Level(self.dims, self.extent // part, self.dst_stride * part,
                      self.mult * part, scaled)
        return outer, Level(self.dims, part, self.dst_stride, self.mult, self.src_stride)


@dataclass(frozen=True)
class KernelArg:
    """A kernel argument after src and dst, taken from the Attr field
    ``field``: one value, or (a nonzero ``mask``) a buffer of values per
    slice of the masked dims."""

    name: str
    c_type: str        # "float" or "int"
    field: str         # an Attr field: src_scales, dst_scales, src/dst_zero_points, sum_beta
    mask: int = 0
    groups: tuple[int, int] | None = None   # group sizes along the last two dims
    in_buffer: bool = False  # a per-tensor value read from a buffer (given at execute)

    @property
    def per_slice(self) -> bool:
        """The values come in a buffer, indexed by slice (one slice for mask 0)."""
        return self.mask != 0 or self.in_buffer

    def group(self, d: int, ndims: int) -> int:
        """How many consecutive indices of dim ``d`` share one value."""
        return 1 if self.groups is None or d < ndims - 2 else self.groups[d - (ndims - 2)]


def kind_mask(kind) -> int | None:
    """The mask of an attribute kind (None, a mask, or (mask, groups))."""
    return kind[0] if isinstance(kind, tuple) else kind


#: Attribute fields in the order of the formula, and their arguments' names and C types.
ATTR_FIELDS = (("src_scales", "src_scale", "float"), ("dst_scales", "dst_scale", "float"),
               ("src_zero_points", "src_zp", "int"), ("dst_zero_points", "dst_zp", "int"))


@dataclass(frozen=True)
class KernelPlan:
    """A reorder (or shuffle) kernel: descriptors, attribute kinds, loops, strategy.

    Frozen and hashable: the plan is the kernel's cache key.
    """

    name: str
    strategy: str
    src_md: MemoryDesc
    dst_md: MemoryDesc
    attr_kinds: tuple
    shuffle: tuple[int, int] | None   # (axis, group): read the axis in shuffled order
    levels: tuple[Level, ...]
    vec: int                          # elements of the innermost loop per work-item (unrolled: per store)
    items: int                        # work-items needed with chunks == 1
    chunks: int                       # items each work-item runs, spaced by the global size
    wide_index: bool                  # 64-bit offsets
    compute: str                      # "float" or "double"
    linear: frozenset                 # dims whose source offset the levels carry
    fastest: tuple[int, ...]          # levels in the order work-items step them, fastest first
    args: tuple[KernelArg, ...]
    work_group: int
    block: int = 0                    # B > 0: each work-item transposes a BxB block in registers
    vector: bool = False              # the innermost loop is contiguous on both sides
    aligned: bool = False             # vectors start on their own size: typed accesses
    tile: Tile | None = None          # each work-group moves a box through local memory
    nibbles: str | None = None        # a 4-bit destination: "pairs" or "passes" (below)
    typed_store: bool = False         # the destination's vectors by typed stores (proven aligned)
    unrolled: tuple[int, ...] = ()    # levels each work-item runs whole, at constant offsets
    shape: str = ""                   # the kernel shape that made the plan (gpu/shapes.py)

    @property
    def item_elements(self) -> int:
        """Destination elements one item moves (a striped plan's run, a
        register transpose's block, an unrolled block)."""
        if self.unrolled:
            return math.prod(self.levels[j].extent for j in self.unrolled)
        return self.vec * max(self.block, 1)

    @property
    def nibble_words(self) -> bool:
        """A register transpose of 4-bit elements as words of nibbles
        (gpu/plan_cpu.py ``plan_nibble_transpose``): a 4-bit side."""
        return bool(self.block) and (self.src_md.dtype.packed or self.dst_md.dtype.packed)

    @property
    def launch_items(self) -> int:
        """Work-items a launch needs (work-groups, for a tiled plan)."""
        return -(-self.items // self.chunks)

    def work_groups(self, local: int) -> int:
        """Work-groups of ``local`` work-items that have work: one per box
        for a tiled plan (the grid may hold spare ones)."""
        if self.tile is not None:
            return self.tile.boxes
        return -(-self.launch_items // local)

    def ndrange(self, local: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(global, local) sizes for work-groups of ``local`` work-items: a
        striped plan on dimension 0; a tiled plan one work-group per box,
        the boxes over dimensions 1 and 2 (``Tile.grid``)."""
        if self.tile is None:
            return (self.work_groups(local) * local,), (local,)
        rows, layers = self.tile.grid
        if layers == 1:
            return (local, rows), (local, 1)
        return (local, rows, layers), (local, 1, 1)


def vector_values(plan: KernelPlan, level: Level | None) -> tuple[KernelArg, ...]:
    """The per-slice args a vector along ``level`` loads as vectors too:
    one value per element of its dim, consecutive in the array (the plan
    made sure). None for no vector."""
    if level is None or level.merged:
        return ()
    (d,) = level.dims
    return tuple(arg for arg in plan.args if arg.per_slice and arg.mask >> d & 1
                 and arg.group(d, plan.dst_md.ndims) == 1)


def striped_vector_values(plan: KernelPlan) -> tuple[tuple[KernelArg, ...], int]:
    """The per-slice args a striped plan loads as vectors (along its
    vectors' loop, or a register transpose's source loop), and their lanes."""
    levels = plan.levels
    along = levels[-2] if plan.block else levels[-1] if plan.vector else None
    return vector_values(plan, along), plan.block or plan.vec


def tile_values(plan: KernelPlan):
    """How a tiled plan's write phase reads its per-slice values: (the args
    loaded as vectors along its vectors, the args staged in local memory
    once per box as (arg, dim, the box's levels of that dim, outermost
    first)). Staged: of one dim, no groups, not loaded as vectors, along a
    dim the box spans, so every lane does not load a value its warp's
    other lanes load too. A vector across the row's loops loads none as
    vectors: each element finds its staged value."""
    tile, write = plan.tile, plan.tile.write
    vectors = () if write.vec == 1 or crosses(tile, write) else \
        vector_values(plan, plan.levels[write.order[0]])
    staged = []
    for arg in plan.args:
        if (not arg.per_slice or arg in vectors or arg.mask & (arg.mask - 1)
                or arg.groups is not None):
            continue
        d = arg.mask.bit_length() - 1
        own = tuple(j for j, lv in enumerate(plan.levels) if lv.dims == (d,) and tile.box[j] > 1)
        if own:
            staged.append((arg, d, own))
    return vectors, tuple(staged)


def kernel_args(kinds: tuple) -> tuple[KernelArg, ...]:
    args = [KernelArg(name + ("s" if kind_mask(kind) else ""), c_type, field, kind_mask(kind),
                      kind[1] if isinstance(kind, tuple) else None,
                      isinstance(kind, tuple) and len(kind) == 3)
            for (field, name, c_type), kind in zip(ATTR_FIELDS, kinds[:4]) if kind is not None]
    if kinds[4]:
        args.append(KernelArg("beta", "float", "sum_beta"))
    return tuple(args)


def indexed_dims(plan: KernelPlan) -> list[int]:
    """The dims whose logical index the kernel works out (the levels do not
    carry their source offset)."""
    return [d for d in range(plan.dst_md.ndims) if d not in plan.linear]


def padded_dims(plan: KernelPlan) -> list[int]:
    """Of those, the dims the destination pads: an index past the dim is a zero."""
    dst = plan.dst_md
    return [d for d in indexed_dims(plan) if dst.own_padded_dims[d] != dst.dims[d]]


def item_loops(plan: KernelPlan) -> tuple[tuple[int, int | None], ...]:
    """How a striped (or unrolled) plan's item number splits into loop
    indices: the loops of more than one step (a striped plan's innermost
    counted in runs of ``vec``; an unrolled plan's block not at all), in
    the order work-items step them, fastest first, each with its count of
    steps (None for the last, which takes the rest of the number)."""
    levels, last = plan.levels, len(plan.levels) - 1
    # (an unrolled plan's vec is its store width, not a run of the last loop)
    steps = {j: levels[j].extent // plan.vec if j == last and not plan.unrolled
             else levels[j].extent for j in plan.fastest}
    indexed = [j for j in plan.fastest if steps[j] > 1]
    return tuple((j, None if n == len(indexed) - 1 else steps[j]) for n, j in enumerate(indexed))


def slice_strides(arg: KernelArg, dims) -> tuple[tuple[int, int, int], ...]:
    """Where an element's value lies in a per-slice array (C order over the
    masked dims, one value per group): per masked dim, the innermost first,
    (dim, group, stride); the value is at the sum of (i[dim] / group) * stride."""
    out, stride = [], 1
    for d in reversed(range(len(dims))):
        if arg.mask >> d & 1:
            g = arg.group(d, len(dims))
            out.append((d, g, stride))
            stride *= dims[d] // g
    return tuple(out)


def conversion(plan) -> tuple[bool, bool]:
    """(a bit copy: one type, no attributes; saturation only: integers to
    integers, no attributes), for a plan or a runtime-dims plan."""
    sdt, ddt = plan.src_md.data_type, plan.dst_md.data_type
    no_attr = plan.attr_kinds == NO_ATTR_KINDS
    return no_attr and sdt == ddt, no_attr and sdt in INTEGERS and ddt in INTEGERS


def constant_offsets(src_md: MemoryDesc, dst_md: MemoryDesc, linear) -> tuple[int, int]:
    """The parts of every source and destination offset the loops do not
    carry: offset0, and the padded offsets of the source's linear dims (the
    other dims add theirs through their offset terms) and of the destination's
    outer dims (its loops start at the submemory's first block)."""
    src = src_md.offset0 + sum(src_md.padded_offsets[d] * src_md.strides[d] for d in linear)
    dst = dst_md.offset0 + sum((po // b) * st for po, b, st in zip(
        dst_md.padded_offsets, dst_md.blocks, dst_md.strides))
    return src, dst


def describe(md: MemoryDesc) -> str:
    """A short comment-friendly description of a descriptor."""
    return f"{md.data_type} {md.tag or 'strides ' + dims_text(md.strides)} {dims_text(md.dims)}"
