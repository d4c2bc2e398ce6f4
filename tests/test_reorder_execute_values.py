"""Scales and zero points given at execute (issue 21, deliverable 2).

A Reorder made with ``Scales(mask=...)`` / ``ZeroPoints(mask=...)`` (no
values) takes them at each execute: NumPy values, a Memory, a pyopencl
Array or Buffer. Checked here, on the host engine and on OpenCL (``make
test`` runs this file under both CLAYOUT_STRATEGY values):

1. the same bytes as the values given at creation, and each family against
   tests/reference.py (never only against clayout);
2. every source of values, NumPy to pyopencl Buffer, in the kernels' type
   and in the declared one;
3. one kernel for every value set: nothing built per call;
4. the caller may change the NumPy values once execute returns;
5. bad values raise InvalidArgumentError before anything is enqueued;
6. runtime dims with per-slice and grouped values along runtime dims;
7. compensation (scale_adjust) with source scales at execute;
8. threads sharing one primitive; 9. execute never blocks.
"""
import math
import os
import subprocess
import sys
import textwrap
import threading
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

import clayout as cly
import reference as ref

R = cly.RUNTIME_DIM
GUARD = 32   # bytes after each destination that no write may reach
FILL = 0xA5
PACKED = ("s4", "u4")
KEYWORD = {"src_scales": "src_scales", "dst_scales": "dst_scales",
           "src_zero_points": "src_zero_points", "dst_zero_points": "dst_zero_points"}
ZP_RANGE = {"s32": (-300, 300), "s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15)}


@pytest.fixture(params=["host_engine", "cl_engine"])
def eng(request):
    return request.getfixturevalue(request.param)


# =============================================================================
# Bytes in and out through the reference; attributes as specs
# =============================================================================

def raw_for(logical, tag, dt):
    if dt in PACKED:
        return ref.raw_of_packed(logical, tag, dt)
    return ref.raw_of(logical, tag, dt)


def logical_from(raw, dims, tag, dt):
    if dt in PACKED:
        return ref.logical_of_packed(raw, dims, tag, dt)
    return ref.logical_of(raw, dims, tag, dt)


def data_bytes(dims, tag, dt):
    n = ref.physical_size(dims, tag)
    return (n + 1) // 2 if dt in PACKED else n * ref.itemsize(dt)


def sample(dt, dims, rng):
    if dt in PACKED:
        lo, hi = ref.INT_RANGE[dt]
        return rng.integers(lo, hi, size=dims, endpoint=True).astype(ref.NP[dt])
    return ref.sample_values(dt, dims, rng)


@dataclass(frozen=True)
class Spec:
    """One attribute that takes values: its Attr field, mask, groups, data type."""
    field: str
    mask: int
    groups: tuple | None = None
    data_type: str | None = None

    @property
    def is_scale(self):
        return self.field.endswith("scales")

    @property
    def dt(self):
        return self.data_type or ("f32" if self.is_scale else "s32")

    def count(self, dims):
        group = [1] * len(dims)
        if self.groups is not None:
            group[-2:] = self.groups
        return math.prod(dims[d] // group[d] for d in range(len(dims)) if self.mask >> d & 1)

    def random(self, dims, rng):
        """Values as a caller gives them: scales that bf16/f16 must round,
        zero points within the data type."""
        n = self.count(dims)
        if self.is_scale:
            return rng.uniform(0.05, 4.0, n).astype(np.float32)
        lo, hi = ZP_RANGE[self.dt]
        return rng.integers(lo, hi, size=n, endpoint=True).astype(np.int32)

    def stored(self, values):
        """The values as the reference uses them: scales rounded once to the data type."""
        if self.is_scale:
            return ref.stored_scales(values, self.dt)
        return np.asarray(values, np.int32)

    def make(self, values=None):
        cls = cly.Scales if self.is_scale else cly.ZeroPoints
        return cls(values, mask=self.mask, groups=self.groups, data_type=self.data_type)


def attr_of(specs, values=None, beta=None):
    """The Attr with values at creation (``values``: field -> values) or,
    without, every spec's values at execute."""
    return cly.Attr(sum_beta=beta, **{s.field: s.make(None if values is None else values[s.field])
                                      for s in specs})


def keywords(specs, values):
    return {KEYWORD[s.field]: values[s.field] for s in specs}


def expected(specs, values, src, sdt, ddt, dims, beta=None, old=None):
    """(want, pre) from the reference formula, values broadcast per element."""
    per = {s.field: ref.per_group(s.stored(values[s.field]), s.mask, s.groups, dims)
           for s in specs}
    return ref.ref_reorder(src, sdt, ddt, src_scale=per.get("src_scales"),
                           dst_scale=per.get("dst_scales"), src_zp=per.get("src_zero_points"),
                           dst_zp=per.get("dst_zero_points"), beta=beta, old=old)


def destination(engine, md, old_raw):
    """A Memory of md holding old_raw, with GUARD bytes of FILL after it."""
    return cly.Memory(md, engine, raw=np.concatenate([old_raw, np.full(GUARD, FILL, np.uint8)]))


def check_result(raw, dims, tag, ddt, want, pre=None, src=None, what=""):
    """The destination's bytes hold want, zero padding, untouched guard bytes."""
    __tracebackhide__ = True
    size = data_bytes(dims, tag, ddt)
    got = logical_from(raw[:size], dims, tag, ddt)
    ref.assert_same(got, want, src=src, pre=pre, quantized=ref.is_int(ddt) and pre is not None,
                    any_nan=True, what=what)
    if ddt in PACKED:
        ref.assert_padding_nibbles_zero(raw[:size], dims, tag, what=f"{what} padding")
    else:
        ref.assert_padding_zero(raw[:size], dims, tag, ddt, what=f"{what} padding")
    ref.assert_bytes(raw[size:], np.full(GUARD, FILL, np.uint8), what=f"{what} bytes after dst")


def builds_during(call):
    """How many kernels ``call()`` built."""
    before = cly.kernel_cache.builds
    call()
    return cly.kernel_cache.builds - before


def run(prim, engine, src, dst_md, old_raw, wait_for=None, **values):
    """Execute into a fresh destination holding old_raw; its bytes after."""
    dst = destination(engine, dst_md, old_raw)
    stream = cly.Stream(engine)
    prim.execute(stream, src, dst, wait_for, **values)
    stream.wait()
    return dst.raw()


# =============================================================================
# 1. The same bytes as values given at creation, and the reference
# =============================================================================

@dataclass(frozen=True)
class Case:
    name: str
    dims: tuple
    sdt: str
    ddt: str
    stag: str
    dtag: str
    specs: tuple
    beta: float | None = None


D4 = (2, 3, 4, 5)  # distinct sizes: a wrong slice index shows
G2 = (16, 64)
CASES = [
    Case("per-tensor-src-dst-scales", D4, "f32", "s8", "abcd", "acdb",
         (Spec("src_scales", 0), Spec("dst_scales", 0))),
    Case("per-channel-s8-to-blocked-f32", D4, "s8", "f32", "acdb", "aBcd4b",
         (Spec("src_scales", 0b10), Spec("dst_scales", 0b10))),
    Case("multi-dim-masks-u8-dst-zp", D4, "f32", "u8", "abcd", "acdb",
         (Spec("src_scales", 0b0110), Spec("dst_zero_points", 0b1001, data_type="u8"))),
    Case("zero-points-and-sum", D4, "s8", "s8", "abcd", "aBcd4b",
         (Spec("src_zero_points", 0b10, data_type="s8"), Spec("dst_zero_points", 0),
          Spec("dst_scales", 0b1000)), beta=0.5),
    Case("u8-src-zp-to-f16", D4, "u8", "f16", "aBcd4b", "abcd",
         (Spec("src_zero_points", 0b1, data_type="u8"), Spec("src_scales", 0b1100))),
    Case("s32-to-s8-per-tensor-src-zp", D4, "s32", "s8", "abcd", "acdb",
         (Spec("src_scales", 0b10), Spec("src_zero_points", 0),
          Spec("dst_zero_points", 0b100, data_type="s8"))),
    Case("f16-to-bf16-f16-and-bf16-scales", D4, "f16", "bf16", "acdb", "abcd",
         (Spec("src_scales", 0b1010, data_type="f16"), Spec("dst_scales", 0, data_type="bf16"))),
    Case("grouped-1x32-f16-scales-u4-zp", G2, "u4", "f32", "ab", "ba",
         (Spec("src_scales", 0b11, (1, 32), "f16"), Spec("src_zero_points", 0b11, (1, 32), "u4"))),
    Case("grouped-8x1-bf16-scales-s4-zp", G2, "s4", "f16", "ba", "ab",
         (Spec("src_scales", 0b11, (8, 1), "bf16"), Spec("src_zero_points", 0b11, (8, 1), "s4"))),
    Case("grouped-1x32-f32-scales-s8-zp-blocked", G2, "s8", "bf16", "AB16b16a", "ab",
         (Spec("src_scales", 0b11, (1, 32)), Spec("src_zero_points", 0b01, data_type="s8"))),
    Case("grouped-8x1-f16-scales-compress-to-s4", G2, "f32", "s4", "ab", "ab",
         (Spec("src_scales", 0b11, (8, 1), "f16"),)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_bytes_as_values_at_creation(eng, case):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    x = sample(case.sdt, case.dims, rng)
    old = sample(case.ddt, case.dims, rng)
    values = {s.field: s.random(case.dims, rng) for s in case.specs}
    src_md = cly.MemoryDesc(case.dims, case.sdt, tag=case.stag)
    dst_md = cly.MemoryDesc(case.dims, case.ddt, tag=case.dtag)
    src = cly.Memory(src_md, eng, raw=raw_for(x, case.stag, case.sdt))
    old_raw = raw_for(old, case.dtag, case.ddt)
    fixed = cly.Reorder(src_md, dst_md, engine=eng,
                        attr=attr_of(case.specs, values, case.beta))
    at_exec = cly.Reorder(src_md, dst_md, engine=eng, attr=attr_of(case.specs, beta=case.beta))
    if eng.is_opencl:
        assert at_exec.impl.startswith("ocl:"), at_exec.impl
    assert at_exec.impl == fixed.impl
    want_raw = run(fixed, eng, src, dst_md, old_raw)
    got_raw = run(at_exec, eng, src, dst_md, old_raw, **keywords(case.specs, values))
    want, pre = expected(case.specs, values, x, case.sdt, case.ddt, case.dims, case.beta,
                         old if case.beta is not None else None)
    check_result(got_raw, case.dims, case.dtag, case.ddt, want, pre, x, what=case.name)
    ref.assert_bytes(got_raw, want_raw, what=f"{case.name}: at execute vs at creation")


def test_the_values_of_each_execute_are_used(eng):
    """Two executes of one primitive with different values give each its own
    result (nothing of the first value set is kept)."""
    dims = (2, 3, 4)
    specs = (Spec("src_scales", 0b10, data_type="f16"), Spec("dst_zero_points", 0, data_type="s8"))
    md = cly.MemoryDesc(dims, "f32", tag="abc")
    dmd = cly.MemoryDesc(dims, "s8", tag="cab")
    prim = cly.Reorder(md, dmd, engine=eng, attr=attr_of(specs))
    x = np.random.default_rng(5).normal(0, 20, dims).astype(np.float32)
    src = cly.Memory(md, eng, raw=ref.raw_of(x, "abc", "f32"))
    old_raw = np.zeros(dmd.size, np.uint8)
    for scales, zp in (([0.5, 2.0, -1.0], -7), ([3.0, 0.25, 1.0], 100)):
        values = {"src_scales": np.array(scales, np.float32), "dst_zero_points": np.int32([zp])}
        raw = run(prim, eng, src, dmd, old_raw, src_scales=scales, dst_zero_points=zp)
        want, pre = expected(specs, values, x, "f32", "s8", dims)
        check_result(raw, dims, "cab", "s8", want, pre, x, what=f"{scales} {zp}")


# =============================================================================
# 2. Each source of values
# =============================================================================

def _device_array(queue, values):
    import pyopencl.array as cla
    return cla.to_device(queue, np.ascontiguousarray(values))


def _buffer(engine, values):
    import pyopencl as cl
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(engine.context, flags, hostbuf=np.ascontiguousarray(values))


def as_source(kind, spec, values, engine, queue):
    """``values`` (scales float32, zero points int32) in the form ``kind``."""
    kernel_np = np.float32 if spec.is_scale else np.int32
    kernel_dt = "f32" if spec.is_scale else "s32"
    n = values.size
    if kind == "numpy":
        return np.asarray(values, kernel_np)
    if kind == "list":  # Python floats / ints
        return [float(v) if spec.is_scale else int(v) for v in values]
    if kind == "wide-numpy":  # float64 scales, int64 zero points
        return values.astype(np.float64 if spec.is_scale else np.int64)
    if kind == "numpy-declared":  # f16, bf16 (ml_dtypes), s8, u4 (ml_dtypes) ...
        return values.astype(ref.NP[spec.dt])
    if kind == "number":
        assert n == 1
        return float(values[0]) if spec.is_scale else int(values[0])
    if kind == "memory":
        return cly.Memory.from_numpy(cly.MemoryDesc((n,), kernel_dt), engine,
                                     values.astype(kernel_np))
    if kind == "memory-declared":
        return cly.Memory.from_numpy(cly.MemoryDesc((n,), spec.dt), engine,
                                     values.astype(ref.NP[spec.dt]))
    if kind == "array":
        return _device_array(queue, values.astype(kernel_np))
    if kind == "array-declared":
        return _device_array(queue, values.astype(ref.NP[spec.dt]))
    if kind == "buffer":
        return _buffer(engine, values.astype(kernel_np))
    raise AssertionError(kind)


#: s8 (2, 3, 4) abc -> f32 acb with f16 per-channel scales, s8 per-batch zero
#: points and a per-tensor dst scale: values exact in their data types, so
#: that every source (the kernels' type or the declared one) means the same.
SOURCE_SPECS = (Spec("src_scales", 0b10, data_type="f16"),
                Spec("src_zero_points", 0b1, data_type="s8"), Spec("dst_scales", 0))
SOURCE_VALUES = {"src_scales": np.array([0.5, 1.25, -3.0], np.float32),
                 "src_zero_points": np.array([3, -100], np.int32),
                 "dst_scales": np.array([0.25], np.float32)}
#: grouped u4 weights: bf16 scales and u4 zero points per 1x32 group
GROUPED_SPECS = (Spec("src_scales", 0b11, (1, 32), "bf16"),
                 Spec("src_zero_points", 0b11, (1, 32), "u4"))
GROUPED_VALUES = {"src_scales": np.array([0.5, 1.5, 2.0, -0.125, 3.0, 0.75], np.float32),
                  "src_zero_points": np.array([0, 15, 7, 8, 1, 3], np.int32)}

HOST_SOURCES = ["numpy", "list", "wide-numpy", "numpy-declared", "memory", "memory-declared"]
CL_SOURCES = HOST_SOURCES + ["array", "array-declared", "buffer"]


def _source_case(which):
    if which == "per-slice":
        return SOURCE_SPECS, SOURCE_VALUES, (2, 3, 4), "s8", "f32", "abc", "acb"
    return GROUPED_SPECS, GROUPED_VALUES, (3, 64), "u4", "f32", "ab", "ba"


# pyopencl objects and the host fallback are for OpenCL engines only, and
# pyopencl Arrays hold no bf16 or u4 (the grouped case's declared types).
SOURCE_CASES = [(engine, path, which, kind)
                for engine in ("host_engine", "cl_engine")
                for path in ("kernel", "host-fallback")
                for which in ("per-slice", "grouped")
                for kind in CL_SOURCES
                if (engine == "cl_engine" or kind in HOST_SOURCES and path == "kernel")
                and not (kind == "array-declared" and which == "grouped")]


@pytest.mark.parametrize("engine, path, which, kind", SOURCE_CASES)
def test_each_source_of_values(request, engine, which, kind, path, kernels_decline):
    eng = request.getfixturevalue(engine)
    specs, values, dims, sdt, ddt, stag, dtag = _source_case(which)
    if path == "host-fallback":  # the OpenCL engine's host path reads device values back
        kernels_decline(sdt)
    rng = np.random.default_rng(21)
    x = sample(sdt, dims, rng)
    src_md = cly.MemoryDesc(dims, sdt, tag=stag)
    dst_md = cly.MemoryDesc(dims, ddt, tag=dtag)
    src = cly.Memory(src_md, eng, raw=raw_for(x, stag, sdt))
    prim = cly.Reorder(src_md, dst_md, engine=eng, attr=attr_of(specs))
    if eng.is_opencl:
        assert prim.impl.startswith("host:" if path == "host-fallback" else "ocl:"), prim.impl
    queue = cly.Stream(eng).queue
    given = {KEYWORD[s.field]: as_source(kind, s, values[s.field], eng, queue) for s in specs}
    if "dst_scales" in values and kind == "list":
        given["dst_scales"] = float(values["dst_scales"][0])  # a number for mask 0
    old_raw = np.full(dst_md.size, 0x11, np.uint8)
    got = run(prim, eng, src, dst_md, old_raw, **given)
    want, pre = expected(specs, values, x, sdt, ddt, dims)
    check_result(got, dims, dtag, ddt, want, pre, x, what=f"{which} from {kind}")
    numpy_raw = run(prim, eng, src, dst_md, old_raw, **keywords(specs, values))
    ref.assert_bytes(got, numpy_raw, what=f"{kind} vs NumPy values")


def test_values_in_the_kernels_type_on_the_device_are_taken_as_they_are(cl_engine):
    """As execute_values.py says: NumPy values are rounded to the declared
    data type (as at creation); a device Memory/Array/Buffer of f32 holds the
    values as the kernels read them, so its values are not rounded again."""
    dims = (2, 3)
    spec = Spec("src_scales", 0b10, data_type="bf16")
    md, dmd = cly.MemoryDesc(dims, "f32"), cly.MemoryDesc(dims, "f32", tag="ba")
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=attr_of((spec,)))
    x = np.array([[1.0, -2.0, 3.0], [0.5, 7.0, -1.0]], np.float32)
    src = cly.Memory(md, cl_engine, raw=ref.raw_of(x, "ab", "f32"))
    scales = np.array([0.1, 1 / 3, 1.001], np.float32)  # none exact in bf16
    rounded = ref.stored_scales(scales, "bf16")
    assert (rounded != scales).all()
    old_raw = np.zeros(dmd.size, np.uint8)
    raw = run(prim, cl_engine, src, dmd, old_raw, src_scales=scales)
    want, _ = ref.ref_reorder(x, "f32", "f32", src_scale=ref.per_slice(rounded, 0b10, dims))
    check_result(raw, dims, "ba", "f32", want, what="NumPy: rounded to bf16")
    queue = cly.Stream(cl_engine).queue
    want, _ = ref.ref_reorder(x, "f32", "f32", src_scale=ref.per_slice(scales, 0b10, dims))
    for kind in ("memory", "array", "buffer"):
        raw = run(prim, cl_engine, src, dmd, old_raw,
                  src_scales=as_source(kind, spec, scales, cl_engine, queue))
        check_result(raw, dims, "ba", "f32", want, what=f"{kind} of f32: as it is")


def test_python_numbers_and_int_scales(eng):
    """Scales given as integers (a list, an int64 array) and per-tensor
    values as plain Python numbers, a 0-d array and a 1-element list."""
    dims = (2, 3, 4)
    specs = (Spec("src_scales", 0b100), Spec("dst_zero_points", 0))
    md, dmd = cly.MemoryDesc(dims, "f32", tag="abc"), cly.MemoryDesc(dims, "s32", tag="bca")
    prim = cly.Reorder(md, dmd, engine=eng, attr=attr_of(specs))
    x = np.random.default_rng(3).normal(0, 100, dims).astype(np.float32)
    src = cly.Memory(md, eng, raw=ref.raw_of(x, "abc", "f32"))
    values = {"src_scales": np.array([1, -2, 3, 4], np.float32),
              "dst_zero_points": np.array([-5], np.int32)}
    want, pre = expected(specs, values, x, "f32", "s32", dims)
    old_raw = np.zeros(dmd.size, np.uint8)
    for scales, zp in (([1, -2, 3, 4], -5), (np.array([1, -2, 3, 4], np.int64), np.int64(-5)),
                       ([1.0, -2.0, 3.0, 4.0], np.array(-5)), ((1, -2, 3, 4), [-5])):
        raw = run(prim, eng, src, dmd, old_raw, src_scales=scales, dst_zero_points=zp)
        check_result(raw, dims, "bca", "s32", want, pre, x, what=f"{scales!r} {zp!r}")


def test_per_tensor_scale_from_the_device(cl_engine):
    """Mask 0 at execute is read from a buffer: a 1-value Memory and Array work."""
    dims = (4, 8)
    md, dmd = cly.MemoryDesc(dims, "f32", tag="ab"), cly.MemoryDesc(dims, "f16", tag="ba")
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=attr_of((Spec("src_scales", 0),)))
    x = np.arange(32, dtype=np.float32).reshape(dims) - 7.5
    src = cly.Memory(md, cl_engine, raw=ref.raw_of(x, "ab", "f32"))
    queue = cly.Stream(cl_engine).queue
    want, _ = ref.ref_reorder(x, "f32", "f16", src_scale=np.float32(-0.375))
    one = np.array([-0.375], np.float32)
    for value in (cly.Memory.from_numpy(cly.MemoryDesc((1,), "f32"), cl_engine, one),
                  _device_array(queue, one), _buffer(cl_engine, one), -0.375):
        raw = run(prim, cl_engine, src, dmd, np.zeros(dmd.size, np.uint8), src_scales=value)
        check_result(raw, dims, "ba", "f16", want, what=f"{type(value).__name__}")


def test_values_that_share_bytes_with_dst_are_refused(eng):
    """A Memory of values inside dst's buffer would be overwritten while
    the kernel reads it (the adversarial review found dst mostly zeros);
    values in a buffer of their own, then, run."""
    dims = (64, 64)
    md, dmd = cly.MemoryDesc(dims, "f32"), cly.MemoryDesc(dims, "s8")
    prim = cly.Reorder(md, dmd, engine=eng, attr=attr_of((Spec("src_scales", 0b10),)))
    src = cly.Memory.from_numpy(md, eng, np.ones(dims, np.float32))
    dst = cly.Memory(dmd, eng, raw=np.full(dmd.size // 4, 2.0, np.float32).view(np.uint8))
    inside = cly.Memory(cly.MemoryDesc((64,), "f32"), eng, buffer=dst)  # dst's first 256 bytes
    stream = cly.Stream(eng)
    with pytest.raises(cly.InvalidArgumentError, match="src_scales memory .* share bytes"):
        prim.execute(stream, src, dst, src_scales=inside)
    apart = cly.Memory.from_numpy(cly.MemoryDesc((64,), "f32"), eng, np.full(64, 2.0, np.float32))
    prim.execute(stream, src, dst, src_scales=apart)
    stream.wait()
    assert (dst.to_numpy() == 2).all()


# =============================================================================
# 3. One kernel for every value set
# =============================================================================

def test_twenty_value_sets_build_nothing(eng):
    dims = (6, 64)
    specs = (Spec("src_scales", 0b11, (1, 32), "f16"), Spec("src_zero_points", 0, data_type="u8"),
             Spec("dst_scales", 0b10))
    md, dmd = cly.MemoryDesc(dims, "u8", tag="ab"), cly.MemoryDesc(dims, "f32", tag="ba")
    prim = cly.Reorder(md, dmd, engine=eng, attr=attr_of(specs))
    rng = np.random.default_rng(20)
    x = sample("u8", dims, rng)
    src = cly.Memory(md, eng, raw=ref.raw_of(x, "ab", "u8"))
    sets = [{s.field: s.random(dims, rng) for s in specs} for _ in range(20)]
    stream = cly.Stream(eng)
    builds = cly.kernel_cache.builds
    runs = []
    for values in sets:
        dst = destination(eng, dmd, np.zeros(dmd.size, np.uint8))
        prim.execute(stream, src, dst, **keywords(specs, values))
        runs.append((values, dst))
    stream.wait()
    assert cly.kernel_cache.builds == builds, \
        f"{cly.kernel_cache.builds - builds} builds over 20 value sets"
    for i, (values, dst) in enumerate(runs):
        want, pre = expected(specs, values, x, "u8", "f32", dims)
        check_result(dst.raw(), dims, "ba", "f32", want, pre, x, what=f"value set {i}")


def test_device_values_in_the_declared_type_build_nothing_at_execute(cl_engine):
    """f16 scales and u8 zero points in Memories of their declared type are
    widened on the device by a kernel built with the primitive: no execute
    builds, the first included."""
    dims = (6, 64)
    specs = (Spec("src_scales", 0b11, (1, 32), "f16"), Spec("src_zero_points", 0b1, data_type="u8"))
    md, dmd = cly.MemoryDesc(dims, "u8", tag="ab"), cly.MemoryDesc(dims, "f32", tag="ba")
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=attr_of(specs))
    rng = np.random.default_rng(22)
    x = sample("u8", dims, rng)
    src = cly.Memory(md, cl_engine, raw=ref.raw_of(x, "ab", "u8"))
    stream = cly.Stream(cl_engine)
    sets = [{s.field: s.random(dims, rng) for s in specs} for _ in range(11)]
    given = [{KEYWORD[s.field]: as_source("memory-declared", s, v[s.field], cl_engine, None)
              for s in specs} for v in sets]
    runs = []
    stream.wait()
    builds = cly.kernel_cache.builds
    for values, kw in zip(sets, given):
        dst = destination(cl_engine, dmd, np.zeros(dmd.size, np.uint8))
        prim.execute(stream, src, dst, **kw)
        runs.append((values, dst))
    stream.wait()
    assert cly.kernel_cache.builds == builds, \
        f"{cly.kernel_cache.builds - builds} builds over 11 value sets on the device"
    for i, (values, dst) in enumerate(runs):
        want, pre = expected(specs, values, x, "u8", "f32", dims)
        check_result(dst.raw(), dims, "ba", "f32", want, pre, x, what=f"value set {i}")


# =============================================================================
# 4. The caller's NumPy values may change once execute returns
# =============================================================================

@pytest.mark.parametrize("path", ["kernel", "host-fallback"])
def test_numpy_values_may_change_after_execute(cl_engine, path):
    import pyopencl as cl

    if path == "kernel":
        dims, stag, dtag = (2, 3, 4), "abc", "cba"
    else:  # more than 6 dims: the host path runs on a worker thread
        dims, stag, dtag = (2, 3, 2, 1, 2, 1, 2), "abcdefg", "gfedcba"
    specs = (Spec("src_scales", 0b10), Spec("dst_scales", 0b10, data_type="f16"),
             Spec("dst_zero_points", 0b1))
    md, dmd = cly.MemoryDesc(dims, "f32", tag=stag), cly.MemoryDesc(dims, "s32", tag=dtag)
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=attr_of(specs))
    assert prim.impl.startswith("host:" if path == "host-fallback" else "ocl:"), prim.impl
    rng = np.random.default_rng(4)
    x = rng.normal(0, 100, dims).astype(np.float32)
    src = cly.Memory(md, cl_engine, raw=ref.raw_of(x, stag, "f32"))
    values = {s.field: s.random(dims, rng) for s in specs}
    given = {k: v.copy() for k, v in keywords(specs, values).items()}
    dst = destination(cl_engine, dmd, np.zeros(dmd.size, np.uint8))
    gate = cl.UserEvent(cl_engine.context)
    stream = cly.Stream(cl_engine)
    try:
        event = prim.execute(stream, src, dst, [gate], **given)
        for array in given.values():
            array[...] = 77  # the caller reuses its arrays at once
        given.clear()
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    want, pre = expected(specs, values, x, "f32", "s32", dims)
    check_result(dst.raw(), dims, dtag, "s32", want, pre, x, what=path)


def test_host_engine_values_may_change_after_execute(host_engine):
    dims = (3, 4)
    specs = (Spec("src_scales", 0b01),)
    md, dmd = cly.MemoryDesc(dims, "f32"), cly.MemoryDesc(dims, "f32", tag="ba")
    prim = cly.Reorder(md, dmd, engine=host_engine, attr=attr_of(specs))
    x = np.arange(12, dtype=np.float32).reshape(dims)
    src = cly.Memory(md, host_engine, raw=ref.raw_of(x, "ab", "f32"))
    scales = np.array([1.5, -2.0, 0.5], np.float32)
    dst = destination(host_engine, dmd, np.zeros(dmd.size, np.uint8))
    given = scales.copy()
    prim.execute(cly.Stream(host_engine), src, dst, src_scales=given)
    given[:] = 0
    want, _ = expected(specs, {"src_scales": scales}, x, "f32", "f32", dims)
    check_result(dst.raw(), dims, "ba", "f32", want, what="host engine")


# =============================================================================
# 5. Bad values: InvalidArgumentError before anything is enqueued
# =============================================================================

def _bad_setup(engine):
    """u8 (2, 3, 4) -> f32 with f16 per-channel scales and u8 zero points per batch."""
    specs = (Spec("src_scales", 0b10, data_type="f16"),
             Spec("src_zero_points", 0b1, data_type="u8"))
    md, dmd = cly.MemoryDesc((2, 3, 4), "u8", tag="abc"), cly.MemoryDesc((2, 3, 4), "f32")
    prim = cly.Reorder(md, dmd, engine=engine, attr=attr_of(specs))
    src = cly.Memory.from_numpy(md, engine, np.ones((2, 3, 4), np.uint8))
    return prim, src, dmd


GOOD = {"src_scales": np.array([1.0, 2.0, 0.5], np.float32),
        "src_zero_points": np.array([1, 2], np.int32)}


def _on(engine):
    """Three f32 scales in a Memory on ``engine``."""
    return cly.Memory.from_numpy(cly.MemoryDesc((3,), "f32"), engine, np.ones(3, np.float32))


#: (id, which engines, keyword, how to make the bad value (engine, queue, other
#: engine) or None for "left out", words the message must hold)
BAD = [
    ("missing", "both", "src_scales", None, "src_scales missing"),
    ("missing-zp", "both", "src_zero_points", None, "src_zero_points missing"),
    ("count", "both", "src_scales", lambda e, q, o: [1.0, 2.0], "need 3 values, got 2"),
    ("count-zp", "both", "src_zero_points", lambda e, q, o: [1, 2, 3], "need 2 values, got 3"),
    ("float-zp", "both", "src_zero_points", lambda e, q, o: np.array([1.0, 2.0]),
     "32-bit integers"),
    ("float-zp-number", "both", "src_zero_points", lambda e, q, o: [1, 2.5], "32-bit integers"),
    ("2-d", "both", "src_scales", lambda e, q, o: np.ones((1, 3), np.float32), "1-d"),
    ("2-d-zp", "both", "src_zero_points", lambda e, q, o: [[1, 2]], "1-d"),
    ("zp-300-for-u8", "both", "src_zero_points", lambda e, q, o: [1, 300],
     "300 does not fit data_type u8"),
    ("zp-negative-for-u8", "both", "src_zero_points", lambda e, q, o: [-1, 0],
     "-1 does not fit data_type u8"),
    ("scale-beyond-f16", "both", "src_scales", lambda e, q, o: [1.0, 1e6, 1.0],
     "out of the range of data_type f16"),
    ("string", "both", "src_scales", lambda e, q, o: "1,2,3", "'1,2,3'"),
    ("bools", "both", "src_scales", lambda e, q, o: [True, False, True], "real numbers"),
    ("memory-wrong-type", "both", "src_scales",
     lambda e, q, o: cly.Memory(cly.MemoryDesc((3,), "bf16"), e), "memory of bf16"),
    ("memory-wrong-type-zp", "both", "src_zero_points",
     lambda e, q, o: cly.Memory(cly.MemoryDesc((2,), "s8"), e), "memory of s8"),
    ("memory-wrong-count", "both", "src_scales",
     lambda e, q, o: cly.Memory(cly.MemoryDesc((4,), "f32"), e), "expected 3 values"),
    ("memory-2-d", "both", "src_scales",
     lambda e, q, o: cly.Memory(cly.MemoryDesc((1, 3), "f32"), e), "expected 3 values"),
    ("memory-other-engine", "both", "src_scales", lambda e, q, o: _on(o), "lives on"),
    ("memory-other-opencl-engine", "opencl", "src_scales",
     lambda e, q, o: _on(cly.Engine("opencl", device=e.device)), "lives on"),
    ("array-for-host", "host", "src_scales",
     lambda e, q, o: _device_array(o.queue, np.ones(3, np.float32)), "pyopencl"),
    ("array-f64", "opencl", "src_scales",
     lambda e, q, o: _device_array(q, np.ones(3, np.float64)), "float64"),
    ("array-int32-scales", "opencl", "src_scales",
     lambda e, q, o: _device_array(q, np.ones(3, np.int32)), "int32"),
    ("array-2-d", "opencl", "src_scales",
     lambda e, q, o: _device_array(q, np.ones((1, 3), np.float32)), "flat"),
    ("array-offset", "opencl", "src_scales",
     lambda e, q, o: _device_array(q, np.ones(4, np.float32))[1:], "offset"),
    ("array-other-context", "opencl", "src_scales",
     lambda e, q, o: _other_context_array(e), "another context"),
    ("buffer-too-small", "opencl", "src_scales",
     lambda e, q, o: _buffer(e, np.ones(2, np.float32)), "smaller than"),
    ("buffer-too-small-zp", "opencl", "src_zero_points",
     lambda e, q, o: _buffer(e, np.ones(1, np.int32)), "smaller than"),
]


def _other_context_array(engine):
    import pyopencl as cl
    context = cl.Context([engine.device])
    return _device_array(cl.CommandQueue(context), np.ones(3, np.float32))


def assert_refused_untouched(prim, engine, src, dmd, error=cly.InvalidArgumentError,
                             match=None, **values):
    """execute raises ``error`` and neither writes dst nor leaves an event on it."""
    __tracebackhide__ = True
    dst = destination(engine, dmd, np.full(dmd.size, 0x3C, np.uint8))
    before, events = dst.raw().copy(), list(dst.events)
    stream = cly.Stream(engine)
    with pytest.raises(error, match=match) as caught:
        prim.execute(stream, src, dst, **values)
    stream.wait()
    assert list(dst.events) == events, "an event was recorded on dst"
    ref.assert_bytes(dst.raw(), before, what="dst after a refused execute")
    return caught.value


@pytest.mark.parametrize("bad", BAD, ids=[b[0] for b in BAD])
def test_bad_values(request, bad):
    name, engines, keyword, make, words = bad
    for which, kind in (("host_engine", "host"), ("cl_engine", "opencl")):
        if engines not in ("both", kind):
            continue
        engine = request.getfixturevalue(which)
        other = request.getfixturevalue("cl_engine" if which == "host_engine" else "host_engine")
        prim, src, dmd = _bad_setup(engine)
        values = dict(GOOD)
        if make is None:
            del values[keyword]
        else:
            values[keyword] = make(engine, cly.Stream(engine).queue, other)
        err = assert_refused_untouched(prim, engine, src, dmd, match=None, **values)
        assert keyword in str(err) and words in str(err), f"{which}: {err}"


def test_unexpected_values_are_refused(engine):
    md, dmd = cly.MemoryDesc((2, 3), "f32"), cly.MemoryDesc((2, 3), "s8", tag="ba")
    src = cly.Memory.from_numpy(md, engine, np.ones((2, 3), np.float32))
    fixed = cly.Reorder(md, dmd, engine=engine,
                        attr=cly.Attr(src_scales=cly.Scales([1, 2, 3], mask=0b10)))
    err = assert_refused_untouched(fixed, engine, src, dmd, src_scales=[1, 2, 3])
    assert "src_scales" in str(err) and "fixed at creation" in str(err)
    plain = cly.Reorder(md, dmd, engine=engine)
    for keyword in ("src_scales", "dst_scales", "src_zero_points", "dst_zero_points"):
        err = assert_refused_untouched(plain, engine, src, dmd, **{keyword: 1})
        assert keyword in str(err) and "without" in str(err)
    partly = cly.Reorder(md, dmd, engine=engine,
                         attr=cly.Attr(src_scales=cly.Scales(mask=0b10), dst_zero_points=3))
    err = assert_refused_untouched(partly, engine, src, dmd, src_scales=[1, 2, 3],
                                   dst_zero_points=3)
    assert "dst_zero_points" in str(err) and "fixed at creation" in str(err)
    shuffle = cly.Shuffle(md, axis=1, group_size=3, engine=engine)
    err = assert_refused_untouched(shuffle, engine, src, md, src_scales=2.0)
    assert "src_scales" in str(err)


def test_a_misspelt_keyword_is_an_invalid_argument(engine):
    """execute's keyword is src_zero_points: the singular (Attr's deprecated
    spelling) at execute raises InvalidArgumentError naming both."""
    md, dmd = cly.MemoryDesc((2, 3), "s8"), cly.MemoryDesc((2, 3), "f32", tag="ba")
    prim = cly.Reorder(md, dmd, engine=engine,
                       attr=cly.Attr(src_zero_points=cly.ZeroPoints(mask=0b10)))
    src = cly.Memory(md, engine)
    err = assert_refused_untouched(prim, engine, src, dmd, src_zero_point=[1, 2, 3])
    assert "'src_zero_point'" in str(err) and "src_zero_points=" in str(err), err


def test_cross_engine_reorders_take_values_at_creation(cl_engine, host_engine):
    md = cly.MemoryDesc((2, 3), "f32")
    dmd = cly.MemoryDesc((2, 3), "s8", tag="ba")
    for attr in (cly.Attr(src_scales=cly.Scales(mask=0b10)),
                 cly.Attr(dst_zero_points=cly.ZeroPoints(mask=0, data_type="s8"))):
        for sides in ((host_engine, cl_engine), (cl_engine, host_engine)):
            with pytest.raises(cly.UnimplementedError, match="cross-engine"):
                cly.Reorder(md, dmd, src_engine=sides[0], dst_engine=sides[1], attr=attr)
    prim = cly.Reorder(md, dmd, src_engine=host_engine, dst_engine=cl_engine,
                       attr=cly.Attr(src_scales=cly.Scales([1, 2, 3], mask=0b10)))
    src = cly.Memory.from_numpy(md, host_engine, np.ones((2, 3), np.float32))
    err = assert_refused_untouched(prim, cl_engine, src, dmd, src_scales=[1, 2, 3])
    assert "src_scales" in str(err)


# =============================================================================
# 6. Runtime dims: per-slice and grouped values along runtime dims
# =============================================================================

RUNTIME_SHAPES = [(2, 3, 4, 5), (1, 7, 2, 3), (3, 1, 5, 2), (2, 3, 4, 5)]


@pytest.mark.parametrize("source", ["numpy", "memory-declared"])
def test_runtime_dims_with_values_along_them(eng, source):
    specs = (Spec("src_scales", 0b0110, data_type="f16"),
             Spec("dst_zero_points", 0b0001, data_type="u8"), Spec("dst_scales", 0b1000))
    pattern = (R, R, R, R)
    prim = cly.Reorder(cly.MemoryDesc(pattern, "f32", tag="nchw"),
                       cly.MemoryDesc(pattern, "u8", tag="nhwc"), engine=eng, attr=attr_of(specs))
    if eng.is_opencl:
        assert prim.impl == "ocl:runtime", prim.impl
    rng = np.random.default_rng(6)
    stream = cly.Stream(eng)
    runs, built = [], 0
    for i, dims in enumerate(RUNTIME_SHAPES):
        x = rng.normal(0, 60, dims).astype(np.float32)
        values = {s.field: s.random(dims, rng) for s in specs}
        values["src_scales"] = ref.stored_scales(values["src_scales"], "f16")  # exact in f16
        given = {KEYWORD[s.field]: as_source(source, s, values[s.field], eng, stream.queue)
                 for s in specs}
        src = cly.Memory(cly.MemoryDesc(dims, "f32", tag="nchw"), eng,
                         raw=ref.raw_of(x, "nchw", "f32"))
        dmd = cly.MemoryDesc(dims, "u8", tag="nhwc")
        dst = destination(eng, dmd, np.zeros(dmd.size, np.uint8))
        n = builds_during(lambda: prim.execute(stream, src, dst, **given))
        built += n if i else 0  # the first: a device source may build its widening once
        runs.append((dims, x, values, dst))
    stream.wait()
    assert built == 0, f"{built} builds after the first shape"
    for dims, x, values, dst in runs:
        want, pre = expected(specs, values, x, "f32", "u8", dims)
        check_result(dst.raw(), dims, "nhwc", "u8", want, pre, x, what=f"{dims}")


@pytest.mark.parametrize("wdt", ["s8", "u4"])
def test_runtime_dims_with_grouped_values_along_the_last_dim(eng, wdt):
    specs = (Spec("src_scales", 0b11, (1, 32), "f16"),
             Spec("src_zero_points", 0b11, (1, 32), "s8" if wdt == "s8" else "u4"))
    prim = cly.Reorder(cly.MemoryDesc((R, R), wdt, tag="ab"),
                       cly.MemoryDesc((R, R), "f32", tag="ba"), engine=eng, attr=attr_of(specs))
    rng = np.random.default_rng(7)
    stream = cly.Stream(eng)
    builds = cly.kernel_cache.builds
    for dims in [(4, 64), (3, 96), (1, 32), (4, 64)]:
        x = sample(wdt, dims, rng)
        values = {s.field: s.random(dims, rng) for s in specs}
        src = cly.Memory(cly.MemoryDesc(dims, wdt, tag="ab"), eng, raw=raw_for(x, "ab", wdt))
        dmd = cly.MemoryDesc(dims, "f32", tag="ba")
        raw = run(prim, eng, src, dmd, np.zeros(dmd.size, np.uint8), **keywords(specs, values))
        want, pre = expected(specs, values, x, wdt, "f32", dims)
        check_result(raw, dims, "ba", "f32", want, pre, x, what=f"{dims}")
    assert cly.kernel_cache.builds == builds
    # A group of 32 does not divide 48: refused at execute, dst untouched.
    src = cly.Memory(cly.MemoryDesc((2, 48), wdt, tag="ab"), eng)
    err = assert_refused_untouched(prim, eng, src, cly.MemoryDesc((2, 48), "f32", tag="ba"),
                                   src_scales=np.ones(2, np.float32),
                                   src_zero_points=np.ones(2, np.int32))
    assert "group 32 does not divide dim 1" in str(err), err


def test_runtime_dims_4bit_zero_points_on_the_device_build_nothing_per_count(cl_engine):
    """u4 zero points in a device Memory of their declared type are widened
    by one runtime-dims kernel (it reads 4-bit sources), so a runtime-dims
    primitive builds nothing for a new count."""
    specs = (Spec("src_zero_points", 0b11, (1, 32), "u4"),)
    prim = cly.Reorder(cly.MemoryDesc((R, R), "u8", tag="ab"),
                       cly.MemoryDesc((R, R), "f32", tag="ba"), engine=cl_engine,
                       attr=attr_of(specs))
    rng = np.random.default_rng(10)
    stream = cly.Stream(cl_engine)
    shapes = [(2, 64), (3, 64), (1, 96), (5, 32)]
    runs, built = [], 0
    for i, dims in enumerate(shapes):
        x = sample("u8", dims, rng)
        values = {"src_zero_points": specs[0].random(dims, rng)}
        zp = as_source("memory-declared", specs[0], values["src_zero_points"], cl_engine, None)
        src = cly.Memory(cly.MemoryDesc(dims, "u8", tag="ab"), cl_engine,
                         raw=ref.raw_of(x, "ab", "u8"))
        dmd = cly.MemoryDesc(dims, "f32", tag="ba")
        dst = destination(cl_engine, dmd, np.zeros(dmd.size, np.uint8))
        n = builds_during(lambda: prim.execute(stream, src, dst, src_zero_points=zp))
        built += n if i else 0  # the first execute may build the widening
        runs.append((dims, x, values, dst))
    stream.wait()
    for dims, x, values, dst in runs:  # the values are right all the same
        want, pre = expected(specs, values, x, "u8", "f32", dims)
        check_result(dst.raw(), dims, "ba", "f32", want, pre, x, what=f"{dims}")
    assert built == 0, f"{built} builds over {len(shapes) - 1} new value counts"


def test_runtime_dims_count_is_checked_per_shape(eng):
    prim = cly.Reorder(cly.MemoryDesc((R, 4), "f32"), cly.MemoryDesc((R, 4), "f32", tag="ba"),
                       engine=eng, attr=attr_of((Spec("src_scales", 0b01),)))
    src = cly.Memory(cly.MemoryDesc((3, 4), "f32"), eng)
    err = assert_refused_untouched(prim, eng, src, cly.MemoryDesc((3, 4), "f32", tag="ba"),
                                   src_scales=[1.0, 2.0])
    assert "src_scales" in str(err) and "need 3 values, got 2" in str(err)


# =============================================================================
# 7. Compensation: scale_adjust times the source scales given at execute
# =============================================================================

def _compensated(engine, adjust):
    dims = (32, 16, 3, 3)
    dst_md = cly.MemoryDesc(dims, "s8", tag="OIhw4i16o4i",
                            extra=cly.Extra(compensation_mask=0b1, scale_adjust=adjust))
    return dims, cly.MemoryDesc(dims, "f32", tag="oihw"), dst_md


@pytest.mark.parametrize("masks", [(0b1, None), (0, 0)], ids=["per-oc", "per-tensor-and-dst"])
def test_compensation_with_source_scales_at_execute(eng, masks):
    adjust = 0.3
    dims, md, dmd = _compensated(eng, adjust)
    rng = np.random.default_rng(8)
    x = rng.normal(0, 40, dims).astype(np.float32)
    specs = (Spec("src_scales", masks[0]),) + (() if masks[1] is None else
                                               (Spec("dst_scales", masks[1]),))
    values = {s.field: s.random(dims, rng) for s in specs}
    src = cly.Memory(md, eng, raw=ref.raw_of(x, "oihw", "f32"))
    fixed = cly.Reorder(md, dmd, engine=eng, attr=attr_of(specs, values))
    at_exec = cly.Reorder(md, dmd, engine=eng, attr=attr_of(specs))
    old_raw = np.full(dmd.size, 0xFF, np.uint8)
    want_raw = run(fixed, eng, src, dmd, old_raw)
    sources = ["numpy", "list"] + ([] if eng.is_opencl else ["memory"])  # host Memory: NumPy
    for kind in sources:
        given = {KEYWORD[s.field]: as_source(kind, s, values[s.field], eng, None) for s in specs}
        got_raw = run(at_exec, eng, src, dmd, old_raw, **given)
        ref.assert_bytes(got_raw, want_raw, what=f"{kind}: at execute vs at creation")
    # The reference: q = s8(f32(adjust * s_src) * x / s_dst), then -128 * the sum per oc.
    product = (np.float32(adjust) * values["src_scales"]).astype(np.float32)
    q, _ = ref.ref_reorder(x, "f32", "s8", src_scale=ref.per_slice(product, masks[0], dims),
                           dst_scale=None if masks[1] is None else values["dst_scales"][0])
    data = ref.physical_size(dims, "OIhw4i16o4i")
    ref.assert_bytes(ref.logical_of(got_raw[:data], dims, "OIhw4i16o4i", "s8"), q,
                     what="weights")
    comp = got_raw[data:data + 4 * 32].view("<i4")
    ref.assert_bytes(comp, (-128 * q.astype(np.int64).sum(axis=(1, 2, 3))).astype("<i4"),
                     what="compensation")


def test_compensation_refuses_source_scales_on_the_device(cl_engine):
    dims, md, dmd = _compensated(cl_engine, 0.5)
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=cly.Attr(src_scales=cly.Scales(mask=0b1)))
    src = cly.Memory(md, cl_engine)
    ones = np.ones(32, np.float32)
    for value in (cly.Memory.from_numpy(cly.MemoryDesc((32,), "f32"), cl_engine, ones),
                  _buffer(cl_engine, ones)):
        err = assert_refused_untouched(prim, cl_engine, src, dmd, error=cly.UnimplementedError,
                                       src_scales=value)
        assert "src_scales" in str(err) and "scale_adjust" in str(err)


# =============================================================================
# 8. Threads sharing one primitive
# =============================================================================

def test_threads_share_one_primitive_with_their_own_values(cl_engine):
    import pyopencl as cl

    dims = (3, 5, 4)
    specs = (Spec("src_scales", 0b010, data_type="bf16"),
             Spec("dst_zero_points", 0, data_type="s8"))
    md, dmd = cly.MemoryDesc(dims, "f32", tag="abc"), cly.MemoryDesc(dims, "s8", tag="cab")
    prim = cly.Reorder(md, dmd, engine=cl_engine, attr=attr_of(specs))
    x = np.random.default_rng(9).normal(0, 30, dims).astype(np.float32)
    src = cly.Memory(md, cl_engine, raw=ref.raw_of(x, "abc", "f32"))
    results, errors = [], []
    lock = threading.Lock()

    def worker(t):
        try:
            queue = cl.CommandQueue(cl_engine.context)
            rng = np.random.default_rng(100 + t)
            mine = []
            for i in range(12):
                values = {s.field: s.random(dims, rng) for s in specs}
                # Exact in bf16: f32 values from the device are taken as they are.
                values["src_scales"] = ref.stored_scales(values["src_scales"], "bf16")
                given = keywords(specs, values)
                if i % 3 == 1:  # some from the device, in f32
                    given["src_scales"] = _device_array(queue, values["src_scales"])
                elif i % 3 == 2:  # some in Memories of bf16: widened on the device
                    given["src_scales"] = as_source("memory-declared", specs[0],
                                                    values["src_scales"], cl_engine, None)
                dst = destination(cl_engine, dmd, np.zeros(dmd.size, np.uint8))
                prim.execute(queue, src, dst, **given)
                mine.append((values, dst))
            queue.finish()
            with lock:
                results.extend(mine)
        except Exception as e:  # reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    assert len(results) == 48
    for values, dst in results:
        want, pre = expected(specs, values, x, "f32", "s8", dims)
        check_result(dst.raw(), dims, "cab", "s8", want, pre, x, what="thread")


# =============================================================================
# 9. Nothing blocks
# =============================================================================

PRELUDE = """
import sys, threading, numpy as np, pyopencl as cl, clayout as cly
eng = cly.Engine("opencl")
stream = cly.Stream(eng)
gate = cl.UserEvent(eng.context)
"""


def run_without_hanging(body, timeout=120):
    """Run a script that must print 'returned' before it sets the user event
    its execute waits on, then 'ok'; a blocking execute times out."""
    script = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        pytest.fail(f"hung: no exit within {timeout} s; printed {out!r}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["returned", "ok"], done.stdout + done.stderr


@pytest.mark.parametrize("path", ["kernel", "host-fallback"])
@pytest.mark.parametrize("source", ["numpy", "f32-memory-behind-the-gate",
                                    "f16-memory-behind-the-gate"])
def test_execute_with_values_does_not_block(cl_engine, path, source):
    run_without_hanging(f"""
        path, source = {path!r}, {source!r}
        dims = (2, 3, 4) if path == "kernel" else (2, 3, 1, 1, 1, 1, 2)
        md = cly.MemoryDesc(dims, "f32")
        dmd = cly.MemoryDesc(dims, "f32", tag="cba" if path == "kernel" else "gfedcba")
        attr = cly.Attr(src_scales=cly.Scales(mask=0b10, data_type="f16"))
        r = cly.Reorder(md, dmd, engine=eng, attr=attr)
        assert r.impl.startswith("ocl:" if path == "kernel" else "host:"), r.impl
        x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
        src = cly.Memory.from_numpy(md, eng, x)
        dst = cly.Memory(dmd, eng)
        scales = np.array([0.5, -2.0, 4.0], np.float16)
        if source == "numpy":
            given = scales
        else:  # a Memory whose own write waits on the gate too
            wide = cly.Memory.from_numpy(cly.MemoryDesc((3,), "f32"), eng,
                                         scales.astype(np.float32))
            given = cly.Memory(cly.MemoryDesc((3,), source[:3]), eng)
            cly.Reorder(wide.md, given.md, engine=eng).execute(stream, wide, given,
                                                               wait_for=[gate])
        event = r.execute(stream, src, dst, wait_for=[gate], src_scales=given)
        print("returned", flush=True)
        assert event.command_execution_status != cl.command_execution_status.COMPLETE
        threading.Timer(0.2, gate.set_status, [cl.command_execution_status.COMPLETE]).start()
        event.wait()
        shape = [1] * len(dims); shape[1] = 3
        want = x * scales.astype(np.float32).reshape(shape)
        assert np.array_equal(dst.to_numpy(), want), (dst.to_numpy(), want)
        print("ok")
    """)


def test_the_host_path_reads_device_values_as_they_were_at_execute(cl_engine):
    """The host path runs later, on a worker: device values are copied when
    execute is called. A write of them enqueued after the execute, on the
    same stream, neither changes the result nor deadlocks (the worker must
    not wait for a write queued behind its own completion)."""
    run_without_hanging("""
        # The prelude's gate is not used here, and is set: on NVIDIA's
        # driver this script, leaving it unset, printed "ok" and hung after
        # its exit handlers (9 times of 9). That setting it lets the script
        # exit there is not yet confirmed.
        gate.set_status(cl.command_execution_status.COMPLETE)
        dims = (2, 3, 1, 1, 1, 1, 2)  # more than 6 dims: the host path
        md, dmd = cly.MemoryDesc(dims, "f32"), cly.MemoryDesc(dims, "f32", tag="gfedcba")
        for declared in ("f32", "f16"):
            r = cly.Reorder(md, dmd, engine=eng,
                            attr=cly.Attr(src_scales=cly.Scales(mask=0b10, data_type=declared)))
            assert r.impl.startswith("host:"), r.impl
            x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
            src, dst = cly.Memory.from_numpy(md, eng, x), cly.Memory(dmd, eng)
            vmd = cly.MemoryDesc((3,), declared)
            scales = cly.Memory.from_numpy(vmd, eng, np.array([0.5, -2, 4], vmd.dtype.numpy))
            later = cly.Memory.from_numpy(vmd, eng, np.array([9, 9, 9], vmd.dtype.numpy))
            overwrite = cly.Reorder(vmd, vmd, engine=eng)
            gated = cly.Stream(eng)
            gate = cl.UserEvent(eng.context)
            r.execute(gated, src, dst, wait_for=[gate], src_scales=scales)
            overwrite.execute(gated, later, scales)  # after it, on the same queue
            if declared == "f32":
                print("returned", flush=True)
            gate.set_status(cl.command_execution_status.COMPLETE)
            gated.wait()
            want = x * np.array([0.5, -2, 4], np.float32)[None, :, None, None, None, None, None]
            assert np.array_equal(dst.to_numpy(), want), (declared, dst.to_numpy(), want)
        print("ok")
    """, timeout=60)


def test_runtime_patterns_check_the_rules_of_their_values_at_creation(cl_engine):
    """Values at execute on a runtime pattern: a group on a dim outside the
    mask is refused at creation as on fixed dims; grouped dst values (the
    quantize direction) run; a group that does not divide a runtime dim is
    refused at the execution that brings the dims, for device values as for
    NumPy ones."""
    pattern = cly.MemoryDesc((R, 8), "f32", tag="ab")
    out = cly.MemoryDesc((R, 8), "s8", tag="ab")
    with pytest.raises(cly.InvalidArgumentError, match="not in the mask"):
        cly.Reorder(pattern, out, engine=cl_engine,
                    attr=cly.Attr(src_scales=cly.Scales(mask=0b10, groups=(2, 1))))
    grouped = cly.Reorder(pattern, out, engine=cl_engine,
                          attr=cly.Attr(dst_scales=cly.Scales(mask=0b11, groups=(2, 1))))
    x = np.arange(32, dtype=np.float32).reshape(4, 8) - 16
    s = np.arange(1, 17, dtype=np.float32).reshape(2, 8) / 4   # one per 2x1 group
    src = cly.Memory.from_numpy(pattern.with_dims((4, 8)), cl_engine, x)
    dst = cly.Memory(out.with_dims((4, 8)), cl_engine)
    grouped.execute(cly.Stream(cl_engine), src, dst, dst_scales=s.ravel()).wait()
    want = np.clip(np.rint(x / np.repeat(s, 2, axis=0)), -128, 127).astype(np.int8)
    assert np.array_equal(dst.to_numpy(), want)
    prim = cly.Reorder(pattern, out, engine=cl_engine,
                       attr=cly.Attr(src_scales=cly.Scales(mask=0b11, groups=(3, 1))))
    src = cly.Memory.from_numpy(pattern.with_dims((4, 8)), cl_engine, np.ones((4, 8), np.float32))
    on_device = cly.Memory.from_numpy(cly.MemoryDesc((8,), "f32"), cl_engine,
                                      np.ones(8, np.float32))  # 4 // 3 * 8 values
    for given in (np.ones(8, np.float32), on_device):
        err = assert_refused_untouched(prim, cl_engine, src, out.with_dims((4, 8)),
                                       src_scales=given)
        assert "group 3 does not divide dim 0" in str(err), err


def test_widening_keeps_no_engine_alive(cl_engine):
    """The device reorder that widens declared-type values belongs to its
    primitive: once both are gone, so are the engine and its context."""
    import gc
    import weakref

    def use():
        engine = cly.Engine(cl_engine.kind, device=cl_engine.device)
        md, dmd = cly.MemoryDesc((2, 8), "f32"), cly.MemoryDesc((2, 8), "s8")
        prim = cly.Reorder(md, dmd, engine=engine,
                           attr=cly.Attr(src_scales=cly.Scales(mask=0b10, data_type="bf16")))
        bf16 = cly.data_type("bf16").numpy
        scales = cly.Memory.from_numpy(cly.MemoryDesc((8,), "bf16"), engine,
                                       np.full(8, 3, np.float32).astype(bf16))
        src = cly.Memory.from_numpy(md, engine, np.ones((2, 8), np.float32))
        dst = cly.Memory(dmd, engine)
        stream = cly.Stream(engine)
        prim.execute(stream, src, dst, src_scales=scales)
        stream.wait()
        assert (dst.to_numpy() == 3).all(), dst.to_numpy()
        return weakref.ref(engine), weakref.ref(engine.context)

    engine, context = use()
    gc.collect()
    assert engine() is None and context() is None
