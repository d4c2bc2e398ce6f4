"""What a problem asks of clayout, decided before anything is allocated.

``prepare(problem)`` reads a Problem's options into a Case: the driver's own
layouts of both sides, the attribute values, and the clayout descriptors and
arguments to create the primitive from. A problem clayout cannot serve, or
that benchdnn itself would not run, ends here in a Declined outcome with
the reason.

``--oflag=s8s8_comp:MASK+zp_comp:MASK`` puts an Extra on the destination's
descriptor (benchdnn's rules: an s8 destination, no zero points nor post-ops,
scales common or per the compensation's mask); check.py compares the s32
values after the data with the driver's own sums.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from .. import Attr, Engine, Extra, MemoryDesc, Reorder, Scales, Shuffle, ZeroPoints
from ..dtypes import DATA_TYPES
from ..memory_desc import RUNTIME_DIM
from ..tags import LETTERS
from .layout import Layout, TagError, strided_layout, tag_layout, trim_meta_tag
from .option_values import ArgQuant, parse_oflag, parse_post_ops, parse_quant, parse_strides
from .options import Problem
from .values import DEF_SCALES, TYPES, TypeInfo, pick

ZERO_POINT_CHOICES = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
UNSIGNED_ZERO_POINT_CHOICES = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
COMPENSATION_KINDS = {"s8s8_comp": "s8s8", "zp_comp": "zp"}


class Declined(Exception):
    """The problem stops before running: ``status`` and ``reason`` say why."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


def unimplemented(reason):
    return Declined("UNIMPLEMENTED", reason)


def seed_of(problem: Problem) -> int:
    """A seed from the problem's text: the same data in every process."""
    return zlib.crc32(problem.text(canonical=True).encode())


@dataclass(frozen=True)
class Side:
    """One tensor of the problem as the driver sees it."""

    type: TypeInfo
    layout: Layout
    md: MemoryDesc
    compensation: tuple = ()   # (("s8s8" | "zp", mask), ...) in storage order

    @property
    def data_nbytes(self) -> int:
        """Bytes from the buffer's start to the end of its last element."""
        return (self.layout.size * self.type.bits + 7) // 8

    def compensation_shapes(self) -> tuple:
        """(kind, mask, shape) of each compensation: the masked dims' padded sizes."""
        return tuple((kind, mask, tuple(n for d, n in enumerate(self.layout.padded)
                                        if mask >> d & 1))
                     for kind, mask in self.compensation)

    @property
    def compensation_nbytes(self) -> int:
        return 4 * sum(math.prod(shape) for _, _, shape in self.compensation_shapes())

    @property
    def nbytes(self) -> int:
        """The driver's size of the buffer: the elements, then the s32
        compensation values right after them (DESIGN.md)."""
        return self.data_nbytes + self.compensation_nbytes


@dataclass
class Case:
    problem: Problem
    seed: int
    src: Side
    dst: Side
    create: object                        # engine -> primitive
    compute: str = "f32"                  # the reorder formula's type
    attr: Attr | None = None
    per_slice: dict = field(default_factory=dict)   # attr field -> (mask, float64 values,
                                                    #   group size per dim)
    beta: float | None = None
    shuffle: tuple | None = None          # (axis, rows, cols): dst u + v*rows <- src u*cols + v
    values: dict = field(default_factory=dict)      # execute's keyword -> the attribute's
                                                    #   values, given at each execute

    @property
    def dims(self) -> tuple:
        return self.problem.dims

    @property
    def nelems(self) -> int:
        return math.prod(self.dims)

    @property
    def plain_copy(self) -> bool:
        """A same-type reorder without attributes, or a shuffle: bit exact."""
        return self.attr is None and self.src.type == self.dst.type


def _layout(tag, strides, dims):
    try:
        return strided_layout(strides, dims) if strides else tag_layout(tag, dims)
    except TagError as error:
        raise Declined("INVALID_ARGUMENTS", str(error)) from None


def _md(dims, type_name, tag, strides, compensation=()):
    if type_name not in DATA_TYPES:
        raise unimplemented(f"data type {type_name} is not supported by clayout")
    masks = dict(compensation)
    extra = Extra(compensation_mask=masks.get("s8s8"),
                  asymm_compensation_mask=masks.get("zp")) if compensation else None
    if strides:
        return MemoryDesc(dims, type_name, strides=strides, extra=extra)
    return MemoryDesc(dims, type_name, tag=trim_meta_tag(tag, len(dims)), extra=extra)


def _side(dims, type_name, tag, strides, compensation=()):
    layout = _layout(tag, strides, dims)
    md = _md(dims, type_name, tag, strides, compensation)
    return Side(TYPES[type_name], layout, md, compensation)


def prepare(problem: Problem) -> Case:
    """The Case of a problem. Raises Declined, or clayout's errors for
    descriptors it rejects."""
    if problem.settings.inplace:
        raise unimplemented("--inplace=true: clayout's primitives do not run in place "
                            "(src and dst must not share bytes)")
    if problem.driver == "reorder":
        return _reorder(problem)
    return _shuffle(problem)


def _check_quant(entry: ArgQuant, what: str, types: dict):
    side = types[entry.arg]
    if what == "zero points" and side.is_int is False:
        raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: {entry.arg} zero points need an "
                                  f"integer {entry.arg} type, not {side.name}")


def _check_compensation(flags, ddt, scales, points, post_ops, ndims):
    """benchdnn's rules for a reorder with compensation: SKIPPED, as it does,
    where oneDNN has no implementation."""
    text = "+".join(f"{f}:{m}" for f, m in flags)
    if ddt != "s8":
        raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: compensation (--oflag={text}) needs "
                                  f"an s8 destination, not {ddt}")
    if points or post_ops:
        raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: compensation (--oflag={text}) goes "
                                  f"with no zero points and no post-ops")
    for entry in scales:
        mask = entry.mask(ndims)
        if mask and any(mask != m for _, m in flags):
            raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: {entry.arg} scales' mask {mask} "
                                      f"({entry.policy}) is neither common nor the "
                                      f"compensation's (--oflag={text})")


def _group_sizes(entry: ArgQuant, what: str, dims) -> tuple:
    """Per dim, how many consecutive indices share a value: the groups on the
    last two dims, 1 elsewhere."""
    sizes = [1] * len(dims)
    if not entry.groups:
        return tuple(sizes)
    shown = "x".join(map(str, entry.groups))
    if len(dims) < 2:
        raise Declined("INVALID_ARGUMENTS", f"{entry.arg} {what} groups {shown} apply to the "
                                            f"last two dims; the problem has {len(dims)}")
    for d, g in zip(range(len(dims) - 2, len(dims)), entry.groups):
        if dims[d] % g:
            raise Declined("INVALID_ARGUMENTS", f"{entry.arg} {what} group {g} does not "
                                                f"divide dim {d} ({dims[d]})")
        sizes[d] = g
    return tuple(sizes)


def _stored_scales(values: np.ndarray, data_type: str) -> np.ndarray:
    """Scale values as their data type holds them: read as f32 (as benchdnn
    reads them), then rounded once to bf16 or f16 by the driver's own codec."""
    f32 = values.astype(np.float32).astype(np.float64)
    return f32 if data_type in ("", "f32") else TYPES[data_type].quantize(f32, "f64")


def runtime_pattern(md: MemoryDesc, mask: int) -> MemoryDesc:
    """``md`` with the dims of ``mask`` made RUNTIME_DIM (``md`` itself for
    mask 0): in its tag, or with every stride runtime for a strided layout."""
    if not mask:
        return md
    dims = tuple(RUNTIME_DIM if mask >> d & 1 else n for d, n in enumerate(md.dims))
    if md.tag is not None:
        return MemoryDesc(dims, md.data_type, tag=md.tag)
    outer = "".join(LETTERS[d].upper() if d in md.inner_idxs else LETTERS[d]
                    for d in range(md.ndims))
    blocks = "".join(f"{size}{LETTERS[d]}" for size, d in zip(md.inner_blks, md.inner_idxs))
    return MemoryDesc(dims, md.data_type, tag=outer + blocks, strides=(RUNTIME_DIM,) * md.ndims)


def _check_runtime(mask: int, flags, per_slice: dict, execute_values: bool):
    """Raise unimplemented for what clayout's runtime dims do not serve:
    compensation (its size needs the dims), per-slice values along a
    runtime dim fixed at creation (across engines)."""
    if flags:
        raise unimplemented("compensation with runtime dims is not supported by clayout")
    for name, (value_mask, _, _) in per_slice.items():
        if value_mask & mask and not execute_values:
            raise unimplemented(f"{name} mask {value_mask} covers a runtime dim "
                                f"(--runtime-dim-mask={mask}): clayout fixes per-slice "
                                f"values at creation")


def side_engines(cross: str, engine) -> dict:
    """Reorder's engine arguments for --cross-engine: ``engine`` for both
    sides (none), else the host for src (cpu2gpu) or for dst (gpu2cpu)."""
    if cross == "none":
        return {"engine": engine}
    host = Engine("host")
    return ({"src_engine": host, "dst_engine": engine} if cross == "cpu2gpu"
            else {"src_engine": engine, "dst_engine": host})


def _reorder(problem: Problem) -> Case:
    o = dict(problem.options)
    dims = problem.dims
    runtime = int(o["runtime-dim-mask"]) & ((1 << len(dims)) - 1)
    flags = parse_oflag(o["oflag"])
    cross = o["cross-engine"]
    if cross != "none" and problem.settings.engine == "host":
        raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: --cross-engine={cross} moves data "
                                  f"between the host and a device engine (--engine=opencl "
                                  f"or sycl)")
    for name in ("sdt", "ddt"):
        if o[name] not in DATA_TYPES:
            raise unimplemented(f"data type {o[name]} is not supported by clayout")
    types = {"src": TYPES[o["sdt"]], "dst": TYPES[o["ddt"]]}
    scales = parse_quant("attr-scales", o["attr-scales"], integer=False)
    points = parse_quant("attr-zero-points", o["attr-zero-points"], integer=True)
    for entry in scales:
        _check_quant(entry, "scales", types)
    for entry in points:
        _check_quant(entry, "zero points", types)
    post_ops = parse_post_ops(o["attr-post-ops"])
    if flags:
        _check_compensation(flags, o["ddt"], scales, points, post_ops, len(dims))
    beta = None
    for op in post_ops:
        if op.kind != "sum":
            raise unimplemented(f"post-op {op.kind}: a reorder serves only sum")
        if op.zero_point or op.data_type:
            raise unimplemented("sum with a zero point or a data type is not supported by clayout")
        if beta is not None:
            raise unimplemented("two sum post-ops are not supported by clayout")
        beta = op.scale
    src_strides, dst_strides = parse_strides(o["strides"])
    src = _side(dims, o["sdt"], o["stag"], src_strides)
    compensation = tuple((COMPENSATION_KINDS[f], m) for f, m in flags)
    # clayout's storage order: s8s8 first, then zp, whatever the flags' order.
    compensation = tuple(sorted(compensation, key=lambda c: c[0] != "s8s8"))
    dst = _side(dims, o["ddt"], o["dtag"], dst_strides, compensation)
    seed = seed_of(problem)
    kwargs, per_slice, at_execute = {}, {}, {}
    # As benchdnn with oneDNN v3, scales and zero points are execution
    # arguments; a cross-engine reorder takes them at creation.
    execute_values = cross == "none"
    for k, entry in enumerate(scales + points):
        integer = k >= len(scales)
        what = "zero points" if integer else "scales"
        mask = entry.mask(len(dims))
        if mask >> len(dims):
            raise Declined("INVALID_ARGUMENTS", f"{entry.policy} names a dim beyond {len(dims)} dims")
        groups = _group_sizes(entry, what, dims)
        field_name = f"{entry.arg}_{'zero_points' if integer else 'scales'}"
        if mask == 0:
            values = np.array([entry.value])
        else:
            count = math.prod(n // g for d, (n, g) in enumerate(zip(dims, groups))
                              if mask >> d & 1)
            if integer:
                table = (UNSIGNED_ZERO_POINT_CHOICES if entry.data_type in ("u8", "u4")
                         else ZERO_POINT_CHOICES)
            else:
                table = np.array(DEF_SCALES)
            values = pick(table, np.arange(count), seed + 7919 * (k + 1))
        stored = values if integer else _stored_scales(values, entry.data_type)
        per_slice[field_name] = (mask, stored, groups)
        options = {"mask": mask, "groups": entry.groups or None,
                   "data_type": entry.data_type or None}
        values = values.astype(np.int64) if integer else values
        kind = ZeroPoints if integer else Scales
        kwargs[field_name] = kind(values, **options)  # checks the values now, as at creation
        if execute_values:
            at_execute[field_name] = values
            kwargs[field_name] = kind(None, **options)
    if beta is not None:
        kwargs["sum_beta"] = beta
    if runtime:
        _check_runtime(runtime, flags, per_slice, execute_values)
    attr = Attr(**kwargs) if kwargs else None
    compute = "f64" if "f64" in (o["sdt"], o["ddt"]) else "f32"

    def create(engine):
        # With runtime dims the primitive is made on patterns; execution
        # brings the problem's concrete memories, as in benchdnn.
        return Reorder(runtime_pattern(src.md, runtime), runtime_pattern(dst.md, runtime),
                       attr=attr, **side_engines(cross, engine))

    return Case(problem, seed, src, dst, create, compute, attr, per_slice, beta,
                values=at_execute)


def _shuffle(problem: Problem) -> Case:
    o = dict(problem.options)
    dims = problem.dims
    if o["dt"] not in DATA_TYPES:
        raise unimplemented(f"data type {o['dt']} is not supported by clayout")
    axis, group = int(o["axis"]), int(o["group"])
    if not -len(dims) <= axis < len(dims):
        raise Declined("INVALID_ARGUMENTS", f"--axis={axis} is outside {len(dims)} dims")
    axis %= len(dims)
    if dims[axis] % group:
        raise Declined("INVALID_ARGUMENTS", f"--group={group} does not divide the axis "
                                            f"({dims[axis]} channels)")
    side = _side(dims, o["dt"], o["tag"], ())
    backward = o["dir"] == "BWD_D"
    # Forward views the axis as rows x cols = (C/G) x G and transposes it:
    # dst(u + v*rows) = src(u*cols + v). Backward swaps the roles.
    cols = dims[axis] // group if backward else group
    rows = dims[axis] // cols

    def create(engine):
        return Shuffle(side.md, axis=axis, group_size=group, backward=backward, engine=engine)

    return Case(problem, seed_of(problem), side, side, create, shuffle=(axis, rows, cols))
