"""The Reorder API: errors that name what is wrong, the one-call form, reuse
of one primitive, chaining on a stream and the kernel cache."""
import re

import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
from reference import assert_same, logical_of, per_slice, ref_reorder, round_float, sample_values
from reorder_runs import execute, prefilled, src_memory

ATTR_DIMS = (2, 3, 4, 5)  # distinct sizes: a wrong count of values shows

# =============================================================================
# Errors
# =============================================================================

def _raises(fn, *needles):
    with pytest.raises(cly.InvalidArgumentError) as info:
        fn()
    assert isinstance(info.value, ValueError)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {str(info.value)!r}"


def test_error_dims_mismatch(engine):
    a = cly.MemoryDesc((2, 3, 4), "f32")
    b = cly.MemoryDesc((2, 4, 3), "f32")
    _raises(lambda: cly.Reorder(a, b, engine=engine), "(2, 3, 4)", "(2, 4, 3)")


def test_error_scales_mask_beyond_ndims(engine):
    md = cly.MemoryDesc(ATTR_DIMS, "f32")
    dst = cly.MemoryDesc(ATTR_DIMS, "s8")
    attr = cly.Attr(src_scales=cly.Scales(np.ones(4, np.float32), mask=0b10000))
    _raises(lambda: cly.Reorder(md, dst, engine=engine, attr=attr), "0b10000")
    attr = cly.Attr(dst_zero_points=cly.ZeroPoints([1, 2], mask=0b100000))
    _raises(lambda: cly.Reorder(md, dst, engine=engine, attr=attr), "0b100000")


def test_error_wrong_count_of_scale_values(engine):
    md = cly.MemoryDesc(ATTR_DIMS, "f32")
    dst = cly.MemoryDesc(ATTR_DIMS, "s8")
    attr = cly.Attr(dst_scales=cly.Scales(np.ones(7, np.float32), mask=0b0110))
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Reorder(md, dst, engine=engine, attr=attr)
    message = str(info.value)
    assert re.search(r"\b7\b", message) and re.search(r"\b12\b", message), message
    attr = cly.Attr(src_zero_points=cly.ZeroPoints([1, 2, 3], mask=0b0001))
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.Reorder(cly.MemoryDesc(ATTR_DIMS, "s8"), dst, engine=engine, attr=attr)
    assert re.search(r"\b3\b", str(info.value)) and re.search(r"\b2\b", str(info.value))


@pytest.mark.parametrize("sdt, ddt, which", [("f32", "s8", "src"), ("s8", "f16", "dst"),
                                             ("bf16", "u8", "src"), ("u8", "f32", "dst")])
def test_error_zero_point_on_a_float_type(engine, sdt, ddt, which):
    a = cly.MemoryDesc(ATTR_DIMS, sdt)
    b = cly.MemoryDesc(ATTR_DIMS, ddt)
    attr = cly.Attr(**{f"{which}_zero_points": 3})
    _raises(lambda: cly.Reorder(a, b, engine=engine, attr=attr), sdt if which == "src" else ddt)


def test_error_memory_not_matching_the_primitive(engine):
    a = cly.MemoryDesc(ATTR_DIMS, "f32", tag="abcd")
    b = cly.MemoryDesc(ATTR_DIMS, "s8", tag="acdb")
    wrong_dst = cly.MemoryDesc(ATTR_DIMS, "s8", tag="abcd")
    wrong_src = cly.MemoryDesc(ATTR_DIMS, "f16", tag="abcd")
    r = cly.Reorder(a, b, engine=engine)
    s = cly.Stream(engine)
    src, dst = cly.Memory(a, engine), cly.Memory(b, engine)
    _raises(lambda: r.execute(s, src, cly.Memory(wrong_dst, engine)), repr(wrong_dst))
    _raises(lambda: r.execute(s, cly.Memory(wrong_src, engine), dst), repr(wrong_src))
    r.execute(s, src, dst)  # the right ones still work
    s.wait()


def test_error_memory_on_another_engine(host_engine, cl_engine):
    md = cly.MemoryDesc((2, 3), "f32")
    r = cly.Reorder(md, md, engine=cl_engine)
    on_host = cly.Memory(md, host_engine)
    _raises(lambda: r.execute(cly.Stream(cl_engine), on_host, cly.Memory(md, cl_engine)),
            repr(host_engine))
    # (cly.reorder across engines is a cross-engine reorder: tests/test_cross_engine.py)


# =============================================================================
# Execution: one-call form, reuse, kernel cache
# =============================================================================

def test_one_call_form_and_reuse(engine):
    dims = (3, 10, 2, 2)
    rng = np.random.default_rng(20)
    src_md = cly.MemoryDesc(dims, "bf16", tag="abcd")
    dst_md = cly.MemoryDesc(dims, "u8", tag="aBcd8b")
    attr = cly.Attr(src_scales=cly.Scales(rng.uniform(0.5, 2, 10).astype(np.float32), 0b10),
                    dst_zero_points=7)
    r = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    s = cly.Stream(engine)
    for seed in range(2):  # one primitive, two pairs of memories
        values = sample_values("bf16", dims, np.random.default_rng(seed + 30))
        _, src = src_memory(engine, dims, "bf16", "abcd", values)
        dst, dst2 = prefilled(dst_md, engine), prefilled(dst_md, engine)
        r.execute(s, src, dst)
        s.wait()
        cly.reorder(src, dst2, attr=attr)
        want, pre = ref_reorder(values, "bf16", "u8", src_scale=per_slice(
            attr.src_scales.values, 0b10, dims), dst_zp=np.int32(7))
        for mem in (dst, dst2):
            assert_same(logical_of(mem.raw(), dims, "aBcd8b", "u8"), want, src=values, pre=pre,
                        quantized=True)


def test_chained_reorders_on_one_stream(engine):
    # f32 -> bf16 (blocked) -> f32, enqueued back to back, the second waiting on the first.
    dims = (2, 11, 3, 2)
    values = sample_values("f32", dims, np.random.default_rng(23))
    a_md, a = src_memory(engine, dims, "f32", "abcd", values)
    b_md = cly.MemoryDesc(dims, "bf16", tag="aBcd8b")
    c_md = cly.MemoryDesc(dims, "f32", tag="acdb")
    b, c = prefilled(b_md, engine), prefilled(c_md, engine)
    s = cly.Stream(engine)
    ev = cly.Reorder(a_md, b_md, engine=engine).execute(s, a, b)
    cly.Reorder(b_md, c_md, engine=engine).execute(s, b, c, wait_for=[ev] if ev else None)
    s.wait()
    want = round_float(values, "bf16").astype(np.float32)
    assert_same(logical_of(c.raw(), dims, "acdb", "f32"), want, src=values, any_nan=True)


def test_second_reorder_builds_nothing(cl_engine):
    b = cly.kernel_cache
    dims = (9, 5, 7, 11)  # no other test uses these dims

    def run_once(scale):
        src_md = cly.MemoryDesc(dims, "f32", tag="abcd")
        dst_md = cly.MemoryDesc(dims, "s8", tag="aBcd8b")
        values = sample_values("f32", dims, np.random.default_rng(21))
        _, src = src_memory(cl_engine, dims, "f32", "abcd", values)
        dst = prefilled(dst_md, cl_engine)
        r = execute(cl_engine, src_md, dst_md, src, dst, attr=cly.Attr(src_scales=scale))
        assert r.impl == DEVICE_IMPL + "generated"
        want, pre = ref_reorder(values, "f32", "s8", src_scale=np.float32(scale))
        assert_same(logical_of(dst.raw(), dims, "aBcd8b", "s8"), want, src=values, pre=pre,
                    quantized=True)

    before = b.builds
    run_once(0.5)
    assert b.builds == before + 1
    n = b.builds
    run_once(0.5)
    run_once(3.25)  # other values, same mask: the same kernel
    assert b.builds == n
