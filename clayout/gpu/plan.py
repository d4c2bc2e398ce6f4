"""Kernel plans: everything a generated reorder/shuffle kernel bakes in, as plain data.

A plan walks the destination in its own physical order (its "levels": each
outer dim, then each inner block, outermost first), so consecutive work-items
write consecutive addresses. The source offset of an element is the sum of
per-dim offset terms (the layout is separable), each with constant divisor,
modulus and stride, so divisions are by constants only.

``plan_kernel(problem, profile)`` chooses, from the device profile, how each
work-item moves its elements:

- ``vector``: the innermost loop is contiguous on both sides: vloadN/vstoreN;
- ``block``: the destination's innermost loop strides through the source:
  B vectors loaded along the source, converted, transposed in registers and
  stored as B vectors along the destination;
- otherwise element by element over a run of the innermost loop.

Each work-item then repeats this for ``chunks`` items spaced by the global
size, so that a launch has about as many work-items as the device runs well.
Nothing here touches OpenCL: plans can be made and rendered without a device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..memory_desc import MemoryDesc, dims_text
from ..problem import Problem
from .profile import DeviceProfile
from .tile import WARP, Tile, bank_conflicts, choose_padding, crosses, plan_tile

#: Local-memory bank conflicts (wavefronts over the fewest) past which the
#: planner tries boxes of other sizes.
MAX_CONFLICTS = 1.1

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


def dim_offset(md: MemoryDesc, d: int, index: int) -> int:
    """The offset dim ``d`` adds at logical ``index``, from its terms."""
    p = index + md.padded_offsets[d]
    return sum(t.at(p) for t in offset_terms(md, d))


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
    field: str         # "src_scales", "dst_scales", "src_zero_point", "dst_zero_point", "sum_beta"
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
               ("src_zero_point", "src_zp", "int"), ("dst_zero_point", "dst_zp", "int"))


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
    vec: int                          # elements of the innermost loop per work-item
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

    @property
    def launch_items(self) -> int:
        """Work-items a launch needs (work-groups, for a tiled plan)."""
        return -(-self.items // self.chunks)

    def ndrange(self, local: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(global, local) sizes for work-groups of ``local`` work-items: a
        striped plan on dimension 0; a tiled plan one work-group per box,
        the boxes over dimensions 1 and 2 (``Tile.grid``)."""
        if self.tile is None:
            return (-(-self.launch_items // local) * local,), (local,)
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


def _dst_levels(md: MemoryDesc) -> list[Level]:
    """The destination's loops, outermost first, over its own padded extent."""
    blocks = md.blocks
    own = md.own_padded_dims
    order = sorted(range(md.ndims), key=lambda d: (-md.strides[d], d))
    levels = [Level((d,), own[d] // blocks[d], md.strides[d], blocks[d]) for d in order]
    stride = 1
    inner = []
    mult = [1] * md.ndims
    for size, d in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        inner.append(Level((d,), size, stride, mult[d]))
        mult[d] *= size
        stride *= size
    return levels + inner[::-1]


def _split_axis(md: MemoryDesc, axis: int, sizes: tuple[int, int], low: int):
    """``md`` with dim ``axis`` seen as two dims of ``sizes`` (at ``axis`` and
    ``axis + 1``); new dim ``low`` (0 or 1) is the low digit of the position
    along the axis, the other the high one. A block on the axis must fall on
    the digits whole: inside the low digit, or holding it whole. Returns the
    view, or None when the block does not fall so."""
    lo, hi = axis + low, axis + 1 - low
    lo_range = sizes[low]
    stride, block = md.strides[axis], md.blocks[axis]
    blocks = [(size, d + (d > axis)) for size, d in zip(md.inner_blks, md.inner_idxs)]
    on_axis = [i for i, (_, d) in enumerate(blocks) if d == axis]
    if block == 1:
        strides = {lo: stride, hi: stride * lo_range}
    elif len(on_axis) != 1 or md.dims[axis] % block or md.padded_offsets[axis] % block:
        return None
    elif lo_range % block == 0:  # the block lies inside the low digit
        blocks[on_axis[0]] = (block, lo)
        strides = {lo: stride, hi: stride * (lo_range // block)}
    elif block % lo_range == 0:  # the low digit lies inside the block
        blocks[on_axis[0]:on_axis[0] + 1] = [(block // lo_range, hi), (lo_range, lo)]
        strides = {hi: stride, lo: stride * (sizes[1 - low] * lo_range // block)}
    else:
        return None

    def put(values, new):
        return values[:axis] + tuple(new) + values[axis + 1:]

    return md._replace(
        dims=put(md.dims, sizes), padded_dims=put(md.padded_dims, sizes),
        padded_offsets=put(md.padded_offsets, (0, 0)),
        strides=put(md.strides, (strides[axis], strides[axis + 1])),
        offset0=md.offset0 + md.padded_offsets[axis] // block * stride,
        inner_blks=tuple(size for size, _ in blocks), inner_idxs=tuple(d for _, d in blocks))


def shuffle_as_reorder(src_md: MemoryDesc, dst_md: MemoryDesc, axis: int, group: int):
    """A shuffle is a plain reorder of one more dim: with C = rows x group,
    the source holds (u, v) at position u*G + v along the axis, the
    destination at u + v*rows. Seen so, the kernel plan finds its vectors and
    register transposes by itself. Returns (src view, dst view), or None when
    a block on the axis cuts across the two digits."""
    rows = src_md.dims[axis] // group
    src = _split_axis(src_md, axis, (rows, group), low=1)
    dst = _split_axis(dst_md, axis, (rows, group), low=0)
    return None if src is None or dst is None else (src, dst)


def _source_step(src: MemoryDesc, level: Level) -> int:
    """How far one step of ``level`` moves in the source (its first step)."""
    if level.merged:
        return level.src_stride
    (d,) = level.dims
    return dim_offset(src, d, level.mult) - dim_offset(src, d, 0)


def _tile_for_source(src: MemoryDesc, levels: list[Level], tuning) -> tuple[list[Level], bool]:
    """When the destination's innermost loop strides through the source, bring
    a tile of the source's most contiguous loop next to it, so that the work-
    items running together read whole cache lines of the source too (a
    transpose through the cache, no local memory needed)."""
    inner = levels[-1]
    # A sweep of a short innermost loop stays in cache anyway (measured on PoCL:
    # tiling nchw->nhwc with C = 256 made it slower, nhwc->nchw faster).
    if len(levels) < 2 or _source_step(src, inner) <= 1 or inner.extent <= tuning.short_loop:
        return levels, False
    j = min(range(len(levels) - 1), key=lambda i: (_source_step(src, levels[i]), -i))
    level = levels[j]
    if _source_step(src, level) >= _source_step(src, inner):
        return levels, False
    tile = next((t for t in (16, 8, 4, 2) if level.extent % t == 0 and level.extent > t), None)
    if tile is None:
        return levels[:j] + levels[j + 1:-1] + [level, inner], True
    outer, part = level.split(tile)
    return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], True


def _innermost_block(md: MemoryDesc, d: int) -> int:
    """The size of dim d's innermost block in md (1 when d is not blocked)."""
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            return size
    return 1


def _block_transpose(src: MemoryDesc, levels: list[Level], special: set, sizes):
    """When the destination's innermost loop strides through the source:
    split B steps off the source's contiguous loop, so each work-item loads B
    vectors along the source and stores B vectors along the destination,
    transposing BxB elements in registers (converted on the way). Measured on
    PoCL for nhwc->nchw, 32x256x56x56: 11.5 ms against 20-30 ms element by
    element. The source's loop must hold no dim the kernel indexes (masks,
    shuffle, padding): those stay the same along a loaded vector.
    Returns (levels, B) or None."""
    inner = levels[-1]
    if len(levels) < 2 or inner.dst_stride != 1 or _source_step(src, inner) <= 1:
        return None
    for j in reversed(range(len(levels) - 1)):
        level = levels[j]
        if _source_step(src, level) != 1:
            continue
        if not level.merged:
            (d,) = level.dims
            if level.mult != 1 or d in special:
                return None
        for b in sizes:
            if inner.extent % b or level.extent % b:
                continue
            if not level.merged and (_innermost_block(src, d) % b or src.padded_offsets[d] % b):
                continue
            outer, part = level.split(b)
            return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], b
        return None
    return None


def _split_at_source_blocks(levels: list[Level], src: MemoryDesc) -> list[Level]:
    """Each loop over a dim the source blocks, cut where the source's blocks
    of that dim end, so that every loop steps the source by a constant
    (nChw16c -> nchw: c:256 becomes c:16 of 16 channels and c:16 of one)."""
    out = []
    for level in levels:
        parts = [level]
        if not level.merged:
            (d,) = level.dims
            bounds, size = [], 1
            for block, idx in reversed(tuple(zip(src.inner_blks, src.inner_idxs))):
                if idx == d:
                    size *= block
                    bounds.append(size)
            for bound in reversed(bounds):  # outermost cut first
                last = parts[-1]
                top = last.mult * last.extent
                if last.mult < bound < top and bound % last.mult == 0 and top % bound == 0:
                    parts[-1:] = last.split(bound // last.mult)
        out += parts
    return out


def _aligned(md: MemoryDesc, levels, inner: Level, linear, vec: int, const: int,
             src: bool) -> bool:
    """Every vector of ``vec`` elements the plan moves starts on a multiple
    of ``vec`` elements: its constant part, each outer loop's step and each
    offset term does (and the buffer itself is aligned, see the caller).
    A run over one dim of the source (not merged) starts at an index that
    is a multiple of ``vec`` inside a block holding whole runs: there only
    the padded offset and the terms beyond the innermost one count."""
    parts = [const]
    for level in levels:
        if level is not inner:
            parts.append(level.src_stride if src and level.merged else
                         0 if src else level.dst_stride)
    if src:
        for d in range(md.ndims):
            if d in linear:
                continue
            terms = offset_terms(md, d)
            if not inner.merged and inner.dims == (d,):
                parts.append(md.padded_offsets[d])
                terms = [t for t in terms if t.divisor != 1]
            parts += [t.stride for t in terms]
    return all(p % vec == 0 for p in parts)


def _typed_vectors(src_md, dst_md, levels, vec: int, linear, profile,
                   sides=("src", "dst")) -> bool:
    """The plan's vectors of ``vec`` elements all start on their own size on
    ``sides`` (proven from the plan's numbers), so they may be moved by
    typed vector accesses: one instruction where vloadN/vstoreN may split
    into elements (a GPU; PoCL's vstoreN of bytes)."""
    consts = dict(zip(("src", "dst"), constant_offsets(src_md, dst_md, linear)))
    mds = {"src": src_md, "dst": dst_md}
    return all(mds[side].dtype.bits * vec // 8 <= profile.base_align
               and _aligned(mds[side], levels, levels[-1], linear, vec, consts[side], side == "src")
               for side in sides)


def _kernel_args(kinds: tuple) -> tuple[KernelArg, ...]:
    args = [KernelArg(name + ("s" if kind_mask(kind) else ""), c_type, field, kind_mask(kind),
                      kind[1] if isinstance(kind, tuple) else None,
                      isinstance(kind, tuple) and len(kind) == 3)
            for (field, name, c_type), kind in zip(ATTR_FIELDS, kinds[:4]) if kind is not None]
    if kinds[4]:
        args.append(KernelArg("beta", "float", "sum_beta"))
    return tuple(args)


def _chunks(items: int, profile: DeviceProfile) -> int:
    """Items per work-item: enough work-items for every compute unit, and no
    more; a divisor of the items, so that every chunk of the launch starts
    where the first did, on the same alignment (a warp's runs then fill
    whole lines: f32 -> s4 with 3 chunks touched 1.33x the lines)."""
    tuning = profile.tuning
    want = profile.compute_units * tuning.items_per_unit
    chunks = max(1, min(tuning.max_chunks, items // max(want, 1)))
    while items % chunks:
        chunks -= 1
    return chunks


def plan_kernel(problem: Problem, profile: DeviceProfile) -> KernelPlan:
    """Plan the kernel that runs ``problem`` on a device of ``profile``."""
    src_md, dst_md, shuffle = problem.src_md, problem.dst_md, problem.shuffle
    tuning = profile.tuning
    kinds = problem.attr_kinds
    if shuffle is not None:
        views = shuffle_as_reorder(src_md, dst_md, *shuffle)
        if views is not None:  # a shuffle has no attributes
            (src_md, dst_md), shuffle = views, None
    special = set()  # dims whose logical index the kernel needs on its own
    for kind in kinds[:4]:
        mask = kind_mask(kind)
        special |= {d for d in range(dst_md.ndims) if mask and mask >> d & 1}
    if shuffle is not None:
        special.add(shuffle[0])
    padded = {d for d in range(dst_md.ndims) if dst_md.own_padded_dims[d] != dst_md.dims[d]}
    special |= padded

    # A dim the source does not block, and the kernel needs no index of, is
    # linear: each destination loop over it steps the source by a constant.
    linear = {d for d in range(src_md.ndims) if src_md.blocks[d] == 1 and d not in special}
    levels = []
    for level in _dst_levels(dst_md):
        if level.extent == 1:
            continue  # a loop of one step adds nothing
        (d,) = level.dims
        if d in linear:
            level = Level(level.dims, level.extent, level.dst_stride, level.mult,
                          level.mult * src_md.strides[d])
        prev = levels[-1] if levels else None
        if (level.merged and prev is not None and prev.merged
                and prev.dst_stride == level.dst_stride * level.extent
                and prev.src_stride == level.src_stride * level.extent):
            levels[-1] = Level(prev.dims + level.dims, prev.extent * level.extent,
                               level.dst_stride, 1, level.src_stride)
        else:
            levels.append(level)
    if not levels:
        levels.append(Level((0,), 1, 0, 1, 0 if 0 in linear else None))

    compute = "double" if "f64" in (src_md.data_type, dst_md.data_type) else "float"
    common = dict(name=problem.name, strategy=profile.strategy, src_md=src_md, dst_md=dst_md,
                  attr_kinds=kinds, shuffle=shuffle, compute=compute, linear=frozenset(linear),
                  args=_kernel_args(kinds),
                  work_group=min(tuning.work_group, profile.max_work_group_size))
    if profile.strategy == "gpu":
        return _plan_gpu(problem, profile, levels, common)
    return _plan_cpu(problem, profile, levels, special, padded, common)


def constant_offsets(src_md: MemoryDesc, dst_md: MemoryDesc, linear) -> tuple[int, int]:
    """The parts of every source and destination offset the loops do not
    carry: offset0, and the padded offsets of the source's linear dims (the
    other dims add theirs through their offset terms) and of the destination's
    outer dims (its loops start at the submemory's first block)."""
    src = src_md.offset0 + sum(src_md.padded_offsets[d] * src_md.strides[d] for d in linear)
    dst = dst_md.offset0 + sum((po // b) * st for po, b, st in zip(
        dst_md.padded_offsets, dst_md.blocks, dst_md.strides))
    return src, dst


def _span(src_md: MemoryDesc, dst_md: MemoryDesc, elements: int) -> int:
    """The largest element offset the kernel may form: 64-bit offsets beyond 2^31."""
    return max(src_md.size * 8 // src_md.dtype.bits + src_md.offset0,
               dst_md.size * 8 // dst_md.dtype.bits + dst_md.offset0, elements)


#: Types the kernels move one element at a time (decoded and encoded by
#: helper functions, or packed two to a byte): no vectors, no transposes.
ELEMENTWISE_TYPES = ("f8_e5m2", "f8_e4m3", "s4", "u4", "f4_e2m1")


#: Of those, the ones a run may still move as whole vectors: codes decoded
#: and encoded lane by lane with bit operations (convert.cl.mako), 4-bit
#: values unpacked from and packed into whole bytes.
VECTOR_NARROW_TYPES = ("f8_e5m2", "f8_e4m3", "s4", "u4")


def _vector_ok(src_md, dst_md, levels, vec: int, kinds, linear, compute: str,
               shuffle=None) -> bool:
    """A run of ``vec`` elements of the innermost loop moves as one vector:
    it is contiguous on both sides, and whatever the kernel indexes along it
    is the same over the run or loaded as a vector too.

    The loop is a merged one (no dim the kernel indexes), or one dim d that
    the source steps by one inside a block holding whole runs, where every
    per-slice value is one per group of a multiple of ``vec`` elements (one
    load per run: grouped scales) or one per element, consecutive in its
    array (a vector load), and the destination's padding of d covers whole
    runs. A 4-bit side needs every run to start on a byte."""
    inner = levels[-1]
    types = (src_md.data_type, dst_md.data_type)
    if (vec < 2 or inner.dst_stride != 1
            or any(t in ELEMENTWISE_TYPES and t not in VECTOR_NARROW_TYPES for t in types)
            or compute == "double" and any(t in ELEMENTWISE_TYPES for t in types)
            or dst_md.data_type == "bf16" and compute == "double"):
        return False
    if inner.merged:
        if inner.src_stride != 1:
            return False
    elif shuffle is not None or not _runs_contiguous(src_md, dst_md, inner, vec, kinds):
        return False  # (a shuffle's axis is read out of order)
    src_const, _ = constant_offsets(src_md, dst_md, linear)
    if src_md.dtype.packed and not _aligned(src_md, levels, inner, linear, 2, src_const, True):
        return False  # a run starting mid-byte
    return _nibble_mode(src_md, dst_md, levels, vec, linear) in (None, "pairs")


def _runs_contiguous(src_md, dst_md, inner: Level, vec: int, kinds) -> bool:
    """A run of the non-merged innermost loop over dim d (starting at a
    multiple of ``vec``) is ``vec`` consecutive source elements and needs
    one value, or ``vec`` consecutive values, of each per-slice array."""
    (d,) = inner.dims
    if inner.mult != 1 or _source_step(src_md, inner) != 1:
        return False
    # The source steps d by one inside its innermost block (or d is not
    # blocked): runs must not cross a block's end.
    if src_md.padded_offsets[d] % vec or (src_md.blocks[d] > 1
                                          and _innermost_block(src_md, d) % vec):
        return False
    if dst_md.own_padded_dims[d] != dst_md.dims[d] and dst_md.dims[d] % vec:
        return False
    for kind in kinds[:4]:
        mask = kind_mask(kind)
        if not mask or not mask >> d & 1:
            continue
        groups = kind[1] if isinstance(kind, tuple) else None
        arg = KernelArg("", "float", "", mask, groups)
        group = arg.group(d, dst_md.ndims)
        if group % vec and not (group == 1 and mask.bit_length() - 1 == d):
            return False
    return True


def _nibble_mode(src_md, dst_md, levels, vec: int, linear) -> str | None:
    """How a kernel writes a 4-bit destination without touching a nibble it
    does not own (two elements share a byte, and a byte store is the
    smallest there is):

    - "pairs": every work-item's run of ``vec`` elements starts on a byte and
      fills whole bytes (even run, contiguous innermost loop, even strides
      and start), so it stores whole bytes that hold only its elements;
    - "passes": otherwise (odd extents or offsets, strided windows): two
      launches, the first writing the even nibbles, the second the odd
      ones, each byte read, changed in its own nibble, and written back by
      one work-item at a time.

    None for a destination of whole bytes.
    """
    if not dst_md.dtype.packed:
        return None
    inner = levels[-1]
    _, dst_const = constant_offsets(src_md, dst_md, linear)
    even = (vec % 2 == 0 and inner.dst_stride == 1 and dst_const % 2 == 0
            and all(lv.dst_stride % 2 == 0 for lv in levels[:-1]))
    return "pairs" if even else "passes"


def _plan_cpu(problem, profile, levels, special, padded, common) -> KernelPlan:
    """Each work-item its own run of the destination (PoCL runs work-items
    of a group one after another, so a run per work-item reads as a loop)."""
    src_md, dst_md, kinds = common["src_md"], common["dst_md"], problem.attr_kinds
    tuning = profile.tuning
    # A register transpose converts whole vectors: not into f16 (no vector
    # store rounds to it without cl_khr_fp16 arithmetic), not with a sum
    # (the old destination would be read transposed), not in double.
    transposable = (common["shuffle"] is None and not kinds[4] and common["compute"] == "float"
                    and (problem.moves_bits or dst_md.data_type != "f16")
                    and src_md.data_type not in ELEMENTWISE_TYPES
                    and dst_md.data_type not in ELEMENTWISE_TYPES)
    # The loaded vectors may run along a masked dim when its values are
    # consecutive in every per-slice array (the mask's last dim): they are
    # then loaded as vectors too (per-channel scales for nChw16c -> nchw).
    # Grouped values are not: one value covers several lanes.
    masks = [kind_mask(kind) for kind in kinds[:4]]
    lanes_ok = {d for d in range(dst_md.ndims) if d not in padded and all(
        not (mask and mask >> d & 1) or mask.bit_length() - 1 == d and not isinstance(kind, tuple)
        for mask, kind in zip(masks, kinds[:4]))}
    sizes = tuning.byte_block_sizes if dst_md.dtype.bits == 8 else tuning.block_sizes
    blocked = (_block_transpose(src_md, levels, special - lanes_ok, sizes)
               if transposable else None)
    if blocked:
        levels, block = blocked
        # The block's B source steps live inside the work-item, not in its number.
        fastest = (len(levels) - 1,) + tuple(range(len(levels) - 3, -1, -1))
        vec = block
    else:
        block = 0
        levels, tiled = _tile_for_source(src_md, levels, tuning)
        # Work-items step the innermost loop fastest, or the source tile when there is one.
        fastest = tuple(range(len(levels) - 1, -1, -1))
        if tiled:
            fastest = (fastest[1], fastest[0]) + fastest[2:]
        inner = levels[-1]
        # Measured on PoCL: a work-item that also ran the next loop out (64
        # elements for OIhw4i16o4i) was 1.8x slower than 4 elements per item.
        # Whole vectors where both sides are contiguous along the innermost
        # loop (measured on PoCL, f32->s8: 8.7 ms against 13.7 ms): the
        # longest run that moves as one (a group of 8 values: 8), else the
        # longest run.
        runs = [v for v in (16, 8, 4, 2, 1) if inner.extent % v == 0]
        vec = next((v for v in runs if _vector_ok(src_md, dst_md, levels, v, kinds,
                                                  common["linear"], common["compute"],
                                                  common["shuffle"])), runs[0])
    inner = levels[-1]
    items = math.prod(lv.extent for lv in levels) // vec // max(block, 1)
    vector = not block and _vector_ok(src_md, dst_md, levels, vec, kinds, common["linear"],
                                      common["compute"], common["shuffle"])
    # PoCL splits vstoreN of 1- and 2-byte elements into N stores (f32 ->
    # f8_e4m3: 0.5 of copy, 0.85 with one typed store): typed stores where
    # every vector or transposed row provably starts on its size.
    typed_store = ((vector or block > 0) and dst_md.dtype.bits < 32
                   and dst_md.data_type != "f16"  # (vstore_half, not a vector store)
                   and _typed_vectors(src_md, dst_md, levels, vec, common["linear"], profile,
                                      sides=("dst",)))
    span = _span(src_md, dst_md, items * vec * max(block, 1))
    return KernelPlan(levels=tuple(levels), vec=vec, items=items,
                      chunks=_chunks(items, profile), wide_index=span >= 2**31,
                      fastest=fastest, block=block, vector=vector, typed_store=typed_store,
                      nibbles=_nibble_mode(src_md, dst_md, levels, vec, common["linear"]),
                      **common)


def _tile_vector_ok(level: Level, vec: int, reading: bool, src_md: MemoryDesc,
                    dst_md: MemoryDesc, kinds, shuffle, compute: str) -> bool:
    """A tiled phase may move ``vec`` consecutive elements of ``level`` as
    one vector: they are all padding or all data, need one value (or
    ``vec`` consecutive values) of each per-slice array, read the shuffled
    axis in order, and convert as a vector. ``vec`` None: a vector spans
    this level's steps (each element its own index along it)."""
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
    run = inner.extent * _source_step(src_md, inner) * src_md.dtype.bits // 8
    return (_source_step(src_md, inner) == 1 and run < 1024 and run % 32 != 0
            and _source_step(src_md, outer) != inner.extent)


def _rows_aligned(md: MemoryDesc, levels, tile: Tile, phase, const: int, src: bool,
                  profile) -> bool:
    """Every vector a tiled phase moves starts on its own size in ``md``
    (proven from the plan's numbers, the buffer aligned to the profile's
    base_align), so it may be a typed access: one 16-byte instruction,
    where clang and NVIDIA's compiler split vloadN into elements. A row is
    contiguous and its vectors start at multiples of their size in it, so
    the rows' starts decide: the row's levels stand at multiples of their
    box there, the other levels anywhere."""
    vec = phase.vec
    if vec < 2 or md.dtype.bits * vec // 8 > profile.base_align or const % vec:
        return False
    row = set(phase.order[:phase.row])

    def step(j):  # (a row's level held whole by the box starts rows at 0 only)
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
        p = index + md.padded_offsets[d]
        offset = sum(((p // t.divisor) % t.modulus if t.modulus else p // t.divisor) * t.stride
                     for t in offset_terms(md, d))
        if np.any(np.asarray(offset) % vec):
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


def _plan_gpu(problem, profile, levels, common) -> KernelPlan:
    """Neighbouring work-items on neighbouring addresses on both sides: a
    striped walk where both sides share the innermost loop, else a box
    transposed through local memory by a work-group (gpu/tile.py)."""
    src_md, dst_md, shuffle = common["src_md"], common["dst_md"], common["shuffle"]
    tuning = profile.tuning
    inner = levels[-1]
    packed = src_md.dtype.packed or dst_md.dtype.packed  # no nibbles in local memory
    if not packed and (shuffle is not None or _source_step(src_md, inner) != 1
                       or _short_runs(src_md, levels)):
        split = _split_at_source_blocks(levels, src_md)
        steps = [_source_step(src_md, lv) for lv in split]
        axis_levels = [j for j, lv in enumerate(split) if shuffle and lv.dims == (shuffle[0],)]
        lanes = profile.preferred_multiple if profile.preferred_multiple > 1 else tuning.lanes
        local_bytes = min(tuning.tile_bytes, profile.local_mem // 2)
        src_const, dst_const = constant_offsets(src_md, dst_md, common["linear"])

        def box(whole=(), elements=4 * common["work_group"]):
            return plan_tile(split, steps, src_md, dst_md, axis_levels + list(whole), lanes,
                             local_bytes, elements=elements,
                             vector_bytes=tuning.vector_bytes,
                             vec_ok=lambda level, vec, reading: _tile_vector_ok(
                                 split[level], vec, reading, src_md, dst_md,
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
                src_md, split, tile, tile.read, src_const, True, profile)),
                write=replace(tile.write, typed=_rows_aligned(
                    dst_md, split, tile, tile.write, dst_const, False, profile)))
            span = _span(src_md, dst_md, math.prod(lv.extent for lv in split))
            return KernelPlan(levels=tuple(split), vec=1, items=tile.boxes, chunks=1,
                              wide_index=span >= 2**31, fastest=(), tile=tile,
                              **dict(common, work_group=group))
    # Striped: work-item t moves the t-th vector (or element) of the
    # destination's order, and again t + launch, t + 2 launch, ...
    fastest = tuple(range(len(levels) - 1, -1, -1))
    linear = common["linear"]
    vec = next((v for v in _vector_widths(src_md, dst_md, tuning)
                if inner.extent % v == 0 and _vector_ok(src_md, dst_md, levels, v,
                                                        problem.attr_kinds, linear,
                                                        common["compute"], shuffle)), 1)
    vector = vec > 1
    if vec == 1 and dst_md.dtype.packed and inner.dst_stride == 1 and inner.extent % 2 == 0:
        vec = 2  # two nibbles per work-item: a byte, when the run starts on one
    items = math.prod(lv.extent for lv in levels) // vec
    aligned = vector and _typed_vectors(src_md, dst_md, levels, vec, linear, profile)
    span = _span(src_md, dst_md, items * vec)
    return KernelPlan(levels=tuple(levels), vec=vec, items=items, chunks=_chunks(items, profile),
                      wide_index=span >= 2**31, fastest=fastest,
                      vector=vector, aligned=aligned,
                      nibbles=_nibble_mode(src_md, dst_md, levels, vec, common["linear"]),
                      **common)


def describe(md: MemoryDesc) -> str:
    """A short comment-friendly description of a descriptor."""
    return f"{md.data_type} {md.tag or 'strides ' + dims_text(md.strides)} {dims_text(md.dims)}"
