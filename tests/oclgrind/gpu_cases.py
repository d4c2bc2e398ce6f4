"""Run under Oclgrind with the GPU strategy forced:

    CLAYOUT_STRATEGY=gpu oclgrind --data-races python gpu_cases.py

Small cases of every GPU kernel shape: each tiled transpose (tails, padding,
weights, 5-D, 2-D), the axis-staging shuffles, striped conversions (aligned
and not), conversions with scales, zero points and sums, submemory
destinations, a launch split in parts, nibble transposes, and Quantize's
coalesced kernel. Each destination lies in a
guarded buffer; the script checks the values against the tests' own
reference and that no byte outside the destination's elements changed.
Oclgrind reports any out-of-bounds access, data race or barrier misuse on
stderr (the test fails on any). Prints 'ok N' after N cases."""
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import clayout as cly  # noqa: E402
from clayout.gpu import build  # noqa: E402
from reference import assert_padding_zero, per_slice, ref_reorder, ref_shuffle  # noqa: E402

GUARD = 0x5A
PC = "per-channel"


class Case:
    """One reorder (or shuffle) into a guarded destination."""

    def __init__(self, dims, sdt, stag, ddt, dtag, *, attr=None, parent=None, offsets=None,
                 shuffle=None, backward=False, split=False):
        self.dims, self.sdt, self.stag, self.ddt, self.dtag = dims, sdt, stag, ddt, dtag
        self.attr, self.parent, self.offsets = attr, parent, offsets
        self.shuffle, self.backward, self.split = shuffle, backward, split

    def __str__(self):
        text = f"{self.sdt}:{self.stag} -> {self.ddt}:{self.dtag} {self.dims}"
        return text + (f" shuffle g{self.shuffle}" if self.shuffle else "") + \
            (f" attr {self.attr}" if self.attr else "") + (" window" if self.parent else "")


CASES = [
    # Tiled transposes, with tails (35, 40 and 70x33 fit no box exactly) and padding.
    Case((2, 40, 5, 7), "f32", "nchw", "f32", "nhwc"),
    Case((2, 40, 5, 7), "f32", "nhwc", "f32", "nchw"),
    Case((2, 40, 3, 5), "f32", "nchw", "f32", "nChw16c"),
    Case((2, 40, 3, 5), "f32", "nChw16c", "f32", "nchw"),
    Case((2, 32, 3, 5), "f32", "nChw16c", "f32", "nhwc"),
    Case((1, 24, 4, 6), "f32", "nhwc", "f32", "nChw8c"),
    Case((2, 24, 3, 3), "f32", "nChw8c", "f32", "nChw16c"),
    Case((32, 32, 3, 3), "f32", "oihw", "f32", "OIhw4i16o4i"),
    Case((32, 48, 3, 3), "f32", "oihw", "f32", "OIhw16i16o"),
    Case((32, 32, 3, 3), "f32", "OIhw16i16o", "f32", "oihw"),
    Case((2, 16, 16, 3, 3), "f32", "goihw", "f32", "gOIhw16i16o"),
    Case((70, 33), "f32", "ab", "f32", "ba"),
    Case((1, 16, 3, 4, 5), "f32", "ncdhw", "f32", "ndhwc"),
    Case((2, 64, 4, 4), "bf16", "nhwc", "bf16", "nchw"),
    Case((2, 64, 5, 5), "s8", "nchw", "s8", "nhwc"),
    Case((2, 40, 5, 7), "f8_e4m3", "nchw", "f8_e4m3", "nhwc"),
    Case((2, 40, 3, 5), "f32", "nChw16c", "f8_e5m2", "nchw"),
    Case((1, 48, 6, 6), "f16", "nchw", "f16", "nhwc"),
    # Vectors through local memory (issue 22): 16 bytes a lane, across the
    # row's levels for weights (rows of 3x3), 2 for f64, padding in whole vectors.
    Case((2, 128, 4, 4), "s8", "nchw", "s8", "nhwc"),
    Case((16, 32, 3, 3), "f32", "oihw", "f32", "OIhw4i16o4i"),
    Case((48, 40), "f64", "ab", "f64", "ba"),
    Case((2, 40, 3, 5), "f32", "nchw", "bf16", "nChw16c", attr="sum"),
    Case((2, 64, 3, 3), "u8", "nChw16c", "f32", "nchw", attr=PC),
    # Vectors across 7x7 planes and channels, each lane its own channel's value.
    Case((2, 32, 7, 7), "s8", "nChw16c", "f32", "nchw", attr=PC),
    Case((1, 48, 7, 7), "f32", "nchw", "u8", "nhwc", attr="dst per-channel"),
    Case((2, 3, 4, 5), "f32", "nchw", "s8", "nhwc", attr=PC),
    # Boxes that divide the channels, so vectors may cross 7x7 planes (C = 144).
    Case((1, 144, 7, 7), "f32", "nchw", "f32", "nhwc"),
    Case((1, 144, 7, 7), "f32", "nhwc", "bf16", "nchw"),
    # Short runs through a tile: a shuffle of 3x3 planes.
    Case((2, 64, 3, 3), "f32", "nchw", "f32", "nchw", shuffle=4, backward=True),
    # Tiled conversions with attributes (applied in the write phase).
    Case((2, 40, 3, 5), "f32", "nchw", "s8", "nChw16c", attr=PC),
    Case((2, 32, 3, 5), "s8", "nChw16c", "f32", "nchw", attr=PC),
    Case((2, 32, 3, 5), "s8", "nchw", "u8", "nhwc", attr="zero points"),
    Case((2, 32, 3, 5), "f32", "nhwc", "bf16", "nchw", attr="sum"),
    Case((2, 32, 3, 5), "f32", "nchw", "f16", "nhwc", attr="dst per-channel"),
    # Striped: the innermost loop is shared (typed aligned vectors, or not).
    Case((2, 16, 5, 5), "f32", "nchw", "f16", "nchw"),
    Case((2, 16, 5, 5), "f32", "nchw", "s8", "nchw", attr="tensor"),
    Case((2, 16, 5, 5), "s8", "nchw", "s32", "nchw"),
    Case((2, 32, 3, 3), "f32", "nChw16c", "s8", "nChw16c", attr=PC),
    Case((2, 16, 5, 5), "f32", "nchw", "bf16", "nchw", parent=(2, 16, 5, 6), offsets=(0, 0, 0, 1)),
    # Submemory destinations of tiled transposes.
    Case((2, 40, 5, 7), "f32", "nchw", "f32", "nhwc", parent=(2, 48, 5, 7), offsets=(0, 8, 0, 0)),
    Case((2, 16, 3, 5), "f32", "nchw", "f32", "nChw16c", parent=(2, 64, 3, 5),
         offsets=(0, 16, 0, 0)),
    Case((64, 64), "f32", "ab", "f32", "ba", parent=(64, 80), offsets=(0, 8)),
    Case((2, 16, 3, 5), "f32", "nchw", "s8", "nChw16c", attr=PC, parent=(2, 48, 3, 5),
         offsets=(0, 32, 0, 0)),
    # Shuffles: axis staging where a block cuts the groups, else split-axis views.
    Case((2, 48, 2, 3), "f32", "nChw16c", "f32", "nChw16c", shuffle=3),
    Case((1, 272, 2, 3), "f32", "nChw16c", "f32", "nChw16c", shuffle=4),
    Case((2, 64, 3, 3), "f32", "nchw", "f32", "nchw", shuffle=4),
    Case((2, 64, 3, 3), "f32", "nhwc", "f32", "nhwc", shuffle=4),
    Case((2, 64, 2, 2), "bf16", "nChw16c", "bf16", "nChw16c", shuffle=4, backward=True),
    Case((2, 24, 3, 3), "f32", "nChw8c", "f32", "nchw", shuffle=4),
    # A launch split in parts with global offsets (the limit lowered).
    Case((2, 64, 8, 8), "f32", "nchw", "f32", "nhwc", split=True),
    Case((2, 64, 8, 8), "f32", "nchw", "f16", "nchw", split=True),
]


def make_attr(kind, channels, rng):
    """(Attr, reference keyword arguments as arrays over the logical dims)."""
    if kind is None:
        return None, {}
    if kind == "tensor":
        return cly.Attr(src_scales=0.5), {"src_scale": np.float32(0.5)}
    if kind == PC:
        values = (2.0 ** rng.integers(-3, 2, channels)).astype(np.float32)
        return cly.Attr(src_scales=cly.Scales(values, mask=2)), {"src_scale": values}
    if kind == "dst per-channel":
        values = (2.0 ** rng.integers(-3, 2, channels)).astype(np.float32)
        return cly.Attr(dst_scales=cly.Scales(values, mask=2)), {"dst_scale": values}
    if kind == "zero points":
        return (cly.Attr(src_scales=2.0, src_zero_points=3, dst_zero_points=100),
                {"src_scale": np.float32(2.0), "src_zp": np.int32(3), "dst_zp": np.int32(100)})
    if kind == "sum":
        return cly.Attr(sum_beta=0.5), {"beta": 0.5}
    raise ValueError(kind)


def run(case, engine, rng):
    dims = case.dims
    src_md = cly.MemoryDesc(dims, case.sdt, tag=case.stag)
    parent_md = cly.MemoryDesc(case.parent or dims, case.ddt, tag=case.dtag)
    dst_md = parent_md.submemory(dims, case.offsets) if case.parent else parent_md
    values = rng.integers(-60, 60, dims).astype(src_md.dtype.numpy)
    src = cly.Memory.from_numpy(src_md, engine, values)
    raw = np.full(parent_md.size + 64, GUARD, np.uint8)
    parent = cly.Memory(parent_md, engine, raw=raw)
    dst = cly.Memory(dst_md, engine, buffer=parent)
    attr, kwargs = make_attr(case.attr, dims[1], rng)
    if "beta" in kwargs:
        old = rng.integers(-10, 10, dims).astype(np.float32)
        cly.reorder(cly.Memory.from_numpy(cly.MemoryDesc(dims, "f32"), engine, old), dst)
        kwargs["old"] = old
    before = parent.raw()
    stream = cly.Stream(engine)
    if case.shuffle:
        primitive = cly.Shuffle(src_md, 1, case.shuffle, backward=case.backward,
                                engine=engine, dst_md=dst_md)
        want = ref_shuffle(values, 1, case.shuffle, case.backward)
    else:
        primitive = cly.Reorder(src_md, dst_md, attr=attr, engine=engine)
        mask_args = {k: (per_slice(v, 2, dims) if np.ndim(v) else v) for k, v in kwargs.items()
                     if k != "old"}
        want, _ = ref_reorder(values, case.sdt, case.ddt, old=kwargs.get("old"), **mask_args)
    assert primitive.impl == "ocl:generated", (str(case), primitive.impl)
    assert primitive._implementation.plan.strategy == "gpu", str(case)
    primitive.execute(stream, src, dst)
    stream.wait()
    got = dst.to_numpy()
    assert np.array_equal(got.astype(np.float64), np.asarray(want).astype(np.float64)), \
        (str(case), got, want)
    after = parent.raw()
    mine = np.zeros(after.size, bool)
    size = dst_md.dtype.bits // 8
    for offset in dst_md.element_offsets(padded=True).ravel():
        mine[offset * size:(offset + 1) * size] = True
    changed = np.flatnonzero((after != before) & ~mine)
    assert changed.size == 0, (str(case), changed[:8])
    if not case.parent:
        assert_padding_zero(after[:parent_md.size], dims, case.dtag, case.ddt)
    return primitive._implementation.plan


#: 4-bit transposes moved as words of nibbles (gpu/plan_cpu.py
#: plan_nibble_transpose, in a warp's grid), one with padding rows.
NIBBLES = [((256, 128), "s4", "ab", "ba"), ((40, 48), "u4", "ab", "AB16b16a")]
CONVERTED_NIBBLES = 2  # (run_nibbles: u4 -> f16 and f32 -> s4, grouped scales)

#: Quantize's coalesced kernel: a group's statistics met in local memory
#: (races there are what Oclgrind looks for), tails of the last work-group.
QUANTIZE = [
    ((4, 1000), "s4", "symmetric", (1, 8), "f32", None),
    ((5, 96), "u4", "asymmetric", (1, 32), "f16", "u4"),
    ((3, 1024), "f4_e2m1", "mx", (1, 32), "e8m0", None),
    ((9, 256), "u8", "asymmetric", (1, 256), "bf16", "s32"),
    # f16 and bf16 sources, read by the kernel itself (the source type last)
    ((5, 96), "u4", "asymmetric", (1, 32), "f16", "u4", "f16"),
    ((3, 1024), "f4_e2m1", "mx", (1, 32), "e8m0", None, "bf16"),
]


def run_nibbles(engine, rng):
    from reference import element_offsets, get_nibbles, raw_of_packed, nibble_values

    for dims, dt, stag, dtag in NIBBLES:
        codes = rng.integers(0, 16, dims)
        src_md = cly.MemoryDesc(dims, dt, tag=stag)
        dst_md = cly.MemoryDesc(dims, dt, tag=dtag)
        src = cly.Memory(src_md, engine, raw=raw_of_packed(nibble_values(codes, dt), stag, dt))
        whole = cly.Memory(cly.MemoryDesc((dst_md.size + 64,), "u8"), engine,
                           raw=np.full(dst_md.size + 64, GUARD, np.uint8))
        dst = cly.Memory(dst_md, engine, buffer=whole)
        primitive = cly.Reorder(src_md, dst_md, engine=engine)
        assert primitive._implementation.plan.shape == "nibble_transpose", (dims, dtag)
        primitive.execute(cly.Stream(engine), src, dst).wait()
        after = whole.raw()
        got = get_nibbles(after[:dst_md.size], element_offsets(dims, dtag)).reshape(dims)
        assert np.array_equal(got, codes), (dims, dtag)
        assert (after[dst_md.size:] == GUARD).all(), (dims, dtag, "wrote past the end")
    # Converted on the way, with grouped scales (and zero points): a 4-bit
    # source unpacked after the transpose, a 4-bit destination packed before.
    from reference import logical_of, logical_of_packed, per_group, raw_of, ref_reorder

    dims, groups = (64, 128), (1, 32)
    count = dims[0] * dims[1] // 32
    scales = (2.0 ** rng.integers(-4, 2, count)).astype(np.float32)
    zps = rng.integers(0, 16, count).astype(np.int32)
    for (sdt, stag), (ddt, dtag) in ((("u4", "ba"), ("f16", "ab")),
                                     (("f32", "ab"), ("s4", "ba"))):
        if sdt == "u4":
            x = rng.integers(0, 16, dims).astype(np.uint8)
            attr = cly.Attr(src_scales=cly.Scales(scales, mask=3, groups=groups),
                            src_zero_points=cly.ZeroPoints(zps, mask=3, groups=groups,
                                                           data_type="u4"))
            want, _ = ref_reorder(x, sdt, ddt, src_scale=per_group(scales, 3, groups, dims),
                                  src_zp=per_group(zps, 3, groups, dims))
            raw = raw_of_packed(nibble_values(x, sdt), stag, sdt)
        else:
            x = rng.normal(0, 8, dims).astype(np.float32)
            attr = cly.Attr(src_scales=cly.Scales(scales, mask=3, groups=groups))
            want, _ = ref_reorder(x, sdt, ddt, src_scale=per_group(scales, 3, groups, dims))
            raw = raw_of(x, stag, sdt)
        src_md = cly.MemoryDesc(dims, sdt, tag=stag)
        dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
        whole = cly.Memory(cly.MemoryDesc((dst_md.size + 64,), "u8"), engine,
                           raw=np.full(dst_md.size + 64, GUARD, np.uint8))
        dst = cly.Memory(dst_md, engine, buffer=whole)
        primitive = cly.Reorder(src_md, dst_md, attr=attr, engine=engine)
        assert primitive._implementation.plan.shape == "nibble_transpose", (sdt, ddt)
        primitive.execute(cly.Stream(engine), cly.Memory(src_md, engine, raw=raw), dst).wait()
        after = whole.raw()
        got = logical_of_packed(after[:dst_md.size], dims, dtag, ddt) if ddt == "s4" else \
            logical_of(after[:dst_md.size], dims, dtag, ddt)
        assert np.array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64)), \
            (sdt, ddt)
        assert (after[dst_md.size:] == GUARD).all(), (sdt, ddt, "wrote past the end")


def quantize_guarded(engine, q, x, dt, scheme, groups, scale_dt, zp_dt, what):
    """Run Quantize ``q`` on ``x`` into guarded buffers: the values, scales
    and zero points must be the reference's and no byte past them changed."""
    from quantize_reference import reference

    mds = [q.dst_md, q.scales_md] + ([q.zero_points_md] if q.zero_points_md else [])
    wholes = [cly.Memory(cly.MemoryDesc((md.size + 64,), "u8"), engine,
                         raw=np.full(md.size + 64, GUARD, np.uint8)) for md in mds]
    outs = [cly.Memory(md, engine, buffer=w) for md, w in zip(mds, wholes)]
    q.execute(cly.Stream(engine), cly.Memory.from_numpy(q.src_md, engine, x), *outs).wait()
    values, scales, zps = reference(x.astype(np.float32), dt, scheme, 3, groups, scale_dt,
                                    zp_dt)
    assert np.array_equal(outs[0].to_numpy().astype(np.float32), values), what
    if scheme == "mx":
        assert np.array_equal(outs[1].raw()[:scales.size], scales), what
    else:
        assert np.array_equal(outs[1].to_numpy().astype(np.float32).ravel(), scales), what
    if zps is not None:
        assert np.array_equal(outs[2].to_numpy().astype(np.int64).ravel(), zps), what
    for md, whole in zip(mds, wholes):
        assert (whole.raw()[md.size:] == GUARD).all(), (what, "wrote past the end")


def run_quantize(engine, rng):
    for dims, dt, scheme, groups, scale_dt, zp_dt, *src in QUANTIZE:
        md = cly.MemoryDesc(dims, src[0] if src else "f32")
        x = (rng.standard_normal(dims) * 4).astype(md.dtype.numpy)
        q = cly.Quantize(md, dt, scheme=scheme, mask=3,
                         groups=groups, scale_data_type=scale_dt, zero_point_data_type=zp_dt,
                         engine=engine)
        assert q.plan is not None and q.plan.lanes and q.plan.src_dt == md.data_type, q.impl
        quantize_guarded(engine, q, x, dt, scheme, groups, scale_dt, zp_dt, (dims, dt))


def main():
    assert os.environ.get("CLAYOUT_STRATEGY") == "gpu", "run with CLAYOUT_STRATEGY=gpu"
    engine = cly.Engine("opencl")
    rng = np.random.default_rng(0)
    tiled = 0
    limit = build.MAX_LAUNCH_ITEMS
    for case in CASES:
        build.MAX_LAUNCH_ITEMS = 1024 if case.split else limit
        plan = run(case, engine, rng)
        tiled += plan.tile is not None
    build.MAX_LAUNCH_ITEMS = limit
    run_nibbles(engine, rng)
    run_quantize(engine, rng)
    print("ok", len(CASES), "tiled", tiled, "on", engine.profile.name)
    print("nibbles", len(NIBBLES) + CONVERTED_NIBBLES, "quantize", len(QUANTIZE))


if __name__ == "__main__":
    main()
