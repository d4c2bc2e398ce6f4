"""Extra: what a weights descriptor carries besides its elements (the RFC's
section 4, oneDNN's memory_extra_desc): convolution compensation values and
a scale adjustment, stored after the padded data."""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from .errors import InvalidArgumentError, describe

#: oneDNN's memory_extra_flags values, for text and interchange.
FLAG_S8S8 = 0x1          # compensation_conv_s8s8
FLAG_SCALE_ADJUST = 0x2  # scale_adjust
FLAG_ZP = 0x8            # compensation_conv_asymmetric_src


def _mask(value, what):
    if value is None:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise InvalidArgumentError(
            f"{what} {describe(value)}: expected an integer > 0 (a dim mask)")
    return int(value)


class Extra:
    """Compensation and scale adjustment of an s8 weights descriptor.

    ``compensation_mask`` asks for s8s8 convolution compensation: for every
    slice of the masked dims (e.g. 0b1: each output channel of OIhw; 0b11:
    each group and output channel of gOIhw), the s32 value ``-128 * sum`` of
    the quantized weights over the other dims. ``asymm_compensation_mask``
    asks for asymmetric-source (zero-point) compensation, ``-sum``.
    ``scale_adjust`` multiplies every weight before it is rounded (0.5 keeps
    s8s8 products from overflowing on CPUs without VNNI).

    The s32 values follow the padded data: the s8s8 ones first, then the
    zero-point ones, each in C order over the masked dims' padded sizes.
    Immutable and hashable. Raises InvalidArgumentError for a mask that is
    not a positive integer, or a scale_adjust that is not a finite number > 0.
    """

    __slots__ = ("compensation_mask", "asymm_compensation_mask", "scale_adjust")

    def __init__(self, compensation_mask: int | None = None,
                 asymm_compensation_mask: int | None = None,
                 scale_adjust: float = 1.0) -> None:
        comp = _mask(compensation_mask, "compensation_mask")
        asymm = _mask(asymm_compensation_mask, "asymm_compensation_mask")
        if not isinstance(scale_adjust, numbers.Real) or isinstance(scale_adjust, bool):
            raise InvalidArgumentError(f"scale_adjust {describe(scale_adjust)}: expected a number")
        with np.errstate(over="ignore", under="ignore"):
            as_f32 = float(np.float32(scale_adjust))
        if not math.isfinite(as_f32) or as_f32 <= 0:
            raise InvalidArgumentError(
                f"scale_adjust {describe(scale_adjust)}: expected a number > 0 that is finite and "
                f"nonzero as an f32")
        object.__setattr__(self, "compensation_mask", comp)
        object.__setattr__(self, "asymm_compensation_mask", asymm)
        # An f32, as the kernels multiply by it.
        object.__setattr__(self, "scale_adjust", as_f32)

    def __setattr__(self, name, value):
        raise AttributeError("Extra is immutable")

    def __delattr__(self, name):
        raise AttributeError("Extra is immutable")

    @property
    def flags(self) -> int:
        """oneDNN's memory_extra_flags bits for what this holds."""
        return ((FLAG_S8S8 if self.compensation_mask else 0)
                | (FLAG_ZP if self.asymm_compensation_mask else 0)
                | (FLAG_SCALE_ADJUST if self.scale_adjust != 1.0 else 0))

    @property
    def is_empty(self) -> bool:
        return self.flags == 0

    def masks(self) -> tuple[tuple[str, int], ...]:
        """The compensations held, in storage order: ("s8s8", mask), ("zp", mask)."""
        out = []
        if self.compensation_mask:
            out.append(("s8s8", self.compensation_mask))
        if self.asymm_compensation_mask:
            out.append(("zp", self.asymm_compensation_mask))
        return tuple(out)

    def check(self, padded_dims: Sequence[int], data_type: str) -> None:
        """Raise InvalidArgumentError unless this fits a descriptor of these dims and type."""
        if self.is_empty:
            return
        if data_type != "s8":
            raise InvalidArgumentError(
                f"{self!r} on a {data_type} descriptor: compensation and scale_adjust "
                f"apply to s8 weights only")
        for name, mask in self.masks():
            if mask >> len(padded_dims):
                raise InvalidArgumentError(
                    f"{name} compensation mask {mask:#b} names a dim beyond the "
                    f"{len(padded_dims)} dims")

    def counts(self, padded_dims: tuple[int, ...]) -> tuple[tuple[str, int, int], ...]:
        """(kind, mask, number of s32 values) of each compensation, in storage order."""
        return tuple((name, mask, math.prod(n for d, n in enumerate(padded_dims)
                                            if mask >> d & 1))
                     for name, mask in self.masks())

    def nbytes(self, padded_dims: tuple[int, ...]) -> int:
        """Bytes of the compensation values after the data."""
        return 4 * sum(count for _, _, count in self.counts(padded_dims))

    def _key(self):
        return (self.compensation_mask, self.asymm_compensation_mask, self.scale_adjust)

    def __eq__(self, other):
        return isinstance(other, Extra) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):
        return Extra, self._key()

    def text(self) -> str:
        """benchdnn's --oflag spelling: s8s8_comp:1+zp_comp:1."""
        parts = [f"{'s8s8_comp' if name == 's8s8' else 'zp_comp'}:{mask}"
                 for name, mask in self.masks()]
        if self.scale_adjust != 1.0:
            parts.append(f"scale_adjust:{self.scale_adjust!r}")
        return "+".join(parts)

    def __repr__(self):
        parts = []
        if self.compensation_mask:
            parts.append(f"compensation_mask={self.compensation_mask:#b}")
        if self.asymm_compensation_mask:
            parts.append(f"asymm_compensation_mask={self.asymm_compensation_mask:#b}")
        if self.scale_adjust != 1.0:
            parts.append(f"scale_adjust={self.scale_adjust!r}")
        return f"Extra({', '.join(parts)})"
