"""Queries and transforms of a descriptor that give or check other
descriptors: the views of its memory (submemory, permute_axes, reshape), the
concrete descriptor a runtime pattern stands for (with_dims, check_instance),
a dense descriptor of its layout in another type (dense_like), and the layout
checks (matches_tag, check_same_dims).

Functions of a MemoryDesc: the bodies of its methods of the same names (they
use its private helpers, as methods would).
They build descriptors through the one given (``type(md)(...)``,
``md._replace(...)``), so this module does not import clayout.memory_desc.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from .dim_values import RUNTIME_DIM, check_dims, dims_text, int_tuple
from .dtypes import DataTypeLike
from .errors import InvalidArgumentError, describe
from .tags import LETTERS, TagLayout, format_tag


def with_dims(pattern, dims: Sequence[int],
              strides: Sequence[int] | None = None):
    """The concrete descriptor this runtime pattern stands for with
    ``dims`` (and ``strides``, where the pattern's are runtime and it was
    not made from a tag): the same type and blocks, dense in the
    pattern's tag. Raises InvalidArgumentError when dims or strides do
    not fill the pattern."""
    cls = type(pattern)
    dims = check_dims(dims)
    if len(dims) != pattern.ndims or any(p not in (RUNTIME_DIM, n)
                                         for p, n in zip(pattern.dims, dims)):
        raise InvalidArgumentError(
            f"dims {dims!r} do not fill {pattern!r}: only its runtime dims (*) may be chosen")
    if pattern.format_kind == "any":
        return cls(dims, pattern.data_type, tag="any")
    if pattern.runtime_tag is not None and strides is None:
        md = cls(dims, pattern.data_type, tag=pattern.runtime_tag)
    else:
        if strides is None:
            if RUNTIME_DIM in pattern.strides:
                raise InvalidArgumentError(
                    f"{pattern!r} has runtime strides: give strides= for dims {dims!r}")
            strides = pattern.strides
        blocks = "".join(f"{size}{LETTERS[d]}"
                         for size, d in zip(pattern.inner_blks, pattern.inner_idxs))
        strides = int_tuple(strides, "strides", runtime=True)
        order = range(pattern.ndims)  # a tag with strides: in the strides' order
        if len(strides) == pattern.ndims:
            order = sorted(order, key=lambda d: (-strides[d], d))
        outer = "".join(LETTERS[d].upper() if d in pattern.inner_idxs else LETTERS[d]
                        for d in order)
        md = cls(dims, pattern.data_type, tag=outer + blocks, strides=strides)
    pattern.check_instance(md, "with_dims")
    return md


def check_instance(pattern, md, what: str = "memory", desc_type: type | None = None) -> None:
    """Raise InvalidArgumentError unless concrete ``md`` fills this
    runtime pattern: same type, blocks and fixed dims and strides, dense
    in the pattern's tag when it was made from one, not a window.
    ``desc_type``: the descriptor class (MemoryDesc; this module does not
    import it)."""
    rule = None
    if not isinstance(md, desc_type or type(pattern)) or md.format_kind != "blocked" \
            or md.is_runtime:
        rule = "a concrete descriptor with a layout is needed"
    elif (md.ndims, md.data_type, md.inner_blks, md.inner_idxs) != \
            (pattern.ndims, pattern.data_type, pattern.inner_blks, pattern.inner_idxs):
        rule = "the data type, dims count and inner blocks must be the pattern's"
    elif any(p not in (RUNTIME_DIM, n) for p, n in zip(pattern.dims, md.dims)):
        rule = "dims must equal the pattern's where they are not runtime"
    elif md.extra is not None or any(md.padded_offsets) or md.is_submemory:
        rule = "windows (submemories) and compensation do not fill a runtime pattern"
    elif pattern.runtime_tag is not None and not md.matches_tag(pattern.runtime_tag):
        rule = f"the layout must be dense in the pattern's tag {pattern.runtime_tag}"
    elif any(p not in (RUNTIME_DIM, s) for p, s, e in zip(pattern.strides, md.strides,
                                                         md._outer_extents) if e > 1):
        rule = "strides must equal the pattern's where they are not runtime"
    if rule is not None:
        raise InvalidArgumentError(f"{what} {md!r} does not fill the runtime pattern "
                                   f"{pattern!r}: {rule}")


def dense_like(md, data_type: DataTypeLike):
    """A dense descriptor of the same dims, dim order and blocks, of ``data_type``."""
    md._require_layout("dense_like")
    if md.is_runtime:
        return type(md)(md.dims, data_type, tag=md.runtime_tag or
                        format_tag(TagLayout(tuple(range(md.ndims)), tuple(
                            zip(md.inner_idxs, md.inner_blks)))))
    return type(md)(md.dims, data_type, tag=md._layout_tag())


def submemory(md, dims: Sequence[int], offsets: Sequence[int]):
    """A view of ``dims`` elements starting at ``offsets`` (in-place concat).

    Raises InvalidArgumentError when the view leaves the tensor or splits a block.
    """
    md._require_layout("submemory")
    md._require_concrete("submemory")
    dims = check_dims(dims)
    offsets = int_tuple(offsets, "offsets")
    if len(dims) != md.ndims or len(offsets) != md.ndims:
        raise InvalidArgumentError(
            f"submemory dims {dims!r} and offsets {offsets!r} must both have {md.ndims} entries")
    for d, (n, o, parent, b) in enumerate(zip(dims, offsets, md.dims, md.blocks)):
        if o < 0 or n + o > parent:
            raise InvalidArgumentError(
                f"submemory dims {dims!r} at offsets {offsets!r} leave the "
                f"parent dims {md.dims!r} in dim {d}")
        if b > 1 and (o % b or (n % b and n + o != parent)):
            raise InvalidArgumentError(
                f"submemory dims {dims!r} at offsets {offsets!r} split a block of "
                f"{b} in dim {d}: offsets must be multiples of {b}, and so must "
                f"dims unless they reach the end of the parent")
    return md._replace(
        dims=dims,
        padded_offsets=tuple(a + b for a, b in zip(md.padded_offsets, offsets)))


def permute_axes(md, perm: Sequence[int]):
    """The same memory seen with axes permuted: input axis i becomes axis perm[i].

    Raises InvalidArgumentError if perm is not a permutation of range(ndims).
    """
    md._require_concrete("permute_axes")
    perm = int_tuple(perm, "permutation")
    if sorted(perm) != list(range(md.ndims)):
        raise InvalidArgumentError(
            f"permutation {perm!r} is not a permutation of 0..{md.ndims - 1}")

    def move(values):
        out = [0] * md.ndims
        for i, v in enumerate(values):
            out[perm[i]] = v
        return tuple(out)

    return md._replace(dims=move(md.dims), padded_dims=move(md.padded_dims),
                         padded_offsets=move(md.padded_offsets),
                         strides=move(md.strides),
                         inner_idxs=tuple(perm[d] for d in md.inner_idxs))


def reshape(md, dims: Sequence[int]):
    """The same memory seen with other dims of the same element count.

    Plain dense dims can be merged and split where their strides allow it;
    blocked or padded layouts can only gain or lose dims of size 1.
    Raises InvalidArgumentError otherwise.
    """
    md._require_concrete("reshape")
    dims = check_dims(dims)
    if math.prod(dims) != md.nelems():
        raise InvalidArgumentError(
            f"reshape to dims {dims!r} ({math.prod(dims)} elements) from "
            f"{md.dims!r} ({md.nelems()} elements): counts differ")
    if md.format_kind == "any":
        return type(md)(dims, md.data_type, tag="any")
    if md.nelems() == 0:
        return type(md)(dims, md.data_type)
    plain = not md.inner_blks and not md.is_submemory
    # Dims of size 1 that are not blocked or padded carry no layout.
    kept = [d for d in range(md.ndims)
            if md.dims[d] != 1 or md.padded_dims[d] != 1 or md.padded_offsets[d]]
    old = [md.dims[d] for d in kept]
    new = [n for n in dims if n != 1]
    new_strides = {}
    if plain:
        i = j = 0
        while i < len(kept):
            i2, j2 = i + 1, j + 1
            a, b = old[i], new[j]
            while a != b:
                if a < b:
                    a *= old[i2]
                    i2 += 1
                else:
                    b *= new[j2]
                    j2 += 1
            for k in range(i, i2 - 1):
                d, e = kept[k], kept[k + 1]
                if md.strides[d] != md.strides[e] * md.dims[e]:
                    raise InvalidArgumentError(
                        f"reshape to dims {dims!r}: dims {md.dims!r} with strides "
                        f"{md.strides!r} cannot merge dims {d} and {e}")
            stride = md.strides[kept[i2 - 1]]
            for k in reversed(range(j, j2)):
                new_strides[k] = stride
                stride *= new[k]
            i, j = i2, j2
    elif old != new:
        raise InvalidArgumentError(
            f"reshape to dims {dims!r}: a blocked or padded layout ({md!r}) "
            f"can only gain or lose dims of size 1")
    # Lay out the new dims: the kept ones keep (or get) their strides, the
    # new dims of size 1 take the stride a dense layout would give them.
    out = {name: [] for name in ("dims", "padded_dims", "padded_offsets", "strides")}
    mapping = {}  # position in the new dims -> index into `kept`, None for a new 1
    k = 0
    for n_pos, n in enumerate(dims):
        mapping[n_pos] = None if n == 1 else k
        k += n != 1
    next_stride = md.inner_size
    for n_pos in reversed(range(len(dims))):
        k = mapping[n_pos]
        if k is None:
            out["dims"].append(1)
            out["padded_dims"].append(1)
            out["padded_offsets"].append(0)
            out["strides"].append(next_stride)
            continue
        if plain:
            stride, padded, offset, extent = new_strides[k], dims[n_pos], 0, dims[n_pos]
        else:
            d = kept[k]
            stride, padded, offset = md.strides[d], md.padded_dims[d], md.padded_offsets[d]
            extent = padded // md.blocks[d]
        out["dims"].append(dims[n_pos])
        out["padded_dims"].append(padded)
        out["padded_offsets"].append(offset)
        out["strides"].append(stride)
        next_stride = stride * extent
    position = {} if plain else {kept[k]: n_pos for n_pos, k in mapping.items()
                                 if k is not None}
    return md._replace(
        **{name: tuple(reversed(values)) for name, values in out.items()},
        inner_idxs=tuple(position[d] for d in md.inner_idxs))


def matches_tag(md, tag: str, strides: Sequence[int] | None = None) -> bool:
    """True if this descriptor has the layout of ``tag`` for its dims.

    ``strides`` (optional) checks the outer strides instead of the tag's
    dense ones: -1 accepts any stride, 0 the tag's own. Strides of dims of
    extent 1 are not compared. Raises InvalidArgumentError for a bad tag.
    """
    if md.format_kind != "blocked":
        return False
    if md.is_runtime:
        ref = type(md)(md.dims, md.data_type, tag=tag)
        return md.runtime_tag is not None and ref.runtime_tag == md.runtime_tag
    ref = type(md)(md.dims, md.data_type, tag=tag)
    if strides is not None:
        strides = int_tuple(strides, "strides")
        if len(strides) != md.ndims:
            raise InvalidArgumentError(
                f"strides {strides!r}: {len(strides)} strides for {md.ndims} dims")
    if (ref.inner_blks, ref.inner_idxs, ref.padded_dims, ref.offset0) != \
            (md.inner_blks, md.inner_idxs, md.padded_dims, md.offset0) \
            or any(md.padded_offsets):
        return False
    for d, extent in enumerate(md._outer_extents):
        want = ref.strides[d] if strides is None or strides[d] == 0 else strides[d]
        if want != -1 and extent > 1 and md.strides[d] != want:
            return False
    return True


def check_same_dims(md, other, what: str, desc_type: type | None = None) -> None:
    """Raise InvalidArgumentError unless ``other`` is a descriptor (of
    ``desc_type``, MemoryDesc) with the same dims."""
    if not isinstance(other, desc_type or type(md)):
        raise InvalidArgumentError(f"{what}: {describe(other)} is not a MemoryDesc")
    if md.dims != other.dims:
        def shown(dims):  # runtime dims as *
            return dims_text(dims) if RUNTIME_DIM in dims else repr(dims)

        raise InvalidArgumentError(
            f"{what}: dims {shown(md.dims)} and {shown(other.dims)} differ")
