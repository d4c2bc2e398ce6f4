"""What a problem asks of clayout, decided before anything is allocated.

``prepare(problem)`` reads a Problem's options into a Case: the driver's own
layouts of both sides, the attribute values, and the clayout descriptors and
arguments to create the primitive from. A problem clayout cannot serve, or
that benchdnn itself would not run, ends here in a Declined outcome with
the reason.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from .. import Attr, MemoryDesc, Reorder, Scales, Shuffle, ZeroPoints
from ..dtypes import DATA_TYPES
from .layout import Layout, TagError, strided_layout, tag_layout, trim_meta_tag
from .options import ArgQuant, Problem, parse_oflag, parse_post_ops, parse_quant, parse_strides
from .values import DEF_SCALES, TYPES, TypeInfo, pick

ZERO_POINT_CHOICES = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


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

    @property
    def nbytes(self) -> int:
        """Bytes from the buffer's start to the end of its last element."""
        return (self.layout.size * self.type.bits + 7) // 8


@dataclass
class Case:
    problem: Problem
    seed: int
    src: Side
    dst: Side
    create: object                        # engine -> primitive
    compute: str = "f32"                  # the reorder formula's type
    attr: Attr | None = None
    per_slice: dict = field(default_factory=dict)   # attr field -> (mask, float64 values)
    beta: float | None = None
    shuffle: tuple | None = None          # (axis, rows, cols): dst u + v*rows <- src u*cols + v

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


def _md(dims, type_name, tag, strides):
    if type_name not in DATA_TYPES:
        raise unimplemented(f"data type {type_name} is not supported by clayout")
    if strides:
        return MemoryDesc(dims, type_name, strides=strides)
    return MemoryDesc(dims, type_name, tag=trim_meta_tag(tag, len(dims)))


def _side(dims, type_name, tag, strides):
    layout = _layout(tag, strides, dims)
    md = _md(dims, type_name, tag, strides)
    return Side(TYPES[type_name], layout, md)


def prepare(problem: Problem) -> Case:
    """The Case of a problem. Raises Declined, or clayout's errors for
    descriptors it rejects."""
    if problem.settings.inplace:
        raise unimplemented("--inplace=true: clayout's primitives do not run in place "
                            "(src and dst must not share bytes)")
    if problem.driver == "reorder":
        return _reorder(problem)
    return _shuffle(problem)


def _check_quant(entry: ArgQuant, what: str, default_type: str, types: dict):
    if entry.groups:
        raise unimplemented(f"grouped {what} ({entry.arg}:{entry.policy} groups "
                            f"{'x'.join(map(str, entry.groups))}) are not supported by clayout")
    if entry.data_type and entry.data_type != default_type:
        raise unimplemented(f"{what} stored as {entry.data_type} are not supported by clayout "
                            f"(only {default_type})")
    side = types[entry.arg]
    if what == "zero points" and side.is_int is False:
        raise Declined("SKIPPED", f"CASE_NOT_SUPPORTED: {entry.arg} zero points need an "
                                  f"integer {entry.arg} type, not {side.name}")


def _reorder(problem: Problem) -> Case:
    o = dict(problem.options)
    dims = problem.dims
    if o["runtime-dim-mask"] != "0":
        raise unimplemented(f"runtime dims (--runtime-dim-mask={o['runtime-dim-mask']}) are "
                            "not supported by clayout")
    if parse_oflag(o["oflag"]):
        raise unimplemented(f"compensation (--oflag={o['oflag']}) is not supported by clayout")
    if o["cross-engine"] != "none":
        raise unimplemented(f"cross-engine reorders (--cross-engine={o['cross-engine']}) are "
                            "not supported by clayout")
    for name in ("sdt", "ddt"):
        if o[name] not in DATA_TYPES:
            raise unimplemented(f"data type {o[name]} is not supported by clayout")
    types = {"src": TYPES[o["sdt"]], "dst": TYPES[o["ddt"]]}
    scales = parse_quant("attr-scales", o["attr-scales"], integer=False)
    points = parse_quant("attr-zero-points", o["attr-zero-points"], integer=True)
    for entry in scales:
        _check_quant(entry, "scales", "f32", types)
    for entry in points:
        _check_quant(entry, "zero points", "s32", types)
    beta = None
    for op in parse_post_ops(o["attr-post-ops"]):
        if op.kind != "sum":
            raise unimplemented(f"post-op {op.kind}: a reorder serves only sum")
        if op.zero_point or op.data_type:
            raise unimplemented("sum with a zero point or a data type is not supported by clayout")
        if beta is not None:
            raise unimplemented("two sum post-ops are not supported by clayout")
        beta = op.scale
    src_strides, dst_strides = parse_strides(o["strides"])
    src = _side(dims, o["sdt"], o["stag"], src_strides)
    dst = _side(dims, o["ddt"], o["dtag"], dst_strides)
    seed = seed_of(problem)
    kwargs, per_slice = {}, {}
    for k, entry in enumerate(scales + points):
        integer = k >= len(scales)
        mask = entry.mask(len(dims))
        if mask >> len(dims):
            raise Declined("INVALID_ARGUMENTS", f"{entry.policy} names a dim beyond {len(dims)} dims")
        field_name = f"{entry.arg}_{'zero_point' if integer else 'scales'}"
        if mask == 0:
            values = np.array([entry.value])
        else:
            count = math.prod(d for i, d in enumerate(dims) if mask >> i & 1)
            table = ZERO_POINT_CHOICES if integer else np.array(DEF_SCALES)
            values = pick(table, np.arange(count), seed + 7919 * (k + 1))
        per_slice[field_name] = (mask, values)
        kwargs[field_name] = (ZeroPoints(values.astype(np.int64), mask) if integer
                              else Scales(values, mask))
    if beta is not None:
        kwargs["sum_beta"] = beta
    attr = Attr(**kwargs) if kwargs else None
    compute = "f64" if "f64" in (o["sdt"], o["ddt"]) else "f32"

    def create(engine):
        return Reorder(src.md, dst.md, engine=engine, attr=attr)

    return Case(problem, seed, src, dst, create, compute, attr, per_slice, beta)


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
