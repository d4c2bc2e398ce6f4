"""Primitive attributes: scales, zero points and the sum post-op."""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Union

import numpy as np

from .dtypes import DATA_TYPES, DataTypeLike, data_type as _data_type, f64_to_f32_odd
from .errors import InvalidArgumentError, describe
from .memory_desc import RUNTIME_DIM


class _PerSlice:
    """Values that apply per tensor (mask 0) or per slice of the masked dims.

    Bit d of ``mask`` selects dim d; the values are in C order over the masked
    dims. A plain number means one value for the whole tensor.
    """

    _dtype = np.float32
    _np_dtype = np.dtype(np.float32)
    _what = "scales"
    _data_types = ("f32", "bf16", "f16")

    def __init__(self, values: float | Sequence[float] | np.ndarray | None = None,
                 mask: int = 0, groups: tuple[int, int] | None = None,
                 data_type: DataTypeLike | None = None) -> None:
        if not isinstance(mask, numbers.Integral) or isinstance(mask, bool) or mask < 0:
            raise InvalidArgumentError(
                f"{self._what} mask {describe(mask)}: expected an integer >= 0")
        data_type = self._data_types[0] if data_type is None else data_type
        dt = None
        try:
            dt = _data_type(data_type)
        except InvalidArgumentError:
            pass
        if dt is None or dt.name not in self._data_types:
            raise InvalidArgumentError(
                f"{self._what} data_type {describe(data_type)}: expected one of "
                f"{', '.join(self._data_types)}")
        self.data_type = dt.name
        self.groups = _groups(groups, self._what)
        self.mask = int(mask)
        if values is None:  # given to each execute instead
            self.values = None
            return
        self.values = self._converted(values, dt)

    def _converted(self, values, dt) -> np.ndarray:
        """``values`` checked and stored as the kernels read them (float32
        rounded once to the data type, or int32 within it), read-only."""
        if isinstance(values, (str, bytes)):
            raise InvalidArgumentError(
                f"{self._what} values {describe(values)}: expected a number or a 1-d "
                f"sequence of numbers")
        try:
            array = _widened(np.asarray(values))
        except (ValueError, TypeError):  # ragged nested sequences
            raise InvalidArgumentError(
                f"{self._what} values {describe(values)}: expected a number or a 1-d sequence "
                f"of numbers") from None
        kind = array.dtype.kind
        if array.ndim > 1 or kind not in "iuf" and not (array.size == 0 and kind in "iufO"):
            raise InvalidArgumentError(
                f"{self._what} values {describe(values)}: expected a number or a 1-d sequence of "
                f"{'integers' if self._dtype is np.int32 else 'real numbers'}")
        if self._dtype is np.int32 and array.size and (
                kind == "f" or array.min() < -2**31 or array.max() >= 2**31):
            raise InvalidArgumentError(
                f"{self._what} values {describe(values)}: expected 32-bit integers")
        if self._dtype is np.int32 and array.size and (
                array.min() < dt.min or array.max() > dt.max):
            bad = array.min() if array.min() < dt.min else array.max()
            raise InvalidArgumentError(
                f"{self._what} value {bad} does not fit data_type {dt.name} "
                f"({int(dt.min)}..{int(dt.max)})")
        if self._dtype is np.float32:
            # Stored in the data type: each value rounded once, to nearest
            # even (f32 and f16 straight from f64; bf16 through f32 rounded
            # to odd); a finite value that becomes infinite or 0 is refused.
            wide = np.asarray(array.reshape(-1), dtype=np.float64)
            with np.errstate(over="ignore"):
                if dt.name == "bf16":
                    wide = f64_to_f32_odd(wide)
                values = wide.astype(dt.numpy).astype(np.float32)
            lost = np.isfinite(wide) & (wide != 0) & (~np.isfinite(values) | (values == 0))
            if lost.any():
                raise InvalidArgumentError(
                    f"{self._what} value {array.reshape(-1)[lost.argmax()]!r} is out of "
                    f"the range of data_type {dt.name}")
        else:
            values = np.array(array.reshape(-1), dtype=self._dtype)  # a copy of our own
        values.setflags(write=False)
        return values

    @property
    def at_execute(self) -> bool:
        """The values are not fixed: each execute brings them."""
        return self.values is None

    def with_values(self, values: float | Sequence[float] | np.ndarray, dims: tuple[int, ...],
                    arg: str, as_stored: bool = False, counted: bool = False) -> "_PerSlice":
        """A copy of these (mask, groups, data type) holding ``values`` (a
        number or 1-d sequence, checked and rounded as at creation; with
        ``as_stored``, a 1-d array of the kernels' type taken as it is),
        checked against ``dims`` (only their count, with ``counted``: the
        mask and groups were checked on these dims already). Raises
        InvalidArgumentError."""
        bound = object.__new__(type(self))
        bound.mask, bound.groups, bound.data_type = self.mask, self.groups, self.data_type
        if (type(values) is np.ndarray and values.dtype is self._np_dtype and values.ndim == 1
                and (as_stored or self.data_type in ("f32", "s32"))):
            bound.values = values.copy()  # already what the kernels read
            bound.values.setflags(write=False)
            if counted and values.size == self.count(dims):
                return bound
        else:
            try:
                bound.values = bound._converted(values, _data_type(self.data_type))
            except InvalidArgumentError as e:
                raise InvalidArgumentError(f"{arg}: {e}") from None
        bound.check(dims, arg)
        return bound

    def count(self, dims: tuple[int, ...]) -> int:
        """How many values the mask and groups take on ``dims``."""
        last = getattr(self, "_counted", None)  # (dims, count): executes repeat their dims
        if last is not None and last[0] == dims:
            return last[1]
        sizes = self.group_sizes(len(dims))
        count = math.prod(dims[d] // sizes[d] for d in self.masked_dims())
        self._counted = (dims, count)
        return count

    @property
    def is_common(self) -> bool:
        return self.mask == 0

    def masked_dims(self) -> tuple[int, ...]:
        return tuple(d for d in range(self.mask.bit_length()) if self.mask >> d & 1)

    def group_sizes(self, ndims: int) -> tuple[int, ...]:
        """Per dim, how many consecutive indices share one value (1 off the
        last two dims, and everywhere without groups)."""
        sizes = [1] * ndims
        if self.groups is not None:
            sizes[ndims - 2:] = self.groups
        return tuple(sizes)

    def kind(self) -> int | tuple:
        """What shapes generated code: the mask, and the groups if any. A
        per-tensor value given at execute is read from a buffer (it may be
        on the device already): (0, None, "buffer")."""
        if self.at_execute and self.mask == 0:
            return (0, None, "buffer")
        return self.mask if self.groups is None else (self.mask, self.groups)

    def check(self, dims: tuple[int, ...], arg: str) -> None:
        """Raise InvalidArgumentError unless the mask, groups and value count fit
        ``dims`` (of a runtime pattern: the groups of its runtime dims and the
        count wait for each execution's dims)."""
        if self.mask >> len(dims):
            raise InvalidArgumentError(
                f"{arg} {self._what} mask {self.mask:#b} names a dim beyond the "
                f"{len(dims)} dims {dims!r}")
        if self.groups is not None:
            if len(dims) < 2:
                raise InvalidArgumentError(
                    f"{arg} {self._what} groups {self.groups!r} apply to the last two "
                    f"dims; the tensor has {len(dims)} dims {dims!r}")
            for d, g in zip(range(len(dims) - 2, len(dims)), self.groups):
                if g > 1 and not self.mask >> d & 1:
                    raise InvalidArgumentError(
                        f"{arg} {self._what} group {g} on dim {d}: dim {d} is not in "
                        f"the mask {self.mask:#b}")
                if dims[d] != RUNTIME_DIM and dims[d] % g:  # a runtime dim: at execute
                    raise InvalidArgumentError(
                        f"{arg} {self._what} group {g} does not divide dim {d} "
                        f"({dims[d]}) of {dims!r}")
        if self.values is None:
            return  # counted when execute brings them
        want = self.count(dims)
        if self.values.size != want:
            groups = "" if self.groups is None else f" and groups {self.groups!r}"
            raise InvalidArgumentError(
                f"{arg} {self._what} with mask {self.mask:#b}{groups} on dims {dims!r} "
                f"need {want} values, got {self.values.size}")

    def __repr__(self):
        shown = "at execute" if self.values is None else \
            self.values[0] if self.values.size == 1 else f"[{self.values.size} values]"
        extra = "" if self.groups is None else f", groups={self.groups!r}"
        if self.data_type != self._data_types[0]:
            extra += f", data_type={self.data_type!r}"
        return f"{type(self).__name__}({shown}, mask={self.mask:#b}{extra})"


def _widened(array: np.ndarray) -> np.ndarray:
    """An array of ml_dtypes' types (bf16, f8, s4, u4: NumPy kind "V", which
    the checks do not know) as float64 or int64, which hold each value exactly."""
    if array.dtype.kind == "V":
        for dt in DATA_TYPES.values():
            if dt.numpy == array.dtype:
                return array.astype(np.int64 if dt.is_int else np.float64)
    return array


def _groups(groups, what: str):
    """``groups`` as a pair for the last two dims, or None when every group is 1."""
    if groups is None:
        return None
    try:
        pair = tuple(groups)
    except TypeError:
        pair = None
    if (pair is None or len(pair) != 2 or not all(
            isinstance(g, numbers.Integral) and not isinstance(g, bool) and g >= 1
            for g in pair)):
        raise InvalidArgumentError(
            f"{what} groups {describe(groups)}: expected two integers >= 1, the group sizes "
            f"along the last two dims (e.g. (1, 32))")
    pair = tuple(int(g) for g in pair)
    return None if pair == (1, 1) else pair


class Scales(_PerSlice):
    """Scaling factors: ``Scales(2.0)``, ``Scales(values, mask=0b10)``, or grouped,
    ``Scales(values, mask=0b11, groups=(1, 32), data_type="f16")``.

    ``groups`` gives the sizes of the groups of consecutive indices along
    the last two dims that share one value, as oneDNN's for the source;
    clayout takes them for the destination too (quantizing with one scale
    per group). A group above 1 needs its dim in the mask and must divide
    it. ``data_type`` (f32, bf16, f16 or e8m0) is the type the values are
    stored in: each is rounded to it once, to nearest even (e8m0, the OCP
    MX formats' scale type, holds powers of two only: the nearest one, a
    tie 1.5 * 2^k going up). Raises InvalidArgumentError for a bad mask,
    groups, data type or values.
    """

    _data_types = ("f32", "bf16", "f16", "e8m0")


class ZeroPoints(_PerSlice):
    """Zero points: ``ZeroPoints(-1)``, ``ZeroPoints(values, mask=0b10)``, or grouped
    (source or destination), ``ZeroPoints(values, mask=0b11, groups=(1, 32),
    data_type="u4")``.

    ``data_type`` (s32, s8, u8, s4 or u4) is the type the values are stored
    in; a value outside it raises InvalidArgumentError.
    """

    _dtype = np.int32
    _np_dtype = np.dtype(np.int32)
    _what = "zero points"
    _data_types = ("s32", "s8", "u8", "s4", "u4")


#: What an Attr takes for scales: Scales, or one number for the whole tensor.
ScalesLike = Union[Scales, float]
#: What an Attr takes for zero points: ZeroPoints, or one integer.
ZeroPointsLike = Union[ZeroPoints, int]


def _scales(value):
    return value if value is None or isinstance(value, Scales) else Scales(value)


def _zero_points(value):
    return value if value is None or isinstance(value, ZeroPoints) else ZeroPoints(value)


#: The attributes that hold values per tensor or per slice, in the formula's order.
PER_SLICE_FIELDS = ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points")


def _renamed(old: str, new: str, old_value, new_value):
    """The value given as ``new`` or as ``old`` (its deprecated spelling,
    which warns). Raises InvalidArgumentError when both are given."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise InvalidArgumentError(
            f"Attr got both {new}= and {old}=: {old} is the deprecated spelling of {new}; "
            f"give {new}= only")
    warnings.warn(f"Attr({old}=) is deprecated: write {new}=", DeprecationWarning, stacklevel=3)
    return old_value


class Attr:
    """Attributes of a reorder: ``dst = (s_src (src - zp_src) + beta (dst - zp_dst))
    / s_dst + zp_dst``, computed in f32 (f64 when a side is f64).

    ``output_scales`` is the legacy name of ``src_scales``; ``src_zero_point``
    and ``dst_zero_point`` (singular) are deprecated spellings of
    ``src_zero_points`` and ``dst_zero_points`` and warn. Scales or
    ZeroPoints made without values (``Scales(mask=0b10)``) take their values
    at each execute (``src_scales=``, ``dst_scales=``, ``src_zero_points=``,
    ``dst_zero_points=``), as oneDNN v3's execution arguments.
    """

    def __init__(self, src_scales: ScalesLike | None = None,
                 dst_scales: ScalesLike | None = None,
                 src_zero_points: ZeroPointsLike | None = None,
                 dst_zero_points: ZeroPointsLike | None = None, sum_beta: float | None = None,
                 output_scales: ScalesLike | None = None, *,
                 src_zero_point: ZeroPointsLike | None = None,
                 dst_zero_point: ZeroPointsLike | None = None) -> None:
        if output_scales is not None:
            if src_scales is not None:
                raise InvalidArgumentError("give src_scales or output_scales, not both")
            src_scales = output_scales
        src_zero_points = _renamed("src_zero_point", "src_zero_points",
                                   src_zero_point, src_zero_points)
        dst_zero_points = _renamed("dst_zero_point", "dst_zero_points",
                                   dst_zero_point, dst_zero_points)
        self.src_scales = _scales(src_scales)
        self.dst_scales = _scales(dst_scales)
        self.src_zero_points = _zero_points(src_zero_points)
        self.dst_zero_points = _zero_points(dst_zero_points)
        if sum_beta is not None and (not isinstance(sum_beta, numbers.Real)
                                     or isinstance(sum_beta, bool)):
            raise InvalidArgumentError(f"sum_beta {describe(sum_beta)}: expected a number")
        self.sum_beta = None if sum_beta is None else float(sum_beta)
        with np.errstate(over="ignore"):  # beta is an f32, as oneDNN's sum scale
            if sum_beta is not None and np.isinf(np.float32(self.sum_beta)) \
                    and np.isfinite(self.sum_beta):
                raise InvalidArgumentError(
                    f"sum_beta {sum_beta!r} is out of the range of f32, the type beta is "
                    f"used in")

    @property
    def src_zero_point(self) -> ZeroPoints | None:
        """Deprecated spelling of ``src_zero_points`` (warns)."""
        warnings.warn("Attr.src_zero_point is deprecated: read src_zero_points",
                      DeprecationWarning, stacklevel=2)
        return self.src_zero_points

    @property
    def dst_zero_point(self) -> ZeroPoints | None:
        """Deprecated spelling of ``dst_zero_points`` (warns)."""
        warnings.warn("Attr.dst_zero_point is deprecated: read dst_zero_points",
                      DeprecationWarning, stacklevel=2)
        return self.dst_zero_points

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, n) is None for n in PER_SLICE_FIELDS + ("sum_beta",))

    def at_execute(self) -> tuple[str, ...]:
        """The fields (src_scales, dst_scales, src_zero_points, dst_zero_points)
        whose values each execute brings, in that order."""
        return tuple(n for n in PER_SLICE_FIELDS
                     if getattr(self, n) is not None and getattr(self, n).at_execute)

    def with_values(self, values: dict) -> "Attr":
        """A copy whose fields named in ``values`` (field -> Scales or
        ZeroPoints holding values) replace these."""
        bound = object.__new__(Attr)
        bound.__dict__.update(self.__dict__)
        bound.__dict__.update(values)
        return bound

    def kinds(self) -> tuple:
        """What shapes the generated code (masks and groups, not values): part
        of a kernel's key. Each of the four per-slice attributes is None, its
        mask, or (mask, groups); then whether a sum is taken."""
        def kind(v):
            return None if v is None else v.kind()
        return (kind(self.src_scales), kind(self.dst_scales), kind(self.src_zero_points),
                kind(self.dst_zero_points), self.sum_beta is not None)

    def __repr__(self):
        parts = [f"{n}={getattr(self, n)!r}" for n in PER_SLICE_FIELDS + ("sum_beta",)
                 if getattr(self, n) is not None]
        return f"Attr({', '.join(parts)})"
