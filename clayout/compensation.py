"""Compensation (the RFC's section 4): what a reorder into an s8 weights
descriptor with ``extra`` (an Extra) writes besides the weights.

A reorder into ``dst_md`` with ``dst_md.extra`` runs in two steps:

1. the data: the usual reorder into ``dst_md.without_extra()`` with the
   attributes of ``adjusted_attr``: the source scale s_src replaced by
   ``scale_adjust * s_src``, that product rounded to f32 once (per value of
   a per-slice or grouped scale; ``scale_adjust`` alone, per tensor, when
   there is no source scale). So each weight is

       q = s8(scale_adjust * s_src * (src - zp_src) / s_dst)

   with DESIGN.md's single rounding to nearest even and saturation to
   -128..127 (NaN -> 0);
2. the compensation, read back from the s8 values just written: for each
   slice of a mask, over the mask's dims at their PADDED sizes, the sum of
   q over the logical indices of the other dims (padding holds no weight,
   and a slice in the masked dims' padding sums nothing, so it gets 0):

       s8s8:  comp[slice] = -128 * sum q   (``compensation_mask``)
       zp:    comp[slice] =       -sum q   (``asymm_compensation_mask``)

   stored as s32 from byte ``dst_md.compensation_offset`` on: the s8s8
   values first, then the zero-point ones, each in C order over the masked
   dims.

Limits: each q lies in -128..127, so |sum q| <= 128 * count, ``count`` the
number of elements summed per slice (the product of the unmasked dims).
``check_problem`` rejects a descriptor whose compensation could leave the
s32 range: 128 * 128 * count > 2^31 - 1 for s8s8 (count > 131071), and
128 * count > 2^31 - 1 for zp (count > 16777215).

Rules (``check_problem``, called by Reorder and Shuffle): the destination is
s8 (Extra itself enforces it); source scales, destination scales and a
source zero point are allowed; a sum post-op, a destination zero point, a
source descriptor with extra and a shuffle into or from a descriptor with
extra are rejected.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .attr import Attr, Scales
from .errors import InvalidArgumentError, UnimplementedError
from .memory_desc import MemoryDesc

#: The s32 range the compensation values are stored in.
S32_MAX = 2**31 - 1
#: The largest |q| of an s8 weight (q = -128 is reachable).
Q_MAX = 128
#: What each compensation multiplies its sum by.
FACTOR = {"s8s8": -128, "zp": -1}


def summed_count(md: MemoryDesc, mask: int) -> int:
    """Elements summed into each compensation value of ``mask``: the product
    of the logical sizes of the dims outside the mask."""
    return math.prod(n for d, n in enumerate(md.dims) if not mask >> d & 1)


def max_count(kind: str) -> int:
    """The largest per-slice count whose compensation always fits in s32."""
    return S32_MAX // (Q_MAX * abs(FACTOR[kind]))


def check_problem(kind: str, src_md: MemoryDesc, dst_md: MemoryDesc, attr: Attr | None):
    """Raise InvalidArgumentError unless a ``kind`` ("reorder" or "shuffle")
    from ``src_md`` to ``dst_md`` with ``attr`` follows the compensation rules
    (see the module's docstring). Nothing to check when neither side has extra."""
    if src_md.extra is not None:
        raise InvalidArgumentError(
            f"src {src_md!r} carries {src_md.extra!r}: compensation is written by a "
            f"reorder into weights, a source descriptor cannot have extra (read the data "
            f"through src_md.without_extra())")
    extra = dst_md.extra
    if extra is None:
        return
    if kind != "reorder":
        raise InvalidArgumentError(
            f"{kind} into {dst_md!r} with {extra!r}: only a reorder writes compensation; "
            f"shuffle into a descriptor without extra")
    # The s8 type and masks within the dims are MemoryDesc's own checks (Extra.check).
    if attr is not None:
        if attr.sum_beta is not None:
            raise InvalidArgumentError(
                f"sum post-op (beta {attr.sum_beta:g}) into {dst_md!r} with {extra!r}: "
                f"compensation is computed from the weights alone, a reorder into a "
                f"descriptor with extra takes no sum")
        if attr.dst_zero_points is not None:
            raise InvalidArgumentError(
                f"dst_zero_points into {dst_md!r} with {extra!r}: s8 weights with "
                f"compensation are symmetric, a reorder into them takes no destination "
                f"zero point")
    for name, mask in extra.masks():
        count, limit = summed_count(dst_md, mask), max_count(name)
        if count > limit:
            raise InvalidArgumentError(
                f"{name} compensation of {dst_md!r} sums {count} weights per value: "
                f"|sum| <= {Q_MAX} * {count} times {abs(FACTOR[name])} could overflow "
                f"s32; at most {limit} weights per compensation value are allowed")


def adjusted_attr(attr: Attr | None, scale_adjust: float) -> Attr | None:
    """``attr`` with its source scale multiplied by ``scale_adjust``: each
    value the f32 product (one rounding), same mask and groups; with no
    source scale, ``scale_adjust`` per tensor. Unchanged when scale_adjust is 1."""
    if scale_adjust == 1.0:
        return attr
    factor = np.float32(scale_adjust)
    old = attr.src_scales if attr is not None else None
    if old is not None and old.at_execute:
        return attr  # adjusted at each execute (adjusted_values)
    if old is None:
        scales = Scales(float(factor))
    else:
        with np.errstate(over="ignore"):
            product = (factor * old.values).astype(np.float32)
        scales = Scales(product, mask=old.mask, groups=old.groups, data_type="f32")
    if attr is None:
        return Attr(src_scales=scales)
    return Attr(src_scales=scales, dst_scales=attr.dst_scales,
                src_zero_points=attr.src_zero_points, dst_zero_points=attr.dst_zero_points,
                sum_beta=attr.sum_beta)


def adjusted_values(values: dict, scale_adjust: float, problem, dims) -> dict:
    """The values given at execute (clayout/execute_values.py) with the
    source scales multiplied by ``scale_adjust`` as ``adjusted_attr`` does.
    Raises UnimplementedError for source scales on the device (the product
    would need a kernel of its own)."""
    given = values.get("src_scales")
    if given is None:
        return values
    if given.host is None:
        raise UnimplementedError(
            f"src_scales on the device for {problem.dst_md!r} with scale_adjust "
            f"{scale_adjust:g}: give them as NumPy values (each is multiplied by "
            f"scale_adjust on the host)")
    scales = adjusted_attr(Attr(src_scales=given.host), scale_adjust).src_scales
    return {**values, "src_scales": type(given)(given.slot, host=scales)}


def data_problem(problem):
    """The problem that writes a compensated reorder's s8 data: the
    destination without extra, the attributes adjusted by scale_adjust.
    ``problem`` itself when its destination has no extra."""
    extra = problem.dst_md.extra
    if extra is None:
        return problem
    return dataclasses.replace(problem, dst_md=problem.dst_md.without_extra(),
                               attr=adjusted_attr(problem.attr, extra.scale_adjust))


def values_from_weights(md: MemoryDesc, weights: np.ndarray) -> np.ndarray:
    """The s32 compensation values of ``md`` (its s8s8 block, then its zp
    block) for the logical s8 array ``weights`` of shape md.dims."""
    q = np.asarray(weights).astype(np.int64)
    blocks = []
    for name, mask in md.extra.masks():
        others = tuple(d for d in range(md.ndims) if not mask >> d & 1)
        sums = q.sum(axis=others) if others else q  # shape: the masked dims, logical
        masked = [d for d in range(md.ndims) if mask >> d & 1]
        padded = np.zeros([md.padded_dims[d] for d in masked], dtype=np.int64)
        padded[tuple(slice(0, md.dims[d]) for d in masked)] = sums
        blocks.append((FACTOR[name] * padded).reshape(-1))
    return np.concatenate(blocks).astype(np.int32) if blocks else np.zeros(0, np.int32)


def write_host(md: MemoryDesc, raw: np.ndarray):
    """Compute ``md``'s compensation from the s8 data in ``raw`` (the bytes of
    the whole buffer, uint8, from byte 0) and store it after the data."""
    from .host.layout import gather

    first = md.compensation_offset
    if first is None:
        return
    values = values_from_weights(md, gather(md.without_extra(), raw))
    raw[first:first + 4 * values.size] = values.astype("<i4").view(np.uint8)
