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
    (((3, 7), "f32", "ab"), ((4, 9), "s4", "ab"), (1, 1)),   # odd nibbles: two passes
    (((2, 17, 3), "f8_e4m3", "abc"), ((2, 17, 5), "f8_e4m3", "acb"), (0, 0, 1)),
    (((2, 16), "f32", "ab"), ((2, 48), "u4", "ab"), (0, 16)),  # whole bytes per work-item
    (((2, 20, 3, 3), "f32", "nchw"), ((2, 20, 3, 3), "f4_e2m1", "nChw16c"), (0, 0, 0, 0)),
    (((5, 6, 2, 3), "s4", "abcd"), ((5, 6, 2, 3), "f8_e5m2", "Acdb8a"), (0, 0, 0, 0)),
    (((3, 5), "u4", "ba"), ((3, 5), "u4", "ab"), (0, 0)),     # a tail byte half outside
    (((32, 64), "u4", "ab"), ((64, 96), "u4", "ba"), (32, 16)),  # CPU: a nibble tile of 32
]
# Attributes on some cases: grouped scales (of one, so the values stay
# exact) and compensation, whose second kernel reads the weights back.
GROUPED = (((4, 64), "u4", "ab"), ((4, 64), "f16", "ba"), (0, 0))
COMPENSATED = (((20, 8, 3, 3), "f32", "oihw"), ((20, 8, 3, 3), "s8", "OIhw4i16o4i"),
               (0, 0, 0, 0))


def main():
    engine = cly.Engine("opencl")
    print(engine, file=sys.stderr)
    rng = np.random.default_rng(0)
    grouped = cly.Attr(src_scales=cly.Scales(np.ones(16), mask=0b11, groups=(1, 16)),
                       src_zero_points=cly.ZeroPoints(np.zeros(16, np.int32), mask=0b11,
                                                     groups=(1, 16), data_type="u4"))
    extra = cly.Extra(compensation_mask=1, asymm_compensation_mask=1)
    for case in CASES + [GROUPED + (grouped,), COMPENSATED + (None, extra)]:
        (dims, sdt, stag), (pdims, ddt, dtag), offsets = case[:3]
        attr, extra = (case[3:] + (None, None))[:2]
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        parent_md = cly.MemoryDesc(pdims, ddt, tag=dtag, extra=extra)
        dst_md = parent_md.submemory(dims, offsets) if pdims != dims else parent_md
        low = 0 if "u4" in (sdt, ddt) else -6
        values = rng.integers(low, 7, dims).astype(np.float32)
        if "f4_e2m1" in (sdt, ddt):
            values[np.abs(values) == 5] = 4  # 5 is no f4_e2m1 value
        values = values.astype(src_md.dtype.numpy)
        src = cly.Memory.from_numpy(src_md, engine, values)
        raw = np.full(parent_md.size + 64, GUARD, np.uint8)
        parent = cly.Memory(parent_md, engine, raw=raw)
        dst = cly.Memory(dst_md, engine, buffer=parent)
        before = parent.raw()
        cly.Reorder(src_md, dst_md, attr=attr, engine=engine).execute(
            cly.Stream(engine), src, dst).wait()
        after = parent.raw()
        if extra is not None:  # the compensation values: every output channel's sum
            q = values.reshape(dims[0], -1).astype(np.int64).sum(axis=1)
            comp = after[dst_md.compensation_offset:dst_md.size].view(np.int32)
            want = np.zeros(2 * 32, np.int32)
            want[:dims[0]], want[32:32 + dims[0]] = -128 * q, -q
            assert np.array_equal(comp, want), (comp, want)
            after, before = after[:dst_md.compensation_offset], before[:dst_md.compensation_offset]
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
    print("ok", len(CASES) + 2 + runtime_cases(engine, rng) + execute_value_cases(engine, rng))


R = cly.RUNTIME_DIM
# Runtime dims: one kernel per pattern, run on shapes whose extents cut its
# register transposes and runs short (19 channels, 9 and 11 columns).
RUNTIME_CASES = [  # source pattern tag, destination pattern tag, dst type, shapes
    ("nchw", "nChw16c", "f32", [(2, 19, 3, 9), (1, 16, 1, 8)]),
    ("nchw", "nhwc", "f32", [(1, 19, 2, 11)]),
    ("nChw16c", "nchw", "s8", [(2, 19, 3, 9)]),
]


def runtime_cases(engine, rng) -> int:
    """Run the runtime-dims kernels; every value exact, guard bytes after the
    destination untouched. Returns the number of shapes run."""
    count = 0
    for stag, dtag, ddt, shapes in RUNTIME_CASES:
        src_p = cly.MemoryDesc((R,) * 4, "f32", tag=stag)
        dst_p = cly.MemoryDesc((R,) * 4, ddt, tag=dtag)
        primitive = cly.Reorder(src_p, dst_p, engine=engine)
        for dims in shapes:
            values = rng.integers(-6, 7, dims).astype(np.float32)
            src = cly.Memory.from_numpy(src_p.with_dims(dims), engine, values)
            dst_md = dst_p.with_dims(dims)
            dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size + 64, GUARD, np.uint8))
            primitive.execute(cly.Stream(engine), src, dst).wait()
            assert np.array_equal(dst.to_numpy().astype(np.float32), values), (dst_md, dims)
            assert (dst.raw()[dst_md.size:] == GUARD).all(), (dst_md, "guard bytes")
            count += 1
    return count


def execute_value_cases(engine, rng) -> int:
    """Scales and zero points given at execute: a per-tensor value read
    from a buffer, and per-slice values along runtime dims (ones and zeros,
    so the values stay exact); guard bytes untouched. Returns the count."""
    count = 0
    attr = cly.Attr(src_scales=cly.Scales(mask=0b11), dst_zero_points=cly.ZeroPoints(mask=0))
    for dims, src_md, dst_md in [
            ((2, 19, 3, 9), cly.MemoryDesc((R,) * 4, "f32", tag="nchw"),
             cly.MemoryDesc((R,) * 4, "s8", tag="nChw16c")),
            ((2, 19, 3, 9), cly.MemoryDesc((2, 19, 3, 9), "f32", tag="nchw"),
             cly.MemoryDesc((2, 19, 3, 9), "s8", tag="nChw16c"))]:
        primitive = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
        values = rng.integers(-6, 7, dims).astype(np.float32)
        src = cly.Memory.from_numpy(src_md.with_dims(dims) if src_md.is_runtime else src_md,
                                    engine, values)
        dst_md = dst_md.with_dims(dims) if dst_md.is_runtime else dst_md
        dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size + 64, GUARD, np.uint8))
        primitive.execute(cly.Stream(engine), src, dst, src_scales=np.ones(dims[0] * dims[1]),
                          dst_zero_points=0).wait()
        assert np.array_equal(dst.to_numpy().astype(np.float32), values), (dst_md, dims)
        assert (dst.raw()[dst_md.size:] == GUARD).all(), (dst_md, "guard bytes")
        count += 1
    # Zero points in a u4 device memory: widened by the runtime-dims kernel
    # that reads 4-bit sources, for an odd count (a byte half used).
    pattern = cly.MemoryDesc((R, R), "u8", tag="ab")
    primitive = cly.Reorder(pattern, cly.MemoryDesc((R, R), "f32", tag="ba"), engine=engine,
                            attr=cly.Attr(src_zero_points=cly.ZeroPoints(mask=0b11,
                                                                         data_type="u4")))
    dims = (3, 5)
    values = rng.integers(0, 16, dims).astype(np.uint8)
    points = cly.Memory.from_numpy(cly.MemoryDesc((15,), "u4", tag="a"), engine,
                                   values.reshape(-1).astype(cly.data_type("u4").numpy))
    src = cly.Memory.from_numpy(pattern.with_dims(dims), engine, values)
    dst = cly.Memory(cly.MemoryDesc(dims, "f32", tag="ba"), engine)
    primitive.execute(cly.Stream(engine), src, dst, src_zero_points=points).wait()
    assert not dst.to_numpy().any(), dst.to_numpy()  # each value minus itself
    return count + 1


if __name__ == "__main__":
    main()
