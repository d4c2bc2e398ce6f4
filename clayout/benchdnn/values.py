"""The driver's own data types: bit codecs, quantization and the fill table.

Nothing here uses clayout's conversions or ml_dtypes: the floats of 16 bits
and fewer are decoded from their bit fields by formula, and encoded by a
search in the sorted table of their values (round to nearest, ties to the
even code), so a conversion bug in clayout cannot hide in its own check.
e8m0 (an unsigned power of two, 2^(code - 127), no zero, 0xff NaN) has its own
codec, PowerOfTwo. Values travel as float64, which holds every value of every
type exactly.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

# benchdnn's reorder driver fills each type from this table, its max and min
# being the type's range below (benchdnn's reorder configuration: f32 +-2^24,
# f16, f8_e5m2 and f4_e2m1 +-2^11, f8_e4m3 +-127, s4 -7..8), each then
# rounded to the type (f4_e2m1's 2048 saturates to 6, s4's 8 to 7).
FILL_TABLE = ("max", "min", 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 16.0, 64.0)
# benchdnn's --def-scales: the values per-slice scales are drawn from.
DEF_SCALES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
S32_MAX_FROM_F32 = 2147483520.0  # the largest f32 below 2^31


@dataclass(frozen=True)
class Minifloat:
    """A float format of at most 16 bits: sign, ``ebits`` exponent bits,
    ``mbits`` mantissa bits. ``special``: "ieee" (top exponent is inf/NaN),
    "fn" (only the all-ones code is NaN, no inf: f8_e4m3), "none" (no inf,
    no NaN: f4_e2m1, which saturates)."""

    ebits: int
    mbits: int
    special: str

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @functools.cached_property
    def table(self) -> np.ndarray:
        """The float64 value of every code, by formula."""
        codes = np.arange(1 << self.bits, dtype=np.int64)
        sign = np.where(codes >> (self.bits - 1) & 1, -1.0, 1.0)
        exp = (codes >> self.mbits) & ((1 << self.ebits) - 1)
        man = (codes & ((1 << self.mbits) - 1)).astype(np.float64)
        normal = (1 + man / (1 << self.mbits)) * np.exp2(exp - self.bias)
        subnormal = man / (1 << self.mbits) * np.exp2(1 - self.bias)
        values = sign * np.where(exp == 0, subnormal, normal)
        top = exp == (1 << self.ebits) - 1
        if self.special == "ieee":
            values = np.where(top & (man == 0), sign * np.inf, values)
            values = np.where(top & (man != 0), np.nan, values)
        elif self.special == "fn":
            values = np.where(top & (man == (1 << self.mbits) - 1), np.nan, values)
        return values

    @functools.cached_property
    def _positive(self):
        """(values, codes) of the finite codes >= 0, ascending; then the value a
        rounding beyond the largest goes to and the code it yields."""
        half = self.table[: 1 << (self.bits - 1)]
        codes = np.flatnonzero(np.isfinite(half))
        values = half[codes]
        largest = values[-1]
        ulp = largest - values[-2]
        if self.special == "ieee":
            beyond = int(np.flatnonzero(np.isinf(half))[0])   # +inf
        elif self.special == "fn":
            beyond = int(np.flatnonzero(np.isnan(half))[0])   # NaN
        else:
            beyond = int(codes[-1])                            # saturate
        return (np.append(values, largest + ulp), np.append(codes, beyond))

    @functools.cached_property
    def nan_code(self) -> int:
        nans = np.flatnonzero(np.isnan(self.table))
        return int(nans[0]) if nans.size else -1

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Codes of float64 values, rounded once to nearest, ties to even."""
        x = np.asarray(x, dtype=np.float64)
        values, codes = self._positive
        a = np.abs(x)
        hi = np.clip(np.searchsorted(values, a, side="left"), 1, values.size - 1)
        lo = hi - 1
        dlo, dhi = a - values[lo], values[hi] - a
        pick_hi = (dhi < dlo) | ((dhi == dlo) & (codes[lo] & 1 == 1))
        pick_hi |= a > values[-1]
        out = np.where(pick_hi, codes[hi], codes[lo])
        out = np.where(a == values[0], codes[0], out)
        if self.special == "ieee":
            out = np.where(np.isinf(a), codes[-1], out)
        sign = np.signbit(x).astype(np.int64) << (self.bits - 1)
        out = out | sign
        if self.nan_code >= 0:
            out = np.where(np.isnan(x), self.nan_code, out)
        else:
            out = np.where(np.isnan(x), 0, out)
        return out.astype(np.uint16)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        return self.table[np.asarray(codes, dtype=np.int64)]


@dataclass(frozen=True)
class PowerOfTwo:
    """e8m0: 8 exponent bits, no sign, no mantissa; code c is 2^(c - 127)
    (code 0 is 2^-127, there is no zero) and 0xff is NaN.

    Encoding follows clayout's host path (e8m0 is host only; DESIGN.md gives
    no rule for it): NaN, infinities, zeros and negative values give NaN; a
    positive value goes to the nearer of the two powers of two around it, in
    linear distance, a tie (1.5 * 2^k) going up; below 2^-127 it stays 2^-127,
    between 2^-127 and 2^-126 it is 2^-126, and anything that rounds past
    2^127 is NaN."""

    bits: int = 8
    bias: int = 127
    nan_code: int = 0xFF

    @functools.cached_property
    def table(self) -> np.ndarray:
        codes = np.arange(256, dtype=np.float64)
        values = np.exp2(codes - self.bias)
        values[self.nan_code] = np.nan
        return values

    def encode(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(all="ignore"):
            ok = np.isfinite(x) & (x > 0)
            a = np.where(ok, x, 1.0)
            mantissa, exponent = np.frexp(a)         # a = m * 2^e, m in [0.5, 1)
            k = exponent.astype(np.int64) - 1        # 2^k <= a < 2^(k+1)
            k = k + (mantissa >= 0.75)               # at or above 1.5 * 2^k: up
            k = np.where(a <= 2.0**-127, -127, np.maximum(k, -126))
            out = np.where(ok & (k <= 127), k + self.bias, self.nan_code)
        return out.astype(np.uint16)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        return self.table[np.asarray(codes, dtype=np.int64)]


@dataclass(frozen=True)
class TypeInfo:
    """One of benchdnn's data types as the driver sees it."""

    name: str
    bits: int
    kind: str                 # "float" or "int"
    fill_max: float           # the reorder driver's fill range
    fill_min: float
    lowest: float = 0.0       # integers: the range results saturate to
    highest: float = 0.0
    minifloat: Minifloat | PowerOfTwo | None = None

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def unit(self) -> np.dtype:
        """The unsigned integer type one element's bits are held in."""
        return np.dtype({4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32,
                         64: np.uint64}[self.bits])

    def to_bits(self, values: np.ndarray) -> np.ndarray:
        """The stored bits of float64 values already in this type's range
        (integers: already rounded)."""
        if self.minifloat is not None:
            return self.minifloat.encode(values).astype(self.unit)
        if self.name == "f32":
            return values.astype(np.float32).view(np.uint32)
        if self.name == "f64":
            return np.asarray(values, np.float64).view(np.uint64)
        mask = (1 << self.bits) - 1
        return (values.astype(np.int64) & mask).astype(self.unit)

    def from_bits(self, bits: np.ndarray) -> np.ndarray:
        """float64 values of stored bits."""
        if self.minifloat is not None:
            return self.minifloat.decode(bits)
        if self.name == "f32":
            return bits.astype(np.uint32).view(np.float32).astype(np.float64)
        if self.name == "f64":
            return bits.astype(np.uint64).view(np.float64)
        raw = bits.astype(np.int64)
        if self.lowest < 0:  # sign-extend
            raw = np.where(raw >> (self.bits - 1) & 1, raw - (1 << self.bits), raw)
        return raw.astype(np.float64)

    def quantize(self, x: np.ndarray, compute: str) -> np.ndarray:
        """float64 values of ``x`` (computed in ``compute``, f32 or f64) stored
        in this type: rounded once, saturated as DESIGN.md says."""
        if self.is_int:
            high = S32_MAX_FROM_F32 if self.name == "s32" and compute == "f32" else self.highest
            with np.errstate(invalid="ignore"):
                return np.rint(np.clip(np.nan_to_num(x, nan=0.0), self.lowest, high))
        if self.name == "f64":
            return x
        if self.name == "f32":
            with np.errstate(over="ignore"):
                return x.astype(np.float32).astype(np.float64)
        return self.minifloat.decode(self.minifloat.encode(x))


def _int(name, bits, lo, hi, fill=None):
    fill_lo, fill_hi = fill or (lo, hi)
    return TypeInfo(name, bits, "int", fill_hi, fill_lo, lo, hi)


def _float(name, bits, fill, minifloat=None):
    return TypeInfo(name, bits, "float", fill, -fill, minifloat=minifloat)


TYPES: dict[str, TypeInfo] = {t.name: t for t in (
    _float("f32", 32, 2.0**24),
    _float("f64", 64, 2.0**24),
    _float("bf16", 16, 2.0**24, Minifloat(8, 7, "ieee")),
    _float("f16", 16, 2.0**11, Minifloat(5, 10, "ieee")),
    _float("f8_e5m2", 8, 2.0**11, Minifloat(5, 2, "ieee")),
    _float("f8_e4m3", 8, 127.0, Minifloat(4, 3, "fn")),
    _float("f4_e2m1", 4, 2.0**11, Minifloat(2, 1, "none")),
    # benchdnn's reorder has no range for e8m0: positive powers of two,
    # 2^24 .. 2^-24 (the table's 0 becomes the minimum too, see fill_values).
    TypeInfo("e8m0", 8, "float", 2.0**24, 2.0**-24, minifloat=PowerOfTwo()),
    _int("s32", 32, -2.0**31, 2.0**31 - 1, (-S32_MAX_FROM_F32, S32_MAX_FROM_F32)),
    _int("s8", 8, -128.0, 127.0),
    _int("u8", 8, 0.0, 255.0),
    _int("s4", 4, -8.0, 7.0, (-7.0, 8.0)),
    _int("u4", 4, 0.0, 15.0),
)}
# Names benchdnn accepts that no code here can fill.
OTHER_TYPE_NAMES = ("f4_e3m0",)
# The data types benchdnn stores scales and zero points in (the first: the default).
SCALE_TYPES = ("f32", "bf16", "f16", "e8m0")
ZERO_POINT_TYPES = ("s32", "s8", "u8", "s4", "u4")


@functools.lru_cache(maxsize=None)
def fill_values(t: TypeInfo) -> np.ndarray:
    """The fill table of a type as stored values (float64, read-only)."""
    raw = np.array([t.fill_max if v == "max" else t.fill_min if v == "min" else v
                    for v in FILL_TABLE], np.float64)
    if t.name == "e8m0":  # no zero (nor negative values) to hold
        raw = np.where(raw > 0, raw, t.fill_min)
    # Integers saturate: the table's 16 and 64 do not fit the 4-bit types.
    out = np.clip(np.rint(raw), t.lowest, t.highest) if t.is_int else t.quantize(raw, "f64")
    out.setflags(write=False)
    return out


def mix(index: np.ndarray, seed: int) -> np.ndarray:
    """A stateless hash of element indices (splitmix64), so the value of any
    element can be recomputed from its index alone, in any order."""
    z = index.astype(np.uint64) + np.uint64(seed & (2**64 - 1))
    z = z * np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def pick(table: np.ndarray, index: np.ndarray, seed: int) -> np.ndarray:
    """``table[hash(index) % len(table)]``: the fill of the elements at ``index``."""
    return table[(mix(index, seed) % np.uint64(table.size)).astype(np.int64)]
