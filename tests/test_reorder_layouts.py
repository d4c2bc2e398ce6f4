"""Reorder across layouts: plain, blocked (with tails, multi-level blocks),
strided with gaps, submemories, "any", zero-size and seven or eight dims;
bit-exact where the type stays, checked against the independent reference
(tests/reference.py) otherwise."""
import numpy as np
import pytest

import clayout as cly
from reference import (LETTERS, NP, assert_bytes, assert_padding_zero, assert_same,
                       element_offsets, itemsize, logical_of, per_slice, random_bits, raw_of,
                       ref_reorder, sample_values)
from reorder_runs import execute, prefilled, src_memory

# =============================================================================
# Blocked: the destination's padding comes out as zeros
# =============================================================================

@pytest.mark.parametrize("sdt, ddt", [("f32", "s8"), ("bf16", "f16"), ("s32", "u8"),
                                      ("f16", "f16"), ("u8", "bf16")])
def test_blocked_to_same_blocked_layout_zeroes_padding(engine, sdt, ddt):
    # The source's padding is garbage; the destination's must come out as zeros.
    dims = (3, 21, 2, 2)
    values = sample_values(sdt, dims, np.random.default_rng(2))
    src_md, src = src_memory(engine, dims, sdt, "aBcd16b", values, pad_byte=0x7F)
    dst_md = cly.MemoryDesc(dims, ddt, tag="aBcd16b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    assert_same(logical_of(dst.raw(), dims, "aBcd16b", ddt), want, src=values, any_nan=True)
    assert_padding_zero(dst.raw(), dims, "aBcd16b", ddt)


# =============================================================================
# Layouts: bit-exact, both directions, with tails
# =============================================================================

# (clayout's tag, the reference's canonical tag, dims for a given C)
LAYOUTS = {
    "abx": ("abc", lambda c: (2, c, 3)),
    "axb": ("acdeb", lambda c: (2, c, 2, 2, 3)),
    "aBx4b": ("aBcd4b", lambda c: (2, c, 3, 2)),
    "aBx8b": ("aBcd8b", lambda c: (2, c, 3, 2)),
    "aBx16b": ("aBcde16b", lambda c: (2, c, 2, 1, 3)),
    "ABx16a16b": ("ABcd16a16b", lambda c: (c, 20, 2, 3)),
    "ABcd4b16a4b": ("ABcd4b16a4b", lambda c: (c, 21, 2, 2)),
    "gOIhw16i16o": ("aBCde16c16b", lambda c: (2, c, 19, 3, 1)),
    "BA16a64b": ("BA16a64b", lambda c: (c, 70)),
}


def plain_tag(ndims):
    return LETTERS[:ndims]


@pytest.mark.parametrize("c", [17, 40, 63])
@pytest.mark.parametrize("direction", ["to_plain", "from_plain"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_round_trip_is_bit_exact(engine, layout, direction, c):
    ref_tag, make_dims = LAYOUTS[layout]
    dims = make_dims(c)
    plain = plain_tag(len(dims))
    values = random_bits("f32", dims, np.random.default_rng(c))
    if direction == "to_plain":
        (s_tag, s_lib), (d_tag, d_lib) = (ref_tag, layout), (plain, plain)
    else:
        (s_tag, s_lib), (d_tag, d_lib) = (plain, plain), (ref_tag, layout)
    src_md, src = src_memory(engine, dims, "f32", s_tag, values, lib_tag=s_lib)
    dst_md = cly.MemoryDesc(dims, "f32", tag=d_lib)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    # Every byte: the elements bit for bit (NaN payloads too) and zero padding.
    assert_bytes(dst.raw(), raw_of(values, d_tag, "f32"), f"{src_md!r} -> {dst_md!r}")


BLOCKED_PAIRS = [
    ("aBcd8b", "aBcd16b", (2, 20, 3, 2)),
    ("ABcd4b16a4b", "ABcd16a16b", (18, 37, 2, 1)),
    ("ABcd16a16b", "BAcd16a16b", (33, 17, 1, 2)),
    ("BA16a64b", "AB16b64a", (17, 65)),
    ("acdb", "aBcd4b", (1, 7, 5, 3)),
]


@pytest.mark.parametrize("s_tag, d_tag, dims", BLOCKED_PAIRS)
def test_blocked_to_blocked_is_bit_exact(engine, s_tag, d_tag, dims):
    values = random_bits("s32", dims, np.random.default_rng(3))
    src_md, src = src_memory(engine, dims, "s32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "s32", tag=d_tag)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_bytes(dst.raw(), raw_of(values, d_tag, "s32"))


@pytest.mark.parametrize("dt", ["f16", "bf16", "f64", "s8"])
def test_same_type_layout_change_copies_bits(engine, dt):
    # NaN payloads (signalling ones too), denormals, all of f64.
    dims = (3, 9, 2, 2)
    values = random_bits(dt, dims, np.random.default_rng(4))
    flat = values.reshape(-1)
    if dt in ("f16", "bf16"):
        flat.view(np.uint16)[:4] = [0x7C01, 0xFE01, 0x7F81, 0x0001]
    src_md, src = src_memory(engine, dims, dt, "abcd", values)
    dst_md = cly.MemoryDesc(dims, dt, tag="aBcd8b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    assert_bytes(dst.raw(), raw_of(values, "aBcd8b", dt))


def test_same_layout_same_type_copies_bits(engine):
    dims = (4, 33)
    values = random_bits("f32", dims, np.random.default_rng(5))
    src_md, src = src_memory(engine, dims, "f32", "ab", values)
    dst = prefilled(src_md, engine)
    execute(engine, src_md, src_md, src, dst)
    assert_bytes(dst.raw(), values.view(np.uint8).reshape(-1))


# =============================================================================
# Strided and submemory destinations (and sources)
# =============================================================================

@pytest.mark.parametrize("sdt, ddt, s_tag, strides", [
    ("f32", "f32", "abc", (40, 7, 1)),
    ("f32", "f32", "aBc8b", (2, 30, 300)),       # dims reversed in memory, with gaps
    ("s8", "f32", "acb", (50, 9, 2)),
    ("f32", "u8", "abc", (1, 4, 25)),
])
def test_strided_destination_leaves_gaps_alone(engine, sdt, ddt, s_tag, strides):
    dims = (3, 5, 4)
    values = sample_values(sdt, dims, np.random.default_rng(6))
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, strides=strides)
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    pos = element_offsets(dims, strides=strides)
    item = itemsize(ddt)
    expect = np.full(dst_md.size, 0xAB, np.uint8)
    expect.view(NP[ddt])[pos] = want
    raw = dst.raw()
    assert raw.size == expect.size
    touched = np.zeros(expect.size, bool)
    touched.reshape(-1, item)[pos.reshape(-1)] = True
    assert_bytes(raw[~touched], expect[~touched], "gap bytes")
    assert_same(raw.view(NP[ddt])[pos], want, src=values, any_nan=True)


@pytest.mark.parametrize("sdt, ddt", [("f32", "f32"), ("u8", "bf16")])
def test_strided_source_with_gaps(engine, sdt, ddt):
    dims, strides = (3, 5, 4), (3, 40, 9)
    values = sample_values(sdt, dims, np.random.default_rng(22))
    src_md = cly.MemoryDesc(dims, sdt, strides=strides)
    raw = np.full(src_md.size, 0x7F, np.uint8)  # the gaps hold garbage
    raw.view(NP[sdt])[element_offsets(dims, strides=strides)] = values
    src = cly.Memory(src_md, engine, raw=raw)
    dst_md = cly.MemoryDesc(dims, ddt, tag="aBc4b")
    dst = prefilled(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst)
    want, _ = ref_reorder(values, sdt, ddt)
    assert_same(logical_of(dst.raw(), dims, "aBc4b", ddt), want, src=values, any_nan=True)
    assert_padding_zero(dst.raw(), dims, "aBc4b", ddt)


SUBMEMORIES = [
    # parent reference tag, parent dims, sub dims, offsets
    ("abcd", (4, 10, 3, 3), (4, 4, 3, 3), (0, 3, 0, 0)),
    ("abcd", (5, 6, 4, 3), (2, 3, 2, 3), (1, 2, 1, 0)),
    ("acdb", (2, 12, 3, 4), (2, 5, 2, 2), (0, 6, 1, 1)),
    ("aBcd8b", (2, 24, 3, 2), (2, 8, 3, 2), (0, 8, 0, 0)),
    ("aBcd8b", (2, 24, 3, 2), (1, 16, 2, 1), (1, 0, 1, 1)),
]


@pytest.mark.parametrize("ddt", ["f32", "s8"])
@pytest.mark.parametrize("p_tag, p_dims, sub_dims, offsets", SUBMEMORIES)
def test_submemory_destination_leaves_parent_alone(engine, p_tag, p_dims, sub_dims, offsets,
                                                   ddt):
    values = sample_values("f32", sub_dims, np.random.default_rng(7))
    src_md, src = src_memory(engine, sub_dims, "f32", "abcd", values)
    parent_md = cly.MemoryDesc(p_dims, ddt, tag=p_tag)
    parent = prefilled(parent_md, engine)
    sub_md = parent_md.submemory(sub_dims, offsets)
    dst = cly.Memory(sub_md, engine, buffer=parent)
    execute(engine, src_md, sub_md, src, dst)
    want, _ = ref_reorder(values, "f32", ddt)
    pos = element_offsets(p_dims, p_tag)[tuple(slice(o, o + n) for o, n in
                                                 zip(offsets, sub_dims))]
    raw = parent.raw()
    item = itemsize(ddt)
    touched = np.zeros(raw.size, bool)
    touched.reshape(-1, item)[pos.reshape(-1)] = True
    assert_bytes(raw[~touched], np.full(raw.size, 0xAB, np.uint8)[~touched], "parent bytes")
    assert_same(raw.view(NP[ddt])[pos], want, src=values, any_nan=True)


def test_submemory_destination_reaching_the_padded_end(engine):
    # The sub's own padding (channels 20..23 of the last block) is the
    # destination's padded area: zeros. Every other parent byte is untouched.
    p_dims, sub_dims, offsets = (2, 20, 3, 2), (2, 4, 3, 2), (0, 16, 0, 0)
    values = sample_values("f32", sub_dims, np.random.default_rng(8))
    src_md, src = src_memory(engine, sub_dims, "f32", "abcd", values)
    parent_md = cly.MemoryDesc(p_dims, "f32", tag="aBcd8b")
    parent = prefilled(parent_md, engine)
    sub_md = parent_md.submemory(sub_dims, offsets)
    execute(engine, src_md, sub_md, src, cly.Memory(sub_md, engine, buffer=parent))
    padded_pos = element_offsets((2, 24, 3, 2), "aBcd8b")
    sub_pos = padded_pos[:, 16:20]
    pad_pos = padded_pos[:, 20:24]
    expect = np.full(parent_md.size, 0xAB, np.uint8)
    expect.view(np.float32)[sub_pos] = values
    expect.view(np.float32)[pad_pos] = 0
    assert_bytes(parent.raw(), expect)


def test_submemory_source(engine):
    p_dims = (3, 16, 4, 2)
    values = sample_values("s8", p_dims, np.random.default_rng(9))
    parent_md, parent = src_memory(engine, p_dims, "s8", "aBcd8b", values)
    sub_md = parent_md.submemory((2, 8, 3, 2), (1, 8, 1, 0))
    src = cly.Memory(sub_md, engine, buffer=parent)
    dst_md = cly.MemoryDesc((2, 8, 3, 2), "f32", tag="acdb")
    dst = prefilled(dst_md, engine)
    execute(engine, sub_md, dst_md, src, dst)
    want, _ = ref_reorder(values[1:3, 8:16, 1:4, 0:2], "s8", "f32")
    assert_bytes(dst.raw(), raw_of(want, "acdb", "f32"))


# =============================================================================
# Destination of format "any"
# =============================================================================

@pytest.mark.parametrize("s_tag", ["aBcd16b", "acdb", "ABcd4b16a4b"])
def test_any_destination_takes_the_source_layout(engine, s_tag):
    dims = (17, 19, 2, 3)
    values = sample_values("f32", dims, np.random.default_rng(19))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    r = cly.Reorder(src_md, cly.MemoryDesc(dims, "s8", tag="any"), engine=engine)
    assert r.dst_md == cly.MemoryDesc(dims, "s8", tag=s_tag)
    assert r.dst_md.format_kind == "blocked"
    dst = prefilled(r.dst_md, engine)
    s = cly.Stream(engine)
    r.execute(s, src, dst)
    s.wait()
    want, _ = ref_reorder(values, "f32", "s8")
    assert_bytes(dst.raw(), raw_of(want, s_tag, "s8"))


# =============================================================================
# Many dims (host path), zero-size dims
# =============================================================================

@pytest.mark.parametrize("dims, s_tag, d_tag", [
    ((2, 1, 3, 1, 2, 2, 3), "abcdefg", "gfedcba"),
    ((2, 5, 1, 2, 1, 3, 2), "abcdefg", "aBcdefg4b"),
    ((2, 2, 1, 2, 1, 3, 2, 2), "hgfedcba", "acegbdfh"),
    ((1, 2, 3, 1, 2, 1, 2, 9), "abcdefgh", "abcdefgH8h"),
])
def test_seven_and_eight_dims_run_on_the_host(engine, dims, s_tag, d_tag):
    values = random_bits("f32", dims, np.random.default_rng(17))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "f32", tag=d_tag)
    dst = prefilled(dst_md, engine)
    r = execute(engine, src_md, dst_md, src, dst)
    assert r.impl.startswith("host"), r.impl
    assert_bytes(dst.raw(), raw_of(values, d_tag, "f32"))
    # With a conversion and per-slice scales on the last dim.
    values = sample_values("f32", dims, np.random.default_rng(18))
    src_md, src = src_memory(engine, dims, "f32", s_tag, values)
    dst_md = cly.MemoryDesc(dims, "s8", tag=d_tag)
    dst = prefilled(dst_md, engine)
    mask = 1 << (len(dims) - 1)
    sc = np.linspace(0.3, 2.7, dims[-1]).astype(np.float32)
    r = execute(engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=cly.Scales(sc, mask)))
    assert r.impl.startswith("host"), r.impl
    want, pre = ref_reorder(values, "f32", "s8", src_scale=per_slice(sc, mask, dims))
    assert_same(logical_of(dst.raw(), dims, d_tag, "s8"), want, src=values, pre=pre,
                quantized=True)


def test_seven_dim_submemory_destination_with_sum(engine):
    p_dims, sub_dims, offsets = (2, 3, 1, 4, 2, 1, 5), (1, 2, 1, 3, 2, 1, 2), (1, 1, 0, 1, 0, 0, 2)
    rng = np.random.default_rng(24)
    values = sample_values("s8", sub_dims, rng)
    src_md, src = src_memory(engine, sub_dims, "s8", "gfedcba", values)
    parent_md = cly.MemoryDesc(p_dims, "f32", tag="abcdefg")
    parent_raw = np.full(parent_md.size, 0xAB, np.uint8)
    pos = element_offsets(p_dims, "abcdefg")[tuple(slice(o, o + n) for o, n in
                                                      zip(offsets, sub_dims))]
    old = rng.normal(0, 20, sub_dims).astype(np.float32)
    parent_raw.view(np.float32)[pos] = old
    parent = cly.Memory(parent_md, engine, raw=parent_raw)
    sub_md = parent_md.submemory(sub_dims, offsets)
    r = execute(engine, src_md, sub_md, src, cly.Memory(sub_md, engine, buffer=parent),
                attr=cly.Attr(src_zero_points=-3, dst_scales=0.75, sum_beta=0.5))
    assert r.impl.startswith("host"), r.impl
    want, _ = ref_reorder(values, "s8", "f32", src_zp=np.int32(-3), dst_scale=np.float32(0.75),
                          beta=0.5, old=old)
    expect = parent_raw.copy()
    expect.view(np.float32)[pos] = want
    assert_bytes(parent.raw(), expect)


@pytest.mark.parametrize("attr", [None, cly.Attr(src_scales=2.0, sum_beta=0.5)],
                         ids=["plain", "attr"])
@pytest.mark.parametrize("dims, s_tag, d_tag, ddt", [
    ((2, 0, 3, 4), "abcd", "aBcd16b", "s8"),
    ((0, 5), "ab", "ba", "f32"),
    ((3, 0), "ab", "ab", "f32"),
    ((0, 2, 1, 1, 1, 1, 2), "abcdefg", "gfedcba", "f16"),
])
def test_zero_size_dims_are_a_no_op(engine, dims, s_tag, d_tag, ddt, attr):
    src_md = cly.MemoryDesc(dims, "f32", tag=s_tag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    src = cly.Memory(src_md, engine)
    dst = cly.Memory(dst_md, engine)
    execute(engine, src_md, dst_md, src, dst, attr=attr)
    assert dst.to_numpy().shape == dims
    cly.reorder(src, dst, attr=attr)


# =============================================================================
# Long runs: work-items in the source's order (Tuning.source_order_bytes)
# =============================================================================

@pytest.mark.parametrize("dims, s_tag, d_tag, sdt, ddt, scaled", [
    ((2, 3, 5, 256), "abcd", "acbd", "f32", "f32", False),    # runs of 1 KiB
    ((3, 4, 2, 700), "abcd", "bacd", "bf16", "f32", True),    # per-channel scales on b
    ((2, 5, 3, 1030), "abcd", "cabd", "s8", "s8", False),
])
def test_long_runs_in_the_source_order_land_where_the_reference_says(engine, dims, s_tag,
                                                                      d_tag, sdt, ddt, scaled):
    rng = np.random.default_rng(8)
    values = sample_values(sdt, dims, rng, specials=False)
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    dst = prefilled(dst_md, engine)
    attr, kwargs = None, {}
    if scaled:
        scales = rng.uniform(0.5, 2, dims[1]).astype(np.float32)
        attr = cly.Attr(src_scales=cly.Scales(scales, mask=0b10))
        kwargs["src_scale"] = per_slice(scales, 0b10, dims)
    r = execute(engine, src_md, dst_md, src, dst, attr)
    plan = getattr(r._implementation, "plan", None)
    if plan is not None and plan.strategy == "cpu":  # (the path this test is for)
        assert plan.shape == "runs" and plan.fastest != tuple(range(len(plan.levels) - 1, -1, -1))
    want, pre = ref_reorder(values, sdt, ddt, **kwargs)
    assert_same(logical_of(dst.raw(), dims, d_tag, ddt), want, src=values, pre=pre)
