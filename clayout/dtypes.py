"""Data types: storage size, NumPy dtype and OpenCL storage type of each."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import ml_dtypes
import numpy as np

from .errors import InvalidArgumentError, describe


@dataclass(frozen=True)
class DataType:
    """One element type.

    ``bits`` is the storage size of one element (4 for the packed types, which
    hold two elements per byte, low nibble first). ``cl_storage`` is the OpenCL
    C type the bytes are read as: f16, bf16 and f8 are moved as raw bits and
    converted explicitly, so no device extension is needed for them.
    """

    name: str
    bits: int
    numpy: np.dtype
    cl_storage: str
    kind: str  # "float" or "int"
    min: float
    max: float

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def packed(self) -> bool:
        """True for the 4-bit types (two elements per byte)."""
        return self.bits < 8

    def nbytes(self, nelems: int) -> int:
        """Bytes taken by ``nelems`` consecutive elements."""
        return (nelems * self.bits + 7) // 8

    def __str__(self) -> str:
        return self.name


def _float(name, np_dtype, cl_storage, bits=None):
    np_dtype = np.dtype(np_dtype)
    info = ml_dtypes.finfo(np_dtype)
    return DataType(name, bits or np_dtype.itemsize * 8, np_dtype, cl_storage, "float",
                    float(info.min), float(info.max))


def _int(name, np_dtype, cl_storage, bits=None):
    np_dtype = np.dtype(np_dtype)
    info = ml_dtypes.iinfo(np_dtype)
    return DataType(name, bits or np_dtype.itemsize * 8, np_dtype, cl_storage,
                    "int", int(info.min), int(info.max))


DATA_TYPES: dict[str, DataType] = {
    dt.name: dt
    for dt in (
        _float("f32", np.float32, "float"),
        _float("f16", np.float16, "ushort"),
        _float("bf16", ml_dtypes.bfloat16, "ushort"),
        _int("s32", np.int32, "int"),
        _int("s8", np.int8, "char"),
        _int("u8", np.uint8, "uchar"),
        _float("f64", np.float64, "double"),
        _float("f8_e5m2", ml_dtypes.float8_e5m2, "uchar"),
        _float("f8_e4m3", ml_dtypes.float8_e4m3fn, "uchar"),
        _int("s4", ml_dtypes.int4, "uchar", bits=4),
        _int("u4", ml_dtypes.uint4, "uchar", bits=4),
        _float("f4_e2m1", ml_dtypes.float4_e2m1fn, "uchar", bits=4),
        _float("e8m0", ml_dtypes.float8_e8m0fnu, "uchar"),
    )
}

#: What ``data_type()`` accepts: a name (clayout's or NumPy's), a NumPy or
#: ml_dtypes dtype or scalar type, or a DataType.
DataTypeLike = Union[str, np.dtype, type, DataType]


def f64_to_f32_odd(values: np.ndarray) -> np.ndarray:
    """f64 rounded to f32 "to odd": truncated, with the last bit set when
    inexact. Rounding that once more to a type of at least two fewer
    significand bits gives the correctly rounded result (no double rounding)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = values.astype(np.float32)
        bits = f.view(np.uint32).copy()
        overshoot = np.abs(f.astype(np.float64)) > np.abs(values)
        bits[overshoot] -= 1
        inexact = (bits.view(np.float32).astype(np.float64) != values) & np.isfinite(values)
        bits[inexact] |= 1
    return bits.view(np.float32)


#: The types every primitive serves; the others are declared for descriptors.
CORE_TYPES = ("f32", "f16", "bf16", "s32", "s8", "u8")


#: NumPy's name of each type's dtype (``np.dtype(x).name``; ml_dtypes' for
#: bf16, the f8, 4-bit and e8m0 types), read as the clayout type it stores.
NUMPY_NAMES: dict[str, str] = {dt.numpy.name: dt.name for dt in DATA_TYPES.values()}

# NumPy reads these as its 64-bit types: a user writing one may mean f32 or
# s32, so neither is guessed.
_AMBIGUOUS = (float, int, bool, complex)


def _accepted() -> str:
    return (f"a clayout name ({', '.join(DATA_TYPES)}), a NumPy name "
            f"({', '.join(NUMPY_NAMES)}) or one of those NumPy / ml_dtypes dtypes")


def data_type(value: DataTypeLike) -> DataType:
    """The DataType named by ``value``: a clayout name (``"f32"``, ``"s8"``,
    ``"bf16"``, ...), a NumPy name (``"float32"``, ``"int8"``, ``"bfloat16"``,
    ``"float8_e4m3fn"``, ``"int4"``, ...), a NumPy or ml_dtypes dtype or scalar
    type (``np.int8``, ``np.dtype("float16")``, ``ml_dtypes.bfloat16``) or a
    DataType.

    Raises InvalidArgumentError, listing what is accepted, for anything else:
    other strings (``"float"``, NumPy's type codes such as ``"f8"``, which
    clashes with the f8 types), Python's ``float``/``int``/``bool``, and
    dtypes clayout lacks (int64, complex, object, non-native byte order).
    """
    if isinstance(value, DataType):
        return value
    if isinstance(value, str):
        name = value if value in DATA_TYPES else NUMPY_NAMES.get(value)
        if name is not None:
            return DATA_TYPES[name]
    ambiguous = any(value is t for t in _AMBIGUOUS)  # identity: `in` would compare arrays
    if isinstance(value, np.dtype) or (isinstance(value, type) and not ambiguous):
        try:
            np_dtype = np.dtype(value)
        except (TypeError, ValueError):
            np_dtype = None
        for dt in DATA_TYPES.values():
            if dt.numpy == np_dtype:
                return dt
    why = " (ambiguous: NumPy reads it as its 64-bit type)" if ambiguous else ""
    raise InvalidArgumentError(f"unknown data type {describe(value)}{why}: expected {_accepted()}")


def numpy_name(dt: DataType) -> str:
    """How Python code names ``dt``'s NumPy dtype: ``np.float32``, ``np.int8``;
    ``ml_dtypes.bfloat16``, ``ml_dtypes.int4`` ... for the types NumPy lacks."""
    name = dt.numpy.name
    own = getattr(np, name, None)
    return f"np.{name}" if own is not None and np.dtype(own) == dt.numpy else f"ml_dtypes.{name}"


def with_article(name: str) -> str:
    """A type's name after "a" or "an", as it is read: an int32, a uint8, a
    float16, an f32 (eff), an s8 (ess), a u8 (you), a bf16 (bee)."""
    first = name[:1].lower()
    spelt = name[1:2].isdigit() and first in "fhlmnrsx"  # a letter read as its name
    return f"{'an' if first in 'aeio' or spelt else 'a'} {name}"
