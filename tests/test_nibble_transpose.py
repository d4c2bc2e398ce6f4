"""4-bit transposes moved bit for bit as words of nibbles (issue 36,
gpu/plan_cpu.py ``plan_nibble_transpose``): each work-item loads B rows
of B nibbles as one uint or ulong each, transposes them with shifts and
masks, and stores B words. Both strategies: the CPU strategy's blocks in
its plain order, the GPU strategy's in a grid of work-items. Each case
checks the shape that served it (a fallback would leave the kernel
untested), then every nibble against tests/reference.py, padding zero."""
import zlib
from dataclasses import replace

import numpy as np
import pytest

import clayout as cly
from conftest import _engine_with_strategy
from clayout.gpu.plan_cpu import plan_nibble_transpose  # noqa: F401 (the code under test)
from reference import (assert_padding_nibbles_zero, element_offsets, get_nibbles,
                       logical_of_packed, nibble_values, raw_of_packed, sample_values)
from reorder_runs import prefilled

#: dims, src tag, dst tag, type, block (0: another shape must serve)
CASES = [
    ((64, 96), "ab", "ba", "s4", 16),
    ((96, 64), "ba", "ab", "u4", 16),
    ((48, 40), "ab", "ba", "u4", 8),                  # 40: blocks of 8 only
    ((64, 48), "ab", "ba", "f4_e2m1", 16),
    ((3, 32, 48), "abc", "acb", "s4", 16),            # a batch of transposes
    ((32, 5, 48), "abc", "cba", "u4", 16),            # an outer loop between
    ((2, 32, 16, 3), "abcd", "acbd", "s4", 0),        # runs of 3: not words
    ((40, 48, 4, 4), "OIhw16i16o", "oihw", "s4", 8),  # a padded source, 40 of 48
    ((32, 48), "ab", "AB16b16a", "u4", 16),
    ((40, 48), "ab", "AB16b16a", "s4", 16),           # padding rows (a >= 40), at run time
    ((36, 48), "ab", "ba", "s4", 0),                  # rows of 36 nibbles: not on words
]

#: Big enough for both strategies' grids of work-items (Tuning.nibble_grid)
GRIDS = [
    ((512, 256), "ab", "ba", "u4", 16),
    ((256, 512), "ba", "ab", "s4", 16),
    ((2, 256, 512), "abc", "acb", "f4_e2m1", 16),
    ((512, 3, 256), "abc", "cba", "s4", 16),          # a loop between the two
]


def _ids(case):
    dims, s_tag, d_tag, dt, block = case
    return f"{dt}-{s_tag}->{d_tag}-{'x'.join(map(str, dims))}"


def _run(engine, case, seed=7):
    dims, s_tag, d_tag, dt, block = case
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 16, dims)  # every code, -0 and the f4 ones too
    values = nibble_values(codes, dt)
    src_md = cly.MemoryDesc(dims, dt, tag=s_tag)
    dst_md = cly.MemoryDesc(dims, dt, tag=d_tag)
    src = cly.Memory(src_md, engine, raw=raw_of_packed(values, s_tag, dt, pad_nibble=5))
    dst = prefilled(dst_md, engine)
    primitive = cly.Reorder(src_md, dst_md, engine=engine)
    stream = cly.Stream(engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    return primitive._implementation.plan, codes, dst.raw()


def _check(plan, case, codes, out, grid=None):
    dims, s_tag, d_tag, dt, block = case
    if grid is not None:  # the destination's loop cut at the grid's width
        assert plan.levels[-1].extent == block * grid[0], plan.levels
    if block:
        assert plan.block == block and plan.nibbles == "pairs", plan
    else:
        assert not (plan.block and plan.nibbles), plan
    got = get_nibbles(out, element_offsets(dims, d_tag)).reshape(dims)
    bad = np.argwhere(got != codes)
    assert bad.size == 0, f"{len(bad)} nibbles differ, first at {bad[0].tolist()}"
    assert_padding_nibbles_zero(out, dims, d_tag)


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
@pytest.mark.parametrize("case", CASES + GRIDS, ids=_ids)
def test_nibbles_transpose_as_words(cl_engine, gpu_engine, strategy, case):
    # Past the CPU strategy's nibble tiles (tests/test_nibble_tile.py), which
    # serve the bit copies whose loops their tiles divide.
    engine = (_engine_with_strategy(cl_engine, "cpu", skip_shapes=("nibble_tile",))
              if strategy == "cpu" else gpu_engine)
    plan, codes, out = _run(engine, case)
    if case[4]:
        assert plan.shape == "nibble_transpose"
    _check(plan, case, codes, out,
           engine.profile.tuning.nibble_grid if case in GRIDS else None)


def test_the_grid_puts_neighbours_on_whole_sectors():
    """The GPU strategy's 16x16 blocks, 4 along the source's rows by 8 along
    the destination's: a warp's load reads 32 bytes of each of 8 rows, its
    store 64 bytes of each of 4 (the access replay, as gpusim counts)."""
    from clayout.gpu.access import access_report
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.profile import GPU_PROFILE
    from clayout.problem import Problem

    src = cly.MemoryDesc((512, 512), "u4", tag="ab")
    dst = cly.MemoryDesc((512, 512), "u4", tag="ba")
    plan = plan_kernel(Problem("reorder", src, dst, None), GPU_PROFILE)
    assert plan.shape == "nibble_transpose" and plan.block == 16
    report = access_report(plan)
    for name in ("load src", "store dst"):
        (row,) = [a for a in report.accesses if a.instruction == name]
        assert row.bytes_per_instruction == 256 and row.efficiency == 1.0, row


@pytest.mark.parametrize("src,dst,grid", [("f32:ab", "s4:ba", "nibble_pack_grid"),
                                           ("u4:ba", "f16:ab", "nibble_grid"),
                                           ("s4:ab", "s4:ba", "nibble_grid")])
def test_the_wider_side_s_rows_go_fastest(src, dst, grid):
    """A conversion into a 4-bit destination from a wider source walks its
    grid of blocks along the source's rows first (``nibble_pack_grid``, 1
    along the destination's); the others along the destination's
    (``nibble_grid``): the destination's loop is cut at the grid's width."""
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.profile import CPU_PROFILE
    from clayout.problem import Problem

    (sdt, stag), (ddt, dtag) = src.split(":"), dst.split(":")
    tuning = replace(CPU_PROFILE.tuning, skip_shapes=("nibble_tile",))
    plan = plan_kernel(Problem("reorder", cly.MemoryDesc((512, 512), sdt, tag=stag),
                               cly.MemoryDesc((512, 512), ddt, tag=dtag)),
                       replace(CPU_PROFILE, tuning=tuning))
    assert plan.shape == "nibble_transpose" and plan.block == 16
    assert plan.levels[-1].extent == 16 * getattr(tuning, grid)[0], plan.levels
    assert plan.levels[-3].extent == getattr(tuning, grid)[1], plan.levels


def test_an_unaligned_window_goes_another_way(cpu_engine):
    """A window starting one nibble into its parent's rows cannot load them
    as words: another shape serves it, nibble for nibble right."""
    rng = np.random.default_rng(11)
    parent = sample_values("s4", (64, 66), rng, specials=False)
    whole_md = cly.MemoryDesc((64, 66), "s4", tag="ab")
    window_md = whole_md.submemory((64, 64), (0, 1))
    src = cly.Memory(window_md, cpu_engine, raw=raw_of_packed(parent, "ab", "s4"))
    dst_md = cly.MemoryDesc((64, 64), "s4", tag="ba")
    dst = prefilled(dst_md, cpu_engine)
    primitive = cly.Reorder(window_md, dst_md, engine=cpu_engine)
    stream = cly.Stream(cpu_engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    plan = primitive._implementation.plan
    assert not (plan.block and plan.nibbles)
    got = logical_of_packed(dst.raw(), (64, 64), "ba", "s4")
    assert np.array_equal(got, np.asarray(parent)[:, 1:65])


# -- converted on the way: grouped decompression and quantization ------------

#: (dims, src type:tag, dst type:tag, attribute kind, groups, block or 0)
#: kinds: "src" grouped src scales (and zero points into a 4-bit source's
#: side), "dst" grouped dst scales and zero points (the quantize direction)
CONVERTED = [
    ((64, 128), "u4:ba", "f16:ab", "src", (1, 32), 16),    # decompress, transposed
    ((64, 128), "s4:ba", "f32:ab", "src", (1, 16), 16),
    ((96, 64), "u4:ba", "bf16:ab", "src", (1, 64), 16),
    ((32, 64), "s4:ba", "s8:ab", "src", (1, 32), 16),
    ((64, 128), "f32:ab", "s4:ba", "src", (1, 32), 16),   # quantize, transposed
    ((64, 128), "f16:ab", "u4:ba", "dst", (1, 16), 16),
    ((2, 32, 64), "f32:abc", "u4:acb", "dst", (1, 32), 16),
    ((64, 64), "bf16:ab", "s4:ba", None, None, 16),
    ((48, 64), "u4:ba", "f32:ab", "src", (1, 8), 8),      # groups of 8: blocks of 8
    ((64, 96), "f32:ab", "u4:ba", "dst", (2, 32), 16),    # two-dim groups
    ((64, 64), "f32:ab", "s4:AB16b16a", "src", (1, 32), 16),  # blocked, no padding: words
    ((32, 64), "u4:ba", "f32:ab", "src", (1, 4), -1),     # groups of 4: no block (-1) serves
    # big enough for the grids of work-items (Tuning.nibble_pack_grid, nibble_grid)
    ((256, 512), "f32:ab", "s4:ba", "src", (1, 32), 16),
    ((512, 256), "f16:ab", "u4:ba", "dst", (1, 16), 16),
    ((256, 512), "u4:ba", "f16:ab", "src", (1, 32), 16),
]


def _converted_id(case):
    dims, s, d, kind, groups, block = case
    return f"{s}->{d}-{'x'.join(map(str, dims))}-{kind}-g{groups and 'x'.join(map(str, groups))}"


@pytest.mark.parametrize("strategy", ["cpu", "gpu"])
@pytest.mark.parametrize("case", CONVERTED, ids=_converted_id)
def test_converted_nibble_transposes_match_the_reference(cpu_engine, gpu_engine, strategy,
                                                         case):
    """dst = (s_src (src - zp_src)) / s_dst + zp_dst with grouped values, as
    tests/reference.py computes it, bit for bit; the block is the shape
    that served where one should."""
    import reference as ref

    engine = cpu_engine if strategy == "cpu" else gpu_engine
    dims, s, d, kind, groups, block = case
    (sdt, stag), (ddt, dtag) = s.split(":"), d.split(":")
    rng = np.random.default_rng(zlib.crc32(_converted_id(case).encode()))
    mask = (1 << len(dims)) - 1
    count = int(np.prod([n // g for n, g in zip(dims, (1,) * (len(dims) - 2) + groups)])) \
        if groups else 0
    scales = ref.stored_scales(rng.uniform(0.05, 4.0, count), "f16") if count else None
    want_kwargs, attr = {}, None
    if kind == "src":
        zp_type = sdt if sdt in ("s4", "u4") else None
        zps = rng.integers(*((-8, 7) if zp_type == "s4" else (0, 15)), count,
                           endpoint=True).astype(np.int32) if zp_type else None
        attr = cly.Attr(src_scales=cly.Scales(scales, mask=mask, groups=groups, data_type="f16"),
                        src_zero_points=None if zps is None else cly.ZeroPoints(
                            zps, mask=mask, groups=groups, data_type=zp_type))
        want_kwargs = dict(src_scale=ref.per_group(scales, mask, groups, dims),
                           src_zp=None if zps is None else ref.per_group(zps, mask, groups, dims))
    elif kind == "dst":
        zps = rng.integers(0, 15, count, endpoint=True).astype(np.int32)
        attr = cly.Attr(dst_scales=cly.Scales(scales, mask=mask, groups=groups, data_type="f16"),
                        dst_zero_points=cly.ZeroPoints(zps, mask=mask, groups=groups,
                                                       data_type="u4"))
        want_kwargs = dict(dst_scale=ref.per_group(scales, mask, groups, dims),
                           dst_zp=ref.per_group(zps, mask, groups, dims))
    if sdt in ("s4", "u4"):
        lo, hi = ref.INT_RANGE[sdt]
        x = rng.integers(lo, hi, dims, endpoint=True).astype(ref.NP[sdt])
        src_raw = ref.raw_of_packed(x, stag, sdt)
    else:
        x = (rng.normal(0, 12, dims)).astype(np.float32).astype(ref.NP[sdt])
        src_raw = ref.raw_of(x, stag, sdt)
    want, pre = ref.ref_reorder(x, sdt, ddt, **want_kwargs)
    src_md, dst_md = cly.MemoryDesc(dims, sdt, tag=stag), cly.MemoryDesc(dims, ddt, tag=dtag)
    primitive = cly.Reorder(src_md, dst_md, attr=attr, engine=engine)
    dst = prefilled(dst_md, engine)
    primitive.execute(cly.Stream(engine), cly.Memory(src_md, engine, raw=src_raw), dst).wait()
    plan = primitive._implementation.plan
    if block > 0:
        assert plan.shape == "nibble_transpose" and plan.block == block, plan.shape
    elif block < 0:
        assert plan.shape != "nibble_transpose", plan.shape
    out = dst.raw()
    got = ref.logical_of_packed(out, dims, dtag, ddt) if ddt in ("s4", "u4") else \
        ref.logical_of(out, dims, dtag, ddt)
    ref.assert_same(got, want, src=x, pre=pre, what=f"{s} -> {d}")
