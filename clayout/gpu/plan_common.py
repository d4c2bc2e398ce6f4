"""What the CPU and the GPU planners (and the runtime-dims planner) share:
whether a run of the innermost loop moves as one vector (contiguous on both
sides, its per-slice values alike or loaded as vectors too), whether vectors
start on their own size (typed accesses), how a 4-bit destination is
written, a loop's step in the source, the launch's chunks per work-item and
the index width.
"""
from __future__ import annotations

import numpy as np

from ..memory_desc import MemoryDesc
from .plan_types import KernelArg, Level, constant_offsets, dim_offset, kind_mask, offset_terms
from .profile import DeviceProfile

#: Types the kernels move one element at a time (decoded and encoded by
#: helper functions, or packed two to a byte): no vectors, no transposes.
ELEMENTWISE_TYPES = ("f8_e5m2", "f8_e4m3", "s4", "u4", "f4_e2m1", "e8m0")

#: Of those, the ones a run may still move as whole vectors: codes decoded
#: and encoded lane by lane with bit operations (convert.cl.mako), 4-bit
#: values unpacked from and packed into whole bytes.
VECTOR_NARROW_TYPES = ("f8_e5m2", "f8_e4m3", "s4", "u4")


def source_step(src: MemoryDesc, level: Level) -> int:
    """How far one step of ``level`` moves in the source (its first step)."""
    if level.merged:
        return level.src_stride
    (d,) = level.dims
    return dim_offset(src, d, level.mult) - dim_offset(src, d, 0)


def source_order(src: MemoryDesc, levels, loops) -> list[int]:
    """``loops`` (indices into ``levels``) ordered by their source step, the
    least first; of equal steps, the inner loop first."""
    return sorted(loops, key=lambda j: (source_step(src, levels[j]), -j))


def steps_evenly(src: MemoryDesc, levels, j: int, run: int | None = None) -> bool:
    """Every run of ``run`` steps of ``levels[j]`` (starting at a multiple of
    ``run``; None: the whole loop) moves through the source by its first
    step, wherever the other loops over its dim stand. A loop that crosses
    the end of a source block the loop does not divide (4 channels over
    blocks of 3, padded to 6) jumps there: a vector read along it would
    take the block's padding for data. Proven over every index the loops
    reach (False past 2^22 of them: not worth proving)."""
    level = levels[j]
    if level.merged:
        return True  # a linear dim: a constant stride by construction
    (d,) = level.dims
    run = level.extent if run is None else run
    if level.extent % run:
        return False
    index = np.zeros(1, np.int64)  # the dim's logical indices, level j's last
    for k, lv in enumerate(levels):
        if k != j and not lv.merged and lv.dims == (d,):
            index = (index[:, None] + np.arange(lv.extent) * lv.mult).ravel()
    if index.size * level.extent > 1 << 22:
        return False
    index = index[:, None, None] + (np.arange(level.extent) * level.mult).reshape(-1, run)
    offsets = np.broadcast_to(np.asarray(dim_offset(src, d, index), np.int64), index.shape)
    step = source_step(src, level)
    return bool(np.all(np.diff(offsets, axis=-1) == step))


def innermost_block(md: MemoryDesc, d: int) -> int:
    """The size of dim d's innermost block in md (1 when d is not blocked)."""
    for size, idx in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        if idx == d:
            return size
    return 1


def aligned(md: MemoryDesc, levels, inner: Level, linear, vec: int, const: int,
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


def typed_vectors(src_md, dst_md, levels, vec: int, linear, profile,
                   sides=("src", "dst")) -> bool:
    """The plan's vectors of ``vec`` elements all start on their own size on
    ``sides`` (proven from the plan's numbers), so they may be moved by
    typed vector accesses: one instruction where vloadN/vstoreN may split
    into elements (a GPU; PoCL's vstoreN of bytes)."""
    consts = dict(zip(("src", "dst"), constant_offsets(src_md, dst_md, linear)))
    mds = {"src": src_md, "dst": dst_md}
    return all(mds[side].dtype.bits * vec // 8 <= profile.base_align
               and aligned(mds[side], levels, levels[-1], linear, vec, consts[side], side == "src")
               for side in sides)


def chunks(items: int, profile: DeviceProfile) -> int:
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


def heavy_work_group(launch_items: int, work_group: int, profile: DeviceProfile) -> int:
    """The work-group of a launch of few, heavy work-items (a tile of
    nibbles, a run transpose's block): ``work_group`` halved until every
    compute unit gets 8. Intel's runtime runs a work-group on one core, and
    so does PoCL: 256 tiles of 512x128 nibbles in one work-group ran 0.17-
    0.21 of copy on 4096x4096, 0.46 in groups of one (Intel's runtime);
    oihw -> bf16 OIhw16i16o 256x256x3x3 as 256 run transposes, 0.17 in one
    group (PoCL)."""
    group = work_group
    while group > 1 and group * 8 * profile.compute_units > launch_items:
        group //= 2
    return group


def offset_bound(src_md: MemoryDesc, dst_md: MemoryDesc, elements: int) -> int:
    """A bound on every element offset the kernel may form (64-bit offsets
    from 2^31)."""
    return max(src_md.size * 8 // src_md.dtype.bits + src_md.offset0,
               dst_md.size * 8 // dst_md.dtype.bits + dst_md.offset0, elements)


def vector_ok(src_md, dst_md, levels, vec: int, kinds, linear, compute: str,
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
    elif shuffle is not None or not runs_contiguous(src_md, dst_md, inner, vec, kinds):
        return False  # (a shuffle's axis is read out of order)
    src_const, _ = constant_offsets(src_md, dst_md, linear)
    if src_md.dtype.packed and not aligned(src_md, levels, inner, linear, 2, src_const, True):
        return False  # a run starting mid-byte
    return nibble_mode(src_md, dst_md, levels, vec, linear) in (None, "pairs")


def runs_contiguous(src_md, dst_md, inner: Level, vec: int, kinds) -> bool:
    """A run of the non-merged innermost loop over dim d (starting at a
    multiple of ``vec``) is ``vec`` consecutive source elements and needs
    one value, or ``vec`` consecutive values, of each per-slice array."""
    (d,) = inner.dims
    if inner.mult != 1 or source_step(src_md, inner) != 1:
        return False
    # The source steps d by one inside its innermost block (or d is not
    # blocked): runs must not cross a block's end.
    if src_md.padded_offsets[d] % vec or (src_md.blocks[d] > 1
                                          and innermost_block(src_md, d) % vec):
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


def nibble_mode(src_md, dst_md, levels, vec: int, linear) -> str | None:
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


def split_at_source_blocks(levels: list[Level], src: MemoryDesc) -> list[Level]:
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
