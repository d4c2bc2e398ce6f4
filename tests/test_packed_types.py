"""The packed 4-bit types s4, u4 and f4_e2m1: two elements a byte, the first
in the low nibble.

* a destination window (submemory) at odd element offsets and with odd
  extents changes its own nibbles only: every other nibble of its parent,
  the other half of a shared byte included, keeps its value;
* a dense tensor with an odd element count leaves the spare high nibble of
  its last byte (and every byte after it) alone;
* padding nibbles of a blocked destination are written as 0, and a source's
  padding nibbles are never read;
* layout changes within a type are bit exact, conversions from f32 round
  once (to nearest even; s4/u4 saturate with NaN -> 0; f4_e2m1 saturates to
  +-6 with NaN -> +0), conversions to f32 are exact.

Every case runs on the host and on both OpenCL strategies, which must run
it as a kernel. Bytes are made and decoded by tests/reference.py only.
"""
import numpy as np
import pytest

import clayout as cly
from conftest import DEVICE_IMPL
import reference as ref

ENGINES = ["host_engine", "cpu_engine", "gpu_engine"]
NIBBLE_TYPES = ["s4", "u4", "f4_e2m1"]


@pytest.fixture(params=ENGINES)
def eng(request):
    return request.getfixturevalue(request.param)


def check_impl(reorder, engine):
    __tracebackhide__ = True
    if engine.is_device:
        assert reorder.impl.startswith(DEVICE_IMPL), f"ran on {reorder.impl!r}"


# -- values -------------------------------------------------------------------------

def random_nibbles(dt, dims, rng):
    """Any values of the 4-bit type dt (every code, -0 for f4_e2m1 included)."""
    return ref.nibble_values(rng.integers(0, 16, size=dims), dt)


#: f32 values whose conversion to each 4-bit type needs its rules: ties,
#: saturation, NaN, infinities, signed zeros, values below the smallest step
F32_SPECIALS = {
    "s4": [0.5, -0.5, 1.5, 2.5, -2.5, 6.5, 7.49, 7.5, -8.5, -9.0, 100.0, -1e9, np.nan, np.inf,
           -np.inf, -0.0, 0.49999997],
    "u4": [0.5, 1.5, 2.5, 14.5, 15.5, 16.0, -0.5, -1.0, -3.0, 1e9, np.nan, np.inf, -np.inf,
           -0.0, 0.49999997],
    "f4_e2m1": [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -5.0, 6.0, 7.0, -7.0, 1e9, np.nan,
                -np.nan, np.inf, -np.inf, -0.0, 0.0, 0.1, -0.3, 0.2500001, 4.99, 5.01, 2.0**-140],
}


def f32_sources(dt, dims, rng):
    """f32 values for a conversion to dt: the specials at random places, the
    rest spread over and past dt's range (a quarter of them on .5)."""
    n = int(np.prod(dims))
    spread = 3.0 if dt == "f4_e2m1" else 8.0
    x = rng.normal(0, spread, n)
    x[::4] = np.round(x[::4]) + 0.5
    if dt == "u4":
        x = np.abs(x) + rng.integers(0, 2, n) * 4
    x = x.astype(np.float32)
    specials = np.array(F32_SPECIALS[dt], dtype=np.float32)[:n]
    x[rng.choice(n, size=specials.size, replace=False)] = specials
    return x.reshape(dims)


def converted(x, dt):
    """The reference conversion of f32 values to the 4-bit type dt."""
    if dt == "f4_e2m1":
        return ref.to_f4_e2m1(x)
    return ref.to_int(x, dt, np.float32)


def to_f32(values):
    """Exact f32 values of 4-bit values."""
    return np.asarray(values).astype(np.float64).astype(np.float32)


def nibble_count(dims, tag):
    return ref.physical_size(dims, tag)


def packed_bytes(dims, tag):
    return (nibble_count(dims, tag) + 1) // 2


def codes_of_tensor(values, dims, tag, dt):
    """Over the physical elements of `tag`: each element's code, 0 in padding."""
    codes = np.zeros(nibble_count(dims, tag), dtype=np.uint8)
    codes[ref.element_offsets(dims, tag).reshape(-1)] = ref.nibble_codes(values, dt).reshape(-1)
    return codes


def assert_nibbles(raw, want_codes, dims, tag, dt, what):
    """The tensor's nibbles (elements and padding) of the bytes raw are want_codes."""
    __tracebackhide__ = True
    got = ref.get_nibbles(raw, np.arange(want_codes.size))
    bad = np.nonzero(got != want_codes)[0]
    if bad.size:
        padded = ref.blocking(tuple(dims), tag).padded_dims
        index_of = dict(zip(ref.element_offsets(padded, tag).reshape(-1).tolist(),
                            np.ndindex(*padded)))
        pad = ref.padding_mask(dims, tag)
        shown = "; ".join(
            f"{index_of[int(k)]}{' (padding)' if pad[k] else ''}: got {got[k]:#x} "
            f"({ref.nibble_values(got[k], dt)}), want {want_codes[k]:#x} "
            f"({ref.nibble_values(want_codes[k], dt)})" for k in bad[:8])
        raise AssertionError(f"{what}: {bad.size} of {want_codes.size} nibbles of {dt} {tag} "
                             f"{tuple(dims)} differ: {shown}")


def run(src_md, dst_md, engine, src, dst):
    r = cly.Reorder(src_md, dst_md, engine=engine)
    r.execute(cly.Stream(engine), src, dst)
    return r


# -- destination windows ---------------------------------------------------------------

#: (type, parent dims, parent tag, window dims, window offsets)
WINDOWS = [
    ("u4", (5, 7), "ab", (3, 3), (1, 1)),
    ("s4", (1, 33), "ab", (1, 32), (0, 1)),
    ("f4_e2m1", (1, 33), "ab", (1, 31), (0, 1)),
    ("s4", (5, 7), "ba", (3, 4), (2, 1)),
    ("u4", (4, 5), "ab", (3, 5), (0, 0)),       # 15 nibbles: byte 7 shared with the parent
    ("f4_e2m1", (3, 5, 7), "acb", (2, 3, 5), (1, 1, 2)),
    ("u4", (2, 32, 3, 5), "aBcd16b", (1, 16, 3, 3), (1, 16, 0, 1)),
    ("s4", (2, 32, 3, 5), "nChw16c", (2, 16, 2, 5), (0, 0, 1, 0)),
    ("f4_e2m1", (2, 6, 5), "aBc3b", (1, 3, 3), (1, 3, 1)),  # blocks of 3: odd runs
    ("s4", (2, 9, 4), "aBc3b", (2, 6, 3), (0, 3, 1)),
]


def window_id(case):
    dt, parent, tag, dims, offsets = case
    return f"{dt}-{tag}-{'x'.join(map(str, parent))}-win{'x'.join(map(str, dims))}" \
           f"@{'.'.join(map(str, offsets))}"


@pytest.mark.parametrize("i", range(len(WINDOWS)), ids=lambda i: window_id(WINDOWS[i]))
def test_window_destination(eng, i):
    """A reorder into a window of a parent prefilled with random bytes writes
    the window's nibbles (converted from f32, or copied from the same type)
    and leaves every other nibble of the parent as it was."""
    dt, parent_dims, tag, dims, offsets = WINDOWS[i]
    rng = np.random.default_rng(500 + i)
    plain = "abcd"[:len(dims)]
    if i % 2 == 0:  # from f32
        x = f32_sources(dt, dims, rng)
        want = converted(x, dt)
        src_md = cly.MemoryDesc(dims, "f32", plain)
        src_raw = ref.raw_of(x, plain, "f32")
    else:  # from the same type, a bit copy
        want = random_nibbles(dt, dims, rng)
        src_md = cly.MemoryDesc(dims, dt, plain)
        src_raw = ref.raw_of_packed(want, plain, dt, pad_nibble=0xF)
    parent_raw = rng.integers(0, 256, packed_bytes(parent_dims, tag), dtype=np.uint8)
    expected = ref.put_nibbles(parent_raw.copy(), ref.window_offsets(parent_dims, tag, dims,
                                                                     offsets),
                               ref.nibble_codes(want, dt))
    parent_md = cly.MemoryDesc(parent_dims, dt, tag)
    window_md = parent_md.submemory(dims, offsets)
    parent = cly.Memory(parent_md, eng, raw=parent_raw)
    r = run(src_md, window_md, eng, cly.Memory(src_md, eng, raw=src_raw),
            cly.Memory(window_md, eng, buffer=parent))
    out = parent.raw()
    window = ref.window_offsets(parent_dims, tag, dims, offsets)
    got_codes = ref.get_nibbles(out, window)
    want_codes = ref.nibble_codes(want, dt)
    assert (got_codes == want_codes).all(), (
        f"window: {int((got_codes != want_codes).sum())} of {want_codes.size} elements wrong, "
        f"first at {np.argwhere(got_codes != want_codes)[:4].tolist()}")
    ref.assert_bytes(out, expected, what="parent (the nibbles outside the window must not change)")
    check_impl(r, eng)


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_window_source(eng, dt):
    """A source window at odd offsets reads its own nibbles only."""
    parent_dims, tag, dims, offsets = (5, 9), "ab", (3, 5), (1, 3)
    rng = np.random.default_rng(7)
    parent_raw = rng.integers(0, 256, packed_bytes(parent_dims, tag), dtype=np.uint8)
    window = ref.window_offsets(parent_dims, tag, dims, offsets)
    values = ref.nibble_values(ref.get_nibbles(parent_raw, window), dt)
    parent_md = cly.MemoryDesc(parent_dims, dt, tag)
    window_md = parent_md.submemory(dims, offsets)
    parent = cly.Memory(parent_md, eng, raw=parent_raw)
    dst_md = cly.MemoryDesc(dims, "f32", "ba")
    dst = cly.Memory(dst_md, eng, raw=np.full(4 * 15, 0xFF, np.uint8))
    r = run(window_md, dst_md, eng, cly.Memory(window_md, eng, buffer=parent), dst)
    ref.assert_same(ref.logical_of(dst.raw(), dims, "ba", "f32"), to_f32(values))
    check_impl(r, eng)


# -- odd element counts -------------------------------------------------------------------

@pytest.mark.parametrize("dt, tag", [("u4", "ab"), ("s4", "ba"), ("f4_e2m1", "ab")])
def test_odd_count_tail(eng, dt, tag):
    """A dense 3x5 destination (15 nibbles in 8 bytes) in a buffer of 0xAB
    bytes: its elements are right, the spare high nibble of byte 7 and the
    bytes after it keep their 0xA / 0xAB."""
    dims = (3, 5)
    rng = np.random.default_rng(3)
    x = f32_sources(dt, dims, rng)
    want = converted(x, dt)
    src_md, dst_md = cly.MemoryDesc(dims, "f32", "ab"), cly.MemoryDesc(dims, dt, tag)
    assert packed_bytes(dims, tag) == 8
    buffer = np.full(11, 0xAB, dtype=np.uint8)
    dst = cly.Memory(dst_md, eng, raw=buffer)
    r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=ref.raw_of(x, "ab", "f32")), dst)
    out = dst.raw()
    assert_nibbles(out, codes_of_tensor(want, dims, tag, dt), dims, tag, dt, "elements")
    assert out[7] >> 4 == 0xA, f"spare high nibble of the last byte: {out[7]:#04x}, want 0xA_"
    ref.assert_bytes(out[8:], buffer[8:], what="bytes after the tensor")
    check_impl(r, eng)


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_odd_count_source_tail(eng, dt):
    """A dense 3x5 source whose spare nibble holds 0xF: the 15 elements read right."""
    dims = (3, 5)
    values = random_nibbles(dt, dims, np.random.default_rng(5))
    src_raw = ref.raw_of_packed(values, "ab", dt, pad_nibble=0xF)
    assert src_raw[7] >> 4 == 0xF
    src_md, dst_md = cly.MemoryDesc(dims, dt, "ab"), cly.MemoryDesc(dims, "f32", "ab")
    dst = cly.Memory(dst_md, eng)
    r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=src_raw), dst)
    ref.assert_same(ref.logical_of(dst.raw(), dims, "ab", "f32"), to_f32(values))
    check_impl(r, eng)


# -- padding ---------------------------------------------------------------------------------

@pytest.mark.parametrize("tag, dims", [("aBcd16b", (2, 20, 3, 3)),
                                       ("OIhw16i16o", (20, 18, 3, 1))])
@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_padding_nibbles_zero(eng, dt, tag, dims):
    """f32 -> 4-bit into a blocked layout whose dims are not multiples of 16,
    in a buffer of 0xFF bytes: every padding nibble becomes 0, every element
    is converted by the rules."""
    rng = np.random.default_rng(11)
    x = f32_sources(dt, dims, rng)
    want = converted(x, dt)
    src_md, dst_md = cly.MemoryDesc(dims, "f32", "abcd"), cly.MemoryDesc(dims, dt, tag)
    assert ref.padding_mask(dims, tag).any()
    dst = cly.Memory(dst_md, eng, raw=np.full(packed_bytes(dims, tag), 0xFF, np.uint8))
    r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=ref.raw_of(x, "abcd", "f32")), dst)
    out = dst.raw()
    ref.assert_padding_nibbles_zero(out, dims, tag)
    assert_nibbles(out, codes_of_tensor(want, dims, tag, dt), dims, tag, dt, "tensor")
    check_impl(r, eng)


# -- layouts, both ways ------------------------------------------------------------------------

#: (src tag, dst tag, dims): odd dims everywhere
LAYOUTS = [
    ("abcd", "acdb", (3, 5, 3, 7)),
    ("acdb", "abcd", (3, 5, 3, 7)),
    ("aBcd16b", "abcd", (2, 19, 3, 5)),
    ("abcd", "aBcd16b", (2, 19, 3, 5)),
    ("ba", "ab", (7, 9)),
    ("ab", "ba", (7, 9)),
]


def layout_id(case):
    src, dst, dims = case
    return f"{src}-{dst}-{'x'.join(map(str, dims))}"


@pytest.mark.parametrize("i", range(len(LAYOUTS)), ids=lambda i: layout_id(LAYOUTS[i]))
def test_same_type_layouts(eng, i):
    """4-bit -> same 4-bit type across layouts: a bit copy of every element,
    a source's padding nibbles (0xF here) not read, a destination's set to 0."""
    stag, dtag, dims = LAYOUTS[i]
    dt = NIBBLE_TYPES[i % 3]
    values = random_nibbles(dt, dims, np.random.default_rng(100 * i))
    src_md, dst_md = cly.MemoryDesc(dims, dt, stag), cly.MemoryDesc(dims, dt, dtag)
    src_raw = ref.raw_of_packed(values, stag, dt, pad_nibble=0xF)
    dst = cly.Memory(dst_md, eng, raw=np.full(packed_bytes(dims, dtag), 0x5A, np.uint8))
    r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=src_raw), dst)
    assert_nibbles(dst.raw(), codes_of_tensor(values, dims, dtag, dt), dims, dtag, dt,
                   f"{stag} -> {dtag}")
    check_impl(r, eng)


@pytest.mark.parametrize("direction", ["from_f32", "to_f32"])
@pytest.mark.parametrize("i", range(len(LAYOUTS)), ids=lambda i: layout_id(LAYOUTS[i]))
def test_f32_layouts(eng, i, direction):
    """f32 <-> 4-bit across the same layouts: to 4-bit by the conversion
    rules (padding nibbles 0), to f32 exactly (padding 0, a 4-bit source's
    padding nibbles not read)."""
    stag, dtag, dims = LAYOUTS[i]
    dt = NIBBLE_TYPES[(i + (direction == "to_f32")) % 3]
    rng = np.random.default_rng(200 * i + len(direction))
    if direction == "from_f32":
        x = f32_sources(dt, dims, rng)
        want = converted(x, dt)
        src_md, dst_md = cly.MemoryDesc(dims, "f32", stag), cly.MemoryDesc(dims, dt, dtag)
        src_raw = ref.raw_of(x, stag, "f32", pad_byte=0x7F)
        dst = cly.Memory(dst_md, eng, raw=np.full(packed_bytes(dims, dtag), 0xFF, np.uint8))
        r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=src_raw), dst)
        assert_nibbles(dst.raw(), codes_of_tensor(want, dims, dtag, dt), dims, dtag, dt,
                       f"f32 {stag} -> {dt} {dtag}")
    else:
        values = random_nibbles(dt, dims, rng)
        src_md, dst_md = cly.MemoryDesc(dims, dt, stag), cly.MemoryDesc(dims, "f32", dtag)
        src_raw = ref.raw_of_packed(values, stag, dt, pad_nibble=0xF)
        dst = cly.Memory(dst_md, eng, raw=np.full(4 * ref.physical_size(dims, dtag), 0xFF,
                                                  np.uint8))
        r = run(src_md, dst_md, eng, cly.Memory(src_md, eng, raw=src_raw), dst)
        out = dst.raw()
        ref.assert_same(ref.logical_of(out, dims, dtag, "f32"), to_f32(values),
                        what=f"{dt} {stag} -> f32 {dtag}")
        ref.assert_padding_zero(out, dims, dtag, "f32")
    check_impl(r, eng)


def test_reference_f4_rules():
    """The reference's f4_e2m1 conversion against values worked out by hand
    from the format (codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6): ties to the
    even code, saturation to 6, NaN to +0, signed zeros kept."""
    x = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, np.inf, -np.inf, np.nan, -0.0, -0.3, 0.2500001]
    want = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, -6.0, 0.0, -0.0, -0.5, 0.5]
    got = np.asarray(ref.to_f4_e2m1(x)).astype(np.float64)
    assert got.tolist() == want
    assert [np.signbit(v) for v in got] == [np.signbit(v) for v in want]
    codes = ref.nibble_codes(ref.nibble_values(np.arange(16), "f4_e2m1"), "f4_e2m1")
    assert codes.tolist() == list(range(16))


def test_4bit_windows_that_share_a_byte_may_overlap():
    """Kernels store whole bytes (the passes read, change and write back one),
    so two windows meeting mid-byte must be ordered like overlapping ones."""
    from clayout.memory_desc import may_overlap
    parent = cly.MemoryDesc((2, 7), "s4", tag="ab")
    left, right = parent.submemory((2, 3), (0, 0)), parent.submemory((2, 4), (0, 3))
    assert may_overlap(left, right)
    # Windows of whole bytes apart stay disjoint.
    whole = cly.MemoryDesc((2, 8), "s4", tag="ab")
    assert not may_overlap(whole.submemory((1, 8), (0, 0)), whole.submemory((1, 8), (1, 0)))
