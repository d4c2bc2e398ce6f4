"""Problem: one validated reorder or shuffle, as the implementations see it."""
from __future__ import annotations

from dataclasses import dataclass

from .attr import Attr
from .memory_desc import MemoryDesc

NO_ATTR_KINDS = (None, None, None, None, False)


class _kept:
    """A property worked out on first use and kept in the instance's
    __dict__, outside the fields that equality and hashing read (Python
    3.11's cached_property takes a lock shared by every instance)."""

    def __init__(self, method):
        self.method, self.name, self.__doc__ = method, method.__name__, method.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.method(obj)  # later reads find the dict's
        return value


@dataclass(frozen=True)
class Problem:
    """What to do: read ``src_md``, write ``dst_md``, convert with ``attr``,
    and for a shuffle read the axis in shuffled order.

    ``shuffle`` is (axis, group) as the kernels read it: destination position
    u + v * (C / group) takes source position u * group + v along the axis
    (a backward shuffle is already turned into its forward twin). None for a
    reorder, and for a shuffle that moves nothing (group 1 or C).
    """

    kind: str                              # "reorder" or "shuffle"
    src_md: MemoryDesc
    dst_md: MemoryDesc
    attr: Attr | None = None
    shuffle: tuple[int, int] | None = None

    # Worked out once per Problem: each implementation asks while one is chosen.
    @_kept
    def attr_kinds(self) -> tuple:
        """The attribute masks (not values): what shapes generated code."""
        return self.attr.kinds() if self.attr is not None else NO_ATTR_KINDS

    @property
    def has_attr(self) -> bool:
        return self.attr_kinds != NO_ATTR_KINDS

    @property
    def is_runtime(self) -> bool:
        """Created on runtime patterns: each execution brings its own shape."""
        return self.src_md.is_runtime or self.dst_md.is_runtime

    @property
    def is_empty(self) -> bool:
        return self.src_md.nelems() == 0

    @_kept
    def moves_bits(self) -> bool:
        """Each destination element is a source element's bits: same type,
        no attributes (a layout change, a shuffle or a copy)."""
        return self.src_md.data_type == self.dst_md.data_type and not self.has_attr

    @_kept
    def is_buffer_copy(self) -> bool:
        """The destination's bytes are the source's, byte for byte: same
        layout and type, nothing to convert or shuffle, no padding or gaps,
        no compensation to compute."""
        s, d = self.src_md, self.dst_md
        if d.extra is not None:
            return False
        dense = s.size == s.dtype.nbytes(s.nelems())
        return (self.moves_bits and self.shuffle is None and s == d and dense
                and not s.is_submemory and s.offset0 == 0)

    @property
    def name(self) -> str:
        """A C identifier that tells cases apart: reorder_f32_abcd_to_s8_aBcd16b,
        shuffle_g4_f32_aBcd16b."""
        def layout(md):
            return md.tag or "strided"

        s, d = self.src_md, self.dst_md
        if self.kind == "shuffle":
            group = f"g{self.shuffle[1]}" if self.shuffle else "copy"
            text = f"shuffle_{group}_{s.data_type}_{layout(s)}"
            return text if layout(d) == layout(s) else f"{text}_to_{layout(d)}"
        return f"reorder_{s.data_type}_{layout(s)}_to_{d.data_type}_{layout(d)}"
