"""Property-based, on shapes big enough for the GPU strategy's vectors
(issue 22): boxes of a warp of 16-byte vectors and more, rows across 3x3,
5x9 and 7x7 planes, channels that fill no block, blocked layouts, every core
type pair, per-tensor and per-dim scales. The OpenCL kernels agree with the
reference (tests/reference.py), bit for bit with no attribute, and padding
stays zero. `make test` runs this file on both strategies (the second time
with CLAYOUT_STRATEGY=gpu, where the plans must be the GPU strategy's)."""
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import clayout as cly
from conftest import DEVICE_IMPL, _engine_with_strategy
from reference import (CORE, assert_padding_zero, assert_same, is_int, logical_of, per_slice,
                       logical_of_packed, raw_of, raw_of_packed, ref_reorder, ref_shuffle,
                       sample_values, to_f4_e2m1, window_offsets)
from reorder_runs import execute, prefilled, src_memory
from test_reorder_property import layouts

PLANES = [(1, 1), (3, 3), (5, 9), (7, 7), (4, 16), (14, 14)]
CHANNELS = [3, 16, 20, 32, 48, 64, 96]


@st.composite
def gpu_cases(draw):
    n = draw(st.integers(1, 3))
    c = draw(st.sampled_from(CHANNELS))
    h, w = draw(st.sampled_from(PLANES))
    dims = (n, c, h, w)
    s_tag, d_tag = draw(layouts(4)), draw(layouts(4))
    sdt, ddt = draw(st.sampled_from(CORE)), draw(st.sampled_from(CORE))
    scale_mask = draw(st.sampled_from([None, None, 0, 2, 2, 1, 8]))
    return dims, s_tag, d_tag, sdt, ddt, scale_mask, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=gpu_cases())
def test_kernels_on_shapes_the_gpu_vectors_fill(cl_engine, case):
    dims, s_tag, d_tag, sdt, ddt, scale_mask, seed = case
    rng = np.random.default_rng(seed)
    values = sample_values(sdt, dims, rng, specials=False)
    attr = scales = None
    if scale_mask is not None:
        count = math.prod(dims[d] for d in range(4) if scale_mask >> d & 1)
        sc = rng.uniform(0.1, 4, count).astype(np.float32)
        attr = cly.Attr(src_scales=cly.Scales(sc, mask=scale_mask))
        scales = per_slice(sc, scale_mask, dims)
    want, pre = ref_reorder(values, sdt, ddt, src_scale=scales)
    src_md, src = src_memory(cl_engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    dst = prefilled(dst_md, cl_engine)
    primitive = execute(cl_engine, src_md, dst_md, src, dst, attr=attr)
    plan = getattr(primitive._implementation, "plan", None)  # (a plain copy has none)
    if os.environ.get("CLAYOUT_STRATEGY") == "gpu":
        assert plan is None or plan.strategy == "gpu"
    raw = dst.raw()
    # A NaN out of arithmetic (a scale) has no set payload: NVIDIA's GPUs
    # give every one 0x7fffffff, sign and all.
    assert_same(logical_of(raw, dims, d_tag, ddt), want, src=values, pre=pre,
                quantized=attr is not None and is_int(ddt), any_nan=attr is not None,
                what=f"{case}")
    assert_padding_zero(raw, dims, d_tag, ddt)


# =============================================================================
# Issue 33: what the GPU strategy got wrong (found by a randomized sweep)
# =============================================================================

#: A source whose inner block does not divide its dim (4 over blocks of 3,
#: padded to 6): the box's read vectors ran across the block's end into
#: its padding. Then 8-bit float sources gathered from local memory, whose
#: one-value decoder the kernel did not declare (it did not build).
ISSUE_33_CASES = [
    # dims, src tag, src type, dst tag, dst type, dst scale mask, dst zero point mask
    ((8, 7, 4), "bAC4a3c", "s32", "Acb8a4a", "bf16", None, None),
    ((34, 7, 4), "aBC4b3c", "f8_e4m3", "abc", "s8", None, None),
    ((34, 7, 4), "aBC4b3c", "f8_e4m3", "abc", "s8", 0, 0b10),
    ((5, 16, 7, 4), "abcd", "f8_e4m3", "aBcd16b", "f32", None, None),
    ((7, 16, 4, 7), "aBcd16b", "f8_e4m3", "aBcd4b", "bf16", 0, None),
    ((32, 2, 3, 7), "ABcd4b16a4b", "f8_e5m2", "abcd", "f32", None, None),
]


@pytest.mark.parametrize("strategy", ["gpu", "cpu"])
@pytest.mark.parametrize("case", ISSUE_33_CASES, ids=lambda case: f"{case[2]}:{case[1]}->"
                         f"{case[4]}:{case[3]}")
def test_issue_33_layouts_and_types_are_exact(cl_engine, strategy, case):
    dims, s_tag, sdt, d_tag, ddt, dst_scale_mask, dst_zp_mask = case
    engine = _engine_with_strategy(cl_engine, strategy)
    rng = np.random.default_rng(33)
    values = sample_values(sdt, dims, rng, specials=False)
    attr, kwargs = {}, {}
    if dst_scale_mask is not None:
        attr["dst_scales"] = 0.75
        kwargs["dst_scale"] = np.float32(0.75)
    if dst_zp_mask is not None:
        zps = rng.integers(-5, 6, math.prod(dims[d] for d in range(len(dims))
                                            if dst_zp_mask >> d & 1)).astype(np.int32)
        attr["dst_zero_points"] = cly.ZeroPoints(zps, mask=dst_zp_mask)
        kwargs["dst_zp"] = per_slice(zps, dst_zp_mask, dims)
    attr = cly.Attr(**attr) if attr else None
    want, pre = ref_reorder(values, sdt, ddt, **kwargs)
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    dst = prefilled(dst_md, engine)
    primitive = execute(engine, src_md, dst_md, src, dst, attr=attr)
    assert primitive.impl == DEVICE_IMPL + "generated", primitive.impl  # built, not declined
    assert primitive._implementation.plan.strategy == strategy
    raw = dst.raw()
    # A NaN out of arithmetic (a scale) has no set payload: NVIDIA's GPUs
    # give every one 0x7fffffff, sign and all.
    assert_same(logical_of(raw, dims, d_tag, ddt), want, src=values, pre=pre,
                quantized=attr is not None and is_int(ddt), any_nan=attr is not None,
                what=f"{case}")
    assert_padding_zero(raw, dims, d_tag, ddt)


@pytest.mark.parametrize("strategy", ["gpu", "cpu"])
def test_issue_33_into_a_submemory_from_a_source_blocked_by_5(cl_engine, strategy):
    """f64 with dim 2 (6) in blocks of 5 into a window of an s32 parent:
    the window exact, every byte of the parent around it untouched."""
    engine = _engine_with_strategy(cl_engine, strategy)
    dims, offsets, parent_dims = (5, 3, 6, 6), (2, 3, 1, 0), (8, 6, 7, 6)
    values = sample_values("f64", dims, np.random.default_rng(5), specials=False)
    want, pre = ref_reorder(values, "f64", "s32")
    src_md, src = src_memory(engine, dims, "f64", "aCbD2d5c", values)
    parent_md = cly.MemoryDesc(parent_dims, "s32", tag="aBcd3b")
    parent = prefilled(parent_md, engine)
    window = cly.Memory(parent_md.submemory(dims, offsets), engine, buffer=parent)
    primitive = execute(engine, src_md, window.md, src, window)
    assert primitive.impl == DEVICE_IMPL + "generated", primitive.impl
    raw = parent.raw()
    got = raw.view(np.int32)[window_offsets(parent_dims, "aBcd3b", dims, offsets)]
    assert_same(got, want, src=values, pre=pre)
    outside = np.ones(raw.size // 4, bool)
    outside[window_offsets(parent_dims, "aBcd3b", dims, offsets).ravel()] = False
    assert (raw.view(np.uint32)[outside] == 0xABABABAB).all(), "bytes outside the window changed"


@pytest.mark.parametrize("strategy", ["gpu", "cpu"])
def test_issue_33_shuffle_into_a_padded_axis(cl_engine, strategy):
    """A shuffle whose destination pads its axis (8 channels in a block of
    16): the GPU strategy's read vectors span other loops of the box, and
    each element must still land at its shuffled channel (they landed at
    the unshuffled one)."""
    engine = _engine_with_strategy(cl_engine, strategy)
    dims = (4, 8, 2, 6, 3)
    values = sample_values("bf16", dims, np.random.default_rng(8), specials=False)
    src_md, src = src_memory(engine, dims, "bf16", "bceAd4a", values)
    dst_md = cly.MemoryDesc(dims, "bf16", tag="dBeca16b")
    dst = prefilled(dst_md, engine)
    shuffle = cly.Shuffle(src_md, axis=1, group_size=2, backward=True, engine=engine,
                          dst_md=dst_md)
    stream = cly.Stream(engine)
    shuffle.execute(stream, src, dst)
    stream.wait()
    assert shuffle.impl == DEVICE_IMPL + "generated", shuffle.impl
    raw = dst.raw()
    assert_same(logical_of(raw, dims, "dBeca16b", "bf16"), ref_shuffle(values, 1, 2, True))
    assert_padding_zero(raw, dims, "dBeca16b", "bf16")


@pytest.mark.parametrize("dims, tag, ddt, d_tag", [
    ((3, 1001, 67), "abc", "f32", "abc"),
    ((12, 4, 32, 25, 1, 1), "aefbdc", "f4_e2m1", "fcdAeb5a")])
def test_issue_33_a_sum_in_chunks_adds_once(gpu_engine, dims, tag, ddt, d_tag):
    """Each work-item of a striped plan moves several chunks spaced by the
    launch, which is rounded up to whole work-groups: the work-items past
    it moved the next chunk's first items a second time, and a sum added
    the old value twice there."""
    rng = np.random.default_rng(7)
    values = rng.integers(-6, 7, dims).astype(np.float32)
    src_md, src = src_memory(gpu_engine, dims, "f32", tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    if ddt == "f4_e2m1":
        old = rng.choice([-6, -3, -1.5, -0.5, 0, 0.5, 1, 2, 4], dims)  # f4_e2m1 values
        dst = cly.Memory(dst_md, gpu_engine, raw=raw_of_packed(old, d_tag, "f4_e2m1"))
    else:
        old = rng.integers(-50, 50, dims).astype(np.float32)
        dst = cly.Memory(dst_md, gpu_engine, raw=raw_of(old, d_tag, "f32"))
    primitive = execute(gpu_engine, src_md, dst_md, src, dst, attr=cly.Attr(sum_beta=0.5))
    plan = primitive._implementation.plan
    assert plan.chunks > 1 or gpu_engine.profile.compute_units > 8, plan  # (the case)
    want = values + np.float32(0.5) * np.asarray(old, np.float32)  # exact in f32
    if ddt == "f4_e2m1":
        got = logical_of_packed(dst.raw(), dims, d_tag, ddt).astype(np.float64)
        np.testing.assert_array_equal(got, to_f4_e2m1(want).astype(np.float64))
    else:
        np.testing.assert_array_equal(logical_of(dst.raw(), dims, d_tag, ddt), want)
