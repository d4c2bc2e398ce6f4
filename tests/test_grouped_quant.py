"""Grouped source scales and zero points (oneDNN v3 weight quantization).

Groups act on the last two dims: `groups=(g_row, g_col)` lets g_row x g_col
neighbouring elements share one value; the values are in C order over the
masked dims' group counts. Scales are stored as f32, bf16 or f16 (each value
rounded once, so the rounding must show in the results), zero points as
s32, s8, u8, s4 or u4.

Decompression: s4/u4/s8/u8 weights -> f32/bf16/f16, dst = s * (w - zp) in
f32, rounded once. Compression: f32 -> s8/u8/s4/u4, dst = rint(s * x),
saturated. Plain, transposed, blocked layouts and submemories, on the host
and on both OpenCL strategies.

Memories are filled with bytes made by tests/reference.py and read back
as bytes decoded there; the expected values come from reference.per_group
and reference.ref_reorder, never from clayout.
"""
import re
import zlib

import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
import reference as ref
from small_types_reference import encode

ENGINES = ["host_engine", "cpu_engine", "gpu_engine"]
PACKED = ("s4", "u4")


@pytest.fixture(params=ENGINES)
def eng(request):
    return request.getfixturevalue(request.param)


# -- bytes in and out, through the reference only ---------------------------------

def raw_for(logical, tag, dt):
    if dt in PACKED:
        return ref.raw_of_packed(logical, tag, dt)
    return ref.raw_of(logical, tag, dt)


def values_at(raw, offsets, dt):
    """The values of type dt at element offsets of the bytes raw."""
    if dt in PACKED:
        return ref.nibble_values(ref.get_nibbles(raw, offsets), dt)
    return np.ascontiguousarray(raw).view(np.uint8).view(ref.NP[dt])[offsets]


def put_values(raw, offsets, values, dt):
    """Store values (type dt) at element offsets of the uint8 array raw."""
    if dt in PACKED:
        return ref.put_nibbles(raw, offsets, ref.nibble_codes(values, dt))
    raw.view(ref.NP[dt])[offsets] = np.asarray(values, ref.NP[dt])
    return raw


def random_weights(dt, dims, rng):
    lo, hi = ref.INT_RANGE[dt]
    return rng.integers(lo, hi, size=dims, endpoint=True).astype(ref.NP[dt])


def random_scales(count, data_type, rng):
    """(values as given, values as stored): f32 values that bf16 and f16 cannot
    hold exactly, so their rounding shows."""
    given = rng.uniform(0.05, 4.0, count).astype(np.float32)
    stored = ref.stored_scales(given, data_type)
    if data_type != "f32":
        assert (stored != given).mean() > 0.9, "the scales must need rounding"
    return given, stored


ZP_RANGE = {"s32": (-300, 300), "s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}


def random_zero_points(count, data_type, rng):
    lo, hi = ZP_RANGE[data_type]
    return rng.integers(lo, hi, size=count, endpoint=True).astype(np.int32)


def group_count(dims, mask, groups):
    group = [1] * len(dims)
    if groups is not None:
        group[-2:] = groups
    return int(np.prod([dims[d] // group[d] for d in range(len(dims)) if mask >> d & 1]))


def check_impl(reorder, engine):
    __tracebackhide__ = True
    if engine.is_device:
        assert reorder.impl.startswith(DEVICE_IMPL), f"ran on {reorder.impl!r}"


def run(src_md, dst_md, attr, engine, src_raw, dst_raw):
    """Reorder between memories holding the given bytes; the dst bytes after."""
    r = cly.Reorder(src_md, dst_md, attr=attr, engine=engine)
    src = cly.Memory(src_md, engine, raw=src_raw)
    dst = cly.Memory(dst_md, engine, raw=dst_raw)
    r.execute(cly.Stream(engine), src, dst)
    return r, dst.raw()


def pattern(nbytes, byte=0xA5):
    return np.full(nbytes, byte, dtype=np.uint8)


# -- the cases --------------------------------------------------------------------

#: (dims, mask, groups): every group shape the issue lists, on 2-D and 4-D
GROUPINGS = [
    ((32, 64), 0b11, (1, 32)),
    ((32, 64), 0b11, (32, 1)),
    ((32, 64), 0b11, (8, 16)),
    ((16, 96), 0b11, (1, 96)),        # one group per row: the full last dim
    ((16, 96), 0b11, (16, 1)),        # one group per column: the full row dim
    ((8, 12), 0b11, (2, 2)),
    ((32, 64), 0b10, (1, 16)),        # mask on the last dim only
    ((32, 64), 0b01, (4, 1)),         # mask on the row dim only
    ((2, 3, 4, 32), 0b1111, (1, 16)),
    ((2, 3, 4, 32), 0b1100, (2, 8)),
    ((2, 3, 4, 32), 0b1010, (1, 8)),
    ((2, 3, 4, 32), 0b0111, (4, 1)),
]
WEIGHT_TYPES = ["s4", "u4", "s8", "u8"]
DST_TYPES = ["f32", "bf16", "f16"]
SCALE_TYPES = ["f32", "bf16", "f16"]
ZP_TYPES = {True: ["s32", "s8", "s4"], False: ["u8", "u4", "s32"]}  # by signed weights


def decompression_case(i):
    dims, mask, groups = GROUPINGS[i]
    wdt = WEIGHT_TYPES[i % 4]
    zdt = ZP_TYPES[wdt.startswith("s")][(i // 4) % 3]
    # Every (dst type, scale type) pair over the twelve cases.
    return dims, mask, groups, wdt, DST_TYPES[i % 3], SCALE_TYPES[(i // 3) % 3], zdt


def layouts(i, ndims, variant):
    """(src tag, dst tag) of case i: plain (alternately transposed) or blocked."""
    if ndims == 2:
        plain = [("ab", "ab"), ("ba", "ab"), ("ab", "ba")]
        blocked = [("AB16b16a", "ab"), ("ab", "BA16a16b"), ("BA16a16b", "ba")]
    else:
        plain = [("abcd", "abcd"), ("acdb", "abcd"), ("abcd", "acdb")]
        blocked = [("OIhw16i16o", "abcd"), ("abcd", "OIhw16i16o"), ("aBcd16b", "acdb")]
    return (plain if variant == "plain" else blocked)[i % 3]


def case_id(i):
    dims, mask, groups, wdt, ddt, sdt, zdt = decompression_case(i)
    return (f"{'x'.join(map(str, dims))}-m{mask:b}-g{groups[0]}x{groups[1]}-"
            f"{wdt}-{ddt}-s{sdt}-z{zdt}")


# -- decompression -----------------------------------------------------------------

@pytest.mark.parametrize("variant", ["plain", "blocked"])
@pytest.mark.parametrize("i", range(len(GROUPINGS)), ids=case_id)
def test_decompression(eng, i, variant):
    """s4/u4/s8/u8 -> f32/bf16/f16 with grouped src scales and zero points:
    dst = s * (w - zp) in f32, rounded once; scales rounded to their type."""
    dims, mask, groups, wdt, ddt, sdt, zdt = decompression_case(i)
    stag, dtag = layouts(i, len(dims), variant)
    rng = np.random.default_rng(1000 + i)
    w = random_weights(wdt, dims, rng)
    given, stored = random_scales(group_count(dims, mask, groups), sdt, rng)
    # Zero points: grouped like the scales, except every fourth case has one
    # value for the tensor (so the two attributes' groupings differ).
    zmask, zgroups = (0, None) if i % 4 == 3 else (mask, groups)
    zps = random_zero_points(group_count(dims, zmask, zgroups), zdt, rng)
    attr = cly.Attr(
        src_scales=cly.Scales(given, mask=mask, groups=groups, data_type=sdt),
        src_zero_points=cly.ZeroPoints(zps if zmask else int(zps[0]), mask=zmask,
                                      groups=zgroups, data_type=zdt))
    want, pre = ref.ref_reorder(w, wdt, ddt, src_scale=ref.per_group(stored, mask, groups, dims),
                                src_zp=ref.per_group(zps, zmask, zgroups, dims))
    src_md = cly.MemoryDesc(dims, wdt, stag)
    dst_md = cly.MemoryDesc(dims, ddt, dtag)
    r, out = run(src_md, dst_md, attr, eng, raw_for(w, stag, wdt),
                 pattern(ref.physical_size(dims, dtag) * ref.itemsize(ddt)))
    ref.assert_same(ref.logical_of(out, dims, dtag, ddt), want, src=w, pre=pre,
                    what=f"{wdt} {stag} -> {ddt} {dtag}")
    ref.assert_padding_zero(out, dims, dtag, ddt)
    check_impl(r, eng)


def test_scale_rounding_shows(host_engine):
    """The reference cases are sharp: with the scales unrounded (f32) the
    bf16-stored case gives other results, so a path that ignored data_type
    would fail test_decompression."""
    dims, mask, groups = (4, 64), 0b11, (1, 32)
    rng = np.random.default_rng(7)
    w = random_weights("s8", dims, rng)
    given, stored = random_scales(8, "bf16", rng)
    exact, _ = ref.ref_reorder(w, "s8", "f32", src_scale=ref.per_group(given, mask, groups, dims))
    want, _ = ref.ref_reorder(w, "s8", "f32", src_scale=ref.per_group(stored, mask, groups, dims))
    assert (ref.bits_of(exact) != ref.bits_of(want)).mean() > 0.5
    attr = cly.Attr(src_scales=cly.Scales(given, mask=mask, groups=groups, data_type="bf16"))
    src_md, dst_md = cly.MemoryDesc(dims, "s8", "ab"), cly.MemoryDesc(dims, "f32", "ab")
    _, out = run(src_md, dst_md, attr, host_engine, ref.raw_of(w, "ab", "s8"), pattern(4 * 256))
    ref.assert_same(ref.logical_of(out, dims, "ab", "f32"), want, src=w)


@pytest.mark.parametrize("sdt", ["bf16", "f16"])
def test_scales_from_f64_round_once(host_engine, sdt):
    """A scale given as a Python float (f64) is rounded once, straight to its
    data type: 1 + 2^-8 + 2^-30 is above the bf16 tie 1 + 2^-8 (so 1 + 2^-7),
    which going through f32 first would lose (a tie, to 1); likewise for f16
    at 1 + 2^-11 + 2^-40."""
    value = 1 + 2.0**-8 + 2.0**-30 if sdt == "bf16" else 1 + 2.0**-11 + 2.0**-40
    stored = ref.stored_scales([value], sdt)
    through_f32 = ref.stored_scales([np.float32(value)], sdt)
    assert stored[0] != through_f32[0]
    dims = (2, 4)
    w = np.full(dims, 1, dtype=np.int8)
    attr = cly.Attr(src_scales=cly.Scales([value, 1.0], mask=0b11, groups=(1, 4), data_type=sdt))
    src_md, dst_md = cly.MemoryDesc(dims, "s8", "ab"), cly.MemoryDesc(dims, "f32", "ab")
    _, out = run(src_md, dst_md, attr, host_engine, ref.raw_of(w, "ab", "s8"), pattern(32))
    got = ref.logical_of(out, dims, "ab", "f32")
    assert got[0, 0] == stored[0], \
        f"scale {value!r} as {sdt}: got {got[0, 0]!r}, want {stored[0]!r}"


# -- compression --------------------------------------------------------------------

#: (dims, mask, groups, dst type, scale type, src tag, dst tag); no zero points:
#: they apply to integer sources only
COMPRESSION = [
    ((16, 64), 0b11, (1, 32), "s4", "f16", "ab", "ab"),
    ((16, 64), 0b11, (8, 1), "u4", "bf16", "ba", "ab"),
    ((16, 64), 0b10, (1, 16), "s8", "f32", "ab", "BA16a16b"),
    ((8, 12), 0b11, (2, 2), "u4", "f32", "ab", "AB16b16a"),
    ((2, 3, 4, 32), 0b1111, (2, 8), "u8", "bf16", "abcd", "OIhw16i16o"),
    ((2, 3, 4, 32), 0b1100, (1, 16), "s4", "f16", "abcd", "acdb"),
    ((16, 64), 0b11, (4, 16), "s8", "f16", "ba", "ab"),
    ((16, 64), 0b11, (1, 64), "u4", "f32", "ab", "ba"),
]


def compression_id(case):
    dims, mask, groups, ddt, sdt, stag, dtag = case
    return (f"{'x'.join(map(str, dims))}-m{mask:b}-g{groups[0]}x{groups[1]}-{ddt}-s{sdt}-"
            f"{stag}-{dtag}")


def source_values(dims, rng, spread):
    """f32 values over the quantized range and beyond, with NaN and +-inf."""
    x = (rng.normal(0, spread, dims)).astype(np.float32)
    flat = x.reshape(-1)
    flat[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    rng.shuffle(flat)
    return x


@pytest.mark.parametrize("case", COMPRESSION, ids=compression_id)
def test_compression(eng, case):
    """f32 -> s8/u8/s4/u4 with grouped src scales: dst = rint-even(s * x),
    saturated, NaN -> 0; padding of a blocked dst is zero (nibbles included)."""
    dims, mask, groups, ddt, sdt, stag, dtag = case
    rng = np.random.default_rng(zlib.crc32(compression_id(case).encode()))
    lo, hi = ref.INT_RANGE[ddt]
    x = source_values(dims, rng, spread=(hi - lo) / 3)
    given, stored = random_scales(group_count(dims, mask, groups), sdt, rng)
    want, pre = ref.ref_reorder(x, "f32", ddt,
                                src_scale=ref.per_group(stored, mask, groups, dims))
    attr = cly.Attr(src_scales=cly.Scales(given, mask=mask, groups=groups, data_type=sdt))
    src_md, dst_md = cly.MemoryDesc(dims, "f32", stag), cly.MemoryDesc(dims, ddt, dtag)
    count = ref.physical_size(dims, dtag)
    nbytes = (count + 1) // 2 if ddt in PACKED else count * ref.itemsize(ddt)
    r, out = run(src_md, dst_md, attr, eng, ref.raw_of(x, stag, "f32"), pattern(nbytes, 0xFF))
    if ddt in PACKED:
        got = ref.logical_of_packed(out, dims, dtag, ddt)
        ref.assert_padding_nibbles_zero(out, dims, dtag)
    else:
        got = ref.logical_of(out, dims, dtag, ddt)
        ref.assert_padding_zero(out, dims, dtag, ddt)
    ref.assert_same(got, want, src=x, pre=pre, what=f"f32 {stag} -> {ddt} {dtag}")
    check_impl(r, eng)


# -- submemories ------------------------------------------------------------------------

#: (side, parent dims, tag, window dims, offsets, src type, dst type, mask, groups)
SUBMEMORY = [
    # a packed source window at an odd element offset
    ("src", (6, 70), "ab", (4, 64), (1, 3), "s4", "f32", 0b11, (1, 32)),
    # a bf16 destination window inside a parent whose other bytes must stay
    ("dst", (8, 72), "ab", (4, 64), (2, 5), "u4", "bf16", 0b11, (2, 16)),
    # a packed destination window at odd offsets (compression)
    ("dst", (6, 35), "ab", (4, 32), (1, 1), "f32", "s4", 0b10, (1, 16)),
    # a window of a blocked weight parent
    ("src", (2, 32, 4, 34), "OIhw16i16o", (2, 16, 4, 32), (0, 16, 0, 1), "u4", "f16",
     0b1111, (2, 16)),
]


def submemory_id(case):
    side, parent, tag, dims, offsets, sdt, ddt, mask, groups = case
    return f"{side}-{tag}-{sdt}-{ddt}-at{'.'.join(map(str, offsets))}"


@pytest.mark.parametrize("case", SUBMEMORY, ids=submemory_id)
def test_submemory(eng, case):
    """Grouped values follow the window's own indices; a destination window
    changes none of its parent's other bytes (nor the other nibble of a
    byte it shares)."""
    side, parent_dims, tag, dims, offsets, sdt, ddt, mask, groups = case
    rng = np.random.default_rng(zlib.crc32(submemory_id(case).encode()))
    if sdt == "f32":
        x = source_values(dims, rng, spread=8.0)
    else:
        x = random_weights(sdt, dims, rng)
    given, stored = random_scales(group_count(dims, mask, groups), "f16", rng)
    attr = cly.Attr(src_scales=cly.Scales(given, mask=mask, groups=groups, data_type="f16"))
    want, pre = ref.ref_reorder(x, sdt, ddt, src_scale=ref.per_group(stored, mask, groups, dims))
    window = ref.window_offsets(parent_dims, tag, dims, offsets)
    pdt = sdt if side == "src" else ddt
    count = ref.physical_size(parent_dims, tag)
    nbytes = (count + 1) // 2 if pdt in PACKED else count * ref.itemsize(pdt)
    parent_raw = rng.integers(0, 256, nbytes, dtype=np.uint8)
    if side == "src":
        put_values(parent_raw, window, x, sdt)
    parent_md = cly.MemoryDesc(parent_dims, pdt, tag)
    window_md = parent_md.submemory(dims, offsets)
    parent = cly.Memory(parent_md, eng, raw=parent_raw)
    view = cly.Memory(window_md, eng, buffer=parent)
    plain_tag = "abcd"[:len(dims)]
    if side == "src":
        dst_md = cly.MemoryDesc(dims, ddt, plain_tag)
        dst = cly.Memory(dst_md, eng, raw=pattern(ref.physical_size(dims, plain_tag)
                                                  * ref.itemsize(ddt)))
        r = cly.Reorder(window_md, dst_md, attr=attr, engine=eng)
        r.execute(cly.Stream(eng), view, dst)
        got = ref.logical_of(dst.raw(), dims, plain_tag, ddt)
        ref.assert_same(got, want, src=x, pre=pre)
        ref.assert_bytes(parent.raw(), parent_raw, what="source parent (read only)")
    else:
        src_md = cly.MemoryDesc(dims, sdt, plain_tag)
        src = cly.Memory(src_md, eng, raw=raw_for(x, plain_tag, sdt))
        r = cly.Reorder(src_md, window_md, attr=attr, engine=eng)
        r.execute(cly.Stream(eng), src, view)
        expected = put_values(parent_raw.copy(), window, want, ddt)
        out = parent.raw()
        ref.assert_same(values_at(out, window, ddt), want, src=x, pre=pre, what="window")
        ref.assert_bytes(out, expected, what="parent bytes (window and around it)")
    check_impl(r, eng)


# -- bad inputs ----------------------------------------------------------------------

def expect_invalid(fn, *needles):
    """fn raises InvalidArgumentError whose message contains every needle
    (a string, or a compiled regex)."""
    __tracebackhide__ = True
    with pytest.raises(cly.InvalidArgumentError) as info:
        fn()
    message = str(info.value)
    for needle in needles:
        found = needle.search(message) if isinstance(needle, re.Pattern) else needle in message
        assert found, f"{needle!r} not in the message: {message!r}"


def reorder_with(host_engine, dims=(32, 64), src="s4", dst="f32", **attr):
    return lambda: cly.Reorder(cly.MemoryDesc(dims, src), cly.MemoryDesc(dims, dst),
                               attr=cly.Attr(**attr), engine=host_engine)


def test_dst_scale_groups_that_do_not_divide_are_refused(host_engine):
    expect_invalid(reorder_with(host_engine, src="f32", dst="s8", dst_scales=cly.Scales(
        np.ones(64), mask=0b11, groups=(1, 24))), "24", "dst_scales", "does not divide")


def test_dst_zero_point_groups_outside_the_mask_are_refused(host_engine):
    expect_invalid(reorder_with(host_engine, src="f32", dst="u8", dst_zero_points=cly.ZeroPoints(
        np.ones(32, np.int32), mask=0b01, groups=(1, 16))), "16", "dst_zero_points", "mask")


@pytest.mark.parametrize("groups, bad", [((1, 24), 24), ((5, 1), 5), ((3, 16), 3)])
def test_group_not_dividing(host_engine, groups, bad):
    dims = (32, 64)
    count = -(-dims[0] // groups[0]) * -(-dims[1] // groups[1])
    expect_invalid(reorder_with(host_engine, src_scales=cly.Scales(
        np.ones(count), mask=0b11, groups=groups)), re.compile(rf"\b{bad}\b"), "divide")


@pytest.mark.parametrize("mask, groups, bad", [(0b10, (4, 16), 4), (0b01, (4, 16), 16),
                                               (0b00, (1, 32), 32)])
def test_group_outside_mask(host_engine, mask, groups, bad):
    dims = (32, 64)
    expect_invalid(reorder_with(host_engine, src_zero_points=cly.ZeroPoints(
        np.zeros(group_count(dims, mask, groups), np.int32), mask=mask, groups=groups,
        data_type="s4")), re.compile(rf"\b{bad}\b"), "mask")


@pytest.mark.parametrize("which", ["scales", "zero points"])
@pytest.mark.parametrize("count", [63, 65, 2])
def test_wrong_value_count(host_engine, which, count):
    """(32, 64) with groups (1, 32) over both dims takes 64 values."""
    if which == "scales":
        attr = {"src_scales": cly.Scales(np.ones(count), mask=0b11, groups=(1, 32))}
    else:
        attr = {"src_zero_points": cly.ZeroPoints(np.zeros(count, np.int32), mask=0b11,
                                                 groups=(1, 32), data_type="u4")}
    expect_invalid(reorder_with(host_engine, src="u4", **attr),
                   re.compile(rf"\b{count}\b"), "64")


@pytest.mark.parametrize("data_type", ["s8", "f64", "f8_e4m3", "s32", "u4", "bogus"])
def test_bad_scale_data_type(data_type):
    expect_invalid(lambda: cly.Scales([1.0, 2.0], mask=1, data_type=data_type), data_type)


@pytest.mark.parametrize("data_type", ["f32", "bf16", "s16", "u32", "f4_e2m1"])
def test_bad_zero_point_data_type(data_type):
    expect_invalid(lambda: cly.ZeroPoints([1, 2], mask=1, data_type=data_type), data_type)


@pytest.mark.parametrize("data_type, bad", [("s4", 8), ("s4", -9), ("u4", 16), ("u4", -1),
                                            ("s8", 128), ("s8", -129), ("u8", 256),
                                            ("u8", -1)])
def test_zero_point_out_of_range(data_type, bad):
    expect_invalid(lambda: cly.ZeroPoints([0, bad, 1], mask=1, data_type=data_type),
                   re.compile(rf"(?<![\d-]){bad}\b"), data_type)


@pytest.mark.parametrize("groups", [(0, 4), (1, 2, 4), (1.5, 2), (-1, 2), "1x4"])
def test_bad_groups(groups):
    expect_invalid(lambda: cly.Scales([1.0] * 4, mask=1, groups=groups), repr(groups))


def test_groups_on_1d(host_engine):
    expect_invalid(reorder_with(host_engine, dims=(64,), src_scales=cly.Scales(
        np.ones(2), mask=1, groups=(1, 32))), "(1, 32)")
    expect_invalid(reorder_with(host_engine, dims=(64,), src_zero_points=cly.ZeroPoints(
        np.ones(2, np.int32), mask=1, groups=(32, 1), data_type="s8")), "(32, 1)")


@pytest.mark.parametrize("value, data_type", [(70000.0, "f16"), (1e-30, "f16"), (1e39, "bf16")])
def test_scale_values_outside_their_data_type_are_refused(value, data_type):
    with pytest.raises(cly.InvalidArgumentError, match=data_type) as info:
        cly.Scales([1.0, value], mask=1, data_type=data_type)
    assert repr(value) in str(info.value) or str(value) in str(info.value)


@pytest.mark.parametrize("adjust", [1e-50, 1e40, 0.0, -0.5, float("nan")])
def test_scale_adjust_must_stay_a_positive_finite_f32(adjust):
    with pytest.raises(cly.InvalidArgumentError, match="scale_adjust"):
        cly.Extra(compensation_mask=1, scale_adjust=adjust)


# -- the quantize direction: grouped dst scales and zero points ---------------------

SMALL_FLOATS = ("f8_e4m3", "f8_e5m2", "f4_e2m1")

#: (dims, mask, groups, dst type, scale type, zero-point type or None, src tag, dst tag)
QUANTIZE = [
    ((16, 256), 0b11, (1, 128), "u4", "f32", "u4", "ab", "ab"),
    ((16, 64), 0b11, (1, 32), "s4", "bf16", None, "ab", "ab"),
    ((16, 64), 0b11, (4, 16), "u8", "f16", "u8", "ab", "ba"),
    ((16, 64), 0b11, (1, 32), "s8", "e8m0", "s8", "ba", "ab"),
    ((16, 64), 0b10, (1, 32), "f8_e4m3", "f32", None, "ab", "ab"),
    ((16, 64), 0b11, (1, 32), "f8_e5m2", "bf16", None, "ab", "ab"),
    ((16, 64), 0b11, (1, 32), "f4_e2m1", "e8m0", None, "ab", "ab"),
    ((2, 3, 4, 32), 0b1111, (2, 8), "s4", "f16", "s4", "abcd", "OIhw16i16o"),
    ((16, 64), 0b11, (16, 1), "u4", "f32", "s8", "ab", "AB16b16a"),
]


def quantize_id(case):
    dims, mask, groups, ddt, sdt, zdt, stag, dtag = case
    return (f"{'x'.join(map(str, dims))}-m{mask:b}-g{groups[0]}x{groups[1]}-{ddt}-s{sdt}-"
            f"z{zdt}-{stag}-{dtag}")


def dst_scales_for(count, data_type, rng):
    """(given, stored) scales: e8m0 holds powers of two only, so those are
    drawn exactly; the others need rounding (random_scales)."""
    if data_type == "e8m0":
        given = np.ldexp(1.0, rng.integers(-3, 4, count)).astype(np.float32)
        return given, given
    return random_scales(count, data_type, rng)


@pytest.mark.parametrize("at_execute", [False, True], ids=["at creation", "at execute"])
@pytest.mark.parametrize("case", QUANTIZE, ids=quantize_id)
def test_quantize_with_grouped_dst_scales_and_zero_points(eng, case, at_execute):
    """f32 -> s8/u8/s4/u4/f8/f4 with one dst scale (and zero point) per group:
    dst = rint-even(x / s) + zp, saturated, as tests/reference.py's formula
    says; padding of a blocked dst zero."""
    dims, mask, groups, ddt, sdt, zdt, stag, dtag = case
    rng = np.random.default_rng(zlib.crc32(quantize_id(case).encode()))
    count = group_count(dims, mask, groups)
    given, stored = dst_scales_for(count, sdt, rng)
    spread = 8.0 if ddt[0] == "f" else (ref.INT_RANGE[ddt][1] - ref.INT_RANGE[ddt][0]) / 3
    x = source_values(dims, rng, spread=spread)
    zp = None if zdt is None else rng.integers(*ZP_RANGE[zdt], count, endpoint=True)
    if ddt in SMALL_FLOATS:  # x / s in f32, then one rounding by the type's rules
        with np.errstate(all="ignore"):
            pre = x / ref.per_group(stored, mask, groups, dims).astype(np.float32)
        want = np.array([encode(v, ddt) for v in pre.reshape(-1)], np.uint8).reshape(dims)
    else:
        want, pre = ref.ref_reorder(
            x, "f32", ddt, dst_scale=ref.per_group(stored, mask, groups, dims),
            dst_zp=None if zp is None else ref.per_group(zp, mask, groups, dims))
    scales = cly.Scales(None if at_execute else given, mask=mask, groups=groups, data_type=sdt)
    points = None if zp is None else cly.ZeroPoints(None if at_execute else zp, mask=mask,
                                                    groups=groups, data_type=zdt)
    attr = cly.Attr(dst_scales=scales, dst_zero_points=points)
    src_md, dst_md = cly.MemoryDesc(dims, "f32", stag), cly.MemoryDesc(dims, ddt, dtag)
    r = cly.Reorder(src_md, dst_md, attr=attr, engine=eng)
    src = cly.Memory(src_md, eng, raw=ref.raw_of(x, stag, "f32"))
    count_out = ref.physical_size(dims, dtag)
    nbytes = (count_out + 1) // 2 if ddt in PACKED + ("f4_e2m1",) else \
        count_out * ref.itemsize(ddt)
    dst = cly.Memory(dst_md, eng, raw=pattern(nbytes, 0xFF))
    values = {}
    if at_execute:
        values["dst_scales"] = given
        if zp is not None:
            values["dst_zero_points"] = zp.astype(np.int32)
    r.execute(cly.Stream(eng), src, dst, **values).wait()
    out = dst.raw()
    if ddt in PACKED or ddt == "f4_e2m1":
        got = ref.logical_of_packed(out, dims, dtag, ddt)
        ref.assert_padding_nibbles_zero(out, dims, dtag)
    else:
        got = ref.logical_of(out, dims, dtag, ddt)
        ref.assert_padding_zero(out, dims, dtag, ddt)
    if ddt in SMALL_FLOATS:
        ref.assert_bytes(np.ascontiguousarray(got).view(np.uint8), want,
                         what=f"f32 {stag} -> {ddt} {dtag} codes")
    else:
        ref.assert_same(got, want, src=x, pre=pre, what=f"f32 {stag} -> {ddt} {dtag}")
    check_impl(r, eng)


def test_e8m0_scales_at_execute_come_as_an_e8m0_memory(eng):
    """Grouped e8m0 dst scales given at execute as a memory of e8m0 codes
    (the MX formats' layout): the values are the powers of two they code."""
    dims, groups = (8, 64), (1, 32)
    rng = np.random.default_rng(38)
    x = rng.standard_normal(dims).astype(np.float32) * 4
    k = rng.integers(-2, 3, 16)
    codes = (k + 127).astype(np.uint8)
    scales_md = cly.MemoryDesc((16,), "e8m0")
    scales = cly.Memory(scales_md, eng, raw=codes)
    attr = cly.Attr(dst_scales=cly.Scales(mask=0b11, groups=groups, data_type="e8m0"))
    r = cly.Reorder(cly.MemoryDesc(dims, "f32"), cly.MemoryDesc(dims, "s8"), attr=attr, engine=eng)
    src = cly.Memory.from_numpy(r.src_md, eng, x)
    dst = cly.Memory(r.dst_md, eng)
    r.execute(cly.Stream(eng), src, dst, dst_scales=scales).wait()
    s = np.repeat(np.ldexp(1.0, k).astype(np.float32).reshape(8, 2), 32, axis=1)
    want, _ = ref.ref_reorder(x, "f32", "s8", dst_scale=s)
    assert np.array_equal(dst.to_numpy(), want)


def test_e8m0_scales_round_to_the_nearest_power_of_two():
    """Each value rounded once to a power of two, a tie (1.5 * 2^k) up, as
    ml_dtypes' float8_e8m0fnu; a value e8m0 cannot hold is refused."""
    import ml_dtypes
    given = np.array([1.0, 1.5, 3.0, 0.75, 6.0, 2.0 ** -20, 1.4], np.float32)
    stored = cly.Scales(given, mask=1, data_type="e8m0").values
    assert np.array_equal(stored, given.astype(ml_dtypes.float8_e8m0fnu).astype(np.float32))
    assert np.array_equal(stored, [1, 2, 4, 1, 8, 2.0 ** -20, 1])
    with pytest.raises(cly.InvalidArgumentError, match="out of the range of data_type e8m0"):
        cly.Scales([-2.0], mask=1, data_type="e8m0")
