"""Run under Oclgrind (``oclgrind --data-races python bounds_check.py``):
kernels of several shapes write into windows of guarded buffers; Oclgrind
reports any out-of-bounds access or data race on stderr, and this script
checks that the bytes around each destination kept their guard value.
Prints 'ok N' after N cases."""
import sys

import numpy as np

import clayout as cly

GUARD = 0x5A
CASES = [  # source (dims, type, tag), destination parent (dims, type, tag), window offsets
    (((2, 17, 3, 3), "f32", "nchw"), ((2, 33, 3, 3), "f32", "nChw16c"), (0, 16, 0, 0)),
    (((2, 16, 3, 3), "f32", "nChw16c"), ((2, 48, 3, 3), "s8", "nChw8c"), (0, 32, 0, 0)),
    (((5, 6, 2, 3), "f16", "ABcd4b16a4b"), ((5, 6, 2, 3), "bf16", "Acdb8a"), (0, 0, 0, 0)),
    (((64, 64), "f32", "ab"), ((64, 80), "f32", "ba"), (0, 8)),
    (((3, 7), "f32", "ab"), ((4, 9), "s4", "ab"), (1, 1)),          # host path, masked
    (((2, 17, 3), "f8_e4m3", "abc"), ((2, 17, 5), "f8_e4m3", "acb"), (0, 0, 1)),
]


def main():
    engine = cly.Engine("opencl")
    print(engine, file=sys.stderr)
    rng = np.random.default_rng(0)
    for (dims, sdt, stag), (pdims, ddt, dtag), offsets in CASES:
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        parent_md = cly.MemoryDesc(pdims, ddt, tag=dtag)
        dst_md = parent_md.submemory(dims, offsets) if pdims != dims else parent_md
        values = rng.integers(-7, 7, dims).astype(src_md.dtype.numpy)
        src = cly.Memory.from_numpy(src_md, engine, values)
        raw = np.full(parent_md.size + 64, GUARD, np.uint8)
        parent = cly.Memory(parent_md, engine, raw=raw)
        dst = cly.Memory(dst_md, engine, buffer=parent)
        before = parent.raw()
        cly.reorder(src, dst)
        after = parent.raw()
        got = dst.to_numpy().astype(np.float32)
        assert np.array_equal(got, values.astype(np.float32)), (dst_md, got, values)
        # Outside the window's own elements, every byte keeps its value.
        mine = np.zeros(after.size, bool)
        offsets_ = dst_md.element_offsets(padded=True).ravel()
        if dst_md.dtype.packed:
            mine[offsets_ // 2] = True
            keep = after[~mine] == before[~mine]
        else:
            size = dst_md.dtype.bits // 8
            for k in range(size):
                mine[offsets_ * size + k] = True
            keep = after[~mine] == before[~mine]
        assert keep.all(), (dst_md, np.flatnonzero(~keep)[:8])
    print("ok", len(CASES))


if __name__ == "__main__":
    main()
