"""The tests' own reference for the small types: f8_e5m2, f8_e4m3 (the "fn"
variant), f4_e2m1, s4, u4 and e8m0, written from the formats' bit-field
definitions (sign bit, exponent bits, stored mantissa bits, bias, the codes
that mean infinity or NaN) with exact rational arithmetic.

Nothing here imports clayout or ml_dtypes: expected values never come from the
code under test nor from the library the host path uses.

* `decode(code, fmt) -> float`: the value of one code (NaN for a NaN code, and
  -0.0 for a negative zero);
* `encode(x, fmt) -> code`: the code of the real number x (an f32 or f64
  value) after ONE rounding to nearest, ties to even, with the format's rule
  for overflow, infinities and NaN:

  - f8_e5m2: IEEE-like; a value that rounds beyond the largest finite value
    (57344) is +-inf (61440, the tie, goes to inf, 61439 to 57344); NaN keeps
    its sign and becomes the quiet NaN 0x7e / 0xfe;
  - f8_e4m3 (fn): no infinity, only S.1111.111 is NaN, largest 448; a value
    that rounds beyond 448 (464, the tie, goes to 448; 465 does not) and +-inf
    become NaN 0x7f / 0xff (sign kept);
  - f4_e2m1: no infinity, no NaN; saturates to +-6 (inf too); NaN -> +0;
  - s4 / u4: round half to even, saturate to [-8, 7] / [0, 15], NaN -> 0;

  every float format keeps the sign of a zero and of a value that underflows
  to zero.
* `encode_e8m0(x)`: the host rule (see there); e8m0 is host-only.
* `is_nan_code`, `all_codes`, `pack_nibbles`, `unpack_nibbles`.
"""
import dataclasses
import math
from fractions import Fraction

import numpy as np


@dataclasses.dataclass(frozen=True)
class FloatFormat:
    """A small binary float: 1 sign bit, `ebits` exponent bits with `bias`,
    `mbits` stored mantissa bits; exponent field 0 holds zero and the
    subnormals. `special` says which codes are not numbers:

    * "ieee": the all-ones exponent field is inf (mantissa 0) or NaN;
    * "fn": no infinity; only the all-ones code (exponent and mantissa) is NaN;
    * "none": every code is a number.

    `overflow` says what a value rounding beyond the largest finite one
    becomes: "inf", "nan" or "saturate".
    """
    name: str
    ebits: int
    mbits: int
    bias: int
    special: str
    overflow: str

    @property
    def bits(self):
        return 1 + self.ebits + self.mbits

    @property
    def emin(self):
        """Exponent of the smallest normal value."""
        return 1 - self.bias

    @property
    def emax(self):
        """Exponent of the largest finite value."""
        top = (1 << self.ebits) - 1  # the all-ones field
        return (top - 1 if self.special == "ieee" else top) - self.bias

    @property
    def max_mantissa(self):
        """Stored mantissa of the largest finite value."""
        full = (1 << self.mbits) - 1
        return full - 1 if self.special == "fn" else full

    @property
    def max(self):
        return Fraction(2) ** self.emax * (1 + Fraction(self.max_mantissa, 1 << self.mbits))

    @property
    def min_normal(self):
        return Fraction(2) ** self.emin

    @property
    def min_subnormal(self):
        return Fraction(2) ** (self.emin - self.mbits)

    def nan_code(self, negative):
        """The NaN code encode() gives (quiet NaN with the sign of the input)."""
        sign = (1 << (self.bits - 1)) if negative else 0
        top = (1 << self.ebits) - 1
        if self.special == "ieee":
            return sign | top << self.mbits | 1 << (self.mbits - 1)
        assert self.special == "fn", self.name
        return sign | top << self.mbits | ((1 << self.mbits) - 1)

    def inf_code(self, negative):
        assert self.special == "ieee", self.name
        sign = (1 << (self.bits - 1)) if negative else 0
        return sign | ((1 << self.ebits) - 1) << self.mbits


FLOAT_FORMATS = {
    "f8_e5m2": FloatFormat("f8_e5m2", ebits=5, mbits=2, bias=15, special="ieee", overflow="inf"),
    "f8_e4m3": FloatFormat("f8_e4m3", ebits=4, mbits=3, bias=7, special="fn", overflow="nan"),
    "f4_e2m1": FloatFormat("f4_e2m1", ebits=2, mbits=1, bias=1, special="none",
                           overflow="saturate"),
}
#: (lowest, highest) of the 4-bit integers; codes are the low 4 bits of the
#: two's complement (s4) or plain binary (u4) value
INT_FORMATS = {"s4": (-8, 7), "u4": (0, 15)}
#: storage bits of every type here
BITS = {"f8_e5m2": 8, "f8_e4m3": 8, "f4_e2m1": 4, "s4": 4, "u4": 4, "e8m0": 8}
E8M0_BIAS = 127
E8M0_NAN = 0xFF


def all_codes(fmt):
    """Every code of fmt, 0 .. 2^bits - 1."""
    return list(range(1 << BITS[fmt]))


def _floor_log2(a):
    """floor(log2(a)) of a positive Fraction, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def _signed(value, negative):
    v = float(value)
    return -v if negative else v


# =============================================================================
# decode
# =============================================================================

def decode(code, fmt):
    """The value of `code` in fmt as a float (exact: every value of these types
    is a double); NaN for a NaN code, -0.0 for the negative zero."""
    code = int(code)
    assert 0 <= code < 1 << BITS[fmt], f"{code:#x} is not a code of {fmt}"
    if fmt == "e8m0":
        return math.nan if code == E8M0_NAN else math.ldexp(1.0, code - E8M0_BIAS)
    if fmt in INT_FORMATS:
        lo, _ = INT_FORMATS[fmt]
        return float(code - 16 if lo < 0 and code >= 8 else code)
    f = FLOAT_FORMATS[fmt]
    negative = bool(code >> (f.bits - 1))
    field = (code >> f.mbits) & ((1 << f.ebits) - 1)
    mant = code & ((1 << f.mbits) - 1)
    top = (1 << f.ebits) - 1
    if f.special == "ieee" and field == top:
        return math.nan if mant else (-math.inf if negative else math.inf)
    if f.special == "fn" and field == top and mant == (1 << f.mbits) - 1:
        return math.nan
    if field == 0:
        value = mant * Fraction(2) ** (f.emin - f.mbits)
    else:
        value = (1 + Fraction(mant, 1 << f.mbits)) * Fraction(2) ** (field - f.bias)
    return _signed(value, negative)


def is_nan_code(code, fmt):
    return math.isnan(decode(code, fmt))


# =============================================================================
# encode
# =============================================================================

def encode(x, fmt):
    """The code of fmt for the real x (a Python/NumPy float), one rounding to
    nearest even, with fmt's rule for overflow, infinities and NaN (module
    docstring). Not for e8m0 (see encode_e8m0)."""
    x = float(x)
    if fmt == "e8m0":
        return encode_e8m0(x)
    if fmt in INT_FORMATS:
        return _encode_int(x, fmt)
    f = FLOAT_FORMATS[fmt]
    negative = math.copysign(1.0, x) < 0
    sign = (1 << (f.bits - 1)) if negative else 0
    if math.isnan(x):
        return 0 if f.special == "none" else f.nan_code(negative)
    if math.isinf(x):
        return _overflow(f, negative)
    a = Fraction(abs(x))
    if a == 0:
        return sign
    quantum = Fraction(2) ** (max(_floor_log2(a), f.emin) - f.mbits)
    n = round(a / quantum)  # Fraction.__round__: nearest, ties to even
    if n == 0:
        return sign  # underflow: a zero of x's sign
    v = n * quantum
    if v > f.max:
        return _overflow(f, negative)
    e = _floor_log2(v)
    if e < f.emin:  # subnormal: field 0, mantissa = v / smallest subnormal
        return sign | int(v / f.min_subnormal)
    mant = (v / Fraction(2) ** e - 1) * (1 << f.mbits)
    assert mant.denominator == 1
    return sign | (e + f.bias) << f.mbits | int(mant)


def _overflow(f, negative):
    if f.overflow == "inf":
        return f.inf_code(negative)
    if f.overflow == "nan":
        return f.nan_code(negative)
    assert f.overflow == "saturate"
    sign = (1 << (f.bits - 1)) if negative else 0
    return sign | ((1 << f.ebits) - 1) << f.mbits | f.max_mantissa


def _encode_int(x, fmt):
    lo, hi = INT_FORMATS[fmt]
    if math.isnan(x):
        v = 0
    elif math.isinf(x):
        v = hi if x > 0 else lo
    else:
        v = min(max(round(Fraction(x)), lo), hi)  # ties to even, then saturate
    return v & 0xF


def encode_e8m0(x):
    """The e8m0 code the host path gives for the real x (e8m0 is host-only).

    e8m0 is an unsigned power of two, 2^(code - 127), with no zero and 0xff as
    NaN. There is no specification of the conversion to it here, so this is
    the rule ml_dtypes' float8_e8m0fnu cast follows, found by experiment
    (ml_dtypes 0.6.0, over 400k random f32 and f64 values and the edges of
    every binade, from f32 and from f64 alike):

    * NaN, +-inf, +-0 and every negative value -> 0xff (NaN);
    * x <= 2^-127 -> 0x00 (2^-127: no underflow to zero or NaN);
    * 2^-127 < x < 2^-126 -> 0x01 (2^-126: this lowest binade rounds up);
    * otherwise with 2^k <= x < 2^(k+1): 2^k if x < 1.5 * 2^k, else 2^(k+1)
      (nearest in linear distance, a tie going UP, not to an even code: 3.0
      -> 4.0, code 0x81); a result beyond 2^127 (x >= 1.5 * 2^127) -> 0xff.
    """
    x = float(x)
    if math.isnan(x) or math.isinf(x) or x <= 0:
        return E8M0_NAN
    a = Fraction(x)
    if a <= Fraction(2) ** -127:
        return 0
    if a < Fraction(2) ** -126:
        return 1
    k = _floor_log2(a)
    if a >= Fraction(3, 2) * Fraction(2) ** k:
        k += 1
    return E8M0_NAN if k > 127 else k + E8M0_BIAS


# =============================================================================
# 4-bit packing
# =============================================================================

def pack_nibbles(codes, fill=0x0):
    """uint8 bytes holding the 4-bit `codes` two per byte, the first element of
    each pair in the low nibble; an odd count leaves `fill` in the high nibble
    of the last byte."""
    codes = [int(c) for c in codes]
    assert all(0 <= c < 16 for c in codes)
    if len(codes) % 2:
        codes = codes + [fill]
    return np.array([lo | hi << 4 for lo, hi in zip(codes[0::2], codes[1::2])], np.uint8)


def unpack_nibbles(raw, count):
    """The first `count` 4-bit codes of the bytes `raw` (low nibble first)."""
    raw = np.asarray(raw, np.uint8)
    codes = np.empty(2 * raw.size, np.uint8)
    codes[0::2] = raw & 0xF
    codes[1::2] = raw >> 4
    return codes[:count]
