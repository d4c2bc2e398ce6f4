"""No stray nibble (issue 21): every path that writes 4-bit data (s4, u4,
f4_e2m1, two elements a byte, low nibble first) changes only the nibbles of
its destination's own elements and own padding.

Each test fills a whole parent buffer with random bytes, lays the
destination somewhere in it (a dense tensor with spare nibbles after it, a
window starting or ending mid-byte, strided rows of odd length, blocked
layouts with odd tails), writes, and compares every nibble of the parent
with what tests/reference.py and tests/small_types_reference.py say: the
destination's elements hold the reference values, its own padding holds
0, and every other nibble keeps its random value. The paths: the device
buffer copy, the generated kernels (both strategies: make test runs this
file again with CLAYOUT_STRATEGY=gpu), the host engine, the OpenCL
engine's host path, runtime-dims primitives, cross-engine reorders in both
directions and all their variants, shuffles, the sum post-op, and
Memory.from_numpy's device conversion.
"""
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clayout as cly
import reference as ref
import small_types_reference as small

NIBBLE_TYPES = ["u4", "s4", "f4_e2m1"]
R = cly.RUNTIME_DIM


# =============================================================================
# Where a tensor lies, and what its parent must hold after a write
# =============================================================================

@dataclass
class Place:
    """A 4-bit tensor inside a parent buffer: its descriptor, the element
    offsets (reference, shape dims) of its elements, those of its own
    padding, and the parent's size in bytes."""

    md: cly.MemoryDesc
    offsets: np.ndarray
    padding: np.ndarray
    nbytes: int

    @property
    def dims(self):
        return self.md.dims


def dense(dims, dt, tag, spare=0):
    """A tensor of layout ``tag`` at the start of a buffer with ``spare``
    nibbles after it (which are not its own)."""
    md = cly.MemoryDesc(dims, dt, tag=tag)
    count = ref.physical_size(dims, tag)
    return Place(md, ref.element_offsets(dims, tag), np.nonzero(ref.padding_mask(dims, tag))[0],
                 -(-(count + spare) // 2))


def window(dt, parent_dims, tag, dims, offsets, spare=0):
    """The submemory of ``dims`` at ``offsets`` of a parent of layout ``tag``."""
    md = cly.MemoryDesc(parent_dims, dt, tag=tag).submemory(dims, offsets)
    count = ref.physical_size(parent_dims, tag)
    return Place(md, ref.window_offsets(parent_dims, tag, dims, offsets),
                 np.zeros(0, np.int64), -(-(count + spare) // 2))


def strided(dims, dt, strides, spare=0):
    """A plain tensor with explicit strides (in elements): gaps between rows."""
    md = cly.MemoryDesc(dims, dt, strides=strides)
    offsets = ref.element_offsets(dims, strides=strides)
    count = int(offsets.max()) + 1 if offsets.size else 0
    return Place(md, offsets, np.zeros(0, np.int64), max(-(-(count + spare) // 2), md.size))


def expected_parent(before, place, codes):
    """The parent's bytes after a write of ``codes`` (shape dims) into ``place``."""
    want = ref.put_nibbles(before.copy(), place.offsets, codes)
    return ref.put_nibbles(want, place.padding, 0)


def assert_parent(got, before, place, codes, what=""):
    """Every nibble of the parent: the elements' codes, 0 in the padding, the
    rest as before. The message says which nibbles differ and whose they are."""
    __tracebackhide__ = True
    want = expected_parent(before, place, codes)
    got_n = small.unpack_nibbles(got, 2 * got.size)
    want_n = small.unpack_nibbles(want, 2 * want.size)
    bad = np.nonzero(got_n != want_n)[0]
    if bad.size == 0:
        return
    owner = {int(k): "element" for k in place.offsets.reshape(-1)}
    owner.update({int(k): "padding" for k in place.padding})
    kinds = [owner.get(int(k), "neighbour") for k in bad]
    shown = "; ".join(f"nibble {k} ({kind}): got {got_n[k]:#x}, want {want_n[k]:#x}"
                      for k, kind in list(zip(bad.tolist(), kinds))[:8])
    raise AssertionError(
        f"{what} {place.md!r}: {bad.size} nibble(s) wrong, {kinds.count('neighbour')} of them "
        f"outside the destination: {shown}")


def random_codes(dims, rng):
    return rng.integers(0, 16, size=dims).astype(np.uint8)


def codes_to_values(codes, dt):
    """The exact values of 4-bit codes, as f64 (the reference's decode)."""
    return np.vectorize(lambda c: small.decode(c, dt), otypes=[np.float64])(codes)


def encode(values, dt):
    """The 4-bit codes of real values, one rounding (the reference's encode)."""
    return np.vectorize(lambda x: small.encode(x, dt), otypes=[np.uint8])(values)


# =============================================================================
# Memories
# =============================================================================

def unlike(raw, nbytes, rng):
    """``nbytes`` random bytes, each nibble unlike the one at its place in
    ``raw`` (where raw has one): a write that carries a source's neighbour
    nibbles along changes the destination's."""
    out = rng.integers(0, 256, nbytes, dtype=np.uint8)
    common = min(nbytes, raw.size)
    step = rng.integers(1, 16, (2, common), dtype=np.uint8)
    low = (raw[:common] & 0xF) + step[0] & 0xF
    high = (raw[:common] >> 4) + step[1] & 0xF
    out[:common] = low | high << 4
    return out


def parent_memory(engine, place, rng, src=None):
    """(the parent Memory filled with random bytes, those bytes, place's
    Memory in it). Given ``src`` (a Memory), every nibble differs from the
    nibble at the same place of src's buffer."""
    if src is None:
        before = rng.integers(0, 256, place.nbytes, dtype=np.uint8)
    else:
        before = unlike(src.raw(), place.nbytes, rng)
    parent = cly.Memory(cly.MemoryDesc((2 * place.nbytes,), place.md.data_type), engine,
                        raw=before)
    return parent, before, cly.Memory(place.md, engine, buffer=parent)


def nibble_source(engine, place, codes, rng):
    """A 4-bit source holding ``codes`` at place, random nibbles around them."""
    raw = ref.put_nibbles(rng.integers(0, 256, place.nbytes, dtype=np.uint8), place.offsets,
                          codes)
    parent = cly.Memory(cly.MemoryDesc((2 * place.nbytes,), place.md.data_type), engine, raw=raw)
    return cly.Memory(place.md, engine, buffer=parent)


def f32_source(engine, dims, rng, tag=None):
    """(an f32 memory of dims, its values): ties, saturation, NaN and infinities."""
    tag = tag or "abcdef"[:len(dims)]
    x = (rng.normal(0, 6, dims) * 2).round() / 2
    specials = [np.nan, np.inf, -np.inf, -0.0, 100.0, -0.25, 2.5, 5.0]
    flat = x.reshape(-1)
    flat[:min(flat.size, len(specials))] = specials[:flat.size]
    rng.shuffle(flat)
    x = x.astype(np.float32)
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    return cly.Memory(md, engine, raw=ref.raw_of(x, tag, "f32", pad_byte=0x7F)), x


def execute(primitive, src, dst, engine):
    stream = cly.Stream(engine)
    primitive.execute(stream, src, dst)
    stream.wait()
    return primitive


@pytest.fixture(params=["host", "opencl", "opencl-host-path"])
def eng(request):
    """The host engine; OpenCL; OpenCL with the 4-bit kernels declined, so
    that its host path (NumPy on a worker, masked writes back) runs."""
    if request.param == "host":
        return request.getfixturevalue("host_engine")
    engine = request.getfixturevalue("cl_engine")
    if request.param == "opencl-host-path":
        request.getfixturevalue("kernels_decline")(*NIBBLE_TYPES)
    return engine


# =============================================================================
# The reported case
# =============================================================================

def test_three_of_four_keeps_the_fourth(eng):
    """u4 [5, 6, 7] into a (3,) tensor over a buffer holding u4 [1, 2, 3, 9]:
    [5, 6, 7, 9]. The buffer copy used to copy both whole bytes."""
    u4 = ref.NIBBLE_NP["u4"]
    parent_md, md = cly.MemoryDesc((4,), "u4", tag="a"), cly.MemoryDesc((3,), "u4", tag="a")
    parent = cly.Memory.from_numpy(parent_md, eng, np.array([1, 2, 3, 9], u4))
    dst = cly.Memory(md, eng, buffer=parent)
    src = cly.Memory(md, eng, raw=small.pack_nibbles([5, 6, 7], fill=0xC))
    r = execute(cly.Reorder(md, md, engine=eng), src, dst, eng)
    assert parent.to_numpy().astype(int).tolist() == [5, 6, 7, 9], r.impl


# =============================================================================
# Same-type copies (the buffer copy where the layout allows)
# =============================================================================

#: (dims, tag, spare nibbles after the tensor)
DENSE = [((1,), "a", 1), ((3,), "a", 1), ((5,), "a", 3), ((33,), "a", 1), ((3, 5), "ab", 1),
         ((3, 5), "ba", 2), ((4, 4), "ab", 2), ((1, 1, 7), "abc", 5)]


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
@pytest.mark.parametrize("dims, tag, spare", DENSE, ids=lambda v: str(v))
def test_same_type_copy_into_a_bigger_buffer(eng, dt, dims, tag, spare):
    """A dense tensor (odd counts leave a spare nibble in its last byte) at
    the start of a buffer that goes on: the nibbles after it are kept; the
    source's own spare nibble is not carried along."""
    rng = np.random.default_rng(zlib.crc32(repr((dt, dims, tag)).encode()))
    place = dense(dims, dt, tag, spare)
    codes = random_codes(dims, rng)
    src = nibble_source(eng, dense(dims, dt, tag, spare=3), codes, rng)
    parent, before, dst = parent_memory(eng, place, rng, src)
    r = execute(cly.Reorder(place.md, place.md, engine=eng), src, dst, eng)
    assert_parent(parent.raw(), before, place, codes, r.impl)


# =============================================================================
# Windows, strides and blocks with odd runs
# =============================================================================

#: (parent dims, tag, window dims, window offsets)
WINDOWS = [
    ((9,), "a", (3,), (1,)),          # starts and ends mid-byte
    ((9,), "a", (4,), (3,)),          # starts mid-byte, ends on a byte
    ((9,), "a", (5,), (0,)),          # starts on a byte, ends mid-byte
    ((8,), "a", (1,), (7,)),          # one high nibble
    ((5, 7), "ab", (3, 3), (1, 1)),
    ((5, 7), "ba", (3, 4), (2, 1)),
    ((4, 5), "ab", (3, 5), (1, 0)),   # whole rows, the first starting mid-byte
    ((3, 5, 7), "acb", (2, 3, 5), (1, 1, 2)),
    ((2, 32, 3, 5), "aBcd16b", (1, 16, 3, 3), (1, 16, 0, 1)),
    ((2, 6, 5), "aBc3b", (1, 3, 3), (1, 3, 1)),   # blocks of 3: runs of odd length
]


def _window_id(case):
    parent, tag, dims, offsets = case
    return f"{tag}-{'x'.join(map(str, parent))}-{'x'.join(map(str, dims))}@" \
           f"{'.'.join(map(str, offsets))}"


@pytest.mark.parametrize("source", ["same", "f32", "other4"])
@pytest.mark.parametrize("case", WINDOWS, ids=_window_id)
def test_window(eng, case, source):
    """A window of a random parent, from the same type (itself in a window
    of a random parent), from f32, or from the other integer 4-bit type."""
    parent_dims, tag, dims, offsets = case
    dt = "u4" if source == "other4" else NIBBLE_TYPES[len(parent_dims) % 3]
    rng = np.random.default_rng(zlib.crc32(_window_id(case).encode()) + len(source))
    place = window(dt, parent_dims, tag, dims, offsets, spare=1)
    plain = "abcd"[:len(dims)]
    if source == "same":
        codes = random_codes(dims, rng)
        src_place = window(dt, tuple(n + 1 for n in parent_dims), plain, dims, (1,) * len(dims))
        src = nibble_source(eng, src_place, codes, rng)
    elif source == "f32":
        src, x = f32_source(eng, dims, rng)
        codes = encode(x, dt)
    else:  # s4 -> u4 saturates at 0
        src_codes = random_codes(dims, rng)
        src = nibble_source(eng, dense(dims, "s4", plain, 1), src_codes, rng)
        codes = encode(np.maximum(codes_to_values(src_codes, "s4"), 0), dt)
    parent, before, dst = parent_memory(eng, place, rng, src)
    r = execute(cly.Reorder(src.md, place.md, engine=eng), src, dst, eng)
    assert_parent(parent.raw(), before, place, codes, r.impl)


#: (dims, strides): rows of odd length, gaps, rows starting mid-byte
STRIDED = [((3, 5), (7, 1)), ((3, 3), (4, 1)), ((4, 3), (1, 5)), ((2, 3, 3), (13, 4, 1)),
           ((5,), (3,))]


@pytest.mark.parametrize("source", ["same", "f32"])
@pytest.mark.parametrize("dims, strides", STRIDED, ids=lambda v: str(v))
def test_strided(eng, dims, strides, source):
    """Strides leave gaps (of odd nibble counts) between the rows: the gaps keep their nibbles."""
    dt = NIBBLE_TYPES[sum(strides) % 3]
    rng = np.random.default_rng(sum(strides) + len(source))
    place = strided(dims, dt, strides, spare=3)
    if source == "same":
        codes = random_codes(dims, rng)
        src = nibble_source(eng, strided(dims, dt, strides, spare=1), codes, rng)
    else:
        src, x = f32_source(eng, dims, rng)
        codes = encode(x, dt)
    parent, before, dst = parent_memory(eng, place, rng, src)
    r = execute(cly.Reorder(src.md, place.md, engine=eng), src, dst, eng)
    assert_parent(parent.raw(), before, place, codes, r.impl)


#: (dims, tag): blocked layouts whose tails are odd, physical counts odd
BLOCKED = [((3, 7, 3), "aBc3b"), ((5, 3), "Ab3a"), ((1, 5, 1, 1), "aBcd16b"),
           ((3, 5, 3), "aBc5b"), ((3, 17), "aB16b"),
           ((3,), "A2a"), ((1, 3), "aB2b")]  # as many bytes as elements need: a padding nibble


@pytest.mark.parametrize("source", ["same-plain", "same-blocked", "f32"])
@pytest.mark.parametrize("dims, tag", BLOCKED, ids=lambda v: str(v))
def test_blocked_odd_tails(eng, dims, tag, source):
    """Blocked destinations with padding at the start of a longer buffer:
    the padding nibbles become 0, the nibbles after the tensor are kept."""
    dt = NIBBLE_TYPES[len(tag) % 3]
    rng = np.random.default_rng(len(tag) * 11 + len(source))
    place = dense(dims, dt, tag, spare=3)
    plain = "abcd"[:len(dims)]
    if source == "f32":
        src, x = f32_source(eng, dims, rng)
        codes = encode(x, dt)
    else:
        codes = random_codes(dims, rng)
        src_tag = tag if source == "same-blocked" else plain
        src = nibble_source(eng, dense(dims, dt, src_tag, spare=1), codes, rng)
    parent, before, dst = parent_memory(eng, place, rng, src)
    r = execute(cly.Reorder(src.md, place.md, engine=eng), src, dst, eng)
    assert_parent(parent.raw(), before, place, codes, r.impl)


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_host_path_in_small_regions(cl_engine, kernels_decline, monkeypatch, dt):
    """The OpenCL engine's host path moves a region at a time: with regions
    of a few elements they start and end mid-byte, and each goes back
    through a masked write (a region whose bytes are all its own, whole)."""
    from clayout.host import layout, reorder as host_reorder
    monkeypatch.setattr(layout, "STAGE_ELEMENTS", 5)
    monkeypatch.setattr(layout, "STAGE_BYTES", 6)
    kernels_decline(*NIBBLE_TYPES)
    rng = np.random.default_rng(len(dt) * 5)
    for place in [dense((3, 7), dt, "ab", 1), window(dt, (5, 9), "ab", (3, 7), (1, 1)),
                  dense((3, 7, 3), dt, "aBc3b", 1), strided((3, 5), dt, (7, 1), 2)]:
        src, x = f32_source(cl_engine, place.dims, rng)
        regions = list(host_reorder.staging_regions(src.md, place.md))
        assert len(regions) > 2, f"{place.md!r}: {len(regions)} region(s)"
        parent, before, dst = parent_memory(cl_engine, place, rng, src)
        r = execute(cly.Reorder(src.md, place.md, engine=cl_engine), src, dst, cl_engine)
        assert r.impl.startswith("host:numpy"), r.impl
        assert_parent(parent.raw(), before, place, encode(x, dt), r.impl)


# =============================================================================
# Shuffle and the sum post-op
# =============================================================================

@pytest.mark.parametrize("group", [1, 3, 5, 15])
@pytest.mark.parametrize("where", ["dense", "window"])
def test_shuffle(eng, group, where):
    """A 4-bit shuffle (group 1 and C move nothing: a copy) into a dense
    tensor with a spare nibble, or into a window starting mid-byte."""
    dt = NIBBLE_TYPES[group % 3]
    dims = (3, 15)
    rng = np.random.default_rng(group)
    place = dense(dims, dt, "ab", spare=1) if where == "dense" else \
        window(dt, (4, 17), "ab", dims, (1, 1))
    codes = random_codes(dims, rng)
    src = nibble_source(eng, dense(dims, dt, "ab", spare=1), codes, rng)
    parent, before, dst = parent_memory(eng, place, rng, src)
    sh = execute(cly.Shuffle(src.md, 1, group, engine=eng, dst_md=place.md), src, dst, eng)
    assert_parent(parent.raw(), before, place, ref.ref_shuffle(codes, 1, group), sh.impl)


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
@pytest.mark.parametrize("where", ["dense", "window"])
def test_sum_post_op(eng, dt, where):
    """dst = src + beta * dst_old: reads and writes the destination's own
    nibbles only, those beside it in shared bytes kept."""
    dims = (3, 5)
    rng = np.random.default_rng(len(dt) + len(where))
    place = dense(dims, dt, "ab", spare=1) if where == "dense" else \
        window(dt, (4, 7), "ab", dims, (1, 1))
    src_codes = random_codes(dims, rng)
    src = nibble_source(eng, dense(dims, dt, "ab", spare=1), src_codes, rng)
    parent, before, dst = parent_memory(eng, place, rng, src)
    old = codes_to_values(ref.get_nibbles(before, place.offsets), dt).astype(np.float32)
    beta = np.float32(0.5)
    x = codes_to_values(src_codes, dt).astype(np.float32) + beta * old  # f32, as the formula
    r = execute(cly.Reorder(src.md, place.md, engine=eng, attr=cly.Attr(sum_beta=0.5)),
                src, dst, eng)
    assert_parent(parent.raw(), before, place, encode(x.astype(np.float64), dt), r.impl)


# =============================================================================
# Runtime dims: each shape runs on what builds nothing
# =============================================================================

@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_runtime_dims_same_type(cl_engine, host_engine, dt):
    """One primitive on (R,) and (R, R) patterns, executed on odd shapes at
    the start of longer buffers: spare nibbles kept, nothing built after
    creation (on OpenCL, in a context of its own: whatever the per-shape
    path needs is built at creation, whichever test ran before)."""
    for engine in (cly.Engine(cl_engine.kind, device=cl_engine.device), host_engine):
        rng = np.random.default_rng(len(dt))
        one = cly.MemoryDesc((R,), dt, tag="a")
        two = cly.MemoryDesc((R, R), dt, tag="ab")
        r1 = cly.Reorder(one, one, engine=engine)
        r2 = cly.Reorder(two, two, engine=engine)
        builds = cly.kernel_cache.builds
        places = [(r1, dense((3,), dt, "a", 1)), (r1, dense((1,), dt, "a", 1)),
                  (r1, dense((6,), dt, "a", 1)), (r2, dense((3, 5), dt, "ab", 3)),
                  (r2, dense((1, 7), dt, "ab", 1))]
        for r, place in places:
            codes = random_codes(place.dims, rng)
            src = nibble_source(engine, dense(place.dims, dt, "ab"[:len(place.dims)], 1),
                                codes, rng)
            parent, before, dst = parent_memory(engine, place, rng, src)
            execute(r, src, dst, engine)
            assert_parent(parent.raw(), before, place, codes, f"{engine!r} {r.impl}")
        assert cly.kernel_cache.builds == builds, "a runtime-dims execution built a kernel"


@pytest.mark.parametrize("dt", NIBBLE_TYPES)
def test_runtime_dims_conversion_with_gaps(cl_engine, host_engine, dt):
    """f32 (R, R) -> 4-bit (R, R) with runtime row strides: rows of odd
    length starting mid-byte, gaps between them, spare nibbles after."""
    for engine in (cly.Engine(cl_engine.kind, device=cl_engine.device), host_engine):
        rng = np.random.default_rng(3 + len(dt))
        r = cly.Reorder(cly.MemoryDesc((R, R), "f32", tag="ab"),
                        cly.MemoryDesc((R, R), dt, strides=(R, 1)), engine=engine)
        builds = cly.kernel_cache.builds
        for place in [strided((3, 3), dt, (7, 1), 1), strided((3, 5), dt, (5, 1), 1),
                      strided((2, 5), dt, (8, 1), 3), strided((1, 1), dt, (1, 1), 1)]:
            src, x = f32_source(engine, place.dims, rng)
            parent, before, dst = parent_memory(engine, place, rng, src)
            execute(r, src, dst, engine)
            assert_parent(parent.raw(), before, place, encode(x, dt), f"{engine!r} {r.impl}")
        assert cly.kernel_cache.builds == builds, "a runtime-dims execution built a kernel"


# =============================================================================
# Cross-engine reorders, both directions, every variant
# =============================================================================

CROSS_CASES = {
    "3-in-4": lambda dt: dense((3,), dt, "a", 1),
    "3x5-dense": lambda dt: dense((3, 5), dt, "ab", 3),
    "window": lambda dt: window(dt, (5, 7), "ab", (3, 3), (1, 1)),
    "blocked": lambda dt: dense((3, 7, 3), dt, "aBc3b", 1),
    "padding-nibble": lambda dt: dense((1, 3), dt, "aB2b", 1),
}


@pytest.mark.parametrize("variant", ["auto", "device", "host"])
@pytest.mark.parametrize("direction", ["cpu2gpu", "gpu2cpu"])
@pytest.mark.parametrize("source", ["same", "same-layout", "f32"])
@pytest.mark.parametrize("case", list(CROSS_CASES))
def test_cross_engine(host_engine, cl_engine, monkeypatch, case, source, direction, variant):
    """A host <-> OpenCL reorder into a 4-bit destination with neighbours
    (upload / download of the span, a device staging buffer, or NumPy)."""
    if variant != "auto":
        monkeypatch.setenv("CLAYOUT_CROSS_CONVERT", variant)
    src_engine, dst_engine = (host_engine, cl_engine) if direction == "cpu2gpu" else \
        (cl_engine, host_engine)
    dt = NIBBLE_TYPES[len(case) % 3]
    rng = np.random.default_rng(len(case) * 13 + len(source) + len(direction + variant))
    place = CROSS_CASES[case](dt)
    if source.startswith("same"):
        codes = random_codes(place.dims, rng)
        plain = "abc"[:len(place.dims)]
        src_tag = (place.md.tag or plain) if source == "same-layout" else plain
        src = nibble_source(src_engine, dense(place.dims, dt, src_tag, 1), codes, rng)
    else:
        src, x = f32_source(src_engine, place.dims, rng)
        codes = encode(x, dt)
    parent, before, dst = parent_memory(dst_engine, place, rng, src)
    r = cly.Reorder(src.md, place.md, src_engine=src_engine, dst_engine=dst_engine)
    r.execute(cly.Stream(cl_engine), src, dst)
    assert_parent(parent.raw(), before, place, codes, r.impl)


# =============================================================================
# Memory helpers
# =============================================================================

@pytest.mark.parametrize("dt", NIBBLE_TYPES)
@pytest.mark.parametrize("dims, tag", [((3, 5), "ba"), ((3, 7, 3), "aBc3b"), ((5, 7), "ab")])
def test_from_numpy_and_to_numpy_convert_on_the_device(cl_engine, monkeypatch, dt, dims, tag):
    """Past CLAYOUT_CONVERT_ON_DEVICE_BYTES, from_numpy and to_numpy change
    the layout on the device, through a dense staging tensor: for 4-bit types
    its bytes are packed two elements a byte, not NumPy's one a byte."""
    monkeypatch.setenv("CLAYOUT_CONVERT_ON_DEVICE_BYTES", "1")
    engine = cly.Engine(cl_engine.kind, device=cl_engine.device)
    assert engine.caps.convert_on_device_bytes == 1
    rng = np.random.default_rng(len(dt) + len(tag))
    codes = random_codes(dims, rng)
    values = ref.nibble_values(codes, dt)
    md = cly.MemoryDesc(dims, dt, tag=tag)
    m = cly.Memory.from_numpy(md, engine, values)
    ref.assert_bytes(m.raw(), ref.raw_of_packed(values, tag, dt), what="from_numpy's bytes")
    got = cly.Memory(md, engine, raw=ref.raw_of_packed(values, tag, dt, pad_nibble=0xF)).to_numpy()
    ref.assert_bytes(ref.nibble_codes(got, dt), codes, what="to_numpy's values")


# =============================================================================
# A randomized sweep of 4-bit windows
# =============================================================================

@st.composite
def windows(draw):
    """(dt, destination place, source kind, source place or None): random
    1-d or 2-d parents, window offsets and lengths; a destination that
    starts the parent may be a plain tensor over the longer buffer."""
    dt = draw(st.sampled_from(NIBBLE_TYPES))
    ndims = draw(st.sampled_from([1, 2]))
    parent = tuple(draw(st.integers(1, 9 if ndims == 2 else 40)) for _ in range(ndims))
    dims = tuple(draw(st.integers(1, n)) for n in parent)
    offsets = tuple(draw(st.integers(0, n - d)) for n, d in zip(parent, dims))
    tag = draw(st.sampled_from(["ab", "ba"])) if ndims == 2 else "a"
    spare = draw(st.integers(0, 3))
    if not any(offsets) and draw(st.booleans()):
        place = dense(dims, dt, tag, spare)
    else:
        place = window(dt, parent, tag, dims, offsets, spare)
    source = draw(st.sampled_from(["same", "f32"]))
    src_place = None
    if source == "same":
        src_parent = tuple(d + draw(st.integers(0, 5)) for d in dims)
        src_offsets = tuple(draw(st.integers(0, n - d)) for n, d in zip(src_parent, dims))
        src_tag = draw(st.sampled_from(["ab", "ba"])) if ndims == 2 else "a"
        src_place = window(dt, src_parent, src_tag, dims, src_offsets)
    return dt, place, source, src_place


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=windows(), seed=st.integers(0, 2**32 - 1))
def test_random_windows(eng, case, seed):
    dt, place, source, src_place = case
    rng = np.random.default_rng(seed)
    if source == "same":
        codes = random_codes(place.dims, rng)
        src = nibble_source(eng, src_place, codes, rng)
    else:
        src, x = f32_source(eng, place.dims, rng)
        codes = encode(x, dt)
    parent, before, dst = parent_memory(eng, place, rng, src)
    r = execute(cly.Reorder(src.md, place.md, engine=eng), src, dst, eng)
    assert_parent(parent.raw(), before, place, codes, r.impl)
