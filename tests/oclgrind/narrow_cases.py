"""Run under Oclgrind (``oclgrind --data-races python narrow_cases.py``):
the narrow types' vector kernels (typed stores, 4-bit runs of whole bytes,
grouped values once per run, 16x16 byte transposes) write into windows of
guarded buffers; Oclgrind reports any out-of-bounds access or data race on
stderr, and this script checks the window's values and that every byte
outside it kept its value. Prints 'ok N' after N cases."""
import sys

import numpy as np

import clayout as cly

GUARD = 0x5A
ONES = np.ones(8, np.float32)


def grouped(count, group, zero_points=False):
    """Grouped scales of one (and u4 zero points of zero): exact values."""
    kw = dict(src_scales=cly.Scales(np.ones(count, np.float32), mask=0b11, groups=(1, group),
                                    data_type="f16"))
    if zero_points:
        kw["src_zero_points"] = cly.ZeroPoints(np.zeros(count, np.int32), mask=0b11,
                                              groups=(1, group), data_type="u4")
    return cly.Attr(**kw)


CASES = [  # source (dims, type, tag), destination parent (dims, type, tag), window offsets, attr
    (((2, 32, 4, 8), "f32", "nchw"), ((2, 48, 4, 8), "s8", "nChw16c"), (0, 16, 0, 0),
     cly.Attr(src_scales=cly.Scales(np.ones(32, np.float32), mask=0b10))),
    (((4, 64), "u4", "ab"), ((4, 96), "f16", "ab"), (0, 32), grouped(8, 32, True)),
    (((4, 64), "f32", "ab"), ((6, 80), "s4", "ab"), (1, 16), grouped(16, 16)),
    (((3, 48), "f32", "ab"), ((3, 64), "f8_e4m3", "ab"), (0, 16), None),
    (((3, 48), "f8_e5m2", "ab"), ((3, 64), "f32", "ab"), (0, 8), None),
    (((2, 32), "f32", "ab"), ((2, 48), "u4", "ab"), (0, 8), cly.Attr(sum_beta=0.0)),
    (((20, 6), "f32", "ba"), ((20, 6), "s4", "Ab16a"), (0, 0), None),
    (((4, 32), "s4", "ab"), ((4, 48), "s4", "ab"), (0, 16), None),
]


def main():
    engine = cly.Engine("opencl")
    print(engine, file=sys.stderr)
    rng = np.random.default_rng(0)
    for (dims, sdt, stag), (pdims, ddt, dtag), offsets, attr in CASES:
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        parent_md = cly.MemoryDesc(pdims, ddt, tag=dtag)
        dst_md = parent_md.submemory(dims, offsets) if pdims != dims else parent_md
        low = 0 if "u4" in (sdt, ddt) else -7
        values = rng.integers(low, 8, dims).astype(np.float32).astype(src_md.dtype.numpy)
        src = cly.Memory.from_numpy(src_md, engine, values)
        parent = cly.Memory(parent_md, engine, raw=np.full(parent_md.size + 64, GUARD, np.uint8))
        dst = cly.Memory(dst_md, engine, buffer=parent)
        before = parent.raw()
        cly.Reorder(src_md, dst_md, attr=attr, engine=engine).execute(
            cly.Stream(engine), src, dst).wait()
        after = parent.raw()
        got = dst.to_numpy().astype(np.float32)
        assert np.array_equal(got, values.astype(np.float32)), (dst_md, got, values)
        mine = np.zeros(after.size, bool)
        elements = dst_md.element_offsets(padded=True).ravel()
        if dst_md.dtype.packed:
            mine[elements // 2] = True
            # A byte shared with an element outside the window: its other nibble kept.
            outside = np.setdiff1d(np.arange(parent_md.nelems(padded=True)), elements)
            shared = outside[np.isin(outside // 2, elements // 2)]
            nibble = lambda raw, k: raw[k // 2] >> (4 * (k % 2)) & 15  # noqa: E731
            assert all(nibble(after, k) == nibble(before, k) for k in shared), dst_md
        else:
            size = dst_md.dtype.bits // 8
            for k in range(size):
                mine[elements * size + k] = True
        keep = after[~mine] == before[~mine]
        assert keep.all(), (dst_md, np.flatnonzero(~keep)[:8])
    print("ok", len(CASES))


if __name__ == "__main__":
    main()
