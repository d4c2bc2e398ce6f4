"""Compensation (RFC section 4): a reorder into s8 weights whose descriptor
carries ``extra`` writes the quantized weights (the source scale times
scale_adjust, rounded to f32 once) and, after the padded data, s32 values:
for each slice of a mask over the masked dims' padded sizes, -128 (s8s8) or
-1 (zp) times the sum of the weights over the other dims' logical indices.

Expected bytes come from this file's reference (quantize, compensation,
expected_raw) over tests/reference.py's layouts and formula; clayout's own
gather, scatter and conversions decide nothing expected. Every destination
starts as 0xFF bytes, so each byte the reorder must write is checked.
"""
import math

import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
from reference import (NP, assert_bytes, blocking, logical_of, per_slice, physical_size,
                       raw_of, ref_reorder)

# =============================================================================
# The reference
# =============================================================================

FACTOR = {"s8s8": -128, "zp": -1}
#: Storage order of the compensation blocks.
ORDER = ("s8s8", "zp")


def quantize(src, sdt, scale_adjust=1.0, src_scale=None, dst_scale=None, src_zp=None):
    """The s8 weights: DESIGN.md's formula with s_src replaced by the f32
    product scale_adjust * s_src (scale_adjust alone without a src scale).
    Scales and zero points broadcast over src (reference.per_slice)."""
    scale = src_scale
    if scale_adjust != 1.0:
        base = np.float32(1.0) if src_scale is None else np.asarray(src_scale, np.float32)
        scale = (np.float32(scale_adjust) * base).astype(np.float32)  # rounded once, in f32
    q, _ = ref_reorder(src, sdt, "s8", src_scale=scale, dst_scale=dst_scale, src_zp=src_zp)
    return q


def compensation(q, padded_dims, mask, kind):
    """One compensation block, slice by slice in C order over the masked
    dims' padded sizes: FACTOR * the sum of q over the other dims (a slice
    in the padding sums nothing)."""
    dims = q.shape
    masked = [d for d in range(len(dims)) if mask >> d & 1]
    out = []
    for slice_index in np.ndindex(*[padded_dims[d] for d in masked]):
        if any(i >= dims[d] for i, d in zip(slice_index, masked)):
            out.append(0)
            continue
        pick = [slice(None)] * len(dims)
        for i, d in zip(slice_index, masked):
            pick[d] = i
        out.append(FACTOR[kind] * int(q[tuple(pick)].astype(np.int64).sum()))
    return np.array(out, dtype=np.int64)


def expected_raw(q, tag, masks):
    """The destination's bytes: the weights in layout ``tag`` (padding 0),
    then each compensation block (``masks``: kind -> mask) as little-endian s32."""
    padded = blocking(q.shape, tag).padded_dims
    parts = [raw_of(q, tag, "s8")]
    for kind in ORDER:
        if kind in masks:
            values = compensation(q, padded, masks[kind], kind)
            assert np.abs(values).max(initial=0) < 2**31
            parts.append(values.astype("<i4").view(np.uint8))
    return np.concatenate(parts)


def compensation_count(dims, tag, masks):
    padded = blocking(tuple(dims), tag).padded_dims
    return sum(math.prod(padded[d] for d in range(len(dims)) if m >> d & 1)
               for m in masks.values())


def extra_of(masks, scale_adjust=1.0):
    return cly.Extra(compensation_mask=masks.get("s8s8"),
                     asymm_compensation_mask=masks.get("zp"), scale_adjust=scale_adjust)


# =============================================================================
# Running one case
# =============================================================================

def run_case(engine, dims, src_tag, dst_tag, masks, rng, *, sdt="f32", scale_adjust=1.0,
             src_scale=None, dst_scale=None, src_zp=None, values=None):
    """Reorder ``values`` (random if None) into s8 ``dst_tag`` with extra and
    check every byte of the destination. Scales and zero points are
    (values, mask) pairs. Returns the Reorder."""
    if values is None:
        values = sample(sdt, dims, rng)
    src_md = cly.MemoryDesc(dims, sdt, tag=src_tag)
    dst_md = cly.MemoryDesc(dims, "s8", tag=dst_tag, extra=extra_of(masks, scale_adjust))
    src = cly.Memory(src_md, engine, raw=raw_of(values, src_tag, sdt))
    want_size = physical_size(dims, dst_tag) + 4 * compensation_count(dims, dst_tag, masks)
    assert dst_md.size == want_size
    dst = cly.Memory(dst_md, engine, raw=np.full(want_size, 0xFF, np.uint8))
    kw, ref = {}, {}
    for name, given, cls in (("src_scales", src_scale, cly.Scales),
                             ("dst_scales", dst_scale, cly.Scales),
                             ("src_zero_points", src_zp, cly.ZeroPoints)):
        if given is not None:
            kw[name] = cls(given[0], mask=given[1])
            ref[name] = per_slice(given[0], given[1], dims)
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=cly.Attr(**kw) if kw else None)
    stream = cly.Stream(engine)
    r.execute(stream, src, dst)
    stream.wait()
    want_q = quantize(values, sdt, scale_adjust, ref.get("src_scales"), ref.get("dst_scales"),
                      ref.get("src_zero_points"))
    got = dst.raw()
    what = f"{r.impl} {src_tag}->{dst_tag} {masks} adjust {scale_adjust} attr {kw}"
    data = physical_size(dims, dst_tag)
    assert_bytes(logical_of(got, dims, dst_tag, "s8"), want_q, what=f"{what}: weights")
    assert_bytes(got, expected_raw(want_q, dst_tag, masks), what=f"{what}: all bytes")
    if masks:
        assert dst_md.compensation_offset == data
    return r


def sample(sdt, dims, rng):
    """Values that quantize to the whole s8 range, saturation included."""
    if sdt in ("s8", "u8", "s32"):
        lo, hi = {"s8": (-128, 128), "u8": (0, 256), "s32": (-400, 400)}[sdt]
        return rng.integers(lo, hi, dims).astype({"s8": np.int8, "u8": np.uint8,
                                                  "s32": np.int32}[sdt])
    return (rng.normal(0.0, 60.0, dims)).astype(np.float32)


def oc_scales(dims, mask, rng):
    count = math.prod(dims[d] for d in range(len(dims)) if mask >> d & 1)
    return rng.uniform(0.25, 2.0, count).astype(np.float32), mask


# =============================================================================
# Layouts x compensations x scales
# =============================================================================

OIHW_DIMS = (20, 3, 2, 3)    # O=20: 16o blocks pad it to 32; I=3 pads to 4 or 16
GOIHW_DIMS = (2, 20, 3, 2, 3)
LAYOUTS = [("oihw", "oihw", 1), ("oihw", "OIhw4i16o4i", 1), ("oihw", "OIhw16i16o", 1),
           ("oihw", "OIhw8i16o2i", 1), ("goihw", "goihw", 3),
           ("goihw", "gOIhw4i16o4i", 3), ("goihw", "gOIhw16i16o", 3)]
KINDS = [("s8s8",), ("zp",), ("s8s8", "zp")]
#: (per-oc src scales?, scale_adjust); scale_adjust without src scales:
#: test_scale_adjust_without_src_scales
SCALINGS = [(False, 1.0), (True, 0.5), (True, 1.0)]


def layout_cases(engine, src_tag, dst_tag, mask):
    rng = np.random.default_rng(sum(map(ord, dst_tag)))
    dims = GOIHW_DIMS if src_tag == "goihw" else OIHW_DIMS
    impls = set()
    for kinds in KINDS:
        masks = {kind: mask for kind in kinds}
        for per_oc, adjust in SCALINGS:
            scale = oc_scales(dims, mask, rng) if per_oc else None
            r = run_case(engine, dims, src_tag, dst_tag, masks, rng, scale_adjust=adjust,
                         src_scale=scale)
            impls.add(r.impl)
    return impls


@pytest.mark.parametrize("src_tag,dst_tag,mask", LAYOUTS, ids=[c[1] for c in LAYOUTS])
def test_layouts_on_host(host_engine, src_tag, dst_tag, mask):
    assert layout_cases(host_engine, src_tag, dst_tag, mask) == {"host:numpy"}


@pytest.mark.parametrize("src_tag,dst_tag,mask", LAYOUTS, ids=[c[1] for c in LAYOUTS])
def test_layouts_cpu_strategy(cpu_engine, src_tag, dst_tag, mask):
    assert layout_cases(cpu_engine, src_tag, dst_tag, mask) == {DEVICE_IMPL + "generated"}


@pytest.mark.parametrize("src_tag,dst_tag,mask", LAYOUTS, ids=[c[1] for c in LAYOUTS])
def test_layouts_gpu_strategy(gpu_engine, src_tag, dst_tag, mask):
    assert layout_cases(gpu_engine, src_tag, dst_tag, mask) == {DEVICE_IMPL + "generated"}


# =============================================================================
# Other sources, attributes, masks and sizes
# =============================================================================

BOTH = {"s8s8": 1, "zp": 1}


@pytest.mark.parametrize("sdt", ["s8", "u8", "s32", "f16", "bf16"])
def test_source_types(engine, sdt):
    """Any source type the reorder serves; s8 without attributes is a bit copy."""
    rng = np.random.default_rng(3)
    values = sample(sdt, OIHW_DIMS, rng)
    if sdt in ("f16", "bf16"):
        values = np.round(values).astype(NP[sdt])  # exact in both types
    run_case(engine, OIHW_DIMS, "oihw", "OIhw16i16o", BOTH, rng, sdt=sdt, values=values)


def test_src_zero_point_and_dst_scale(engine):
    rng = np.random.default_rng(4)
    run_case(engine, OIHW_DIMS, "oihw", "OIhw4i16o4i", BOTH, rng, sdt="u8",
             src_zp=(np.array([128], np.int32), 0), dst_scale=(np.array([2.0], np.float32), 0))
    run_case(engine, OIHW_DIMS, "oihw", "OIhw4i16o4i", BOTH, rng, sdt="u8", scale_adjust=0.5,
             src_zp=(rng.integers(100, 150, 20).astype(np.int32), 1),
             src_scale=oc_scales(OIHW_DIMS, 1, rng),
             dst_scale=(rng.uniform(0.5, 2, 20).astype(np.float32), 1))


@pytest.mark.parametrize("src_tag,dst_tag,mask", [LAYOUTS[1], LAYOUTS[6]],
                         ids=[LAYOUTS[1][1], LAYOUTS[6][1]])
def test_scale_adjust_without_src_scales(engine, src_tag, dst_tag, mask):
    """scale_adjust is then the source scale, per tensor."""
    rng = np.random.default_rng(12)
    dims = GOIHW_DIMS if src_tag == "goihw" else OIHW_DIMS
    for kinds in KINDS:
        run_case(engine, dims, src_tag, dst_tag, {kind: mask for kind in kinds}, rng,
                 scale_adjust=0.5)


def test_scale_adjust_product_rounds_in_f32(engine):
    """A scale_adjust that is not a power of two: s_src * scale_adjust is
    rounded to f32 before it multiplies the source."""
    rng = np.random.default_rng(5)
    run_case(engine, OIHW_DIMS, "oihw", "OIhw16i16o", BOTH, rng, scale_adjust=0.3,
             src_scale=oc_scales(OIHW_DIMS, 1, rng))
    run_case(engine, OIHW_DIMS, "oihw", "OIhw16i16o", {"s8s8": 1}, rng, scale_adjust=0.7,
             src_scale=(np.array([1.3], np.float32), 0))


@pytest.mark.parametrize("dst_tag,masks", [
    ("OIhw16i16o", {"s8s8": 0b10}),             # I, padded 3 -> 16
    ("oihw", {"s8s8": 0b11, "zp": 0b1}),        # two masks of their own
    ("OIhw4i16o4i", {"zp": 0b1100}),            # the spatial dims
    ("OIhw16i16o", {"s8s8": 0b1111}),           # every dim: sum of one weight
], ids=["I", "OI+O", "hw", "all"])
def test_other_masks(engine, dst_tag, masks):
    rng = np.random.default_rng(6)
    run_case(engine, OIHW_DIMS, "oihw", dst_tag, masks, rng)


def test_group_mask_alone(engine):
    rng = np.random.default_rng(7)
    run_case(engine, GOIHW_DIMS, "goihw", "gOIhw16i16o", {"s8s8": 0b1, "zp": 0b10}, rng,
             src_scale=oc_scales(GOIHW_DIMS, 0b10, rng))


def test_unaligned_compensation_offset(engine):
    """15 bytes of weights: the s32 values start at byte 15."""
    rng = np.random.default_rng(8)
    md = cly.MemoryDesc((5, 3, 1, 1), "s8", tag="oihw", extra=extra_of(BOTH))
    assert (md.size, md.compensation_offset) == (15 + 4 * 10, 15)
    run_case(engine, (5, 3, 1, 1), "oihw", "oihw", BOTH, rng, scale_adjust=0.5)


def test_scale_adjust_alone(engine):
    """Extra with scale_adjust and no compensation: scaled weights, no values after them."""
    rng = np.random.default_rng(9)
    md = cly.MemoryDesc(OIHW_DIMS, "s8", tag="OIhw16i16o", extra=cly.Extra(scale_adjust=0.5))
    assert md.compensation_offset is None
    assert md.size == physical_size(OIHW_DIMS, "OIhw16i16o")
    run_case(engine, OIHW_DIMS, "oihw", "OIhw16i16o", {}, rng, scale_adjust=0.5,
             src_scale=oc_scales(OIHW_DIMS, 1, rng))


def test_saturated_weights_give_the_extreme_sums(engine):
    """Every weight -128 (the largest |q|): comp = -128 * -128 * count."""
    dims = (3, 8, 2, 2)
    values = np.full(dims, -1000.0, np.float32)
    run_case(engine, dims, "oihw", "OIhw16i16o", BOTH, None, values=values)


@pytest.mark.parametrize("dst_tag", ["oihw", "OIhw16i16o"])
def test_size_is_data_plus_compensation(dst_tag):
    for dims, masks in [(OIHW_DIMS, {"s8s8": 1}), (OIHW_DIMS, BOTH), ((17, 5, 1, 1), {"zp": 3}),
                        ((33, 16, 3, 3), {"s8s8": 1, "zp": 2})]:
        md = cly.MemoryDesc(dims, "s8", tag=dst_tag, extra=extra_of(masks))
        data = physical_size(dims, dst_tag)
        assert md.size == data + 4 * compensation_count(dims, dst_tag, masks)
        assert md.compensation_offset == data
        assert md.without_extra().size == data


# =============================================================================
# Events and implementations on OpenCL
# =============================================================================

@pytest.mark.opencl_only
def test_returned_event_covers_the_compensation(cl_engine):
    """execute waits for wait_for and returns the event after which the
    compensation is written (read on another queue, ordered by that event alone)."""
    import pyopencl as cl

    rng = np.random.default_rng(10)
    dims = OIHW_DIMS
    values = sample("f32", dims, rng)
    src_md = cly.MemoryDesc(dims, "f32", tag="oihw")
    dst_md = cly.MemoryDesc(dims, "s8", tag="OIhw16i16o", extra=extra_of(BOTH))
    src = cly.Memory(src_md, cl_engine, raw=raw_of(values, "oihw", "f32"))
    dst = cly.Memory(dst_md, cl_engine, raw=np.full(dst_md.size, 0xFF, np.uint8))
    src.raw(), dst.raw()  # both uploaded before the gate
    r = cly.Reorder(src_md, dst_md, engine=cl_engine)
    gate = cl.UserEvent(cl_engine.context)
    event = r.execute(cly.Stream(cl_engine), src, dst, wait_for=[gate])
    assert event.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    other = cl.CommandQueue(cl_engine.context, cl_engine.device)
    got = np.empty(dst_md.size, np.uint8)
    cl.enqueue_copy(other, got, dst.storage, is_blocking=True)
    assert_bytes(got, expected_raw(quantize(values, "f32"), "OIhw16i16o", BOTH))


def test_opencl_never_runs_compensation_on_the_host_fallback(cl_engine):
    """7 dims: no generated kernel, and the host fallback declines extra."""
    dims = (2, 1, 1, 1, 1, 1, 3)
    src_md = cly.MemoryDesc(dims, "f32")
    dst_md = cly.MemoryDesc(dims, "s8", extra=cly.Extra(compensation_mask=1))
    with pytest.raises(cly.UnimplementedError,
                       match="compensation runs in the generated kernels or on the host engine"):
        cly.Reorder(src_md, dst_md, engine=cl_engine)
    # The host engine serves it.
    rng = np.random.default_rng(11)
    run_case(cly.Engine("host"), dims, "abcdefg", "abcdefg", {"s8s8": 1}, rng)


# =============================================================================
# Bad inputs
# =============================================================================

W_SRC = cly.MemoryDesc(OIHW_DIMS, "f32", tag="oihw")
W_DST = cly.MemoryDesc(OIHW_DIMS, "s8", tag="OIhw16i16o", extra=cly.Extra(compensation_mask=1))


@pytest.mark.parametrize("attr,match", [
    (cly.Attr(sum_beta=1.0), "sum post-op"),
    (cly.Attr(dst_zero_points=1), "dst_zero_points"),
], ids=["sum", "dst_zp"])
def test_rejected_attributes(host_engine, attr, match):
    with pytest.raises(cly.InvalidArgumentError, match=match):
        cly.Reorder(W_SRC, W_DST, engine=host_engine, attr=attr)


def test_rejected_source_with_extra(host_engine):
    with pytest.raises(cly.InvalidArgumentError, match="source descriptor cannot have extra"):
        cly.Reorder(W_DST, W_DST.without_extra(), engine=host_engine)


def test_rejected_shuffle_with_extra(host_engine):
    with pytest.raises(cly.InvalidArgumentError, match="extra"):
        cly.Shuffle(W_DST, axis=0, group_size=4, engine=host_engine)
    with pytest.raises(cly.InvalidArgumentError, match="only a reorder writes compensation"):
        cly.Shuffle(W_DST.without_extra(), axis=0, group_size=4, engine=host_engine,
                    dst_md=W_DST)


def test_rejected_masks_and_types():
    with pytest.raises(cly.InvalidArgumentError, match="beyond"):
        cly.MemoryDesc(OIHW_DIMS, "s8", tag="oihw", extra=cly.Extra(compensation_mask=0b10000))
    with pytest.raises(cly.InvalidArgumentError, match="beyond"):
        cly.MemoryDesc(OIHW_DIMS, "s8", tag="oihw",
                       extra=cly.Extra(asymm_compensation_mask=0b100000))
    with pytest.raises(cly.InvalidArgumentError, match="s8"):
        cly.MemoryDesc(OIHW_DIMS, "u8", tag="oihw", extra=cly.Extra(compensation_mask=1))


@pytest.mark.parametrize("kind,limit", [("s8s8", (2**31 - 1) // (128 * 128)),
                                        ("zp", (2**31 - 1) // 128)])
def test_sums_that_could_overflow_s32_are_rejected(host_engine, kind, limit):
    """|sum| <= 128 * count: s8s8 allows count <= 131071, zp count <= 16777215."""
    def reorder(count):
        dims = (2, count)
        dst = cly.MemoryDesc(dims, "s8", extra=extra_of({kind: 1}))
        return cly.Reorder(cly.MemoryDesc(dims, "f32"), dst, engine=host_engine)

    reorder(limit)  # accepted
    with pytest.raises(cly.InvalidArgumentError, match="overflow s32"):
        reorder(limit + 1)


def test_overflow_limit_is_tight(host_engine):
    """At the s8s8 limit with every weight -128 the value is exactly representable."""
    count = (2**31 - 1) // (128 * 128)
    assert 128 * 128 * count <= 2**31 - 1 < 128 * 128 * (count + 1)
    dims = (1, count)
    values = np.full(dims, -500.0, np.float32)
    run_case(host_engine, dims, "ab", "ab", {"s8s8": 1}, None, values=values)
