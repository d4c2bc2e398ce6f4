"""The tests' reference (tests/reference.py) against hand-computed values,
and against a second derivation of the layouts written differently."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from reference import (
    INT_RANGE, LETTERS, NP, S32_MAX_FROM_F32, SPECIAL_BITS, abstract_tag, assert_bytes,
    assert_padding_zero, assert_same, bits_of, blocking, element_offsets, logical_of,
    nearest_even, padding_mask, parse_tag, per_slice, physical_size, random_bits, raw_of,
    ref_reorder, ref_shuffle, round_float, to_int, to_physical,
)

# =============================================================================
# Layouts
# =============================================================================


def test_reference_layout_matches_hand_computed_offsets():
    # nChw16c, C = 17: (n, c, h, w) -> n*(2*16*2*3) + (c//16)*(16*2*3) + h*(3*16) + w*16 + c%16
    pos = element_offsets((2, 17, 2, 3), "aBcd16b")
    for n, c, h, w in [(0, 0, 0, 0), (1, 16, 1, 2), (0, 15, 1, 0), (1, 3, 0, 1)]:
        assert pos[n, c, h, w] == n * 192 + (c // 16) * 96 + h * 48 + w * 16 + c % 16
    # OIhw4i16o4i (ABcd4b16a4b): i = 4*i1 + i0 -> ... + i1*64 + o*4 + i0
    pos = element_offsets((16, 16, 1, 1), "ABcd4b16a4b")
    assert pos[5, 7, 0, 0] == (7 // 4) * 64 + 5 * 4 + 7 % 4
    assert physical_size((17, 20), "BA16a64b") == 32 * 64


@pytest.mark.parametrize("alias, abstract", [
    ("x", "a"), ("nc", "ab"), ("cn", "ba"), ("nchw", "abcd"), ("nhwc", "acdb"),
    ("chwn", "bcda"), ("ncdhw", "abcde"), ("ndhwc", "acdeb"), ("nChw16c", "aBcd16b"),
    ("nCdhw8c", "aBcde8b"), ("oihw", "abcd"), ("hwio", "cdba"), ("iohw", "bacd"),
    ("dhwio", "cdeba"), ("wigo", "dcab"), ("giohw", "acbde"), ("OIhw4i16o4i", "ABcd4b16a4b"),
    ("gOIhw16i16o", "aBCde16c16b"), ("gOIhw16g", "Abcde16a"), ("Goihw8g", "Abcde8a"),
    ("aBcd16b", "aBcd16b"), ("cdba", "cdba"), ("BA16a64b", "BA16a64b"),
])
def test_aliases_become_abstract_tags(alias, abstract):
    assert abstract_tag(alias) == abstract


def test_parse_tag_lists_multi_level_blocks_outermost_first():
    assert parse_tag("ABcd4b16a4b") == ([0, 1, 2, 3], [(1, 4), (0, 16), (1, 4)])
    assert parse_tag("nChw16c") == ([0, 1, 2, 3], [(1, 16)])
    assert parse_tag("cdba") == ([2, 3, 1, 0], [])


def test_blocking_matches_hand_computed_descriptors():
    # OIhw4i16o4i with O = 17, I = 21: O padded to 32, I to 32; 256 elements per block.
    assert blocking((17, 21, 2, 3), "OIhw4i16o4i") == (
        (32, 32, 2, 3), (2 * 256 * 6, 256 * 6, 256 * 3, 256), (4, 16, 4), (1, 0, 1))
    # nhwc: c innermost; a zero-size dim counts as 1 in the strides, as in oneDNN.
    assert blocking((2, 3, 0, 5), "acdb") == ((2, 3, 0, 5), (15, 1, 15, 3), (), ())


def test_strided_offsets_and_padding_mask():
    assert element_offsets((2, 3), strides=(10, 2)).tolist() == [[0, 2, 4], [10, 12, 14]]
    # aBc4b, B = 6: channels 6 and 7 of the second block are padding, for each a and c.
    mask = padding_mask((1, 6, 2), "aBc4b")
    assert mask.size == 16
    assert np.nonzero(mask)[0].tolist() == [8 + 2, 8 + 3, 12 + 2, 12 + 3]


def _transposed_physical(logical, tag, fill=0):
    """A second derivation of the layouts: each dim d padded to its block B_d
    and split into (P_d / B_d, b_1, b_2, ...) by reshaping, the axes then
    transposed to: outer dims in tag order, inner blocks in tag order."""
    outer, inner = parse_tag(tag)
    n = logical.ndim
    blocks = [math.prod(s for d2, s in inner if d2 == d) for d in range(n)]
    padded = [-(-size // b) * b for size, b in zip(logical.shape, blocks)]
    buf = np.full(padded, fill, dtype=logical.dtype)
    buf[tuple(slice(0, size) for size in logical.shape)] = logical
    shape, axes = [], []
    for d in range(n):
        sizes = [s for d2, s in inner if d2 == d]
        axes.append(list(range(len(shape), len(shape) + 1 + len(sizes))))
        shape += [padded[d] // blocks[d]] + sizes
    perm = [axes[d][0] for d in outer]
    used = [1] * n
    for d, _ in inner:
        perm.append(axes[d][used[d]])
        used[d] += 1
    return np.ascontiguousarray(buf.reshape(shape).transpose(perm)).reshape(-1)


@st.composite
def tags_and_dims(draw):
    ndims = draw(st.integers(1, 5))
    order = draw(st.permutations(range(ndims)))
    inner = draw(st.lists(st.tuples(st.integers(0, ndims - 1), st.sampled_from([2, 3, 4, 8])),
                          max_size=3))
    blocked = {d for d, _ in inner}
    tag = "".join(LETTERS[d].upper() if d in blocked else LETTERS[d] for d in order)
    tag += "".join(f"{n}{LETTERS[d]}" for d, n in inner)
    dims = tuple(draw(st.lists(st.integers(0, 7), min_size=ndims, max_size=ndims)))
    return tag, dims


@settings(max_examples=80, deadline=None)
@given(tags_and_dims())
def test_offsets_agree_with_a_transposed_copy(case):
    tag, dims = case
    logical = np.arange(math.prod(dims), dtype=np.int64).reshape(dims)
    want = _transposed_physical(logical, tag, fill=-1)
    got = to_physical(logical, tag, fill=-1)
    np.testing.assert_array_equal(got, want)
    assert got.size == physical_size(dims, tag)
    np.testing.assert_array_equal(padding_mask(dims, tag), want < 0)
    offsets = element_offsets(dims, tag)
    assert len(np.unique(offsets)) == offsets.size  # one place per element


def test_raw_bytes_round_trip_with_padding_fill():
    values = np.arange(-3, 3, dtype=np.int8).reshape(1, 6, 1)
    raw = raw_of(values, "aBc4b", "s8", pad_byte=0x5A)
    assert raw.tolist() == [-3 & 0xFF, -2 & 0xFF, -1 & 0xFF, 0, 1, 2, 0x5A, 0x5A]
    assert logical_of(raw, (1, 6, 1), "aBc4b", "s8").tolist() == values.tolist()
    assert_padding_zero(raw_of(values, "aBc4b", "s8"), (1, 6, 1), "aBc4b", "s8")
    with pytest.raises(AssertionError, match=r"2 of 2 padding elements.*\(0, 6, 0\)"):
        assert_padding_zero(raw, (1, 6, 1), "aBc4b", "s8")
    # A NaN payload goes through bit for bit.
    nan = np.array([[0x7F800001, 0xFFA5A5A5]], np.uint32).view(np.float32)
    back = logical_of(raw_of(nan, "ba", "f32"), (1, 2), "ba", "f32")
    assert bits_of(back).tolist() == bits_of(nan).tolist()


# =============================================================================
# Values
# =============================================================================

def test_reference_rounding_matches_hand_computed_values():
    f = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.4028235e38, np.nan, 257.0, -0.0], np.float32)
    got = round_float(f, "bf16").astype(np.float32)
    assert got[0] == 1.0 and got[1] == 1 + 2.0**-6 and got[2] == np.inf and np.isnan(got[3])
    assert got[4] == 256.0 and np.signbit(got[5])
    h = round_float(np.array([2049, 2051, 65519, 65520, 2.0**-25, 3e-8], np.float32), "f16")
    assert h.tolist() == [2048, 2052, 65504, np.inf, 0.0, 2.0**-24]
    assert to_int(np.array([2.5, -3.5, np.nan, 3e9], np.float32), "s32", np.float32).tolist() \
        == [2, -4, 0, S32_MAX_FROM_F32]


def test_nearest_even_matches_hand_computed_values():
    # f8_e5m2 around 1: 1, 1.25, 1.5; f8_e4m3: 1, 1.125.
    assert float(nearest_even(1.125, "f8_e5m2")) == 1.0          # tie: to even
    assert float(nearest_even(1.125 + 2**-40, "f8_e5m2")) == 1.25
    assert float(nearest_even(1.375, "f8_e5m2")) == 1.5          # tie: to even
    assert float(nearest_even(1.0625, "f8_e4m3")) == 1.0
    assert float(nearest_even(-1.0625 - 2**-40, "f8_e4m3")) == -1.125
    assert np.signbit(float(nearest_even(-2.0**-30, "f8_e4m3")))  # zero keeps the sign


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["bf16", "f16", "f8_e5m2"]), st.data())
def test_round_float_agrees_with_exact_rounding(dt, data):
    top = float(np.finfo(np.float16).max) if dt != "bf16" else 1e38
    top = 57344.0 if dt == "f8_e5m2" else top
    x = data.draw(st.floats(-top, top, allow_nan=False))
    got = round_float(np.array([x]), dt)
    want = np.array([nearest_even(x, dt)])
    assert bits_of(got).tolist() == bits_of(want).tolist(), (x, got, want)


def test_to_int_saturates_and_maps_nan_to_zero():
    x = np.array([np.nan, np.inf, -np.inf, 127.5, 126.5, -128.5, 2147483647.0, 2147483646.5])
    assert to_int(x[:6], "s8").tolist() == [0, 127, -128, 127, 126, -128]
    assert to_int(x[:6], "u8").tolist() == [0, 255, 0, 128, 126, 0]
    assert to_int(x[6:], "s32").tolist() == [2**31 - 1, 2147483646]
    assert to_int(x[6:], "s32", np.float32).tolist() == [S32_MAX_FROM_F32] * 2


def test_attribute_formula_matches_hand_computed_values():
    # (2 * (7 - 3) + 0.5 * (10 - 4)) / 0.25 + 4 = 48; (2 * 6 + 0.5 * 196) / 0.25 + 4 = 444
    src = np.array([[7, 9]], np.int8)
    got, pre = ref_reorder(src, "s8", "u8", src_scale=np.float32(2), dst_scale=np.float32(0.25),
                           src_zp=np.int32(3), dst_zp=np.int32(4), beta=0.5,
                           old=np.array([[10, 200]], np.uint8))
    assert pre.dtype == np.float32 and pre.tolist() == [[48.0, 444.0]]
    assert got.tolist() == [[48, 255]]
    # Per-slice scales over dim 1 of (2, 3); f64 arithmetic when a side is f64.
    scales = per_slice(np.array([1, 2, 4], np.float32), 0b10, (2, 3))
    assert scales.shape == (1, 3)
    got, pre = ref_reorder(np.ones((2, 3)), "f64", "s32", src_scale=scales)
    assert pre.dtype == np.float64 and got.tolist() == [[1, 2, 4]] * 2
    # No attributes: a bit copy, or an exact integer saturation.
    assert ref_reorder(np.array([300, -5], np.int32), "s32", "u8")[0].tolist() == [255, 0]


def test_reference_matches_seed_example():
    # C = 6, G = 2 forward: rows (0 1)(2 3)(4 5) transposed -> 0 2 4 1 3 5.
    a = np.arange(6, dtype=np.int32).reshape(1, 6)
    assert ref_shuffle(a, 1, 2).tolist() == [[0, 2, 4, 1, 3, 5]]
    assert ref_shuffle(a, 1, 2, backward=True).tolist() == [[0, 3, 1, 4, 2, 5]]
    assert ref_shuffle(ref_shuffle(a, 1, 2), 1, 2, backward=True).tolist() == a.tolist()


# =============================================================================
# Data and checks
# =============================================================================

@pytest.mark.parametrize("dt", list(NP))
def test_random_bits_hold_the_special_patterns(dt):
    a = random_bits(dt, (3, 7), np.random.default_rng(0))
    assert a.shape == (3, 7) and a.dtype == np.dtype(NP[dt])
    if dt in SPECIAL_BITS:
        assert set(SPECIAL_BITS[dt]) <= set(bits_of(a).reshape(-1).tolist())
    if dt in ("s4", "u4"):
        lo, hi = INT_RANGE[dt]
        assert lo <= a.astype(np.int64).min() and a.astype(np.int64).max() <= hi


def test_assert_same_reports_and_nan_rule():
    quiet = np.array([np.nan, 1.0], np.float32)
    other = np.array([0x7FC00001, 0x3F800000], np.uint32).view(np.float32)
    assert_same(other, quiet, any_nan=True)
    with pytest.raises(AssertionError, match=r"1 of 2 elements differ:\n  at \(0,\).*0x7FC00001"):
        assert_same(other, quiet)
    assert_same(np.array([3], np.int8), np.array([2], np.int8), pre=np.array([2.5]),
                quantized=True)
    with pytest.raises(AssertionError, match="got bfloat16"):
        assert_same(quiet.astype(ml_dtypes.bfloat16), quiet)
    assert_bytes(np.arange(4, dtype=np.uint8), np.arange(4, dtype=np.uint8))
    with pytest.raises(AssertionError, match=r"1 of 4 bytes differ, first at \[3\]"):
        assert_bytes(np.arange(4, dtype=np.uint8), np.array([0, 1, 2, 9], np.uint8))
