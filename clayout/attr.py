"""Primitive attributes: scales, zero points and the sum post-op."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InvalidArgumentError


class _PerSlice:
    """Values that apply per tensor (mask 0) or per slice of the masked dims.

    Bit d of ``mask`` selects dim d; the values are in C order over the masked
    dims. A plain number means one value for the whole tensor.
    """

    _dtype = np.float32
    _what = "scales"

    def __init__(self, values, mask: int = 0):
        if not isinstance(mask, numbers.Integral) or isinstance(mask, bool) or mask < 0:
            raise InvalidArgumentError(f"{self._what} mask {mask!r}: expected an integer >= 0")
        if values is None or isinstance(values, (str, bytes)):
            raise InvalidArgumentError(
                f"{self._what} values {values!r}: expected a number or a 1-d sequence of numbers")
        try:
            array = np.asarray(values)
        except (ValueError, TypeError):  # ragged nested sequences
            raise InvalidArgumentError(
                f"{self._what} values {values!r}: expected a number or a 1-d sequence "
                f"of numbers") from None
        kind = array.dtype.kind
        if array.ndim > 1 or kind not in "iuf" and not (array.size == 0 and kind in "iufO"):
            raise InvalidArgumentError(
                f"{self._what} values {values!r}: expected a number or a 1-d sequence of "
                f"{'integers' if self._dtype is np.int32 else 'real numbers'}")
        if self._dtype is np.int32 and array.size and (
                kind == "f" or array.min() < -2**31 or array.max() >= 2**31):
            raise InvalidArgumentError(
                f"{self._what} values {values!r}: expected 32-bit integers")
        self.mask = int(mask)
        self.values = np.ascontiguousarray(array.reshape(-1), dtype=self._dtype)
        self.values.setflags(write=False)

    @property
    def is_common(self) -> bool:
        return self.mask == 0

    def masked_dims(self) -> tuple[int, ...]:
        return tuple(d for d in range(self.mask.bit_length()) if self.mask >> d & 1)

    def check(self, dims: tuple[int, ...], arg: str):
        """Raise InvalidArgumentError unless the mask and value count fit ``dims``."""
        if self.mask >> len(dims):
            raise InvalidArgumentError(
                f"{arg} {self._what} mask {self.mask:#b} names a dim beyond the "
                f"{len(dims)} dims {dims!r}")
        want = math.prod(dims[d] for d in self.masked_dims())
        if self.values.size != want:
            raise InvalidArgumentError(
                f"{arg} {self._what} with mask {self.mask:#b} on dims {dims!r} need "
                f"{want} values, got {self.values.size}")

    def __repr__(self):
        shown = self.values[0] if self.values.size == 1 else f"[{self.values.size} values]"
        return f"{type(self).__name__}({shown}, mask={self.mask:#b})"


class Scales(_PerSlice):
    """Scaling factors (f32): ``Scales(2.0)`` or ``Scales(values, mask=0b10)``."""


class ZeroPoints(_PerSlice):
    """Zero points (s32): ``ZeroPoints(-1)`` or ``ZeroPoints(values, mask=0b10)``."""

    _dtype = np.int32
    _what = "zero points"


def _scales(value):
    return value if value is None or isinstance(value, Scales) else Scales(value)


def _zero_points(value):
    return value if value is None or isinstance(value, ZeroPoints) else ZeroPoints(value)


class Attr:
    """Attributes of a reorder: ``dst = (s_src (src - zp_src) + beta (dst - zp_dst))
    / s_dst + zp_dst``, computed in f32 (f64 when a side is f64).

    ``output_scales`` is the legacy name of ``src_scales``.
    """

    def __init__(self, src_scales=None, dst_scales=None, src_zero_point=None,
                 dst_zero_point=None, sum_beta=None, output_scales=None):
        if output_scales is not None:
            if src_scales is not None:
                raise InvalidArgumentError("give src_scales or output_scales, not both")
            src_scales = output_scales
        self.src_scales = _scales(src_scales)
        self.dst_scales = _scales(dst_scales)
        self.src_zero_point = _zero_points(src_zero_point)
        self.dst_zero_point = _zero_points(dst_zero_point)
        if sum_beta is not None and (not isinstance(sum_beta, numbers.Real)
                                     or isinstance(sum_beta, bool)):
            raise InvalidArgumentError(f"sum_beta {sum_beta!r}: expected a number")
        self.sum_beta = None if sum_beta is None else float(sum_beta)

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, n) is None for n in
                   ("src_scales", "dst_scales", "src_zero_point", "dst_zero_point", "sum_beta"))

    def kinds(self) -> tuple:
        """What shapes the generated code (masks, not values): part of a kernel's key."""
        def kind(v):
            return None if v is None else v.mask
        return (kind(self.src_scales), kind(self.dst_scales), kind(self.src_zero_point),
                kind(self.dst_zero_point), self.sum_beta is not None)

    def __repr__(self):
        parts = [f"{n}={getattr(self, n)!r}" for n in
                 ("src_scales", "dst_scales", "src_zero_point", "dst_zero_point", "sum_beta")
                 if getattr(self, n) is not None]
        return f"Attr({', '.join(parts)})"
