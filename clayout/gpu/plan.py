"""Kernel plans: everything a generated reorder/shuffle kernel bakes in, as plain data.

A plan walks the destination in its own physical order (its "levels": each
outer dim, then each inner block, outermost first), so consecutive work-items
write consecutive addresses. Each work-item handles ``vec`` consecutive
elements of the innermost level. The source offset of an element is the sum
of per-dim terms (the layout is separable), each with its blocks and strides
as constants, so divisions are by constants only.

Nothing here touches OpenCL: plans can be made and rendered without a device.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..attr import Attr
from ..memory_desc import MemoryDesc


#: Block sizes tried for register transposes, best first (PoCL, f32: 8 and 4 alike).
BLOCK_SIZES = (8, 4)

#: An innermost loop at most this long is not tiled (its source lines stay cached).
SHORT_LOOP = 512


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


@dataclass(frozen=True)
class KernelPlan:
    """A reorder (or shuffle) kernel: the descriptors, attribute kinds and loops."""

    src_md: MemoryDesc
    dst_md: MemoryDesc
    attr_kinds: tuple
    shuffle: tuple[int, int] | None   # (axis, group): read the axis in shuffled order
    levels: tuple[Level, ...]
    vec: int
    items: int                        # work-items that do something
    wide_index: bool                  # 64-bit offsets
    compute: str                      # "float" or "double"
    linear: frozenset                 # dims whose source offset the levels carry
    fastest: tuple[int, ...]          # levels in the order work-items step them, fastest first
    block: int = 0                    # B > 0: each work-item transposes a BxB block in registers
    vector: bool = False              # the innermost loop is contiguous on both sides: vloadN/vstoreN

    @property
    def key(self):
        """What makes two kernels the same program."""
        return (self.src_md, self.dst_md, self.attr_kinds, self.shuffle)

    @property
    def name(self) -> str:
        kind = "shuffle" if self.shuffle else "reorder"
        return f"{kind}_{self.src_md.data_type}_{self.dst_md.data_type}"


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
    return int(src.dim_offsets(d, level.mult)) - int(src.dim_offsets(d, 0))


def _tile_for_source(src: MemoryDesc, levels: list[Level]) -> tuple[list[Level], bool]:
    """When the destination's innermost loop strides through the source, bring
    a tile of the source's most contiguous loop next to it, so that the work-
    items running together read whole cache lines of the source too (a
    transpose through the cache, no local memory needed)."""
    inner = levels[-1]
    # A sweep of a short innermost loop stays in cache anyway (measured on PoCL:
    # tiling nchw->nhwc with C = 256 made it slower, nhwc->nchw faster).
    if len(levels) < 2 or _source_step(src, inner) <= 1 or inner.extent <= SHORT_LOOP:
        return levels, False
    j = min(range(len(levels) - 1), key=lambda i: (_source_step(src, levels[i]), -i))
    level = levels[j]
    if _source_step(src, level) >= _source_step(src, inner):
        return levels, False
    tile = next((t for t in (16, 8, 4, 2) if level.extent % t == 0 and level.extent > t), None)
    if tile is None:
        return levels[:j] + levels[j + 1:-1] + [level, inner], True
    scale = lambda v: None if v is None else v * tile  # noqa: E731
    outer = Level(level.dims, level.extent // tile, level.dst_stride * tile,
                  level.mult * tile, scale(level.src_stride))
    part = Level(level.dims, tile, level.dst_stride, level.mult, level.src_stride)
    return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], True


def _innermost_block(md: MemoryDesc, d: int) -> int:
    """The size of dim d's innermost block in md (1 when d is not blocked)."""
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            return size
    return 1


def _block_transpose(src: MemoryDesc, levels: list[Level], special: set):
    """For a plain copy whose destination's innermost loop strides through the
    source: split B steps off the source's contiguous loop, so each work-item
    loads B vectors along the source and stores B vectors along the
    destination, transposing BxB elements in registers. Measured on PoCL for
    nhwc->nchw, 32x256x56x56: 11.5 ms against 20-30 ms element by element;
    B = 16 ran out of registers (29 ms). Returns (levels, B) or None."""
    inner = levels[-1]
    if len(levels) < 2 or inner.dst_stride != 1 or _source_step(src, inner) <= 1:
        return None
    if not inner.merged and inner.dims[0] in special:
        return None
    for j in reversed(range(len(levels) - 1)):
        level = levels[j]
        if _source_step(src, level) != 1:
            continue
        if not level.merged:
            (d,) = level.dims
            if level.mult != 1 or d in special:
                return None
        for b in BLOCK_SIZES:
            if inner.extent % b or level.extent % b:
                continue
            if not level.merged and (_innermost_block(src, d) % b or src.padded_offsets[d] % b):
                continue
            scale = lambda v: None if v is None else v * b  # noqa: E731
            outer = Level(level.dims, level.extent // b, level.dst_stride * b,
                          level.mult * b, scale(level.src_stride))
            part = Level(level.dims, b, level.dst_stride, level.mult, level.src_stride)
            return levels[:j] + [outer] + levels[j + 1:-1] + [part, inner], b
        return None
    return None


def plan_kernel(src_md: MemoryDesc, dst_md: MemoryDesc, attr: Attr | None,
                shuffle: tuple[int, int] | None = None) -> KernelPlan:
    """Plan the kernel that reorders ``src_md`` into ``dst_md``."""
    kinds = attr.kinds() if attr is not None else (None, None, None, None, False)
    special = set()  # dims whose logical index the kernel needs on its own
    for mask in kinds[:4]:
        special |= {d for d in range(dst_md.ndims) if mask and mask >> d & 1}
    if shuffle is not None:
        special.add(shuffle[0])
    special |= {d for d in range(dst_md.ndims) if dst_md.own_padded_dims[d] != dst_md.dims[d]}

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
    plain_copy = (kinds == (None, None, None, None, False) and shuffle is None
                  and src_md.data_type == dst_md.data_type and not dst_md.dtype.packed
                  and dst_md.own_padded_dims == dst_md.dims)
    blocked = _block_transpose(src_md, levels, special) if plain_copy else None
    if blocked:
        levels, block = blocked
        # The block's B source steps live inside the work-item, not in its number.
        fastest = (len(levels) - 1,) + tuple(range(len(levels) - 3, -1, -1))
        vec = block
    else:
        block = 0
        levels, tiled = _tile_for_source(src_md, levels)
        # Work-items step the innermost loop fastest, or the source tile when there is one.
        fastest = tuple(range(len(levels) - 1, -1, -1))
        if tiled:
            fastest = (fastest[1], fastest[0]) + fastest[2:]
        vec = next(v for v in (16, 8, 4, 2, 1) if levels[-1].extent % v == 0)
    items = math.prod(lv.extent for lv in levels) // vec // max(block, 1)
    inner = levels[-1]
    compute = "double" if "f64" in (src_md.data_type, dst_md.data_type) else "float"
    # Whole vectors where both sides are contiguous along the innermost loop
    # (measured on PoCL, f32->s8: 8.7 ms against 13.7 ms). A merged loop holds
    # no dim whose index matters (shuffle axis, masks, padding), so those stay
    # the same across the vector.
    vector = (not block and vec > 1 and inner.merged and inner.src_stride == 1
              and inner.dst_stride == 1
              and not src_md.dtype.packed and not dst_md.dtype.packed
              and not (dst_md.data_type == "bf16" and compute == "double"))
    span = max(src_md.size // max(1, src_md.dtype.bits // 8) + src_md.offset0,
               dst_md.size // max(1, dst_md.dtype.bits // 8) + dst_md.offset0,
               items * vec)
    return KernelPlan(src_md, dst_md, kinds, shuffle, tuple(levels), vec, items,
                      span >= 2**31, compute, frozenset(linear), fastest, block, vector)


# -- C expressions --------------------------------------------------------------

def dim_offset_expr(md: MemoryDesc, d: int, index: str) -> str:
    """C expression: the offset (elements) dim ``d`` of ``md`` adds at logical ``index``."""
    p = f"({index} + {md.padded_offsets[d]})" if md.padded_offsets[d] else index
    terms = []
    blocks = md.blocks[d]
    if md.strides[d] and md.padded_offsets[d] + md.own_padded_dims[d] > blocks:
        outer = f"({p} / {blocks})" if blocks > 1 else p
        terms.append(f"{outer} * {md.strides[d]}" if md.strides[d] != 1 else outer)
    inner_stride, divisor = 1, 1
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            q = f"({p} / {divisor})" if divisor > 1 else p
            term = f"({q} % {size})"
            terms.append(f"{term} * {inner_stride}" if inner_stride != 1 else term)
            divisor *= size
        inner_stride *= size
    return " + ".join(terms) if terms else "0"


def scale_index_expr(mask: int, dims: tuple[int, ...], index: list[str]) -> str:
    """C expression: the position of an element's value in a per-slice array."""
    terms, stride = [], 1
    for d in reversed(range(len(dims))):
        if mask >> d & 1:
            terms.append(f"{index[d]} * {stride}" if stride != 1 else index[d])
            stride *= dims[d]
    return " + ".join(reversed(terms)) if terms else "0"


def describe(md: MemoryDesc) -> str:
    """A short comment-friendly description of a descriptor."""
    return f"{md.data_type} {md.tag or 'strides ' + 'x'.join(map(str, md.strides))} " \
           f"{'x'.join(map(str, md.dims))}"
