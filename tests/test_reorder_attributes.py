"""Reorder attributes: scales and zero points (common and per slice, every
mask), sum (beta), and their mix on f64 and strided destinations, checked
against the formula of DESIGN.md written out in tests/reference.py."""
import math

import numpy as np
import pytest

import clayout as cly
from reference import (FLOAT_SPECIALS, NP, assert_bytes, assert_padding_zero, assert_same,
                       element_offsets, is_int, logical_of, per_slice, raw_of, ref_reorder,
                       sample_values)
from reorder_runs import execute, src_memory

# =============================================================================
# Scales, zero points, sum
# =============================================================================

ATTR_DIMS = (2, 3, 4, 5)  # distinct sizes: a wrong slice index shows


def masked_values(mask, rng, kind):
    count = math.prod(ATTR_DIMS[d] for d in range(4) if mask >> d & 1)
    if kind == "scale":
        return rng.uniform(0.05, 3.0, count).astype(np.float32)
    return rng.integers(-20, 20, count).astype(np.int32)


def attr_case(engine, sdt, ddt, s_tag, d_tag, rng, *, src_scale=None, dst_scale=None,
              src_zp=None, dst_zp=None, beta=None):
    """Run one reorder with attributes given as (values, mask) and check it."""
    values = sample_values(sdt, ATTR_DIMS, rng, specials=False)
    if not is_int(sdt):
        with np.errstate(all="ignore"):
            specials = np.array(FLOAT_SPECIALS, np.float32).astype(NP[sdt])
        values.reshape(-1)[:specials.size] = specials
    src_md, src = src_memory(engine, ATTR_DIMS, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(ATTR_DIMS, ddt, tag=d_tag)
    old = sample_values(ddt, ATTR_DIMS, rng, specials=False)
    if not is_int(ddt):
        old = (rng.normal(0, 50, ATTR_DIMS)).astype(NP[ddt])
    dst = cly.Memory(dst_md, engine, raw=raw_of(old, d_tag, ddt, pad_byte=0x7F))
    kw, ref = {}, {}
    for name, given_, cls in (("src_scales", src_scale, cly.Scales),
                              ("dst_scales", dst_scale, cly.Scales),
                              ("src_zero_points", src_zp, cly.ZeroPoints),
                              ("dst_zero_points", dst_zp, cly.ZeroPoints)):
        if given_ is not None:
            vals, mask = given_
            kw[name] = cls(vals, mask=mask)
            ref[name] = per_slice(vals, mask, ATTR_DIMS)
    attr = cly.Attr(sum_beta=beta, **kw)
    r = execute(engine, src_md, dst_md, src, dst, attr=attr)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=ref.get("src_scales"),
                            dst_scale=ref.get("dst_scales"), src_zp=ref.get("src_zero_points"),
                            dst_zp=ref.get("dst_zero_points"), beta=beta,
                            old=old if beta is not None else None)
    raw = dst.raw()
    assert_same(logical_of(raw, ATTR_DIMS, d_tag, ddt), want, src=values, pre=pre,
                quantized=is_int(ddt), any_nan=True)
    assert_padding_zero(raw, ATTR_DIMS, d_tag, ddt)
    return r


MASKS = [0b0001, 0b0010, 0b0100, 0b1000, 0b0110, 0b1001]


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: f"mask{m:04b}")
@pytest.mark.parametrize("side", ["src", "dst"])
@pytest.mark.parametrize("sdt, ddt, s_tag, d_tag", [
    ("f32", "s8", "abcd", "acdb"),
    ("s8", "f32", "acdb", "aBcd4b"),
])
def test_scale_masks(engine, sdt, ddt, s_tag, d_tag, side, mask):
    rng = np.random.default_rng(mask * 2 + (side == "dst"))
    scale = (masked_values(mask, rng, "scale"), mask)
    attr_case(engine, sdt, ddt, s_tag, d_tag, rng,
              **({"src_scale": scale} if side == "src" else {"dst_scale": scale}))


@pytest.mark.parametrize("sdt, ddt, kind", [
    ("f32", "u8", "both_scales"), ("f32", "s8", "both_scales"),
    ("u8", "s32", "src_zp_common"), ("s8", "f32", "src_zp_per_dim"),
    ("f32", "u8", "dst_zp_per_dim"), ("f32", "s8", "all"), ("u8", "s8", "zp_both_per_dim"),
    ("f16", "u8", "dst_zp_common"), ("s8", "bf16", "src_zp_common"),
    ("s32", "s32", "both_scales"), ("s8", "s8", "zp_both_per_dim"),
])
def test_scales_and_zero_points(engine, sdt, ddt, kind):
    rng = np.random.default_rng(len(kind) + len(sdt + ddt))
    cases = {
        "both_scales": dict(src_scale=(masked_values(0b0010, rng, "scale"), 0b0010),
                            dst_scale=(masked_values(0b1000, rng, "scale"), 0b1000)),
        "src_zp_common": dict(src_zp=(np.array([128]), 0),
                              src_scale=(np.array([0.37], np.float32), 0)),
        "src_zp_per_dim": dict(src_zp=(masked_values(0b1000, rng, "zp"), 0b1000)),
        "dst_zp_per_dim": dict(dst_zp=(masked_values(0b0010, rng, "zp") + 100, 0b0010),
                               dst_scale=(np.array([0.7], np.float32), 0)),
        "all": dict(src_scale=(masked_values(0b0110, rng, "scale"), 0b0110),
                    dst_scale=(masked_values(0b0001, rng, "scale"), 0b0001),
                    dst_zp=(np.array([-7]), 0)),
        "zp_both_per_dim": dict(src_zp=(masked_values(0b0100, rng, "zp"), 0b0100),
                                dst_zp=(masked_values(0b0011, rng, "zp"), 0b0011)),
        "dst_zp_common": dict(dst_zp=(np.array([3]), 0)),
    }
    attr_case(engine, sdt, ddt, "abcd", "aBcd4b", rng, **cases[kind])


@pytest.mark.parametrize("sdt, ddt, with_zp", [
    ("f32", "s8", False), ("f32", "s8", True), ("f32", "f32", False), ("s8", "u8", True),
    ("u8", "s32", False), ("s8", "f16", False), ("f32", "bf16", False),
])
def test_sum(engine, sdt, ddt, with_zp):
    rng = np.random.default_rng(11)
    kw = dict(src_scale=(masked_values(0b0010, rng, "scale"), 0b0010))
    if with_zp:
        kw["dst_zp"] = (masked_values(0b0010, rng, "zp"), 0b0010)
    attr_case(engine, sdt, ddt, "acdb", "aBcd4b", rng, beta=0.5, **kw)


def test_sum_with_every_attribute_on_a_strided_destination(engine):
    # Old values are read from (and results written to) the strided positions only.
    dims, strides = (2, 3, 4), (50, 13, 3)
    rng = np.random.default_rng(12)
    values = sample_values("f32", dims, rng, specials=False)
    src_md, src = src_memory(engine, dims, "f32", "abc", values)
    dst_md = cly.MemoryDesc(dims, "u8", strides=strides)
    pos = element_offsets(dims, strides=strides)
    raw = np.full(dst_md.size, 0xAB, np.uint8)
    old = rng.integers(0, 256, dims).astype(np.uint8)
    raw[pos] = old
    dst = cly.Memory(dst_md, engine, raw=raw)
    sc = rng.uniform(0.5, 2, 3).astype(np.float32)
    attr = cly.Attr(src_scales=cly.Scales(sc, mask=0b010), dst_scales=1.5, src_zero_points=None,
                    dst_zero_points=cly.ZeroPoints([5, 9], mask=0b001), sum_beta=0.5)
    execute(engine, src_md, dst_md, src, dst, attr=attr)
    want, pre = ref_reorder(values, "f32", "u8", src_scale=per_slice(sc, 0b010, dims),
                            dst_scale=np.float32(1.5), dst_zp=per_slice([5, 9], 0b001, dims),
                            beta=0.5, old=old)
    got = dst.raw()
    assert_same(got[pos], want, src=values, pre=pre, quantized=True)
    raw[pos] = 0xAB
    got[pos] = 0xAB
    assert_bytes(got, raw, "gap bytes")


def test_scales_on_f64(engine):
    rng = np.random.default_rng(13)
    attr_case(engine, "f64", "s32", "abcd", "acdb", rng,
              src_scale=(masked_values(0b0100, rng, "scale"), 0b0100))
    attr_case(engine, "s8", "f64", "abcd", "acdb", rng, src_zp=(np.array([-3]), 0),
              dst_scale=(np.array([0.3], np.float32), 0), beta=0.5)


def test_f64_sum_agrees_between_host_and_opencl(host_engine, cl_engine):
    # beta = 0.1 is not an f32: it is applied as the f32 nearest 0.1, on both paths.
    dims = (3, 7)
    values = np.random.default_rng(14).normal(0, 10, dims)
    old = np.random.default_rng(15).normal(0, 10, dims)
    want, _ = ref_reorder(values, "f64", "f64", beta=0.1, old=old)
    outs = []
    for eng in (host_engine, cl_engine):
        src_md, src = src_memory(eng, dims, "f64", "ab", values)
        dst_md = cly.MemoryDesc(dims, "f64", tag="ba")
        dst = cly.Memory(dst_md, eng, raw=raw_of(old, "ba", "f64"))
        execute(eng, src_md, dst_md, src, dst, attr=cly.Attr(sum_beta=0.1))
        outs.append(dst.raw())
        assert_same(logical_of(outs[-1], dims, "ba", "f64"), want, what=repr(eng))
    assert_bytes(outs[1], outs[0], "opencl vs host")


def test_new_attribute_values_with_the_same_masks(engine):
    # Kernels are keyed by masks, not values: new values must take effect.
    rng = np.random.default_rng(16)
    for scale, zp in ((2.0, 1), (0.25, -9), (3.0, 4)):
        attr_case(engine, "f32", "s8", "abcd", "acdb", rng,
                  src_scale=(np.array([scale], np.float32), 0), dst_zp=(np.array([zp]), 0))
