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


@pytest.mark.parametrize("offset,tile", [((16, 32), 128), ((0, 16), 128), ((0, 8), 0)],
                         ids=["on-words", "one-word-in", "half-a-word-in"])
def test_windows_of_both_sides(engine, offset, tile):
    """A 128x128 window of a 160x192 source into a window at the same
    offset of a 192x160 destination: every row of both starts on a word
    unless the offset is half a word (8 nibbles), where another shape
    serves. The window's nibbles are the transpose; every byte around it
    keeps its value."""
    rng = np.random.default_rng(3)
    parent = rng.integers(0, 16, (160, 192))
    src_parent = cly.MemoryDesc((160, 192), "u4", tag="ab")
    dst_parent = cly.MemoryDesc((192, 160), "u4", tag="ab")
    src_md = src_parent.submemory((128, 128), offset)
    dst_md = dst_parent.submemory((128, 128), offset[::-1]).permute_axes((1, 0))
    before = rng.integers(0, 256, dst_parent.size, dtype=np.uint8)
    plan, out = _reorder(engine, src_md, dst_md,
                         raw_of_packed(nibble_values(parent, "u4"), "ab", "u4"), before)
    if tile:
        assert plan.shape == "nibble_tile" and plan.vec == plan.block == tile, plan
    else:
        assert plan.shape != "nibble_tile", plan
    r, c = offset
    want = _nibbles(before, element_offsets((192, 160), "ab"))
    want[c:c + 128, r:r + 128] = parent[r:r + 128, c:c + 128].T
    got = _nibbles(out, element_offsets((192, 160), "ab"))
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} nibbles differ, first at {bad[0].tolist()}"


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
