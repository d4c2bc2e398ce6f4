"""MemoryDesc: oneDNN's memory descriptor (the RFC's blocking descriptor), immutable.

This module holds the descriptor itself: its construction and validation,
fields, derived properties, identity (equality, hash, pickle) and repr. Its
addressing (offsets, spans, overlap) is in md_addressing and its views and
layout checks (submemory, reshape, with_dims, matches_tag ...) in
md_transforms, which its methods call; RUNTIME_DIM and the checks of dims
are in dim_values. The names other modules import stay importable here.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import md_addressing, md_transforms
from .dim_values import INT64_LIMIT, RUNTIME_DIM, dims_text
from .dim_values import check_dims as _check_dims, int_tuple as _int_tuple, round_up as _round_up
from .dtypes import DataType, DataTypeLike, data_type as _data_type
from .errors import InvalidArgumentError, describe
from .extra import Extra
from .md_addressing import element_span, may_overlap
from .tags import LETTERS, TagLayout, expand_tag, format_tag, parse_tag

# What other modules and the tests import from here (some defined elsewhere).
__all__ = ["MemoryDesc", "RUNTIME_DIM", "INT64_LIMIT", "dims_text", "element_span",
           "may_overlap"]

_FIELDS = ("dims", "data_type", "format_kind", "padded_dims", "padded_offsets",
           "offset0", "strides", "inner_blks", "inner_idxs", "extra", "runtime_tag")


def _derived(method):
    """A property computed once per descriptor and kept beside its fields
    (they never change): a primitive made again on the same descriptors
    reads its tag, blocks and size without working them out. The kept values
    are not fields: equality, hashing and pickling ignore them."""
    name = method.__name__

    @functools.wraps(method)
    def get(self):
        cache = self._kept
        try:
            return cache[name]
        except KeyError:
            value = cache[name] = method(self)  # not kept when it raises
            return value

    return property(get)


def _check_tag_order(tag: str, layout: TagLayout, strides: tuple, own: tuple,
                     extents: list) -> None:
    """Raise InvalidArgumentError unless ``strides`` order the dims as ``tag``
    (of ``layout``, whose dense strides are ``own``) does: outermost first,
    each stride at least the next inner dim's. Strides may add gaps to a
    tag, not reorder it; dims of one step (``extents``: outer steps per dim)
    and runtime strides are left out."""
    known = [strides[d] for d in layout.outer if extents[d] != 1 and strides[d] != RUNTIME_DIM]
    if all(a >= b for a, b in zip(known, known[1:])):
        return
    hint = ""
    if RUNTIME_DIM not in strides:
        order = sorted(range(len(strides)), key=lambda d: (-strides[d], d))
        hint = f" (tag {format_tag(TagLayout(tuple(order), layout.blocks))!r} has that order)"

    def shown(values):
        return "(" + ", ".join("*" if v == RUNTIME_DIM else str(v) for v in values) + ")"
    raise InvalidArgumentError(
        f"tag {tag!r} with strides {shown(strides)}: the tag's own strides are "
        f"{shown(own)}; strides given with a tag must keep its order of dims (from "
        f"its outermost dim inwards they must not grow) and may only add gaps. For "
        f"another order, write the tag in that order{hint}")


class MemoryDesc:
    """A tensor's logical shape, data type and physical layout.

    Build it from a format tag (``tag="nChw16c"``, any abstract tag, alias or
    meta-tag, or ``"any"``), from strides (plain layouts, gaps allowed), from
    both (the tag gives the dim order and inner blocks, the strides the outer
    steps: in the tag's order, gaps allowed), or from neither (dense
    row-major). Descriptors are immutable and hashable.

    ``extra`` (an Extra) adds compensation values after the padded data of
    s8 weights (oneDNN's memory_extra_desc); ``size`` counts them, and
    equality and hashing include them.

    Raises InvalidArgumentError for bad dims, tags, strides, data types or extra.
    """

    __slots__ = _FIELDS + ("_hash", "_kept")

    def __init__(self, dims: Sequence[int], data_type: DataTypeLike, tag: str | None = None,
                 strides: Sequence[int] | None = None, extra: Extra | None = None) -> None:
        dims = _check_dims(dims, runtime=True)
        dt = _data_type(data_type)
        ndims = len(dims)
        if tag is not None and not isinstance(tag, str):
            raise InvalidArgumentError(f"format tag {describe(tag)}: expected a string (or None)")
        if extra is not None:
            if not isinstance(extra, Extra):
                raise InvalidArgumentError(f"extra {describe(extra)}: expected a clayout.Extra")
            if tag == "any":
                raise InvalidArgumentError(f"{extra!r}: not allowed with tag 'any'")
        if tag == "any":
            if strides is not None:
                raise InvalidArgumentError(
                    f"strides {describe(strides)}: not allowed with tag 'any'")
            self._set(dims, dt.name, "any", dims, (0,) * ndims, 0, (0,) * ndims, (), ())
            return
        if tag is None:
            layout = TagLayout(tuple(range(ndims)), ())
        else:
            layout = parse_tag(expand_tag(tag, ndims), ndims, shown_as=tag)
        blocks = [1] * ndims
        for d, size in layout.blocks:
            blocks[d] *= size
        padded = tuple(RUNTIME_DIM if n == RUNTIME_DIM else _round_up(n, b)
                       for n, b in zip(dims, blocks))
        inner_size = math.prod(size for _, size in layout.blocks)
        runtime_tag = None
        dense = [0] * ndims
        stride = inner_size
        for d in reversed(layout.outer):
            dense[d] = stride
            # A stride over a runtime dim is known only at execution.
            stride = RUNTIME_DIM if RUNTIME_DIM in (stride, padded[d]) else \
                stride * max(1, padded[d] // blocks[d])
        if strides is None:
            strides = tuple(dense)
            if RUNTIME_DIM in dims:
                runtime_tag = format_tag(layout)
        else:
            strides = _int_tuple(strides, "strides", runtime=True)
            if len(strides) != ndims:
                raise InvalidArgumentError(
                    f"strides {strides!r}: {len(strides)} strides for {ndims} dims {dims!r}")
            if tag is not None:
                _check_tag_order(tag, layout, strides, tuple(dense),
                                 [RUNTIME_DIM if p == RUNTIME_DIM else p // b
                                  for p, b in zip(padded, blocks)])
        inner = (tuple(s for _, s in layout.blocks), tuple(d for d, _ in layout.blocks))
        if RUNTIME_DIM in dims or RUNTIME_DIM in strides:
            if extra is not None:
                raise InvalidArgumentError(
                    f"{extra!r} with runtime dims or strides {dims!r}, {strides!r}: "
                    f"compensation needs concrete dims")
            if any(s < 0 and s != RUNTIME_DIM for s in strides):
                raise InvalidArgumentError(f"strides {strides!r}: a stride cannot be negative")
            self._set(dims, dt.name, "blocked", padded, (0,) * ndims, 0, strides, *inner,
                      None, runtime_tag)
            return
        if extra is not None:
            extra.check(padded, dt.name)
            extra = None if extra.is_empty else extra
        self._set(dims, dt.name, "blocked", padded, (0,) * ndims, 0, strides, *inner, extra)
        self._check_int64()
        self._check_strides()

    @classmethod
    def from_array(cls, array: Any) -> "MemoryDesc":  # a NumPy or pyopencl array
        """The descriptor of a NumPy array or pyopencl Array as it lies in its
        buffer: dims from its shape, type from its dtype, strides from its
        strides, and (pyopencl) its byte offset into its buffer as offset0.
        For a pyopencl Array ``a``, ``Memory(MemoryDesc.from_array(a),
        engine, buffer=a)`` shares its storage.

        Raises InvalidArgumentError for a dtype clayout lacks, or strides that
        are negative, not whole elements, or overlap.
        """
        try:
            shape, dtype, byte_strides = tuple(array.shape), array.dtype, tuple(array.strides)
        except AttributeError:
            raise InvalidArgumentError(
                f"{describe(array)}: expected a NumPy array or pyopencl Array") from None
        dt = _data_type(dtype)
        size = dt.bits // 8
        offset = getattr(array, "offset", 0)  # pyopencl: bytes into base_data
        bad = [s for n, s in zip(shape, byte_strides) if n > 1 and (s < 0 or s % size)]
        if dt.packed or bad or offset % size:
            raise InvalidArgumentError(
                f"array of shape {shape}, dtype {dtype}, strides {byte_strides} and offset "
                f"{offset}: strides and offset must be non-negative whole elements")
        strides = tuple(s // size if n > 1 else 0 for n, s in zip(shape, byte_strides))
        dense = MemoryDesc(shape, dt, strides=None)
        strides = tuple(s if n > 1 else d for n, s, d in zip(shape, strides, dense.strides))
        md = MemoryDesc(shape, dt, strides=strides)
        return md._replace(offset0=offset // size) if offset else md

    # -- construction helpers -------------------------------------------------

    def _set(self, *values):
        values += (None,) * (len(_FIELDS) - len(values))  # no extra, no runtime tag
        for name, value in zip(_FIELDS, values):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_hash", hash(values))
        object.__setattr__(self, "_kept", {})

    @classmethod
    def _from_fields(cls, **fields) -> "MemoryDesc":
        md = object.__new__(cls)
        md._set(*(fields[name] for name in _FIELDS))
        return md

    def _replace(self, **changes) -> "MemoryDesc":
        if self.extra is not None and "extra" not in changes:
            # A view (window, permutation, reshape) of weights would leave
            # their compensation values behind.
            raise InvalidArgumentError(
                f"{self!r}: a descriptor with {self.extra!r} has no views; make one "
                f"without extra")
        fields = {name: getattr(self, name) for name in _FIELDS}
        fields.update(changes)
        return MemoryDesc._from_fields(**fields)

    def __setattr__(self, name, value):
        raise AttributeError("MemoryDesc is immutable")

    def _check_int64(self):
        """Raise InvalidArgumentError unless every size and offset fits in int64."""
        padded = math.prod(self.padded_dims)
        span = max([e * s for e, s in zip(self._outer_extents, self.strides)] + [self.inner_size])
        for what, value in (("padded dims", max(self.padded_dims)),
                            ("inner blocks", self.inner_size),
                            ("element count", padded), ("span", span + self.offset0)):
            if value >= INT64_LIMIT // 8:
                raise InvalidArgumentError(
                    f"dims {self.dims!r} with strides {self.strides!r}"
                    + (f" and inner blocks {self.inner_blks!r}" if self.inner_blks else "")
                    + f": the {what} ({value}) does not fit in int64 bytes")

    def _check_strides(self):
        if any(s < 0 for s in self.strides):
            raise InvalidArgumentError(f"strides {self.strides!r}: a stride cannot be negative")
        if self.nelems() == 0:
            return
        # Sorted by stride, each dim must step over everything inside it.
        spans = [(s, e) for s, e in zip(self.strides, self._outer_extents) if e > 1]
        if self.inner_blks:
            spans.append((1, self.inner_size))
        spans.sort()
        for (s0, e0), (s1, _) in zip([(1, 0)] + spans, spans):
            if s1 < s0 * e0 or s1 == 0:
                raise InvalidArgumentError(
                    f"strides {self.strides!r} for dims {self.dims!r}"
                    + (f" with inner blocks {self.inner_blks!r}" if self.inner_blks else "")
                    + f": elements overlap, a stride of {s1} is smaller than {s0}x{e0}")

    # -- derived properties ---------------------------------------------------

    @property
    def ndims(self) -> int:
        return len(self.dims)

    @_derived
    def dtype(self) -> DataType:
        """The DataType object (``data_type`` is its name)."""
        return _data_type(self.data_type)

    @_derived
    def is_runtime(self) -> bool:
        """True when a dim or stride is RUNTIME_DIM: a pattern for primitives,
        filled in by the memories given at execution; it has no size."""
        return RUNTIME_DIM in self.dims or RUNTIME_DIM in self.strides

    def _require_concrete(self, what):
        if self.is_runtime:
            raise InvalidArgumentError(
                f"{what}: {self!r} has runtime dims or strides (RUNTIME_DIM); only a "
                f"primitive takes such a descriptor, memories need concrete ones "
                f"(md.with_dims(dims))")

    def with_dims(self, dims: Sequence[int],
                  strides: Sequence[int] | None = None) -> "MemoryDesc":
        """The concrete descriptor this runtime pattern stands for with
        ``dims`` (and ``strides``, where the pattern's are runtime and it was
        not made from a tag): the same type and blocks, dense in the
        pattern's tag. Raises InvalidArgumentError when dims or strides do
        not fill the pattern."""
        return md_transforms.with_dims(self, dims, strides)

    def check_instance(self, md: "MemoryDesc", what: str = "memory") -> None:
        """Raise InvalidArgumentError unless concrete ``md`` fills this
        runtime pattern: same type, blocks and fixed dims and strides, dense
        in the pattern's tag when it was made from one, not a window."""
        md_transforms.check_instance(self, md, what, MemoryDesc)

    @_derived
    def blocks(self) -> tuple[int, ...]:
        """Per dim, the product of its inner blocks (1 for an unblocked dim)."""
        out = [1] * self.ndims
        for size, d in zip(self.inner_blks, self.inner_idxs):
            out[d] *= size
        return tuple(out)

    @_derived
    def inner_size(self) -> int:
        """Elements in one innermost block (1 for plain layouts)."""
        return math.prod(self.inner_blks)

    @_derived
    def _outer_extents(self) -> tuple[int, ...]:
        return tuple(p // b for p, b in zip(self.padded_dims, self.blocks))

    @_derived
    def own_padded_dims(self) -> tuple[int, ...]:
        """The padded extent that belongs to this tensor: each dim rounded up to
        its block, within the parent's padding for a submemory."""
        if self.is_runtime:
            return self.padded_dims
        return tuple(min(_round_up(n, b), p - o) for n, b, p, o in
                     zip(self.dims, self.blocks, self.padded_dims, self.padded_offsets))

    @_derived
    def is_submemory(self) -> bool:
        return any(self.padded_offsets) or self.own_padded_dims != self.padded_dims

    @_derived
    def size(self) -> int:
        """Bytes the buffer must hold (oneDNN's get_size(); offset0 not counted).
        Raises InvalidArgumentError for runtime dims or strides."""
        self._require_concrete("size")
        if self.format_kind == "any" or self.nelems() == 0:
            return 0
        span = max(e * s if e > 1 else 1 for e, s in zip(self._outer_extents, self.strides))
        data = self.dtype.nbytes(max(span, self.inner_size))
        return data if self.extra is None else data + self.extra.nbytes(self.padded_dims)

    def without_extra(self) -> "MemoryDesc":
        """This descriptor's elements alone (its data, with no compensation)."""
        return self if self.extra is None else self._replace(extra=None)

    @_derived
    def compensation_offset(self) -> int:
        """Byte offset of the first compensation value (the data's size), or
        None without compensation."""
        if self.extra is None or not self.extra.masks() or self.size == 0:
            return None
        return self.size - self.extra.nbytes(self.padded_dims)

    def nelems(self, padded: bool = False) -> int:
        """Number of elements, of the padded tensor when ``padded``. Raises
        InvalidArgumentError for runtime dims."""
        key = "nelems_padded" if padded else "nelems"
        count = self._kept.get(key)
        if count is None:
            self._require_concrete("nelems")
            count = self._kept[key] = math.prod(self.padded_dims if padded else self.dims)
        return count

    def _layout_tag(self) -> str:
        """The tag of this descriptor's dim order and blocks (strides aside)."""
        order = sorted(range(self.ndims), key=lambda d: (-self.strides[d], d))
        return format_tag(TagLayout(tuple(order), tuple(zip(self.inner_idxs, self.inner_blks))))

    @_derived
    def tag(self) -> str | None:
        """The abstract tag this descriptor is a dense instance of, else None."""
        if self.format_kind == "blocked" and self.is_runtime:
            return self.runtime_tag
        if self.format_kind != "blocked" or self.is_submemory or self.offset0:
            return None
        candidate = self._layout_tag()
        return candidate if self.matches_tag(candidate) else None

    def dense_like(self, data_type: DataTypeLike) -> "MemoryDesc":
        """A dense descriptor of the same dims, dim order and blocks, of ``data_type``."""
        return md_transforms.dense_like(self, data_type)

    # -- addressing -----------------------------------------------------------

    def _require_layout(self, what):
        if self.format_kind != "blocked":
            raise InvalidArgumentError(f"{what}: {self!r} has format 'any', which has no layout yet")

    def dim_offsets(self, d: int, index: int | np.ndarray) -> int | np.ndarray:
        """Offsets (in elements) that dim ``d`` contributes for ``index`` (int or array).

        The physical offset of a logical index is ``offset0`` plus the sum over
        the dims: the layout is separable, which the host path and kernel
        generators rely on.
        """
        return md_addressing.dim_offsets(self, d, index)

    def offset(self, idx: Sequence[int], padded: bool = False) -> int:
        """Physical element offset of the logical index ``idx``.

        With ``padded`` the index may reach into the padding (up to
        ``own_padded_dims``). Raises InvalidArgumentError for an index out of range.
        """
        return md_addressing.offset(self, idx, padded)

    def element_offsets(self, padded: bool = False) -> np.ndarray:
        """Offsets of every element as an int64 array of shape dims (or own_padded_dims)."""
        return md_addressing.element_offsets(self, padded)

    # -- derived descriptors --------------------------------------------------

    def submemory(self, dims: Sequence[int], offsets: Sequence[int]) -> "MemoryDesc":
        """A view of ``dims`` elements starting at ``offsets`` (in-place concat).

        Raises InvalidArgumentError when the view leaves the tensor or splits a block.
        """
        return md_transforms.submemory(self, dims, offsets)

    def permute_axes(self, perm: Sequence[int]) -> "MemoryDesc":
        """The same memory seen with axes permuted: input axis i becomes axis perm[i].

        Raises InvalidArgumentError if perm is not a permutation of range(ndims).
        """
        return md_transforms.permute_axes(self, perm)

    def reshape(self, dims: Sequence[int]) -> "MemoryDesc":
        """The same memory seen with other dims of the same element count.

        Plain dense dims can be merged and split where their strides allow it;
        blocked or padded layouts can only gain or lose dims of size 1.
        Raises InvalidArgumentError otherwise.
        """
        return md_transforms.reshape(self, dims)

    def matches_tag(self, tag: str, strides: Sequence[int] | None = None) -> bool:
        """True if this descriptor has the layout of ``tag`` for its dims.

        ``strides`` (optional) checks the outer strides instead of the tag's
        dense ones: -1 accepts any stride, 0 the tag's own. Strides of dims of
        extent 1 are not compared. Raises InvalidArgumentError for a bad tag.
        """
        return md_transforms.matches_tag(self, tag, strides)

    def check_same_dims(self, other: "MemoryDesc", what: str) -> None:
        """Raise InvalidArgumentError unless ``other`` has the same dims."""
        md_transforms.check_same_dims(self, other, what, MemoryDesc)

    # -- identity -------------------------------------------------------------

    def __eq__(self, other):
        if self is other:  # the common case in execute(): the primitive's own descriptor
            return True
        if not isinstance(other, MemoryDesc):
            return NotImplemented
        if self._hash != other._hash:  # kept from construction: most unequal pairs stop here
            return False
        return all(getattr(self, n) == getattr(other, n) for n in _FIELDS)

    def __hash__(self):
        return self._hash

    def __reduce__(self):
        return MemoryDesc._from_fields_kw, (tuple(getattr(self, n) for n in _FIELDS),)

    @staticmethod
    def _from_fields_kw(values):
        return MemoryDesc._from_fields(**dict(zip(_FIELDS, values)))

    def __repr__(self):
        dims = dims_text(self.dims)
        if self.format_kind == "any":
            layout = "any"
        else:
            layout = self.tag or "strides=" + dims_text(self.strides)
            if self.inner_blks and not self.tag:
                layout += " blocks=" + "".join(
                    f"{s}{LETTERS[d]}" for s, d in zip(self.inner_blks, self.inner_idxs))
            if any(self.padded_offsets):
                layout += " offsets=" + "x".join(map(str, self.padded_offsets))
            if self.extra is not None:
                layout += " extra=" + self.extra.text()
        return f"<MemoryDesc {dims} {self.data_type} {layout}>"

