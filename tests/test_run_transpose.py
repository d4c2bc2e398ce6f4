"""The run transposes (issue 36, gpu/plan_run_transpose.py): BxB register
transposes over a run of the source gathered from several loops (oihw's hw
and i: 144 floats in one piece) against one of the destination (OIhw16i16o's
16 o). Each case checks that the CPU strategy planned a run transpose (else
the shape went untested), then the result against tests/reference.py: bit
for bit without attributes, padding zero; and the problems the shape must
leave to the unrolled blocks."""
import dataclasses
import re

import numpy as np
import pytest

import clayout as cly
from clayout.gpu.plan import plan_kernel
from clayout.gpu.profile import CPU_PROFILE
from clayout.gpu.render import render_kernel
from clayout.problem import Problem
from conftest import _engine_with_strategy
from reference import assert_padding_zero, assert_same, is_int, logical_of, ref_reorder, \
    sample_values
from reorder_runs import prefilled, src_memory

#: dims, src tag, dst tag, the tile's B
MOVES = [
    ((64, 48, 3, 3), "oihw", "OIhw16i16o", 16),     # rows o, columns hw x i = 144
    ((64, 48, 3, 3), "OIhw16i16o", "oihw", 16),     # rows hw x i, columns o
    ((64, 48, 3, 3), "oihw", "OIhw8i8o", 8),
    ((48, 64, 3, 3), "OIhw8i8o", "oihw", 8),
    ((64, 48, 3), "oiw", "OIw16i16o", 16),
    ((32, 32, 3, 3, 3), "oidhw", "OIdhw16i16o", 8),  # 27 x 16: B=8 keeps the block in bounds
    ((2, 32, 48, 3, 3), "goihw", "gOIhw16i16o", 16),
    ((40, 20, 3, 3), "OIhw16i16o", "oihw", 4),       # a padded source: 40 and 20 of 48 and 32
    ((32, 48, 5, 5), "oihw", "OIhw16i16o", 8),       # 16 x 400 past the bound: 8 x 200
    # rows overlapping in the source: i (or o) steps 9, hw holds 9
    ((64, 48, 3, 3), "oihw", "IOhw16o16i", 16),
    ((48, 64, 3, 3), "iohw", "OIhw16i16o", 16),
    ((64, 48, 3), "oiw", "IOw16o16i", 16),           # e = 3: rows 11-15 cut short
]


@pytest.fixture(scope="module")
def cpu_engine(cl_engine):
    """The device with the CPU strategy's plans for a CPU of CPU_PROFILE's
    compute units (these small problems' plans depend on it)."""
    return _engine_with_strategy(cl_engine, "cpu", CPU_PROFILE.compute_units)


def _run(engine, dims, s_tag, sdt, d_tag, ddt, attr=None, shape="run_transpose"):
    values = sample_values(sdt, dims, np.random.default_rng(36), specials=False)
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    dst = prefilled(dst_md, engine)
    primitive = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    stream = cly.Stream(engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    plan = primitive._implementation.plan
    assert plan.shape == shape, f"{s_tag} -> {d_tag} {dims}: {plan.shape} {plan.levels}"
    return values, dst.raw(), plan


@pytest.mark.parametrize("case", MOVES, ids=lambda c: f"{c[1]}->{c[2]}-{'x'.join(map(str, c[0]))}")
def test_weights_move_bit_for_bit(cpu_engine, case):
    dims, s_tag, d_tag, b = case
    values, raw, plan = _run(cpu_engine, dims, s_tag, "f32", d_tag, "f32")
    assert plan.block == b
    want, _ = ref_reorder(values, "f32", "f32")
    assert_same(logical_of(raw, dims, d_tag, "f32"), want, src=values)
    assert_padding_zero(raw, dims, d_tag, "f32")


#: Conversions of whole rows: bf16 both ways, a per-tensor scale into s8
#: (tiles of 16 bytes), saturation.
CONVERSIONS = [
    # dims, src tag, src type, dst tag, dst type, per-tensor scale
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "bf16", None),
    ((64, 48, 3, 3), "OIhw16i16o", "bf16", "oihw", "f32", None),
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "s8", 0.5),
    ((64, 48, 3, 3), "oihw", "s32", "OIhw8i8o", "u8", None),
    ((64, 48, 3, 3), "oihw", "f16", "OIhw16i16o", "f16", None),
    ((64, 48, 3, 3), "oihw", "bf16", "IOhw16o16i", "bf16", None),   # overlapping rows
    ((48, 64, 3, 3), "iohw", "s8", "OIhw16i16o", "s8", None),
]


@pytest.mark.parametrize("case", CONVERSIONS,
                         ids=lambda c: f"{c[2]}:{c[1]}->{c[4]}:{c[3]}-{c[5]}")
def test_weights_convert_as_the_reference_says(cpu_engine, case):
    dims, s_tag, sdt, d_tag, ddt, scale = case
    attr = cly.Attr(src_scales=scale) if scale is not None else None
    kwargs = {"src_scale": np.float32(scale)} if scale is not None else {}
    values, raw, _ = _run(cpu_engine, dims, s_tag, sdt, d_tag, ddt, attr=attr)
    want, pre = ref_reorder(values, sdt, ddt, **kwargs)
    assert_same(logical_of(raw, dims, d_tag, ddt), want, src=values, pre=pre,
                quantized=attr is not None and is_int(ddt))
    assert_padding_zero(raw, dims, d_tag, ddt)


@pytest.mark.parametrize("dims, s_tag, sdt, d_tag, ddt, attr", [
    # the destination's padding (3 input channels of 16) is tested per element
    ((32, 3, 3, 3), "oihw", "f32", "OIhw16i16o", "f32", None),
    # no run of the destination's loops completes 4: i4 is in the source's run
    ((64, 48, 3, 3), "oihw", "f32", "OIhw4i16o4i", "f32", None),
    # per-output-channel scales: each row its own value
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "f32", "per-channel"),
    # per-group scales: a dim outside both runs, but the tiles take none
    ((2, 32, 48, 3, 3), "goihw", "f32", "gOIhw16i16o", "f32", "per-group"),
    # overlapping rows, converted: the rows cut short would need each
    # type's own partial load
    ((64, 48, 3, 3), "oihw", "f32", "IOhw16o16i", "bf16", None),
    # hw of 5x5 (25) holds more than a tile's 16, 3x3 (9) more than 8
    ((64, 48, 5, 5), "oihw", "f32", "IOhw16o16i", "f32", None),
    ((64, 48, 3, 3), "oihw", "f32", "IOhw8o8i", "f32", None),
    # a sum reads the old destination
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "f32", "sum"),
])
def test_the_shape_leaves_what_it_does_not_serve(dims, s_tag, sdt, d_tag, ddt, attr):
    if attr == "per-channel":
        attr = cly.Attr(dst_scales=cly.Scales(np.ones(dims[0], np.float32), mask=1))
    elif attr == "per-group":
        attr = cly.Attr(src_scales=cly.Scales(np.ones(dims[0], np.float32), mask=1))
    elif attr == "sum":
        attr = cly.Attr(sum_beta=0.5)
    problem = Problem("reorder", cly.MemoryDesc(dims, sdt, tag=s_tag),
                      cly.MemoryDesc(dims, ddt, tag=d_tag), attr)
    assert plan_kernel(problem, CPU_PROFILE).shape == "unrolled"


def test_the_tiles_are_whole_vectors_at_constant_offsets():
    """oihw -> OIhw16i16o 256x256x3x3: a work-item per 16 o x 16 i, nine
    tiles: 144 loads and 144 stores of 16 floats, no scalar access, no
    division past the work-item's own."""
    dims = (256, 256, 3, 3)
    problem = Problem("reorder", cly.MemoryDesc(dims, "f32", tag="oihw"),
                      cly.MemoryDesc(dims, "f32", tag="OIhw16i16o"))
    plan = plan_kernel(problem, CPU_PROFILE)
    code = render_kernel(plan)
    body = re.sub(r"//.*", "", code[code.index("d_base = "):])  # (comments out)
    assert plan.shape == "run_transpose" and plan.items == 256 and plan.item_elements == 2304
    assert body.count("vload16(0, src + s_off)") == 144 and body.count("vstore16(") == 144
    assert "src[" not in body and "/" not in body and "%" not in body
    # 256 heavy work-items: work-groups of 16, 8 a compute unit (one group
    # of 256 ran on one core, PoCL's and Intel's runtime alike)
    assert plan.work_group == 256 // (8 * CPU_PROFILE.compute_units)


@pytest.mark.parametrize("dims, s_tag, d_tag, ddt, typed", [
    ((64, 48, 3, 3), "oihw", "OIhw16i16o", "bf16", True),    # columns 16 apart
    ((48, 20, 3, 3), "OIhw16i16o", "oihw", "s8", True),      # tiles of 4, o 180 apart
    ((64, 48, 3, 3), "oihw", "OIhw16i16o", "f32", False),    # 4-byte elements store whole
])
def test_narrow_columns_store_typed_where_every_one_is_aligned(dims, s_tag, d_tag, ddt, typed):
    """PoCL splits vstore16 of 2-byte elements into 16 stores: a typed store
    where the plan proves every column starts on its size."""
    problem = Problem("reorder", cly.MemoryDesc(dims, "f32", tag=s_tag),
                      cly.MemoryDesc(dims, ddt, tag=d_tag))
    plan = plan_kernel(problem, CPU_PROFILE)
    code = render_kernel(plan)
    assert plan.shape == "run_transpose" and plan.typed_store == typed
    assert ("vstore" not in code) == typed and ("*(__global" in code) == typed


def test_a_column_off_its_size_stores_untyped_and_exact(cpu_engine):
    """Into the first 32 input channels of an oihw bf16 tensor of 33: the
    columns (o) lie 297 elements apart, so the stores stay vstore16 (the
    rest of the offset, the outer steps 4752 and 144, would allow typed)."""
    dims = (48, 32, 3, 3)
    values = sample_values("f32", dims, np.random.default_rng(5), specials=False)
    src_md, src = src_memory(cpu_engine, dims, "f32", "OIhw16i16o", values)
    parent = cly.MemoryDesc((48, 33, 3, 3), "bf16", tag="oihw")
    dst = prefilled(parent, cpu_engine)
    sub = parent.submemory(dims, (0, 0, 0, 0))
    primitive = cly.Reorder(src_md, sub, engine=cpu_engine)
    stream = cly.Stream(cpu_engine)
    primitive.execute(stream, src, cly.Memory(sub, cpu_engine, buffer=dst))
    stream.wait()
    plan = primitive._implementation.plan
    assert plan.shape == "run_transpose" and not plan.typed_store
    raw = dst.raw().view(np.uint16).reshape(48, 33, 3, 3)
    want, _ = ref_reorder(values, "f32", "bf16")
    assert_same(raw[:, :32].copy().view(want.dtype), want, src=values)
    assert (raw[:, 32] == 0xABAB).all()  # (the channel outside stays as it was)


def test_overlapping_rows_read_no_element_past_the_block():
    """oihw -> IOhw16o16i: each row i loads 16 floats from i x 9, the next
    row's first 7 with its own 9; the last row loads its 9 as 8 + 1, so
    the block's last load ends on its last element (the buffer's, at the
    last block). oiw (3 a row): rows 11-15 load 2 + 1."""
    for dims, s_tag, d_tag, short in (((64, 48, 3, 3), "oihw", "IOhw16o16i", 1),
                                      ((64, 48, 3), "oiw", "IOw16o16i", 5)):
        problem = Problem("reorder", cly.MemoryDesc(dims, "f32", tag=s_tag),
                          cly.MemoryDesc(dims, "f32", tag=d_tag))
        plan = plan_kernel(problem, CPU_PROFILE)
        code = render_kernel(plan)
        e = dims[2] * (dims[3] if len(dims) > 3 else 1)
        assert plan.shape == "run_transpose" and plan.item_elements == 16 * e
        # neighbouring work-items store next to each other (Intel's runtime
        # took 1.4x as long for neighbours that read next to each other)
        outer = [plan.levels[j] for j in plan.fastest]
        assert [lv.dst_stride for lv in outer] == sorted(lv.dst_stride for lv in outer)
        assert code.count("vload16(0, src + s_off)") == 16 - short
        assert code.count("(cut short") == short and code.count("vstore16(") == e
        ends = []  # (each load's last element + 1, from the block's first)
        for block in code.split("const uint s_off = s_base + ")[1:]:
            row = int(block[:block.index("u;")])
            body = block[:block.index("}")]
            ends += [row + 16] if "vload16(0, src + s_off)" in body else []
            ends += [row + int(at) + int(n) for n, at in
                     re.findall(r"vload(\d+)\(0, src \+ s_off \+ (\d+)u\)", body)]
            ends += [row + int(at) + 1 for at in re.findall(r"src\[s_off \+ (\d+)u\]", body)]
        assert max(ends) == 16 * e


def test_a_block_past_its_bound_is_left_to_the_unrolled_shape():
    """The block holds both runs whole: 16 x 144 elements fit 16 x
    Tuning.unroll_elements (4096), not 16 x 128 (2048)."""
    dims = (64, 48, 3, 3)
    problem = Problem("reorder", cly.MemoryDesc(dims, "f32", tag="oihw"),
                      cly.MemoryDesc(dims, "f32", tag="OIhw16i16o"))
    assert plan_kernel(problem, CPU_PROFILE).block == 16
    small = dataclasses.replace(CPU_PROFILE, tuning=CPU_PROFILE.tuning.changed(
        {"unroll_elements": 128}))
    assert plan_kernel(problem, small).block == 8   # 8 x 72 fits
