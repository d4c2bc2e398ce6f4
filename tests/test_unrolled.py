"""The unrolled kernels (issue 36, gpu/plan_unrolled.py): each work-item
moves a block of elements at constant offsets. Every weights format of the
issue, both ways, with padding known at build time (3 input channels) and
tested at run time (40 output channels over blocks of 16), 1-D and 3-D,
grouped and depthwise; conversions as vectors (per-tensor scales) and
element by element (per-channel scales, a sum, 8-bit floats); and the
shuffles whose block cuts across the group digits. Each case checks that
the CPU strategy planned it unrolled (else the shape went untested), then
the result against tests/reference.py: bit for bit without attributes,
padding zero."""
import dataclasses
import math

import numpy as np
import pytest

import clayout as cly
from clayout.gpu.profile import CPU_PROFILE
from conftest import _engine_with_strategy
from reference import (assert_bytes, assert_padding_zero, assert_same, is_int, logical_of,
                       per_slice, ref_reorder, ref_shuffle, sample_values)
from reorder_runs import prefilled, src_memory
from small_types_reference import encode

#: The CPU strategy's plans without run transposes, which come first for
#: several of these weights formats (tests/test_run_transpose.py): the
#: unrolled blocks remain what serves them where a tuning table skips
#: run transposes.
UNROLLED = dataclasses.replace(CPU_PROFILE, tuning=dataclasses.replace(
    CPU_PROFILE.tuning, skip_shapes=("run_transpose",)))

#: dims, src tag, dst tag
WEIGHTS = [
    ((64, 48, 3, 3), "oihw", "OIhw4i16o4i"),
    ((64, 48, 3, 3), "oihw", "OIhw16i16o"),
    ((64, 48, 3, 3), "oihw", "OIhw8i8o"),
    ((64, 48, 3, 3), "oihw", "IOhw16o16i"),
    ((48, 64, 3, 3), "iohw", "OIhw16i16o"),
    ((64, 48, 3, 3), "OIhw16i16o", "oihw"),
    ((64, 48, 3, 3), "OIhw4i16o4i", "oihw"),
    ((64, 48, 3, 3), "OIhw8i8o", "iohw"),
    ((32, 3, 3, 3), "oihw", "OIhw16i16o"),       # a first layer: padding at build time
    ((40, 32, 3, 3), "oihw", "OIhw16i16o"),      # 40 of 48: padding tested at run time
    ((40, 20, 3, 3), "OIhw16i16o", "oihw"),      # a padded source
    ((64, 48, 3), "oiw", "OIw16i16o"),
    ((32, 32, 3, 3, 3), "oidhw", "OIdhw16i16o"),
    ((2, 32, 48, 3, 3), "goihw", "gOIhw16i16o"),
    ((64, 1, 1, 3, 3), "goihw", "Goihw16g"),
    ((40, 1, 1, 3, 3), "goihw", "Goihw8g"),
    ((64, 1, 1, 3, 3), "Goihw16g", "goihw"),
]

WEIGHTS += [  # short runs contiguous on both sides: a block of them
    ((48, 64, 3, 3), "hwio", "OIhw16i16o"),
    ((64, 48, 3, 3), "OIhw8i8o", "hwio"),
]

#: Where another shape comes first: a register transpose (hwio's i steps
#: by one in the source under OIhw4i16o4i's innermost 4i), or runs of
#: vectors outside weights formats (nhwc's c runs on in nChw16c's 16c).
OTHERS = {
    ((32, 48, 3, 3), "hwio", "OIhw4i16o4i"): "register_transpose",
    ((2, 64, 5, 5), "nhwc", "nChw16c"): "runs",
}


@pytest.fixture(scope="module")
def cpu_engine(cl_engine):
    """The device with the CPU strategy's plans for a CPU of CPU_PROFILE's
    compute units. The unrolled shape leaves a problem of fewer blocks than
    the device has compute units to other shapes, and these small problems
    have fewer than a GPU's (132 on an H200): pinned so, the kernels these
    tests check run on any device, the GPUs' too."""
    return _engine_with_strategy(cl_engine, "cpu", CPU_PROFILE.compute_units,
                                 skip_shapes=("run_transpose",))


def _run(engine, dims, s_tag, sdt, d_tag, ddt, attr=None, shuffle=None, old=None,
         shape="unrolled"):
    rng = np.random.default_rng(36)
    values = sample_values(sdt, dims, rng, specials=False)
    src_md, src = src_memory(engine, dims, sdt, s_tag, values)
    dst_md = cly.MemoryDesc(dims, ddt, tag=d_tag)
    if old is not None:
        dst_md, dst = src_memory(engine, dims, ddt, d_tag, old)
    else:
        dst = prefilled(dst_md, engine)
    if shuffle is None:
        primitive = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    else:
        primitive = cly.Shuffle(src_md, 1, shuffle[0], backward=shuffle[1], engine=engine,
                                dst_md=dst_md)
    stream = cly.Stream(engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    plan = primitive._implementation.plan
    assert plan.shape == shape and bool(plan.unrolled) == (shape == "unrolled"), \
        f"{s_tag} -> {d_tag} {dims}: {plan.shape} {plan.levels}"
    return values, dst.raw()


@pytest.mark.parametrize("case", WEIGHTS + list(OTHERS),
                         ids=lambda c: f"{c[1]}->{c[2]}-{'x'.join(map(str, c[0]))}")
def test_weights_move_bit_for_bit(cpu_engine, case):
    dims, s_tag, d_tag = case
    values, raw = _run(cpu_engine, dims, s_tag, "f32", d_tag, "f32",
                       shape=OTHERS.get(case, "unrolled"))
    want, _ = ref_reorder(values, "f32", "f32")
    assert_same(logical_of(raw, dims, d_tag, "f32"), want, src=values)
    assert_padding_zero(raw, dims, d_tag, "f32")


#: Conversions: vectors of gathered elements (bit copies, saturation, per-
#: tensor scales) and elements one by one (per-channel scales, a sum, 8-bit
#: floats, runtime padding).
CONVERSIONS = [
    # dims, src tag, src type, dst tag, dst type, attribute
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "bf16", None),
    ((64, 48, 3, 3), "oihw", "bf16", "OIhw16i16o", "bf16", None),
    ((64, 48, 3, 3), "OIhw16i16o", "bf16", "oihw", "f32", None),
    ((64, 48, 3, 3), "oihw", "f32", "OIhw4i16o4i", "s8", "scale"),
    ((64, 48, 3, 3), "oihw", "s8", "OIhw4i16o4i", "s8", None),
    ((40, 48, 3, 3), "oihw", "f32", "OIhw4i16o4i", "s8", "per-output-channel"),
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "f16", "sum"),
    ((64, 48, 3, 3), "oihw", "f32", "OIhw16i16o", "f8_e4m3", None),
    ((64, 48, 3, 3), "oihw", "f8_e5m2", "OIhw16i16o", "f8_e5m2", None),
    ((32, 3, 3, 3), "oihw", "s32", "OIhw16i16o", "u8", None),
    # Runs whose source is consecutive too (one vector load) and f16 read
    # by a helper or moved as bits (kernels with and without the volatile
    # view of the source: test_strided_runs_load_one_element_at_a_time)
    ((48, 64, 3, 3), "hwio", "f32", "OIhw16i16o", "bf16", None),
    ((48, 64, 3, 3), "hwio", "s32", "OIhw16i16o", "u8", None),
    ((64, 48, 3, 3), "oihw", "f16", "OIhw16i16o", "f32", None),
    ((64, 48, 3, 3), "oihw", "f16", "OIhw16i16o", "f16", None),
]


@pytest.mark.parametrize("case", CONVERSIONS,
                         ids=lambda c: f"{c[2]}:{c[1]}->{c[4]}:{c[3]}-{c[5]}")
def test_weights_convert_as_the_reference_says(cpu_engine, case):
    dims, s_tag, sdt, d_tag, ddt, kind = case
    rng = np.random.default_rng(7)
    attr, kwargs, old = None, {}, None
    if kind == "scale":
        attr = cly.Attr(src_scales=0.5)
        kwargs["src_scale"] = np.float32(0.5)
    elif kind == "per-output-channel":
        scales = rng.uniform(0.1, 4, dims[0]).astype(np.float32)
        attr = cly.Attr(dst_scales=cly.Scales(scales, mask=1))
        kwargs["dst_scale"] = per_slice(scales, 1, dims)
    elif kind == "sum":
        old = sample_values(ddt, dims, rng, specials=False)
        attr = cly.Attr(sum_beta=0.5)
        kwargs.update(beta=0.5, old=old)
    values, raw = _run(cpu_engine, dims, s_tag, sdt, d_tag, ddt, attr=attr, old=old)
    if ddt == "f8_e4m3":  # (the tests' own encoder: tests/small_types_reference.py)
        codes = np.vectorize(lambda x: encode(x, ddt))(values.astype(np.float64))
        assert_bytes(logical_of(raw, dims, d_tag, ddt).view(np.uint8), codes.astype(np.uint8))
        return
    want, pre = ref_reorder(values, sdt, ddt, **kwargs)
    assert_same(logical_of(raw, dims, d_tag, ddt), want, src=values, pre=pre,
                quantized=attr is not None and is_int(ddt))
    assert_padding_zero(raw, dims, d_tag, ddt)


SHUFFLES = [
    # dims, tag, group, backward, type
    ((2, 272, 5, 5), "nChw16c", 4, False, "f32"),
    ((2, 116, 5, 5), "nChw16c", 4, False, "f32"),
    ((2, 116, 5, 5), "nChw8c", 4, False, "f32"),
    ((2, 58, 5, 5), "nChw16c", 2, False, "f32"),
    ((2, 58, 5, 5), "nChw8c", 2, True, "f32"),
    ((2, 116, 5, 5), "nChw16c", 4, True, "bf16"),
    ((2, 116, 5, 5), "nChw16c", 4, False, "s8"),
    # whole cache lines: blocks of two pixels (nChw8c), four (nChw4c), and
    # padding in the last block (270 of 272 channels)
    ((2, 272, 4, 6), "nChw8c", 4, False, "f32"),
    ((2, 272, 4, 6), "nChw8c", 17, True, "s32"),
    ((1, 116, 4, 4), "nChw4c", 4, False, "f32"),
    ((1, 270, 2, 6), "nChw8c", 3, False, "f32"),
]


@pytest.mark.parametrize("case", SHUFFLES,
                         ids=lambda c: f"{c[4]}-{c[1]}-C{c[0][1]}-g{c[2]}{'-bwd' if c[3] else ''}")
def test_blocked_shuffles_move_bit_for_bit(cpu_engine, case):
    dims, tag, group, backward, dt = case
    values, raw = _run(cpu_engine, dims, tag, dt, tag, dt, shuffle=(group, backward))
    want = ref_shuffle(values, 1, group, backward)
    assert_same(logical_of(raw, dims, tag, dt), want, src=values)
    assert_padding_zero(raw, dims, tag, dt)


def test_the_block_holds_no_division_per_element():
    """What makes the shape fast: the block's offsets are literals, and
    the only divisions are the work-item's, once per block."""
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.profile import DeviceProfile
    from clayout.gpu.render import render_kernel
    from clayout.problem import Problem

    dims = (64, 48, 3, 3)
    problem = Problem("reorder", cly.MemoryDesc(dims, "f32", tag="oihw"),
                      cly.MemoryDesc(dims, "f32", tag="OIhw4i16o4i"))
    plan = plan_kernel(problem, DeviceProfile())
    code = render_kernel(plan)
    body = code[code.index("d_base = "):]
    assert plan.unrolled and plan.item_elements == 256
    assert body.count("vstore4(") == 64 and "/" not in body and "%" not in body
    assert math.prod(lv.extent for lv in plan.levels) == plan.items * plan.item_elements


@pytest.mark.parametrize("case, loads", [
    (((64, 48, 3, 3), "oihw", "f32", "f32"), "strided"),
    (((64, 48, 3, 3), "oihw", "bf16", "f32"), "strided"),
    (((64, 48, 3, 3), "oihw", "f16", "f16"), "strided"),
    (((48, 64, 3, 3), "hwio", "f32", "f32"), "vector"),
    (((48, 64, 3, 3), "hwio", "f32", "bf16"), "scalar"),
    (((64, 48, 3, 3), "oihw", "f16", "f32"), "scalar"),
], ids=lambda c: c if isinstance(c, str) else f"{c[2]}-{c[1]}->{c[3]}")
def test_strided_runs_load_one_element_at_a_time(case, loads):
    """A run of destination elements whose source lies at constant strides
    reads them through a volatile view of the source, which keeps them
    scalar loads (PoCL's LLVM makes a gather of them, slow on AMD's CPUs);
    a run consecutive in the source too is one vector load; elements a
    helper reads by pointer (f16 converted) keep the plain one."""
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.render import render_kernel
    from clayout.problem import Problem

    dims, s_tag, sdt, ddt = case
    problem = Problem("reorder", cly.MemoryDesc(dims, sdt, tag=s_tag),
                      cly.MemoryDesc(dims, ddt, tag="OIhw16i16o"))
    plan = plan_kernel(problem, UNROLLED)
    code = render_kernel(plan)
    body = code[code.index("d_base = "):]
    view = "__global const volatile" in code
    assert plan.shape == "unrolled"
    if loads == "strided":
        assert view and body.count("strided_src[s_base") == 256 and "src[s_base" not in \
            body.replace("strided_src[", "")
    elif loads == "vector":
        assert not view and body.count("vload4(0, src + s_base") == 64 and "src[" not in body
    else:
        assert not view and "strided_src" not in code and (
            "src[s_base" in body or "(__global const half *)src" in body)


@pytest.mark.parametrize("dims, tag, group, lines, rest", [
    # (lines of 32 bytes: each block of 16 channels is two)
    ((2, 272, 5, 5), "nChw16c", 4, "float8 line33", False),   # 17 blocks, all read whole
    ((2, 116, 5, 5), "nChw16c", 4, "float8 line13", True),    # the 8th block holds 4 channels
    ((2, 272, 5, 5), "nChw8c", 4, "float8 line33", False),
    ((2, 58, 5, 5), "nChw16c", 2, "float8 line5", True),      # the 4th holds 10 channels
    ((2, 116, 5, 5), "nChw4c", 4, "float4 line28", False),     # half lines: blocks of 16 bytes
    # (a run of 16 channels that meets the padding reads its elements one
    # by one: so does the 7th block, read partly by such a run)
    ((2, 116, 5, 5), "nChw16c", 4, "char16 line5", True),
    ((2, 116, 5, 5), "nChw16c", 4, "ushort16 line5", True),
])
def test_blocked_shuffles_load_whole_source_lines(dims, tag, group, lines, rest):
    """A blocked shuffle reads each source line (a block's channels at one
    pixel) at strides across the block's runs: lines read whole load as
    one vector first, and the runs take their lanes; the channels of a
    block read in part stay scalar loads through the volatile view."""
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.render import render_kernel
    from clayout.problem import Problem

    dt = {"char": "s8", "ushort": "bf16"}.get(lines.split("16 ")[0], "f32")
    m = cly.MemoryDesc(dims, dt, tag=tag)
    plan = plan_kernel(Problem("shuffle", m, m, None, (1, group)), CPU_PROFILE)
    code = render_kernel(plan)
    last = int(lines.rsplit("line", 1)[1])
    assert plan.shape == "unrolled" and f"const {lines} = vload" in code
    assert f"line{last + 1} " not in code
    assert ("strided_src[s_base" in code) == rest


@pytest.mark.parametrize("dims, tag, dt, group, pixels", [
    ((1, 272, 4, 4), "nChw8c", "f32", 4, 2),     # 34 lines of 32 bytes a pixel
    ((1, 272, 4, 4), "nChw8c", "s32", 3, 2),
    ((1, 116, 4, 4), "nChw4c", "f32", 4, 4),     # 29 lines of 16 bytes
    ((1, 116, 4, 4), "nChw8c", "f32", 4, 1),     # 15 lines: too few to gain
    ((1, 272, 4, 4), "nChw16c", "f32", 4, 1),    # whole lines already
    ((1, 272, 4, 4), "nChw8c", "bf16", 4, 1),    # 2-byte lanes cost more
    ((1, 272, 5, 5), "nChw8c", "f32", 4, 1),     # 25 pixels: no pair divides them
])
def test_a_blocked_shuffle_reads_whole_cache_lines(dims, tag, dt, group, pixels):
    """Where a blocked shuffle's block reads many source lines, each less
    than a cache line a pixel (planes apart that share L1 sets), the block
    takes as many pixels as fill the lines (Tuning.line_tile_lines)."""
    from clayout.gpu.plan import plan_kernel
    from clayout.problem import Problem

    m = cly.MemoryDesc(dims, dt, tag=tag)
    plan = plan_kernel(Problem("shuffle", m, m, None, (1, group)), CPU_PROFILE)
    channels = math.ceil(dims[1] / int(tag[4:-1])) * int(tag[4:-1])
    assert plan.shape == "unrolled" and plan.item_elements == channels * pixels
    if pixels > 1:  # a bar past the block's lines leaves the pixels out
        tuning = CPU_PROFILE.tuning.changed({"line_tile_lines": 64})
        plan = plan_kernel(Problem("shuffle", m, m, None, (1, group)),
                           dataclasses.replace(CPU_PROFILE, tuning=tuning))
        assert plan.item_elements == channels


def test_a_run_is_consecutive_only_where_every_step_is_one():
    from clayout.gpu.render_unrolled import Run

    assert Run((5, 6, 7, 8), 0, False).consecutive
    assert not Run((0, 1, 9, 10), 0, False).consecutive
    assert not Run((3, 2, 1, 0), 0, False).consecutive


#: Narrow transposes (issue 36): 4-bit elements in unrolled blocks, two
#: nibbles a byte (they went element by element, in two passes), where
#: tiles and rows of words do not serve (tests/test_nibble_tile.py,
#: tests/test_nibble_transpose.py); 8-bit
#: floats moved bit for bit in register transposes, as bytes.
NARROW = [
    # dims, src tag, dst tag, type, the shape that must serve it
    ((64, 96), "ab", "ba", "s4", "nibble_tile"),
    ((96, 64), "ba", "ab", "u4", "nibble_tile"),
    ((36, 48), "ab", "ba", "s4", "unrolled"),
    ((32, 48, 3, 3), "oihw", "OIhw16i16o", "u4", "unrolled"),
    ((40, 48, 4, 4), "OIhw16i16o", "oihw", "s4", "nibble_transpose"),
    ((40, 48, 2, 2), "OIhw16i16o", "oihw", "s4", "unrolled"),
    # (3x3 planes: a block of 4-bit elements keeps to 64 elements, 4 output
    # channels x 9 taps, whose runs of 9 cannot pair into bytes: two passes)
    ((40, 48, 3, 3), "OIhw16i16o", "oihw", "s4", "runs"),
    ((4, 64, 4, 4), "nchw", "nhwc", "f8_e4m3", "register_transpose"),
    ((4, 64, 8, 8), "nhwc", "nchw", "f8_e5m2", "register_transpose"),
]


@pytest.mark.parametrize("case", NARROW, ids=lambda c: f"{c[3]}-{c[1]}->{c[2]}")
def test_narrow_transposes_move_bit_for_bit(cpu_engine, case):
    from reference import (assert_padding_nibbles_zero, logical_of_packed, random_bits,
                           raw_of_packed)

    dims, s_tag, d_tag, dt, shape = case
    rng = np.random.default_rng(3)
    src_md = cly.MemoryDesc(dims, dt, tag=s_tag)
    dst_md = cly.MemoryDesc(dims, dt, tag=d_tag)
    values = random_bits(dt, dims, rng) if dt.startswith("f8") else sample_values(
        dt, dims, rng, specials=False)
    packed = src_md.dtype.packed
    raw = raw_of_packed(values, s_tag, dt, pad_nibble=5) if packed else None
    if packed:
        src = cly.Memory(src_md, cpu_engine, raw=raw)
    else:
        src_md, src = src_memory(cpu_engine, dims, dt, s_tag, values)
    dst = prefilled(dst_md, cpu_engine)
    primitive = cly.Reorder(src_md, dst_md, engine=cpu_engine)
    stream = cly.Stream(cpu_engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    assert primitive._implementation.plan.shape == shape
    out = dst.raw()
    if packed:
        assert np.array_equal(logical_of_packed(out, dims, d_tag, dt), np.asarray(values))
        assert_padding_nibbles_zero(out, dims, d_tag)
    else:
        got = logical_of(out, dims, d_tag, dt)
        assert_bytes(got.view(np.uint8), np.asarray(values).view(np.uint8))


@pytest.mark.parametrize("d_tag", ["OIhw16i16o", "OIhw4i16o4i"])
def test_a_window_of_weights_moves_bit_for_bit(cpu_engine, d_tag):
    """A window of a bigger oihw tensor (its offset in the block's bases,
    not in the constants) into a blocked format, and back into a window."""
    rng = np.random.default_rng(5)
    parent = sample_values("f32", (80, 64, 3, 3), rng, specials=False)
    whole_md = cly.MemoryDesc(parent.shape, "f32", tag="oihw")
    window_md = whole_md.submemory((64, 48, 3, 3), (16, 16, 0, 0))
    whole = cly.Memory(whole_md, cpu_engine, raw=parent.view(np.uint8).reshape(-1))
    src = cly.Memory(window_md, cpu_engine, buffer=whole)
    dst_md = cly.MemoryDesc((64, 48, 3, 3), "f32", tag=d_tag)
    dst = prefilled(dst_md, cpu_engine)
    stream = cly.Stream(cpu_engine)
    there = cly.Reorder(window_md, dst_md, engine=cpu_engine)
    there.execute(stream, src, dst)
    back_whole = cly.Memory(whole_md, cpu_engine, raw=np.zeros(whole_md.size, np.uint8))
    back = cly.Memory(window_md, cpu_engine, buffer=back_whole)
    again = cly.Reorder(dst_md, window_md, engine=cpu_engine)
    again.execute(stream, dst, back)
    stream.wait()
    assert there._implementation.plan.shape == again._implementation.plan.shape == "unrolled"
    window = parent[16:80, 16:64]
    assert_same(logical_of(dst.raw(), dst_md.dims, d_tag, "f32"), window, src=window)
    out = back_whole.raw().view(np.float32).reshape(parent.shape)
    expect = np.zeros_like(parent)
    expect[16:80, 16:64] = window
    assert_bytes(out.view(np.uint8), expect.view(np.uint8))
