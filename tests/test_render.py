"""Kernel plans and rendering need no device: the choices they make, read from the source."""
import pytest

import clayout as cly
from clayout.attr import Attr
from clayout.gpu.plan import plan_kernel
from clayout.gpu.render import render_kernel, render_template


def source(src_md, dst_md, attr=None, shuffle=None):
    plan = plan_kernel(src_md, dst_md, attr, shuffle)
    return plan, render_kernel(plan)[0]


def test_plain_conversion_is_one_loop_of_vectors():
    md = cly.MemoryDesc((4, 64, 8, 8), "f32", tag="nchw")
    plan, code = source(md, cly.MemoryDesc(md.dims, "s8", tag="nchw"), Attr(src_scales=0.5))
    assert len(plan.levels) == 1 and plan.vector and plan.vec == 16
    assert "vload16(0, src + s_off)" in code and "convert_char16(as_int16(clamp(" in code
    assert "const float src_scale" in code


def test_transpose_copies_blocks_through_registers():
    src = cly.MemoryDesc((2, 64, 8, 8), "f32", tag="nhwc")
    plan, code = source(src, cly.MemoryDesc(src.dims, "f32", tag="nchw"))
    assert plan.block in (4, 8)
    assert code.count(f"vload{plan.block}(") == plan.block
    assert code.count(f"vstore{plan.block}(") == plan.block


def test_padding_is_written_with_zeros():
    src = cly.MemoryDesc((2, 17, 3, 3), "f32", tag="nchw")
    _, code = source(src, cly.MemoryDesc(src.dims, "f32", tag="nChw16c"))
    assert "if (i1 >= 17u)" in code and "dst[d_off] = 0;" in code


def test_per_channel_scales_index_a_buffer():
    md = cly.MemoryDesc((2, 8, 3, 5), "f32", tag="nhwc")
    attr = Attr(src_scales=cly.Scales([1.0] * 8, mask=0b10))
    _, code = source(md, cly.MemoryDesc(md.dims, "u8", tag="nchw"), attr)
    assert "__global const float *restrict src_scales" in code and "src_scales[i1]" in code


def test_shuffle_permutes_the_source_index():
    md = cly.MemoryDesc((2, 12, 4, 4), "s8", tag="nchw")
    _, code = source(md, md, shuffle=(1, 3))
    assert "(i1 % 4u) * 3u + i1 / 4u" in code


def test_same_type_without_attributes_is_a_bit_copy():
    md = cly.MemoryDesc((3, 5, 7), "f16", tag="acb")
    _, code = source(md, cly.MemoryDesc(md.dims, "f16", tag="abc"))
    assert "dst[d_off] = src[s_off];" in code and "half" not in code


def test_huge_tensors_get_64_bit_offsets():
    big = (3, 1024, 1024, 1024)  # 3 Gi elements: more than 2^31
    plan, code = source(cly.MemoryDesc(big, "s8", tag="nchw"), cly.MemoryDesc(big, "s8", tag="nhwc"))
    assert plan.wide_index and "const ulong item" in code
    small = (3, 16, 16, 16)
    plan, code = source(cly.MemoryDesc(small, "s8", tag="nchw"),
                        cly.MemoryDesc(small, "s8", tag="nhwc"))
    assert not plan.wide_index and "const uint item" in code


def test_f64_enables_the_extension_and_computes_in_double():
    md = cly.MemoryDesc((4, 4), "f64")
    plan, code = source(md, cly.MemoryDesc((4, 4), "bf16"), Attr(src_scales=2.0))
    assert plan.compute == "double"
    assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in code and "double_to_bf16" in code


def test_a_render_error_names_the_template_and_values():
    with pytest.raises(RuntimeError) as info:
        render_template("reorder.cl.mako", kind="reorder")
    assert "reorder.cl.mako" in str(info.value) and "kind = 'reorder'" in str(info.value)


def test_unserved_types_are_refused_by_the_renderer():
    md = cly.MemoryDesc((4,), "f8_e5m2")
    with pytest.raises(cly.UnimplementedError, match="f8_e5m2"):
        render_kernel(plan_kernel(md, cly.MemoryDesc((4,), "f32"), None))
