"""The NumPy host path: conversions rounded once, and box-by-box work whose
scratch memory does not grow with the tensor."""
import itertools
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clayout as cly
from clayout.host import layout
from reference import NP, nearest_even

def traced_peak(run) -> int:
    """Peak bytes tracemalloc saw allocated while ``run()`` ran."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

@pytest.fixture(autouse=True)
def _f8_and_4bit_on_the_host(kernels_decline):
    """These tests drive the host fallback with f8 and 4-bit types, which
    had no kernels when they were written: keep those types there."""
    kernels_decline("f8_e5m2", "f8_e4m3", "s4", "u4")



def reorder_f64(engine, values, dt):
    src_md = cly.MemoryDesc((len(values),), "f64")
    dst_md = cly.MemoryDesc((len(values),), dt)
    src = cly.Memory.from_numpy(src_md, engine, np.asarray(values, np.float64))
    dst = cly.Memory(dst_md, engine)
    cly.reorder(src, dst)
    return dst.to_numpy()


@pytest.mark.parametrize("dt, x, want", [
    ("f8_e5m2", 1.125 + 2 ** -40, 1.25),     # just above a tie: up, not to even
    ("f8_e5m2", 1.125, 1.0),                 # the tie itself: to even
    ("f8_e4m3", 1.0625 + 2 ** -40, 1.125),
    ("f8_e4m3", 1.0625, 1.0),
    ("bf16", 1 + 2 ** -8 + 2 ** -40, 1 + 2 ** -7),
])
def test_f64_rounds_once(engine, dt, x, want):
    got = reorder_f64(engine, [x, -x], dt)
    assert got.astype(np.float64).tolist() == [want, -want]


@st.composite
def near_ties(draw, dt):
    """Midpoints between neighbouring values of dt, nudged by far less than
    an f32 ulp: where rounding through f32 first goes wrong."""
    finite = np.arange(0, 0x7F, dtype=np.uint8).view(NP[dt]).astype(np.float64)
    finite = np.unique(finite[np.isfinite(finite)])
    i = draw(st.integers(0, len(finite) - 2))
    middle = (finite[i] + finite[i + 1]) / 2
    nudge = draw(st.sampled_from([-1, 0, 1])) * math.ldexp(max(middle, 2.0 ** -20), -36)
    return draw(st.sampled_from([1, -1])) * (middle + nudge)


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from(["f8_e5m2", "f8_e4m3"]))
def test_f64_to_f8_matches_exact_rounding(host_engine, data, dt):
    values = data.draw(st.lists(st.one_of(
        st.floats(min_value=-400, max_value=400, allow_nan=False), near_ties(dt)),
        min_size=1, max_size=8))
    got = reorder_f64(host_engine, values, dt)
    want = [nearest_even(x, dt) for x in values]
    assert got.view(np.uint8).tolist() == np.array(want).view(np.uint8).tolist()


@given(st.lists(st.integers(1, 9), min_size=1, max_size=4).flatmap(
    lambda shape: st.tuples(st.just(tuple(shape)),
                            st.tuples(*(st.sampled_from([1, 2, 4]) for _ in shape)),
                            st.integers(1, 50))))
def test_boxes_tile_the_index_space(case):
    shape, align, limit = case
    seen = np.zeros(shape, np.int64)
    for box in layout.boxes(shape, limit, align):
        for (start, stop), a, n in zip(box, align, shape):
            assert start % a == 0 and (stop % a == 0 or stop == n) and start < stop
        size = int(np.prod([stop - start for start, stop in box]))
        assert size <= max(limit, int(np.prod(align)))
        seen[tuple(slice(start, stop) for start, stop in box)] += 1
    assert (seen == 1).all()


CASES = {
    "blocked both sides, tails": (("f32", (3, 37, 5, 3), "nChw16c"), ("s8", "ABcd4b16a4b"),
                                  {"src_scales": cly.Scales(np.linspace(0.5, 2, 37), mask=2),
                                   "dst_zero_points": 3}),
    "sum with per-slice zero points": (("s8", (4, 7, 9), "acb"), ("u8", "Acb8a"),
                                       {"sum_beta": 0.5,
                                        "dst_zero_points": cly.ZeroPoints(np.arange(9), mask=4)}),
    "packed destination": (("f32", (6, 11), "ab"), ("s4", "ba"), {"src_scales": 0.25}),
    "f8 source into bf16": (("f8_e4m3", (5, 33, 2), "abc"), ("bf16", "aBc16b"), {}),
}


def _problem(name, engine, seed=0):
    (sdt, dims, stag), (ddt, dtag), attr = CASES[name]
    rng = np.random.default_rng(seed)
    src_md = cly.MemoryDesc(dims, sdt, tag=stag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
    values = rng.integers(-20, 20, dims).astype(src_md.dtype.numpy)
    old = rng.integers(0, 5, dims).astype(dst_md.dtype.numpy)
    src = cly.Memory.from_numpy(src_md, engine, values)
    dst = cly.Memory(dst_md, engine, raw=np.full(dst_md.size, 0xA5, np.uint8))
    dst_init = cly.Memory.from_numpy(dst_md, engine, old)
    cly.reorder(dst_init, dst)  # the old values, padding zero
    cly.reorder(src, dst, attr=cly.Attr(**attr) if attr else None)
    return dst.raw()


@pytest.mark.parametrize("name", list(CASES))
def test_small_boxes_change_nothing(host_engine, cl_engine, monkeypatch, name):
    whole = _problem(name, host_engine)
    monkeypatch.setattr(layout, "BOX_ELEMENTS", 5)
    boxed = _problem(name, host_engine)
    on_device = _problem(name, cl_engine)   # a kernel, or the host path behind OpenCL
    assert whole.tobytes() == boxed.tobytes() == on_device.tobytes()


@pytest.mark.parametrize("name", ["shuffle of a blocked axis", "shuffle of a plain axis"])
def test_small_boxes_change_no_shuffle(host_engine, monkeypatch, name):
    tag = "aBcd8b" if "blocked" in name else "acdb"
    md = cly.MemoryDesc((2, 24, 3, 5), "u8", tag=tag)
    values = np.random.default_rng(2).integers(0, 255, md.dims).astype(np.uint8)
    src = cly.Memory.from_numpy(md, host_engine, values)
    results = []
    for limit in (layout.BOX_ELEMENTS, 7):
        monkeypatch.setattr(layout, "BOX_ELEMENTS", limit)
        dst = cly.Memory(md, host_engine)
        cly.shuffle(src, dst, axis=1, group_size=3)
        results.append(dst.to_numpy())
    rows = 24 // 3
    want = values[:, [(c % rows) * 3 + c // rows for c in range(24)]]
    assert all(np.array_equal(r, want) for r in results)


def test_host_scratch_stays_bounded_beyond_2_to_the_31(host_engine):
    n = 2 ** 31 + 64
    src_md, dst_md = cly.MemoryDesc((n,), "s8"), cly.MemoryDesc((n,), "u8")
    src_bytes = np.zeros(n, np.uint8)
    src_bytes[:: 1 << 20] = 0x9C        # -100: saturates to 0
    src_bytes[1:: 1 << 20] = 100
    src_bytes[-1] = 42
    src = cly.Memory(src_md, host_engine, buffer=src_bytes)
    dst = cly.Memory(dst_md, host_engine, buffer=np.full(n, 7, np.uint8))
    reorder = cly.Reorder(src_md, dst_md, engine=host_engine)
    peak = traced_peak(lambda: reorder.execute(cly.Stream(host_engine), src, dst))
    assert peak <= 256 << 20, f"{peak >> 20} MiB of scratch"
    out = dst.storage
    assert out[-1] == 42 and (out[:: 1 << 20] == 0).all() and (out[1:: 1 << 20] == 100).all()
    assert not out[2:: 4099].any()       # zeros elsewhere, the 7s overwritten


def test_zero_size_tensor_with_per_slice_scales_is_a_no_op(engine):
    md = cly.MemoryDesc((0, 16, 3), "f32")
    attr = cly.Attr(dst_scales=cly.Scales([], mask=0b1), src_scales=cly.Scales(
        np.ones(16), mask=0b10))
    r = cly.Reorder(md, cly.MemoryDesc(md.dims, "s8", tag="acb"), engine=engine, attr=attr)
    src, dst = cly.Memory(md, engine), cly.Memory(r.dst_md, engine)
    stream = cly.Stream(engine)
    r.execute(stream, src, dst)
    stream.wait()
    assert dst.to_numpy().shape == (0, 16, 3)


def test_every_element_of_a_box_sweep_once():
    # The boxes of a big, oddly shaped space: C order, no gaps, no overlap.
    shape = (3, 1, 1000, 7)
    starts = [box for box in layout.boxes(shape, 2000, (1, 1, 8, 1))]
    count = sum(int(np.prod([b - a for a, b in box])) for box in starts)
    assert count == int(np.prod(shape))
    firsts = [tuple(a for a, _ in box) for box in starts]
    assert firsts == sorted(firsts)
    assert len(list(itertools.islice(layout.boxes((0, 5)), 1))) == 0


def test_scratch_stays_bounded_with_blocks_on_leading_dims(host_engine, monkeypatch):
    # Both sides block dims 0 and 1 by 16: a box must still stay near the limit.
    dims = (32, 32, 64, 32)
    src_md = cly.MemoryDesc(dims, "f32", tag="OIhw16i16o")
    dst_md = cly.MemoryDesc(dims, "f32", tag="OIhw16o16i")
    values = np.random.default_rng(4).standard_normal(dims).astype(np.float32)
    src = cly.Memory.from_numpy(src_md, host_engine, values)
    dst = cly.Memory(dst_md, host_engine)
    monkeypatch.setattr(layout, "BOX_ELEMENTS", 4096)
    reorder = cly.Reorder(src_md, dst_md, engine=host_engine)
    peak = traced_peak(lambda: reorder.execute(cly.Stream(host_engine), src, dst))
    assert peak < 1 << 20, f"{peak} bytes of scratch for boxes of 4096 elements"
    assert np.array_equal(dst.to_numpy(), values)


STAGED = [  # (src dims/type/tag, dst type/tag, attr kwargs, shuffle (axis, group) or None)
    (((3, 37, 5, 3), "f32", "nChw16c"), ("f8_e4m3", "ABcd4b16a4b"), {"src_scales": 0.5}, None),
    (((6, 11, 7), "s8", "acb"), ("s4", "bca"), {"sum_beta": 1.0}, None),
    (((2, 48, 3, 5), "f8_e5m2", "aBcd16b"), ("f8_e5m2", "aBcd16b"), {}, (1, 3)),
    (((4, 9, 2, 2, 2, 2, 2), "u8", "abcdefg"), ("u8", "gfedcba"), {}, None),
]


@pytest.mark.parametrize("case", range(len(STAGED)))
def test_small_staging_regions_change_nothing(host_engine, cl_engine, monkeypatch, case):
    (dims, sdt, stag), (ddt, dtag), attr, shuffle = STAGED[case]
    src_md = cly.MemoryDesc(dims, sdt, tag=stag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
    values = np.random.default_rng(case).integers(-6, 6, dims).astype(src_md.dtype.numpy)
    old = np.random.default_rng(9).integers(-2, 3, dims).astype(dst_md.dtype.numpy)

    def run(engine):
        src = cly.Memory.from_numpy(src_md, engine, values)
        dst = cly.Memory.from_numpy(dst_md, engine, old)
        if shuffle:
            p = cly.Shuffle(src_md, axis=shuffle[0], group_size=shuffle[1], engine=engine,
                            dst_md=dst_md)
        else:
            p = cly.Reorder(src_md, dst_md, engine=engine, attr=cly.Attr(**attr) if attr else None)
        stream = cly.Stream(engine)
        p.execute(stream, src, dst)
        stream.wait()
        return p.impl, dst.raw()

    _, want = run(host_engine)
    monkeypatch.setattr(layout, "STAGE_ELEMENTS", 64)
    monkeypatch.setattr(layout, "STAGE_BYTES", 200)
    impl, got = run(cl_engine)
    assert impl.startswith("host:") and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("tags", [("abc", "cab"), ("aBc16b", "Acb8a"), ("abc", "bca"), ("acb", "abc")])
def test_staging_regions_tile_the_destination(monkeypatch, tags):
    from clayout.host.reorder import staging_regions

    parent = cly.MemoryDesc((7, 40, 4), "s4", tag=tags[1])
    # A window that starts mid-byte, or a whole tensor with its own padding.
    dst_md = parent.submemory((5, 33, 3), (1, 0, 1)) if tags[1] == "abc" else \
        cly.MemoryDesc((5, 33, 4), "s4", tag=tags[1])
    src_md = cly.MemoryDesc(dst_md.dims, "f32", tag=tags[0])
    seen = np.zeros(dst_md.own_padded_dims, np.int64)
    for region, src, dst, fills in staging_regions(src_md, dst_md, max_bytes=40):
        first, end, base = dst
        index = layout.box_indices(region)
        offsets = layout.box_offsets(dst_md, index)
        assert (offsets >= base).all() and ((offsets - base) // 2 < end - first).all()
        seen[tuple(slice(a, b) for a, b in region)] += 1
        count = int(np.prod([b - a for a, b in region]))
        assert fills == ((end - first) * 2 == count and first * 2 == base)
    assert (seen == 1).all()


def test_host_path_scratch_does_not_grow_with_a_sparse_window(cl_engine, monkeypatch):
    monkeypatch.setattr(layout, "STAGE_BYTES", 1 << 20)
    peaks = []
    for cols in (1024, 8192):   # parents of 4 and 32 MiB, the same 8192-element window
        parent = cly.MemoryDesc((4096, cols), "f8_e4m3")
        window = parent.submemory((4096, 2), (0, 7))
        src_md = cly.MemoryDesc((4096, 2), "f8_e4m3")
        src = cly.Memory.from_numpy(src_md, cl_engine, np.ones((4096, 2), src_md.dtype.numpy))
        dst = cly.Memory(window, cl_engine, buffer=cly.Memory(parent, cl_engine))
        r = cly.Reorder(src_md, window, engine=cl_engine)
        assert r.impl.startswith("host:")
        stream = cly.Stream(cl_engine)
        peaks.append(traced_peak(lambda: (r.execute(stream, src, dst), stream.wait())))
        assert (dst.to_numpy().astype(np.float32) == 1).all()
    assert max(peaks) < 4 << 20, peaks
