"""Runtime-dims kernel plans: one kernel for every shape a pattern stands for.

A reorder or shuffle created on descriptors with RUNTIME_DIM dims or strides
builds one kernel that bakes what the pattern fixes (types, attribute kinds,
the tags' dim order and inner blocks, the fixed dims and strides) and takes
the rest as arguments: the runtime dims, the runtime strides, both
offset0s and the work-item count. Divisions by inner blocks stay divisions
by constants; only the outer extents of runtime dims divide by arguments,
once per work-item.

The kernel walks the destination in its physical order (outer dims in the
tag's order, then its inner blocks); on the CPU strategy each work-item
writes a run of up to 16 steps of the innermost loop (a runtime extent ends
the last run early), on the GPU strategy one element, so neighbouring
work-items write neighbouring addresses. Nothing here touches OpenCL.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..memory_desc import RUNTIME_DIM, MemoryDesc
from ..problem import Problem
from ..tags import LETTERS, parse_tag
from .plan_common import ELEMENTWISE_TYPES
from .plan_types import KernelArg, kernel_args, kind_mask
from .profile import DeviceProfile


@dataclass(frozen=True)
class RuntimeLevel:
    """One loop of the destination's physical order: an outer dim (its
    extent and destination stride may be runtime: None) or an inner block."""

    dim: int
    extent: int | None   # None: the runtime outer extent of ``dim``
    mult: int            # what one step adds to the dim's logical index
    stride: int | None   # destination stride of one step; None: the dim's runtime stride

    @property
    def dims(self) -> tuple[int]:
        return (self.dim,)


@dataclass(frozen=True)
class RuntimePlan:
    """A runtime-dims kernel: the patterns, attribute kinds, loops and run
    length. Frozen and hashable: the plan is the kernel's cache key."""

    name: str
    strategy: str
    src_md: MemoryDesc                # patterns: RUNTIME_DIM where execution fills in
    dst_md: MemoryDesc
    attr_kinds: tuple
    shuffle: tuple[int, int] | None   # (axis, group): the axis is read shuffled
    levels: tuple[RuntimeLevel, ...]  # outermost first
    vec: int                          # steps of the innermost loop per work-item
    compute: str
    args: tuple[KernelArg, ...]
    work_group: int
    block: int = 0                    # B > 0: BxB register transposes (below)
    tiled: int | None = None          # with block: the level stepped B at a time
    wide_index: bool = False          # 64-bit offsets (a second kernel, built when needed)
    aligned: bool = False             # what the shared templates ask of every plan
    nibbles: str | None = None
    optimized: bool = True            # False: a stand-in's build, -cl-opt-disable (tiers.py)

    @property
    def runtime_dims(self) -> tuple[int, ...]:
        return tuple(d for d, n in enumerate(self.dst_md.dims) if n == RUNTIME_DIM)

    def runtime_strides(self, side: str) -> tuple[int, ...]:
        md = self.src_md if side == "src" else self.dst_md
        return tuple(d for d, s in enumerate(md.strides) if s == RUNTIME_DIM)

    @property
    def divisors(self) -> tuple[str, ...]:
        """The runtime loop extents the kernel divides by, by argument name."""
        names = (_divisor_name(self, level) for level in self.levels)
        return tuple(name for name in names if name is not None)

    @property
    def runtime_args(self) -> tuple[str, ...]:
        """The kernel's arguments after the attribute values: offset0s,
        runtime dims and strides, each runtime divisor with its magic
        multiplier and shift, the work-item count."""
        names = ["src_first", "dst_first"] + [f"n{d}" for d in self.runtime_dims]
        names += [f"ss{d}" for d in self.runtime_strides("src")]
        names += [f"ds{d}" for d in self.runtime_strides("dst")]
        for name in self.divisors:
            names += [name, f"{name}_m", f"{name}_s"]
        return tuple(names + ["items"])


def _order(md: MemoryDesc) -> tuple[int, ...]:
    """The pattern's outer dims, outermost first: its tag's order; C order
    when it was made from runtime strides (any order is correct)."""
    if md.runtime_tag is not None:
        return parse_tag(md.runtime_tag, md.ndims).outer
    fixed = all(s != RUNTIME_DIM for s in md.strides)
    return tuple(sorted(range(md.ndims), key=lambda d: (-md.strides[d], d))) if fixed \
        else tuple(range(md.ndims))


def _levels(md: MemoryDesc) -> list[RuntimeLevel]:
    blocks = md.blocks
    levels = []
    for d in _order(md):
        fixed = md.dims[d] != RUNTIME_DIM
        extent = md.padded_dims[d] // blocks[d] if fixed else None
        if extent == 1:
            continue  # a loop of one step adds nothing
        stride = None if md.strides[d] == RUNTIME_DIM else md.strides[d]
        levels.append(RuntimeLevel(d, extent, blocks[d], stride))
    inner, stride, mult = [], 1, [1] * md.ndims
    for size, d in reversed(tuple(zip(md.inner_blks, md.inner_idxs))):
        inner.append(RuntimeLevel(d, size, mult[d], stride))
        mult[d] *= size
        stride *= size
    levels += inner[::-1]
    return levels or [RuntimeLevel(0, 1, 1, 0)]


def plan_runtime_kernel(problem: Problem, profile: DeviceProfile) -> RuntimePlan:
    """Plan the one kernel that runs every shape of ``problem``'s patterns."""
    src, dst = problem.src_md, problem.dst_md
    levels = _levels(dst)
    inner = levels[-1]
    vec = 1
    if profile.strategy == "cpu":
        # A run per work-item, as the baked CPU kernels (runs of 16 measured
        # best there); a runtime extent may end a run early.
        vec = 16 if inner.extent is None else \
            next(v for v in (16, 8, 4, 2, 1) if inner.extent % v == 0)
    compute = "double" if "f64" in (src.data_type, dst.data_type) else "float"
    block, tiled = _block_transpose(problem, profile, levels, compute)
    if block:
        vec = block
    return RuntimePlan(
        name=problem.name + "_runtime", strategy=profile.strategy, src_md=src, dst_md=dst,
        attr_kinds=problem.attr_kinds, shuffle=problem.shuffle, levels=tuple(levels), vec=vec,
        compute=compute, args=kernel_args(problem.attr_kinds), block=block, tiled=tiled,
        work_group=min(profile.tuning.work_group, profile.max_work_group_size))


def _block_transpose(problem, profile, levels, compute) -> tuple[int, int | None]:
    """(B, j) when each work-item should load B vectors of B elements along
    level ``j`` (contiguous in the source) and store their transpose along
    the destination's innermost loop, as the baked CPU kernels do (3x the
    element-by-element rate on PoCL); a tile cut short by a runtime extent
    goes element by element (on either loop). (0, None) otherwise."""
    src, dst = problem.src_md, problem.dst_md
    inner = levels[-1]
    kinds = problem.attr_kinds
    if (profile.strategy != "cpu" or len(levels) < 2 or inner.stride != 1 or problem.shuffle is not None or kinds[4]
            or compute != "float" or not (problem.moves_bits or dst.data_type != "f16")
            or {src.data_type, dst.data_type} & set(ELEMENTWISE_TYPES)):
        return 0, None
    masked = {d for kind in kinds[:4] for d in range(dst.ndims)
              if kind_mask(kind) and kind_mask(kind) >> d & 1}

    def contiguous(level):  # one step moves one element in the source
        d = level.dim
        return (level.mult == 1 and src.blocks[d] == 1 and src.strides[d] == 1
                and dst.blocks[d] == 1 and d not in masked)

    if contiguous(inner) or src.blocks[inner.dim] > 1 and src.inner_idxs[-1] == inner.dim:
        return 0, None  # the innermost loop already reads along the source
    for j in reversed(range(len(levels) - 1)):
        if contiguous(levels[j]):
            b = next((b for b in profile.tuning.block_sizes
                      if inner.extent is None or inner.extent % b == 0), 0)
            return (b, j) if b else (0, None)
    return 0, None


def unoptimized(plan: RuntimePlan) -> RuntimePlan:
    """The same plan built without the compiler's optimizations: the same
    bytes written, a build several times quicker on some drivers (274 ms
    against 47 on Intel's CPU runtime), for a kernel that stands in for a
    few executions while the problem's own kernel builds (clayout/tiers.py)."""
    return replace(plan, optimized=False)


def wide(plan: RuntimePlan) -> RuntimePlan:
    """The same plan with 64-bit offsets."""
    return replace(plan, wide_index=True)


def magic(divisor: int) -> tuple[int, int]:
    """(m, s) such that x // divisor == (mul_hi(x, m) + x) >> s for every
    32-bit x below 2^31 (Granlund and Montgomery's round-up multiplier; the
    sum cannot overflow there): a division by an argument costs a multiply."""
    shift = (divisor - 1).bit_length()  # ceil(log2(divisor))
    return (2**32 * (2**shift - divisor)) // divisor + 1, shift


def _extent(level: RuntimeLevel, dst: MemoryDesc) -> int:
    return level.extent if level.extent is not None else \
        dst.padded_dims[level.dim] // dst.blocks[level.dim]


def runtime_values(plan: RuntimePlan, src: MemoryDesc, dst: MemoryDesc):
    """What one execution passes after the attribute arguments, by name in
    the kernel's order (``plan.runtime_args``); the work-item count; and
    whether 64-bit offsets are needed. ``src`` and ``dst`` are the
    concrete descriptors."""
    inner = plan.levels[-1]
    values = {"src_first": src.offset0, "dst_first": dst.offset0, "items": 1}
    for d in plan.runtime_dims:
        values[f"n{d}"] = dst.dims[d]
    for side, md in (("ss", src), ("ds", dst)):
        for d in plan.runtime_strides("src" if side == "ss" else "dst"):
            values[f"{side}{d}"] = md.strides[d]
    for j, level in enumerate(plan.levels):
        extent = _extent(level, dst)
        if level is inner:
            extent = -(-extent // plan.vec)
        elif j == plan.tiled:
            extent = -(-extent // plan.block)
        values["items"] *= extent
        name = _divisor_name(plan, level)
        if name is not None:
            values[name] = extent
            values[f"{name}_m"], values[f"{name}_s"] = magic(max(extent, 1))
    items = values["items"]
    # Magic multipliers are 32-bit by construction; strides and dims are not.
    span = max([src.size * 8 // src.dtype.bits + src.offset0,
                dst.size * 8 // dst.dtype.bits + dst.offset0, items * plan.vec]
               + [v for name, v in values.items() if not name.endswith(("_m", "_s"))])
    return [values[name] for name in plan.runtime_args], items, span >= 2**31


def _divisor_name(plan: RuntimePlan, level: RuntimeLevel) -> str | None:
    """The argument that holds a runtime loop extent the kernel divides by
    (with its magic multiplier and shift), or None for a fixed one. The
    outermost loop takes what is left: no division."""
    if level is plan.levels[0] and len(plan.levels) > 1:
        return None
    if level.extent is not None and (plan.tiled is None or level is not plan.levels[plan.tiled]
                                     or level.extent % plan.block == 0):
        return None
    if level is plan.levels[-1]:
        return "runs"
    return "tiles" if plan.tiled is not None and level is plan.levels[plan.tiled] else \
        f"e{level.dim}"


def describe_levels(plan: RuntimePlan) -> str:
    return " ".join(f"{LETTERS[lv.dim]}:{'*' if lv.extent is None else lv.extent}"
                    for lv in plan.levels)
