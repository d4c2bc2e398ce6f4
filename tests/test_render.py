"""Kernel plans and rendering need no device: the choices they make, and the
rendered kernels of the benchmark cases against reviewed golden files."""
import dataclasses
import os
import pathlib

import numpy as np
import pytest
import reference

import clayout as cly
from clayout.attr import Attr
from clayout.gpu.plan_types import dim_offset, offset_terms
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE, GPU_PROFILE
from clayout.gpu.render import render_kernel, render_template
from clayout.problem import Problem

GOLDEN = pathlib.Path(__file__).parent / "golden"
#: The CPU strategy without unrolled blocks (gpu/plan_unrolled.py).
NO_UNROLL = dataclasses.replace(CPU_PROFILE, tuning=dataclasses.replace(CPU_PROFILE.tuning,
                                                                       unroll_elements=1))


def plan_of(src_md, dst_md, attr=None, shuffle=None, kind=None, profile=CPU_PROFILE):
    kind = kind or ("shuffle" if shuffle else "reorder")
    return plan_kernel(Problem(kind, src_md, dst_md, attr, shuffle), profile)


def source(src_md, dst_md, attr=None, shuffle=None):
    plan = plan_of(src_md, dst_md, attr, shuffle)
    return plan, render_kernel(plan)


def md(dims, dt, tag):
    return cly.MemoryDesc(dims, dt, tag=tag)


ACT = (8, 256, 56, 56)
PER_CHANNEL = Attr(src_scales=cly.Scales([1.0] * 256, mask=0b10))
#: The benchmark cases (benchmarks/bench_reorder.py, bench_shuffle.py).
GOLDEN_CASES = {
    "reorder_f32_nchw_to_nhwc": (md(ACT, "f32", "nchw"), md(ACT, "f32", "nhwc"), None, None),
    "reorder_f32_nhwc_to_nchw": (md(ACT, "f32", "nhwc"), md(ACT, "f32", "nchw"), None, None),
    "reorder_f32_nchw_to_nChw16c": (md(ACT, "f32", "nchw"), md(ACT, "f32", "nChw16c"), None,
                                    None),
    "reorder_bf16_nhwc_to_nchw": (md(ACT, "bf16", "nhwc"), md(ACT, "bf16", "nchw"), None, None),
    "reorder_f32_to_s8_scale": (md(ACT, "f32", "nchw"), md(ACT, "s8", "nchw"),
                                Attr(src_scales=0.5), None),
    "reorder_f32_nchw_to_s8_nChw16c_per_channel": (md(ACT, "f32", "nchw"),
                                                   md(ACT, "s8", "nChw16c"), PER_CHANNEL, None),
    "reorder_s8_nChw16c_to_f32_nchw_per_channel": (md(ACT, "s8", "nChw16c"),
                                                   md(ACT, "f32", "nchw"), PER_CHANNEL, None),
    "reorder_f32_oihw_to_OIhw4i16o4i": (md((256, 256, 3, 3), "f32", "oihw"),
                                        md((256, 256, 3, 3), "f32", "OIhw4i16o4i"), None, None),
    "shuffle_g4_f32_nChw16c_C272": (md((1, 272, 56, 56), "f32", "nChw16c"),
                                    md((1, 272, 56, 56), "f32", "nChw16c"), None, (1, 4)),
    "reorder_f32_to_f16": (md(ACT, "f32", "nchw"), md(ACT, "f16", "nchw"), None, None),
}


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_rendered_kernels_match_the_golden_files(name, strategy):
    """A change to a rendered kernel shows here as a diff to review; set
    CLAYOUT_UPDATE_GOLDEN=1 to write the new files after reading it. The
    GPU strategy's kernels (planned for the stand-in GPU profile) are in
    golden/gpu/."""
    profile = GPU_PROFILE if strategy == "gpu" else CPU_PROFILE
    code = render_kernel(plan_of(*GOLDEN_CASES[name], profile=profile))
    path = GOLDEN / ("gpu" if strategy == "gpu" else "") / f"{name}.cl"
    if os.environ.get("CLAYOUT_UPDATE_GOLDEN"):
        path.write_text(code)
    assert path.exists(), f"{path} is missing: render it with CLAYOUT_UPDATE_GOLDEN=1"
    assert code == path.read_text()


@pytest.mark.parametrize("tag, dims", [
    ("nchw", (2, 17, 3, 5)), ("nChw16c", (2, 17, 3, 5)), ("OIhw4i16o4i", (32, 17, 3, 3)),
    ("Goihw16g", (32, 3, 5, 3, 3)), ("ABcd4b16a4b", (16, 40, 2, 2)), ("acdb", (3, 4, 5, 6)),
])
def test_offset_terms_sum_to_the_reference_offsets(tag, dims):
    """The offset terms kernels are built from give the independent
    reference's offset for every element, and the descriptor's own for a
    submemory (padded offsets)."""
    whole = md(dims, "f32", tag)
    got = np.zeros(dims, dtype=np.int64)
    for d in range(len(dims)):
        shape = [1] * len(dims)
        shape[d] = dims[d]
        got += np.array([dim_offset(whole, d, i) for i in range(dims[d])]).reshape(shape)
    assert np.array_equal(got, reference.element_offsets(dims, tag))
    sub = whole.submemory(dims[:-1] + (dims[-1] - 1,), (0,) * (len(dims) - 1) + (1,))
    for d in range(sub.ndims):
        assert [dim_offset(sub, d, i) for i in range(sub.dims[d])] == \
            [int(sub.dim_offsets(d, i)) for i in range(sub.dims[d])]


def test_offset_terms_drop_what_is_always_zero():
    blocked = md((2, 16, 3, 5), "f32", "nChw16c")  # one block of 16 channels
    terms = offset_terms(blocked, 1)
    assert len(terms) == 1 and terms[0].modulus is None and terms[0].stride == 1


def test_plain_conversion_is_one_loop_of_vectors():
    m = md((4, 64, 8, 8), "f32", "nchw")
    plan, code = source(m, md(m.dims, "s8", "nchw"), Attr(src_scales=0.5))
    assert len(plan.levels) == 1 and plan.vector and plan.vec == 16
    assert "vload16(0, src + s_off)" in code and "convert_char16(as_int16(clamp(" in code
    assert "const float src_scale" in code


def test_transpose_copies_blocks_through_registers():
    src = md((2, 64, 8, 8), "f32", "nhwc")
    plan, code = source(src, md(src.dims, "f32", "nchw"))
    assert plan.block in (4, 8, 16)
    assert code.count(f"vload{plan.block}(") == plan.block
    assert code.count(f"vstore{plan.block}(") == plan.block


def test_quantizing_into_blocks_converts_the_transposed_rows():
    src = md((2, 32, 8, 8), "f32", "nchw")
    plan, code = source(src, md(src.dims, "s8", "nChw16c"),
                        Attr(src_scales=cly.Scales([1.0] * 32, mask=0b10)))
    # 16 rows of 16 bytes (one scale each), zipped in registers, stored whole.
    assert plan.block == 16 and code.count("src_scales[i1]") == 16
    assert code.count("*(__global char16 *)(dst + ") == 16


def test_padding_is_written_with_zeros():
    src = md((2, 17, 3, 3), "f32", "nchw")
    _, code = source(src, md(src.dims, "f32", "nChw16c"))
    assert "if (i1 >= 17u)" in code and "dst[d_off] = 0;" in code


def test_per_channel_scales_index_a_buffer():
    m = md((2, 8, 3, 5), "f32", "nhwc")
    attr = Attr(src_scales=cly.Scales([1.0] * 8, mask=0b10))
    _, code = source(m, md(m.dims, "u8", "nchw"), attr)
    assert "__global const float *restrict src_scales" in code and "src_scales[i1]" in code


def test_shuffle_permutes_the_source_index_once():
    """Element by element (the shape without unrolled blocks) the shuffled
    index is worked out once; in an unrolled block it is in the constants
    (destination channels 0-3 read source channels 0, 3, 6 and 9: the
    last two in the next blocks of 4 channels, 64 bytes a block)."""
    m = md((2, 12, 4, 4), "s8", "nChw4c")
    plan = plan_of(m, m, shuffle=(1, 3), profile=NO_UNROLL)
    code = render_kernel(plan)
    assert code.count("(i1 % 4u) * 3u + i1 / 4u") == 1 and "c1 / 4u" in code
    plan, code = source(m, m, shuffle=(1, 3))
    assert plan.unrolled and "%" not in code[code.index("d_base = "):]
    # (offsets 0, 3, 66 and 129 are lanes of the 16-byte source lines the
    # block reads whole)
    assert "(line0.s0, line0.s3, line4.s2, line8.s1," in code
    assert "const char16 line8 = vload16(0, src + s_base + 128u);" in code


def test_long_runs_step_the_other_loops_in_the_source_order():
    """Where the destination's innermost loop is a run contiguous in the
    source too and at least Tuning.source_order_bytes long (a plane of nchw
    shuffled along c), the CPU strategy's work-items step the other loops
    in the source's order; shorter runs keep the destination's."""
    from clayout.gpu.plan_common import source_step

    def order(plan):
        return [source_step(plan.src_md, plan.levels[j]) for j in plan.fastest]

    m = md((8, 256, 56, 56), "f32", "nchw")
    plan = plan_of(m, m, shuffle=(1, 4))
    assert plan.shape == "runs" and order(plan) == sorted(order(plan))
    assert plan.fastest != tuple(range(len(plan.levels) - 1, -1, -1))
    for least, in_source_order in ((4 * 3136, True), (4 * 3136 + 4, False)):  # (a plane)
        tuning = dataclasses.replace(CPU_PROFILE.tuning, source_order_bytes=least)
        other = plan_of(m, m, shuffle=(1, 4), profile=dataclasses.replace(CPU_PROFILE,
                                                                         tuning=tuning))
        assert (other.fastest == plan.fastest) == in_source_order
    short = plan_of(md((64, 64, 64, 16), "f32", "abcd"), md((64, 64, 64, 16), "f32", "acbd"))
    assert short.shape == "runs"
    assert short.fastest == tuple(range(len(short.levels) - 1, -1, -1))


@pytest.mark.parametrize("strides, typed", [((11184, 260), False), ((11360, 264), True)])
def test_a_tiled_read_is_typed_only_where_every_vector_starts_on_its_size(strides, typed):
    """A tile's source row over a blocked dim crosses its blocks: with
    blocks 260 f16 apart (520 bytes), vectors of 8 start off 16 bytes in
    every other block. Loaded as typed vectors, PoCL faulted on them
    (sweep seed 5204, problem 1000624); blocks 264 apart keep them whole."""
    parent = cly.MemoryDesc((289, 680), "f16", tag="AB16b16a", strides=strides)
    src_md = parent.submemory((240, 680), (32, 0))
    attr = Attr(dst_zero_points=cly.ZeroPoints([4], mask=0))
    plan = plan_of(src_md, md((240, 680), "s8", "ab"), attr, profile=GPU_PROFILE)
    assert plan.tile is not None and plan.tile.read.vec == 8
    assert plan.tile.read.typed == typed


def test_same_type_without_attributes_is_a_bit_copy():
    m = md((3, 5, 7), "f16", "acb")
    _, code = source(m, md(m.dims, "f16", "abc"))
    assert "dst[d_off] = src[s_off];" in code and "half" not in code


def test_huge_tensors_get_64_bit_offsets():
    big = (3, 1024, 1024, 1024)  # 3 Gi elements: more than 2^31
    plan, code = source(md(big, "s8", "nchw"), md(big, "s8", "nhwc"))
    assert plan.wide_index and "const ulong item" in code and "UL" in code
    small = (3, 16, 16, 16)
    plan, code = source(md(small, "s8", "nchw"), md(small, "s8", "nhwc"))
    assert not plan.wide_index and "const uint item" in code and "UL" not in code


def test_huge_tiled_transposes_keep_32_bit_positions_in_the_box():
    """Past 2^31 elements the offsets and loop indices are 64-bit; the
    positions inside a box (lane, row, column) stay 32-bit."""
    big = (3, 1024, 1024, 1024)
    plan = plan_of(md(big, "s8", "nchw"), md(big, "s8", "nhwc"), profile=GPU_PROFILE)
    code = render_kernel(plan)
    assert plan.tile is not None and plan.wide_index
    assert "const ulong s_off" in code and "const ulong d_off" in code and "ulong box" in code
    assert "for (uint r = lane;" in code and "const uint j" in code


def test_big_launches_on_a_gpu_profile_loop_over_items():
    big = (8, 256, 56, 56)
    problem = Problem("reorder", md(big, "f32", "nchw"), md(big, "f16", "nchw"))
    gpu = plan_kernel(problem, CPU_PROFILE.with_strategy("gpu"))
    assert gpu.chunks > 1 and gpu.launch_items * gpu.chunks >= gpu.items
    assert f"get_global_id(0) + chunk * {gpu.launch_items}u" in render_kernel(gpu)
    # On PoCL, items spaced by the global size measured 2x slower: one each.
    assert plan_kernel(problem, CPU_PROFILE).chunks == 1


def test_f64_enables_the_extension_and_computes_in_double():
    m = cly.MemoryDesc((4, 4), "f64")
    plan, code = source(m, cly.MemoryDesc((4, 4), "bf16"), Attr(src_scales=2.0))
    assert plan.compute == "double"
    assert "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" in code and "double_to_bf16" in code


def test_the_strategy_is_part_of_the_kernel_key():
    m = md((4, 8), "f32", "ab")
    problem = Problem("reorder", m, md((4, 8), "f32", "ba"))
    cpu = plan_kernel(problem, CPU_PROFILE)
    gpu = plan_kernel(problem, CPU_PROFILE.with_strategy("gpu"))
    assert cpu.strategy == "cpu" and gpu.strategy == "gpu" and cpu != gpu
    assert hash(cpu) == hash(plan_kernel(problem, CPU_PROFILE))


def test_a_render_error_names_the_template_and_values():
    with pytest.raises(RuntimeError) as info:
        render_template("reorder.cl.mako", kind="reorder")
    assert "reorder.cl.mako" in str(info.value) and "kind = 'reorder'" in str(info.value)


def test_unserved_types_are_refused_by_the_renderer(monkeypatch):
    # Every type has kernels now (e8m0 the last): take one away to see the guard.
    from clayout.gpu import render
    monkeypatch.delitem(render.STORAGE, "e8m0")
    m = cly.MemoryDesc((4,), "e8m0")
    with pytest.raises(cly.UnimplementedError, match="e8m0"):
        render_kernel(plan_of(m, cly.MemoryDesc((4,), "f32")))
