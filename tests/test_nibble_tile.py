"""4-bit transposes moved bit for bit in tiles of R rows of T nibbles a
work-item (issue 36, gpu/plan_nibble_tile.py): the CPU strategy loads each
of a tile's rows as one ulong of T/16 words, transposes 16 rows at a time
with shifts and masks and the words between them with shuffles, and
stores each destination row as R/T vectors. Each case checks the tile that served it (a
fallback would leave the kernel untested), then every nibble against
tests/reference.py; windows check the bytes around them too."""
import numpy as np
import pytest

import clayout as cly
from clayout.gpu.plan_nibble_tile import plan_nibble_tile  # noqa: F401 (the code under test)
from clayout.gpu.profile import CPU_TUNING
from conftest import _engine_with_strategy
from reference import element_offsets, nibble_values, raw_of_packed

#: dims, src tag, dst tag, type, (source rows, nibbles a row) of the tile
#: ((0, 0): another shape must serve)
CASES = [
    ((128, 128), "ab", "ba", "s4", (128, 128)),
    ((256, 384), "ab", "ba", "u4", (256, 128)),
    ((1024, 128), "ab", "ba", "s4", (512, 128)),       # rows up to Tuning.nibble_tile_rows
    ((512, 64), "ab", "ba", "u4", (512, 64)),
    ((64, 192), "ab", "ba", "u4", (64, 64)),           # 64: no tile of 128
    ((96, 32), "ba", "ab", "f4_e2m1", (32, 32)),
    ((3, 128, 256), "abc", "acb", "s4", (128, 128)),   # a batch of transposes
    ((256, 3, 128), "abc", "cba", "u4", (256, 128)),   # a loop between the two
    ((2, 64, 2, 128), "abcd", "adcb", "s4", (64, 64)),  # loops between, and outside
    ((48, 80), "ab", "ba", "s4", (0, 0)),               # 16 divides, no tile does
    ((128, 128, 1, 1), "OIhw16i16o", "oihw", "u4", (0, 0)),  # a blocked source
]


def _ids(case):
    dims, s_tag, d_tag, dt, tile = case
    return f"{dt}-{s_tag}->{d_tag}-{'x'.join(map(str, dims))}"


def _nibbles(raw, offsets):
    """The 4-bit codes at element offsets ``offsets`` of the bytes ``raw``."""
    raw = np.asarray(raw).view(np.uint8).reshape(-1)
    offsets = np.asarray(offsets, dtype=np.int64)
    return (raw[offsets // 2] >> (4 * (offsets % 2))) & 0xF


@pytest.fixture
def engine(cl_engine):
    """The CPU strategy, planned for 2 compute units as the tiles were measured."""
    return _engine_with_strategy(cl_engine, "cpu", 2)


def _reorder(engine, src_md, dst_md, src_raw, dst_raw):
    primitive = cly.Reorder(src_md, dst_md, engine=engine)
    src = cly.Memory(src_md, engine, raw=src_raw)
    dst = cly.Memory(dst_md, engine, raw=dst_raw)
    primitive.execute(cly.Stream(engine), src, dst).wait()
    return primitive._implementation.plan, dst.raw()


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_tiles_move_every_nibble(engine, case):
    dims, s_tag, d_tag, dt, tile = case
    codes = np.random.default_rng(sum(dims)).integers(0, 16, dims)
    src_md = cly.MemoryDesc(dims, dt, tag=s_tag)
    dst_md = cly.MemoryDesc(dims, dt, tag=d_tag)
    plan, out = _reorder(engine, src_md, dst_md,
                         raw_of_packed(nibble_values(codes, dt), s_tag, dt, pad_nibble=5),
                         np.full(dst_md.size, 0xAB, np.uint8))
    if tile[0]:
        assert plan.shape == "nibble_tile" and (plan.vec, plan.block) == tile, plan
    else:
        assert plan.shape != "nibble_tile", plan
    got = _nibbles(out, element_offsets(dims, d_tag))
    bad = np.argwhere(got != codes)
    assert bad.size == 0, f"{len(bad)} nibbles differ, first at {bad[0].tolist()}"


#: (source parent's rows of nibbles, window offset), (destination parent's,
#: offset), the tile that serves (0: another shape must)
WINDOWS = [
    ((192, (16, 32)), (160, (32, 16)), 128),
    ((192, (0, 16)), (160, (16, 0)), 128),     # one word into the source's rows
    ((192, (0, 8)), (160, (8, 0)), 0),         # half a word into the source's
    ((192, (0, 0)), (160, (0, 8)), 0),         # half a word into the destination's
    ((192, (0, 0)), (160, (0, 1)), 0),         # one nibble into the destination's
    ((192, (0, 0)), (152, (0, 0)), 0),         # destination rows of 152: not on words
    ((200, (0, 0)), (160, (0, 0)), 0),         # source rows of 200: not on words
]


@pytest.mark.parametrize("src_side,dst_side,tile", WINDOWS,
                         ids=lambda v: str(v).replace(" ", ""))
def test_windows_of_both_sides(engine, src_side, dst_side, tile):
    """A 128x128 window of a source parent into a window of a destination
    parent (its transpose's layout): every row of both starts on a word, or
    another shape serves. The window's nibbles are the transpose; every
    byte around it keeps its value."""
    (src_cols, (r, c)), (dst_cols, (dr, dc)) = src_side, dst_side
    rng = np.random.default_rng(3)
    src_dims, dst_dims = (160, src_cols), (192, dst_cols)
    parent = rng.integers(0, 16, src_dims)
    src_md = cly.MemoryDesc(src_dims, "u4", tag="ab").submemory((128, 128), (r, c))
    dst_parent = cly.MemoryDesc(dst_dims, "u4", tag="ab")
    dst_md = dst_parent.submemory((128, 128), (dr, dc)).permute_axes((1, 0))
    before = rng.integers(0, 256, dst_parent.size, dtype=np.uint8)
    plan, out = _reorder(engine, src_md, dst_md,
                         raw_of_packed(nibble_values(parent, "u4"), "ab", "u4"), before)
    if tile:
        assert plan.shape == "nibble_tile" and plan.vec == plan.block == tile, plan
    else:
        assert plan.shape != "nibble_tile", plan
    want = _nibbles(before, element_offsets(dst_dims, "ab"))
    want[dr:dr + 128, dc:dc + 128] = parent[r:r + 128, c:c + 128].T
    got = _nibbles(out, element_offsets(dst_dims, "ab"))
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} nibbles differ, first at {bad[0].tolist()}"


@pytest.mark.parametrize("dims,axis,group,backward,tile", [
    ((2, 2048), 1, 32, False, (64, 32)), ((3, 1024, 1), 1, 32, True, (32, 32)),
    ((4, 96), 1, 3, False, (0, 0))])
def test_4_bit_shuffles_that_transpose(engine, dims, axis, group, backward, tile):
    """A shuffle is a transpose of the axis split in two
    (``shuffle_as_reorder``): where a tile divides both parts, the tile moves
    it; every nibble as tests/reference.py's shuffle puts it."""
    from reference import ref_shuffle

    codes = np.random.default_rng(5).integers(0, 16, dims)
    tag = "abc"[:len(dims)]
    md = cly.MemoryDesc(dims, "s4", tag=tag)
    shuffle = cly.Shuffle(md, axis=axis, group_size=group, backward=backward, engine=engine)
    plan = shuffle._implementation.plan
    if tile[0]:
        assert plan.shape == "nibble_tile" and (plan.vec, plan.block) == tile, plan
    else:
        assert plan.shape != "nibble_tile", plan
    src = cly.Memory(md, engine, raw=raw_of_packed(nibble_values(codes, "s4"), tag, "s4"))
    dst = cly.Memory(md, engine, raw=np.full(md.size, 0xAB, np.uint8))
    shuffle.execute(cly.Stream(engine), src, dst).wait()
    got = _nibbles(dst.raw(), element_offsets(dims, tag))
    assert np.array_equal(got, ref_shuffle(codes, axis, group, backward))


def test_wide_offsets_keep_the_tile_s_arithmetic_in_64_bits():
    """A tensor past 2^31 nibbles: every offset of the tile is a ulong (the
    row and word steps cast before they multiply)."""
    from clayout.gpu.plan import plan_kernel
    from clayout.gpu.profile import CPU_PROFILE
    from clayout.gpu.render import render_kernel
    from clayout.problem import Problem

    src = cly.MemoryDesc((65536, 65536), "s4", tag="ab")
    dst = cly.MemoryDesc((65536, 65536), "s4", tag="ba")
    plan = plan_kernel(Problem("reorder", src, dst), CPU_PROFILE)
    code = render_kernel(plan)
    assert plan.shape == "nibble_tile" and plan.wide_index
    assert "(ulong)(b * 16 + 0) * 65536UL" in code and "(ulong)(112 + j) * 65536UL" in code
    assert "const uint" not in code.split("ulong8 sets")[0].split("item = ")[1]


def test_a_converting_nibble_transpose_is_no_tile(engine):
    """The tile moves bits: s4 -> u4 converts (saturates), so another shape
    serves it."""
    src_md = cly.MemoryDesc((128, 128), "s4", tag="ab")
    dst_md = cly.MemoryDesc((128, 128), "u4", tag="ba")
    primitive = cly.Reorder(src_md, dst_md, engine=engine)
    assert primitive._implementation.plan.shape != "nibble_tile"


def test_tile_sizes_are_whole_words_of_a_ulong_vector():
    assert CPU_TUNING.changed({"nibble_tile_sizes": [64, 32]}).nibble_tile_sizes == (64, 32)
    with pytest.raises(ValueError, match=r"nibble_tile_sizes: expected sizes of 32, 64 or 128"):
        CPU_TUNING.changed({"nibble_tile_sizes": [48]})
    assert CPU_TUNING.changed({"nibble_tile_rows": 256}).nibble_tile_rows == 256
    for bad in (384, 2048, 16):
        with pytest.raises(ValueError, match=r"nibble_tile_rows: expected a power of two "
                                             rf"from 32 to 1024, got {bad}"):
            CPU_TUNING.changed({"nibble_tile_rows": bad})
