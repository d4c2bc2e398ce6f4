"""Bad inputs: every one raises cly.InvalidArgumentError naming the offending value.

A table-driven regression test. Each entry is a small callable that makes one
bad request, plus the words of which at least one must appear in the message
(the value's repr, or a distinctive word for it). Anything else -- an
AttributeError, TypeError, RuntimeError, NumPy's MemoryError/ValueError, a
pyopencl error, or no error at all -- fails the entry.

The tables, by area:
  NO_ENGINE  descriptors, tags, attributes, engines, primitive arguments
  HOST       things that need a host engine
  EACH       memories, attribute checks, execute() and the one-call helpers,
             run on the host and on OpenCL
  OPENCL     pyopencl objects: queues, buffers, arrays, events, contexts
A few positive tests at the end pin down inputs that look odd but are valid.
"""
import warnings

import numpy as np
import pytest

import clayout as cly

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - a dependency of clayout
    ml_dtypes = None

# -- shared descriptors (all valid) ----------------------------------------------

MD = cly.MemoryDesc((2, 3), "f32")                            # plain 2-d
MD_S8 = cly.MemoryDesc((2, 3), "s8")
MD_T = cly.MemoryDesc((3, 2), "f32")                          # other dims, same size
MD3 = cly.MemoryDesc((2, 3, 4), "f32")
S8_3 = cly.MemoryDesc((2, 3, 4), "s8")
BF16_3 = cly.MemoryDesc((2, 3, 4), "bf16")
BLK = cly.MemoryDesc((2, 32, 5, 5), "f32", tag="nChw16c")     # blocked, C = 32
ANY = cly.MemoryDesc((2, 3), "f32", tag="any")
VALUES = np.arange(6, dtype=np.float32).reshape(2, 3)


def bad(case_id, make, *words):
    """One table entry: ``make`` makes the bad request, ``words`` name the value."""
    assert words, case_id
    return pytest.param(make, words, id=case_id)


def expect_invalid(make, words):
    with pytest.raises(cly.InvalidArgumentError) as info:
        make()
    message = str(info.value)
    assert isinstance(info.value, cly.Error) and isinstance(info.value, ValueError)
    assert any(w in message for w in words), \
        f"the message {message!r} names none of {words!r}"


# ================================================================================
# NO_ENGINE: descriptors, tags, attributes, engines, primitives
# ================================================================================

def md_type(dt):
    return lambda: cly.MemoryDesc((2, 3), dt)


# Data types: only clayout's own names, DataTypes and the NumPy dtypes they map
# to. None no longer means f64; NumPy's codes ("f8") are not clayout names.
DTYPE_CASES = [
    bad("dtype-None", md_type(None), "None"),
    bad("dtype-empty-str", md_type(""), "''"),
    bad("dtype-f31", md_type("f31"), "'f31'"),
    bad("dtype-numpy-code-f8", md_type("f8"), "'f8'"),
    bad("dtype-s16", md_type("s16"), "'s16'"),
    bad("dtype-u16", md_type("u16"), "'u16'"),
    bad("dtype-u32", md_type("u32"), "'u32'"),
    bad("dtype-s64", md_type("s64"), "'s64'"),
    bad("dtype-f128", md_type("f128"), "'f128'"),
    bad("dtype-bool-name", md_type("bool"), "'bool'"),
    bad("dtype-xyz", md_type("xyz"), "'xyz'"),
    bad("dtype-leading-space", md_type(" f32"), "' f32'"),
    bad("dtype-trailing-space", md_type("f32 "), "'f32 '"),
    bad("dtype-inner-space", md_type("f 32"), "'f 32'"),
    bad("dtype-bytes-f8", md_type(b"f8"), "b'f8'"),
    bad("dtype-int-17", md_type(17), "17"),
    bad("dtype-negative", md_type(-1), "-1"),
    bad("dtype-float", md_type(3.5), "3.5"),
    bad("dtype-True", md_type(True), "True"),
    bad("dtype-object", md_type(object()), "object"),
    bad("dtype-empty-list", md_type([]), "[]"),
    bad("dtype-tuple", md_type(("f32",)), "('f32',)"),
    bad("dtype-dict", md_type({}), "{}"),
    bad("dtype-np-complex64", md_type(np.complex64), "complex64"),
    bad("dtype-np-complex128", md_type(np.complex128), "complex128"),
    bad("dtype-dtype-complex64", md_type(np.dtype("complex64")), "complex64"),
    bad("dtype-py-complex", md_type(complex), "complex"),
    bad("dtype-np-int16", md_type(np.int16), "int16"),
    bad("dtype-np-uint16", md_type(np.uint16), "uint16"),
    bad("dtype-np-uint32", md_type(np.uint32), "uint32"),
    bad("dtype-np-int64", md_type(np.int64), "int64"),
    bad("dtype-np-uint64", md_type(np.uint64), "uint64"),
    bad("dtype-np-bool", md_type(np.bool_), "bool"),
    bad("dtype-py-int", md_type(int), "int"),
    bad("dtype-py-bool", md_type(bool), "bool"),
    bad("dtype-np-object", md_type(np.object_), "object"),
    bad("dtype-np-str", md_type(np.str_), "str"),
    bad("dtype-np-datetime64", md_type(np.datetime64), "datetime64"),
    bad("dtype-void", md_type(np.dtype("V4")), "V4", "void"),
    bad("dtype-structured", md_type(np.dtype([("a", "<f4")])), "('a'", "[('a'"),
]
if hasattr(np, "float128"):
    DTYPE_CASES.append(bad("dtype-np-float128", md_type(np.float128), "float128", "longdouble"))
if ml_dtypes is not None and hasattr(ml_dtypes, "float8_e4m3fnuz"):
    DTYPE_CASES.append(bad("dtype-f8-e4m3fnuz", md_type(ml_dtypes.float8_e4m3fnuz),
                           "float8_e4m3fnuz"))


def md_dims(dims, dt="f32", **kw):
    return lambda: cly.MemoryDesc(dims, dt, **kw)


# Dims: 1..12 integers (no bools, floats, strings), each >= 0, and the
# element count, padded element count and span in bytes all within int64.
DIMS_CASES = [
    bad("dims-negative-first", md_dims((-1, 3)), "-1"),
    bad("dims-negative-last", md_dims((2, -3)), "-3"),
    bad("dims-negative-middle", md_dims((2, -1, 4)), "-1"),
    bad("dims-int64-min-plus-one", md_dims((2, -2**63 + 1)), str(-2**63 + 1)),
    bad("dims-float", md_dims((2.0, 3)), "2.0"),
    bad("dims-float-half", md_dims((2, 3.5)), "3.5"),
    bad("dims-np-float32", md_dims((np.float32(2), 3)), "2.0"),
    bad("dims-str-entry", md_dims(("2", 3)), "'2'"),
    bad("dims-None-entry", md_dims((None, 3)), "None"),
    bad("dims-True", md_dims((True, 3)), "True"),
    bad("dims-False", md_dims((2, False)), "False"),
    bad("dims-np-bool", md_dims((np.bool_(True), 3)), "True"),
    bad("dims-complex", md_dims((2, 3 + 0j)), "(3+0j)"),
    bad("dims-nested-list", md_dims((2, [3])), "[3]"),
    bad("dims-None", md_dims(None), "None"),
    bad("dims-str", md_dims("23"), "'23'"),
    bad("dims-float-scalar", md_dims(6.0), "6.0"),
    bad("dims-2d-array", md_dims(np.array([[2, 3]])), "[[2, 3]]", "[[2 3]]"),
    bad("dims-empty-tuple", md_dims(()), "()"),
    bad("dims-empty-list", md_dims([]), "[]", "()"),
    bad("dims-13", md_dims((1,) * 13), "13"),
    bad("dims-20", md_dims((2,) * 20), "20"),
    bad("dims-2pow63", md_dims((2**63,)), str(2**63)),
    bad("dims-2pow64", md_dims((2, 2**64)), str(2**64)),
    bad("dims-np-uint64-max", md_dims((2, np.uint64(2**64 - 1))), str(2**64 - 1)),
    bad("dims-product-2pow80", md_dims((2**40, 2**40)), str(2**40)),
    bad("dims-product-2pow64", md_dims((2**31, 2**31, 4)), str(2**31)),
    bad("dims-product-2pow63", md_dims((2**62, 2)), str(2**62)),
    bad("dims-product-12x256", md_dims((256,) * 12), "256"),
    bad("dims-bytes-f32-2pow63", md_dims((2**61,)), str(2**61)),
    bad("dims-bytes-f64-2pow63", md_dims((2**60,), "f64"), str(2**60)),
    bad("dims-padded-bytes", md_dims((2**61 - 1,), tag="A16a"), str(2**61 - 1)),
]


def md_strides(strides, dims=(2, 3), **kw):
    return lambda: cly.MemoryDesc(dims, "f32", strides=strides, **kw)


# Strides: one integer >= 0 per dim, within int64, no two elements at one place.
STRIDES_CASES = [
    bad("strides-too-few", md_strides((3,)), "(3,)"),
    bad("strides-too-many", md_strides((3, 1, 1)), "(3, 1, 1)"),
    bad("strides-empty", md_strides(()), "()"),
    bad("strides-negative-outer", md_strides((-3, 1)), "-3"),
    bad("strides-negative-inner", md_strides((3, -1)), "-1"),
    bad("strides-overlap-equal", md_strides((1, 1)), "(1, 1)"),
    bad("strides-overlap-rows", md_strides((2, 1)), "(2, 1)"),
    bad("strides-zero-outer", md_strides((0, 1)), "(0, 1)"),
    bad("strides-zero-inner", md_strides((3, 0)), "(3, 0)"),
    bad("strides-float", md_strides((3.0, 1)), "3.0"),
    bad("strides-str-entry", md_strides(("3", 1)), "'3'"),
    bad("strides-None-entry", md_strides((None, 1)), "None"),
    bad("strides-bool", md_strides((3, True)), "True"),
    bad("strides-2pow63", md_strides((2**63, 1)), str(2**63)),
    bad("strides-2pow64", md_strides((2**64, 1)), str(2**64)),
    bad("strides-span-overflow", md_strides((2**62, 1)), str(2**62)),
    bad("strides-bytes-overflow", md_strides((2**61, 1)), str(2**61)),
    bad("strides-str", md_strides("31"), "'31'"),
    bad("strides-int", md_strides(7), "7"),
    bad("strides-float-scalar", md_strides(3.0), "3.0"),
    bad("strides-overlap-inner-block", md_strides((16, 1), dims=(2, 32), tag="aB16b"), "(16, 1)"),
    bad("strides-with-any", md_strides((3, 1), tag="any"), "(3, 1)"),
]


def md_tag(tag, dims=(2, 3, 4, 5)):
    return lambda: cly.MemoryDesc(dims, "f32", tag=tag)


_HUGE = "99999999999999999999"

# Tags: the grammar of letters a-l, uppercase = blocked, <N><letter> blocks;
# aliases and meta-tags must fit the dims; block sizes within int64.
TAG_CASES = [
    bad("tag-empty", md_tag(""), "''", "empty"),
    bad("tag-too-few-dims", md_tag("abc"), "'abc'"),
    bad("tag-too-many-dims", md_tag("abcde"), "'abcde'"),
    bad("tag-repeated-letter", md_tag("abcc"), "'abcc'"),
    bad("tag-letter-past-l", md_tag("abcm"), "'abcm'"),
    bad("tag-space", md_tag("ab cd"), "'ab cd'"),
    bad("tag-punctuation", md_tag("abcd!"), "'abcd!'"),
    bad("tag-trailing-newline", md_tag("abcd\n"), repr("abcd\n")),
    bad("tag-blocked-trailing-newline", md_tag("aBcd16b\n"), repr("aBcd16b\n")),
    bad("tag-leading-tab", md_tag("\tabcd"), repr("\tabcd")),
    bad("tag-nul-byte", md_tag("abcd\x00"), repr("abcd\x00")),
    bad("tag-upper-without-block", md_tag("aBcd"), "'aBcd'"),
    bad("tag-lower-with-block", md_tag("abcd16b"), "'abcd16b'"),
    bad("tag-block-on-other-dim", md_tag("aBcd16c"), "'aBcd16c'"),
    bad("tag-uppercase-block-letter", md_tag("aBcd16B"), "'aBcd16B'"),
    bad("tag-zero-block", md_tag("aBcd0b"), "'aBcd0b'"),
    bad("tag-negative-block", md_tag("aBcd-16b"), "'aBcd-16b'"),
    bad("tag-trailing-number", md_tag("aBcd16"), "'aBcd16'"),
    bad("tag-leading-number", md_tag("16aBcd"), "'16aBcd'"),
    bad("tag-dangling-size", md_tag("aBcd16b16"), "'aBcd16b16'"),
    bad("tag-block-past-ndims", md_tag("aBcd16e"), "'aBcd16e'"),
    bad("tag-block-letter-q", md_tag("aBcd16b8q"), "'aBcd16b8q'"),
    bad("tag-arabic-digits", md_tag("aBcd\u0661\u0666b"), repr("aBcd\u0661\u0666b")),
    bad("tag-fullwidth-letter", md_tag("\uff41bcd"), repr("\uff41bcd")),
    bad("tag-all-upper", md_tag("ABCD"), "'ABCD'"),
    bad("tag-alias-all-upper", md_tag("NCHW"), "'NCHW'"),
    bad("tag-any-upper", md_tag("ANY"), "'ANY'"),
    bad("tag-two-x", md_tag("axbx"), "'axbx'"),
    bad("tag-meta-names-dim-e", md_tag("abcdex"), "'abcdex'"),
    bad("tag-xyz", md_tag("xyz"), "'xyz'"),
    bad("tag-alias-extra-letter", md_tag("nchwq"), "'nchwq'"),
    bad("tag-mixed-families", md_tag("nchi"), "'nchi'"),
    bad("tag-alias-wrong-ndims", md_tag("nchw", dims=(2, 3, 4)), "'nchw'"),
    bad("tag-blocked-alias-wrong-ndims", md_tag("nChw16c", dims=(2, 3, 4)), "'nChw16c'"),
    bad("tag-weights-alias-wrong-ndims", md_tag("OIhw16i16o", dims=(2, 3, 4)), "'OIhw16i16o'"),
    bad("tag-goihw-for-4-dims", md_tag("goihw"), "'goihw'"),
    bad("tag-13-inner-blocks", md_tag("aBcd" + "1b" * 13), repr("aBcd" + "1b" * 13)),
    bad("tag-int", md_tag(42), "42"),
    bad("tag-bytes", md_tag(b"abcd"), "b'abcd'"),
    bad("tag-list", md_tag(["a", "b"]), "['a', 'b']"),
    bad("tag-tuple", md_tag(("abcd",)), "('abcd',)"),
    bad("tag-object", md_tag(object()), "object"),
    bad("tag-True", md_tag(True), "True"),
    bad("tag-huge-block", md_tag("aB" + _HUGE + "b", dims=(2, 3)), _HUGE),
    bad("tag-block-2pow63", md_tag(f"aB{2**63}b", dims=(2, 3)), str(2**63)),
    bad("tag-block-bytes-overflow", md_tag(f"Ab{2**62}a", dims=(2, 3)), str(2**62)),
    bad("tag-blocks-product-2pow64", md_tag("aB65536b65536b65536b65536b", dims=(2, 3)),
        "'aB65536b65536b65536b65536b'", "65536"),
]


# Views of a descriptor: submemory, reshape, permute_axes, offset, matches_tag.
VIEW_CASES = [
    bad("sub-dims-too-few", lambda: BLK.submemory((2, 16, 5), (0, 0, 0, 0)), "(2, 16, 5)"),
    bad("sub-offsets-too-few", lambda: BLK.submemory((2, 16, 5, 5), (0, 0, 0)), "(0, 0, 0)"),
    bad("sub-negative-offset", lambda: BLK.submemory((2, 16, 5, 5), (0, -16, 0, 0)), "-16"),
    bad("sub-past-the-end", lambda: BLK.submemory((2, 16, 5, 5), (0, 32, 0, 0)), "(0, 32, 0, 0)"),
    bad("sub-bigger-than-parent", lambda: BLK.submemory((3, 32, 5, 5), (0, 0, 0, 0)), "(3, 32, 5, 5)"),
    bad("sub-shifted-out", lambda: BLK.submemory((2, 16, 5, 5), (1, 0, 0, 0)), "(1, 0, 0, 0)"),
    bad("sub-dims-split-block", lambda: BLK.submemory((2, 8, 5, 5), (0, 0, 0, 0)), "(2, 8, 5, 5)"),
    bad("sub-offset-splits-block", lambda: BLK.submemory((2, 16, 5, 5), (0, 8, 0, 0)), "(0, 8, 0, 0)"),
    bad("sub-float-offset", lambda: BLK.submemory((2, 16, 5, 5), (0, 16.0, 0, 0)), "16.0"),
    bad("sub-None-offsets", lambda: BLK.submemory((2, 16, 5, 5), None), "None"),
    bad("sub-negative-dims", lambda: BLK.submemory((2, -16, 5, 5), (0, 0, 0, 0)), "-16"),
    bad("sub-offset-2pow63", lambda: BLK.submemory((2, 16, 5, 5), (0, 2**63, 0, 0)), str(2**63)),
    bad("sub-bool-offset", lambda: MD.submemory((1, 3), (True, 0)), "True"),
    bad("sub-of-any", lambda: ANY.submemory((1, 3), (0, 0)), "any"),
    bad("reshape-count-differs", lambda: MD3.reshape((5, 5)), "(5, 5)"),
    bad("reshape-negative-same-count", lambda: MD3.reshape((2, -3, -4)), "-3"),
    bad("reshape-float", lambda: MD3.reshape((24.0,)), "24.0"),
    bad("reshape-None", lambda: MD3.reshape(None), "None"),
    bad("reshape-empty", lambda: MD3.reshape(()), "()"),
    bad("reshape-bool", lambda: MD3.reshape((True, 24)), "True"),
    bad("reshape-13-dims", lambda: MD3.reshape((1,) * 11 + (2, 12)), "13"),
    bad("reshape-merges-blocked", lambda: BLK.reshape((2, 32, 25)), "(2, 32, 25)"),
    bad("reshape-merges-gapped", lambda: cly.MemoryDesc((2, 3), "f32", strides=(4, 1)).reshape((6,)),
        "(6,)"),
    bad("permute-too-short", lambda: MD3.permute_axes((0, 1)), "(0, 1)"),
    bad("permute-repeated", lambda: MD3.permute_axes((0, 1, 1)), "(0, 1, 1)"),
    bad("permute-out-of-range", lambda: MD3.permute_axes((0, 1, 3)), "(0, 1, 3)"),
    bad("permute-too-long", lambda: MD3.permute_axes((0, 1, 2, 3)), "(0, 1, 2, 3)"),
    bad("permute-negative", lambda: MD3.permute_axes((-1, 0, 1)), "(-1, 0, 1)"),
    bad("permute-float", lambda: MD3.permute_axes((0.0, 1, 2)), "0.0"),
    bad("permute-str", lambda: MD3.permute_axes("012"), "'012'"),
    bad("permute-None", lambda: MD3.permute_axes(None), "None"),
    bad("permute-bool", lambda: MD3.permute_axes((True, 0, 2)), "True"),
    bad("offset-out-of-range", lambda: MD3.offset((2, 0, 0)), "(2, 0, 0)"),
    bad("offset-last-dim-out", lambda: MD3.offset((0, 0, 4)), "(0, 0, 4)"),
    bad("offset-too-short", lambda: MD3.offset((0, 0)), "(0, 0)"),
    bad("offset-float", lambda: MD3.offset((0, 0.0, 0)), "0.0"),
    bad("matches-bad-tag", lambda: MD3.matches_tag("abq"), "'abq'"),
    bad("matches-strides-too-few", lambda: MD3.matches_tag("abc", strides=(1,)), "(1,)"),
]


# Attribute values: scales are f32 numbers, zero points int32; a number or a
# 1-d sequence (no bools, strings, complex, ragged or 2-d); masks integers >= 0.
ATTR_CASES = [
    bad("scales-str", lambda: cly.Scales("abc"), "'abc'"),
    bad("scales-numeric-str", lambda: cly.Scales("1.5"), "'1.5'"),
    bad("scales-complex-list", lambda: cly.Scales([1 + 2j]), "(1+2j)"),
    bad("scales-complex", lambda: cly.Scales(2j), "2j"),
    bad("scales-ragged", lambda: cly.Scales([[1, 2], [3]]), "[[1, 2], [3]]"),
    bad("scales-True", lambda: cly.Scales(True), "True"),
    bad("scales-bool-list", lambda: cly.Scales([True, False]), "[True, False]"),
    bad("scales-bool-array", lambda: cly.Scales(np.array([True])), "bool", "True"),
    bad("scales-2d-list", lambda: cly.Scales([[1.0, 2.0]]), "[[1.0, 2.0]]"),
    bad("scales-2d-array", lambda: cly.Scales(np.ones((2, 2), np.float32)),
        "array([[", "(2, 2)", "2-d"),
    bad("scales-object", lambda: cly.Scales(object()), "object"),
    bad("scales-dict", lambda: cly.Scales({1: 2}), "{1: 2}"),
    bad("scales-None-entry", lambda: cly.Scales([1, None]), "None"),
    bad("scales-str-entry", lambda: cly.Scales([1, "a"]), "'a'"),
    bad("scales-mask-negative", lambda: cly.Scales(1.0, mask=-1), "-1"),
    bad("scales-mask-float", lambda: cly.Scales(1.0, mask=1.5), "1.5"),
    bad("scales-mask-str", lambda: cly.Scales(1.0, mask="1"), "'1'"),
    bad("scales-mask-None", lambda: cly.Scales(1.0, mask=None), "None"),
    bad("scales-mask-list", lambda: cly.Scales(1.0, mask=[1]), "[1]"),
    bad("zp-float", lambda: cly.ZeroPoints(1.5), "1.5"),
    bad("zp-float-list", lambda: cly.ZeroPoints([1.5]), "1.5"),
    bad("zp-np-float32", lambda: cly.ZeroPoints(np.float32(1)), "float32", "1.0"),
    bad("zp-2pow31", lambda: cly.ZeroPoints(2**31), str(2**31)),
    bad("zp-below-int32", lambda: cly.ZeroPoints(-2**31 - 1), str(-2**31 - 1)),
    bad("zp-2pow40-entry", lambda: cly.ZeroPoints([0, 2**40]), str(2**40)),
    bad("zp-2pow64", lambda: cly.ZeroPoints(2**64), str(2**64)),
    bad("zp-np-uint64", lambda: cly.ZeroPoints(np.uint64(2**63)), str(2**63)),
    bad("zp-str", lambda: cly.ZeroPoints("1"), "'1'"),
    bad("zp-True", lambda: cly.ZeroPoints(True), "True"),
    bad("zp-2d", lambda: cly.ZeroPoints([[1]]), "[[1]]"),
    bad("zp-complex", lambda: cly.ZeroPoints(1j), "1j"),
    bad("zp-mask-negative", lambda: cly.ZeroPoints(1, mask=-2), "-2"),
    bad("zp-mask-float", lambda: cly.ZeroPoints(1, mask=2.0), "2.0"),
    bad("attr-sum-beta-str", lambda: cly.Attr(sum_beta="x"), "'x'"),
    bad("attr-sum-beta-list", lambda: cly.Attr(sum_beta=[1.0]), "[1.0]"),
    bad("attr-sum-beta-complex", lambda: cly.Attr(sum_beta=1j), "1j"),
    bad("attr-sum-beta-array", lambda: cly.Attr(sum_beta=np.array([1.0, 2.0])), "array", "[1. 2.]"),
    bad("attr-sum-beta-object", lambda: cly.Attr(sum_beta=object()), "object"),
    bad("attr-sum-beta-beyond-f32", lambda: cly.Attr(sum_beta=1e300), "1e+300"),
    bad("attr-sum-beta-beyond-f32-negative", lambda: cly.Attr(sum_beta=-3.5e38), "-3.5e+38"),
    bad("attr-src-and-output-scales", lambda: cly.Attr(src_scales=2.0, output_scales=2.0),
        "output_scales"),
    bad("attr-src-scales-str", lambda: cly.Attr(src_scales="x"), "'x'"),
    bad("attr-output-scales-str", lambda: cly.Attr(output_scales="abc"), "'abc'"),
    bad("attr-scales-given-zero-points", lambda: cly.Attr(dst_scales=cly.ZeroPoints(1)),
        "ZeroPoints"),
    bad("attr-zero-point-given-scales", lambda: cly.Attr(src_zero_points=cly.Scales(1.0)),
        "Scales"),
    bad("attr-src-zero-point-float", lambda: cly.Attr(src_zero_points=1.5), "1.5"),
    bad("attr-dst-zero-point-str", lambda: cly.Attr(dst_zero_points="1"), "'1'"),
]


# Engines and streams: kinds 'opencl' and 'host'; devices and contexts are
# pyopencl objects; a Stream needs an Engine (or a pyopencl Context).
ENGINE_CASES = [
    bad("engine-cuda", lambda: cly.Engine("cuda"), "'cuda'"),
    bad("engine-empty-kind", lambda: cly.Engine(""), "''"),
    bad("engine-gpu", lambda: cly.Engine("gpu"), "'gpu'"),
    bad("engine-kind-int", lambda: cly.Engine(kind=7), "7"),
    bad("engine-kind-bytes", lambda: cly.Engine(b"opencl"), "b'opencl'"),
    bad("engine-device-str", lambda: cly.Engine("opencl", device="gpu0"), "'gpu0'"),
    bad("engine-device-int", lambda: cly.Engine("opencl", device=17), "17"),
    bad("engine-context-str", lambda: cly.Engine(context="ctx"), "'ctx'"),
    bad("engine-context-int", lambda: cly.Engine("opencl", context=42), "42"),
    bad("engine-host-with-device", lambda: cly.Engine("host", device="gpu0"), "'gpu0'"),
    bad("engine-host-with-context", lambda: cly.Engine("host", context="ctx"), "'ctx'"),
    bad("stream-str", lambda: cly.Stream("host"), "'host'"),
    bad("stream-None", lambda: cly.Stream(None), "None"),
    bad("stream-int", lambda: cly.Stream(42), "42"),
    bad("stream-descriptor", lambda: cly.Stream(MD), "MemoryDesc"),
]


# Primitive arguments that fail before any engine is touched.
PRIMITIVE_CASES = [
    bad("reorder-engine-str", lambda: cly.Reorder(MD, MD_S8, engine="host"), "'host'"),
    bad("reorder-engine-int", lambda: cly.Reorder(MD, MD_S8, engine=42), "42"),
    bad("reorder-engine-descriptor", lambda: cly.Reorder(MD, MD_S8, engine=MD), "MemoryDesc"),
    bad("reorder-src-str", lambda: cly.Reorder("abc", MD), "'abc'"),
    bad("reorder-dst-str", lambda: cly.Reorder(MD, "abc"), "'abc'"),
    bad("reorder-src-None", lambda: cly.Reorder(None, MD), "None"),
    bad("reorder-dst-None", lambda: cly.Reorder(MD, None), "None"),
    bad("reorder-src-array", lambda: cly.Reorder(VALUES, MD), "array(", "ndarray"),
    bad("reorder-ndims-differ", lambda: cly.Reorder(MD, MD3), "(2, 3, 4)"),
    bad("reorder-dims-differ", lambda: cly.Reorder(MD, MD_T), "(3, 2)"),
    bad("reorder-src-any", lambda: cly.Reorder(ANY, MD), "any"),
    bad("reorder-attr-str", lambda: cly.Reorder(MD, MD, attr="x"), "'x'"),
    bad("reorder-attr-dict", lambda: cly.Reorder(MD, MD, attr={"src_scales": 2.0}),
        "{'src_scales': 2.0}"),
    bad("reorder-attr-scales", lambda: cly.Reorder(MD, MD, attr=cly.Scales(2.0)), "Scales"),
    bad("reorder-attr-float", lambda: cly.Reorder(MD, MD, attr=2.0), "2.0"),
    bad("shuffle-dst-str", lambda: cly.Shuffle(BLK, axis=1, group_size=4, dst_md="ab"), "'ab'"),
    bad("shuffle-dst-int", lambda: cly.Shuffle(BLK, axis=1, group_size=4, dst_md=42), "42"),
    bad("shuffle-dst-dims", lambda: cly.Shuffle(
        BLK, axis=1, group_size=4, dst_md=cly.MemoryDesc((2, 32, 5, 4), "f32")), "(2, 32, 5, 4)"),
    bad("shuffle-dst-ndims", lambda: cly.Shuffle(BLK, axis=1, group_size=4, dst_md=MD), "(2, 3)"),
    bad("shuffle-dst-type", lambda: cly.Shuffle(
        BLK, axis=1, group_size=4, dst_md=cly.MemoryDesc((2, 32, 5, 5), "s8")), "s8"),
    bad("shuffle-axis-past-end", lambda: cly.Shuffle(BLK, axis=4, group_size=4), "axis 4", "axis=4"),
    bad("shuffle-axis-below-minus-ndims", lambda: cly.Shuffle(BLK, axis=-5, group_size=4), "-5"),
    bad("shuffle-axis-float", lambda: cly.Shuffle(BLK, axis=1.0, group_size=4),
        "1.0: expected an integer"),
    bad("shuffle-axis-np-float", lambda: cly.Shuffle(BLK, axis=np.float64(1), group_size=4),
        "1.0): expected an integer"),
    bad("shuffle-axis-str", lambda: cly.Shuffle(BLK, axis="1", group_size=4),
        "'1': expected an integer"),
    bad("shuffle-axis-None", lambda: cly.Shuffle(BLK, axis=None, group_size=4),
        "None: expected an integer"),
    bad("shuffle-axis-2pow63", lambda: cly.Shuffle(BLK, axis=2**63, group_size=4), str(2**63)),
    bad("shuffle-group-zero", lambda: cly.Shuffle(BLK, axis=1, group_size=0),
        "group_size 0", "group_size=0", "group 0"),
    bad("shuffle-group-negative", lambda: cly.Shuffle(BLK, axis=1, group_size=-4), "-4"),
    bad("shuffle-group-non-divisor", lambda: cly.Shuffle(BLK, axis=1, group_size=7), "7"),
    bad("shuffle-group-above-axis", lambda: cly.Shuffle(BLK, axis=1, group_size=64), "64"),
    bad("shuffle-group-float", lambda: cly.Shuffle(BLK, axis=1, group_size=2.0), "2.0"),
    bad("shuffle-group-str", lambda: cly.Shuffle(BLK, axis=1, group_size="4"), "'4'"),
    bad("shuffle-group-None", lambda: cly.Shuffle(BLK, axis=1, group_size=None), "None"),
    bad("shuffle-src-str", lambda: cly.Shuffle("abc", axis=1, group_size=4), "'abc'"),
    bad("shuffle-src-None", lambda: cly.Shuffle(None, axis=1, group_size=4), "None"),
    bad("shuffle-src-any", lambda: cly.Shuffle(ANY, axis=1, group_size=1), "any"),
    bad("shuffle-engine-str", lambda: cly.Shuffle(BLK, axis=1, group_size=4, engine="host"), "'host'"),
]

NO_ENGINE_CASES = (DTYPE_CASES + DIMS_CASES + STRIDES_CASES + TAG_CASES + VIEW_CASES
                   + ATTR_CASES + ENGINE_CASES + PRIMITIVE_CASES)


@pytest.mark.parametrize("make, words", NO_ENGINE_CASES)
def test_rejected(make, words):
    expect_invalid(make, words)


# ================================================================================
# HOST: the host engine's own rules
# ================================================================================

HOST_CASES = [
    bad("stream-host-queue-str", lambda h: cly.Stream(h, queue="q"), "'q'"),
    bad("stream-host-queue-int", lambda h: cly.Stream(h, queue=42), "42"),
    bad("memory-host-buffer-too-small", lambda h: cly.Memory(MD, h, buffer=np.zeros(5, np.uint8)),
        "5 bytes", "5-byte"),
]


@pytest.mark.parametrize("make, words", HOST_CASES)
def test_rejected_on_host(host_engine, make, words):
    expect_invalid(lambda: make(host_engine), words)


# ================================================================================
# EACH: run on the host and on OpenCL
# ================================================================================

class Env:
    """An engine and the objects the per-engine cases use, made on demand."""

    def __init__(self, engine):
        self.e = engine

    def mem(self, md=MD):
        return cly.Memory(md, self.e)

    def src(self):
        return cly.Memory.from_numpy(MD, self.e, VALUES)

    def stream(self):
        return cly.Stream(self.e)

    def reorder(self, **kw):
        return cly.Reorder(MD, MD, engine=self.e, **kw)

    def run(self, stream=None, src=None, dst=None, **kw):
        """Execute a valid f32 reorder, replacing what is given."""
        return self.reorder().execute(self.stream() if stream is None else stream,
                                      self.src() if src is None else src,
                                      self.mem() if dst is None else dst, **kw)

    def with_attr(self, src_md, dst_md, **attr):
        return cly.Reorder(src_md, dst_md, engine=self.e, attr=cly.Attr(**attr))


# Memory: an Engine, a MemoryDesc with a layout, raw bytes or a buffer that fit.
MEMORY_CASES = [
    bad("memory-engine-None", lambda v: cly.Memory(MD, None), "None"),
    bad("memory-engine-str", lambda v: cly.Memory(MD, "host"), "'host'"),
    bad("memory-engine-int", lambda v: cly.Memory(MD, 42), "42"),
    bad("memory-md-str", lambda v: cly.Memory("abc", v.e), "'abc'"),
    bad("memory-md-None", lambda v: cly.Memory(None, v.e), "None"),
    bad("memory-md-any", lambda v: cly.Memory(ANY, v.e), "any"),
    bad("memory-raw-int", lambda v: cly.Memory(MD, v.e, raw=42), "42"),
    bad("memory-raw-str", lambda v: cly.Memory(MD, v.e, raw="abc"), "'abc'"),
    bad("memory-raw-float-list", lambda v: cly.Memory(MD, v.e, raw=[1.0, 2.0]), "[1.0, 2.0]"),
    bad("memory-raw-int-list", lambda v: cly.Memory(MD, v.e, raw=[1, 2, 3]), "[1, 2, 3]"),
    bad("memory-raw-object", lambda v: cly.Memory(MD, v.e, raw=object()), "object"),
    bad("memory-raw-bytes-too-small", lambda v: cly.Memory(MD, v.e, raw=b"\0" * 3), "3 bytes"),
    bad("memory-raw-array-too-small", lambda v: cly.Memory(MD, v.e, raw=np.zeros(5, np.uint8)),
        "5 bytes"),
    bad("memory-raw-and-buffer", lambda v: cly.Memory(MD, v.e, raw=bytes(24), buffer=v.mem()),
        "raw", "buffer"),
    bad("memory-buffer-int", lambda v: cly.Memory(MD, v.e, buffer=42), "42"),
    bad("memory-buffer-str", lambda v: cly.Memory(MD, v.e, buffer="abc"), "'abc'"),
    bad("memory-buffer-list", lambda v: cly.Memory(MD, v.e, buffer=[0] * 24), "[0, 0"),
    bad("memory-buffer-descriptor", lambda v: cly.Memory(MD, v.e, buffer=MD), "MemoryDesc"),
    bad("memory-buffer-memory-too-small",
        lambda v: cly.Memory(MD, v.e, buffer=v.mem(cly.MemoryDesc((2, 2), "f32"))), "16 bytes"),
    bad("memory-2pow50-bytes", lambda v: cly.Memory(cly.MemoryDesc((2**48,), "f32"), v.e),
        str(2**50), str(2**48)),
    bad("from-numpy-ragged", lambda v: cly.Memory.from_numpy(MD, v.e, [[1, 2], [3]]),
        "[[1, 2], [3]]"),
    bad("from-numpy-wrong-shape", lambda v: cly.Memory.from_numpy(MD, v.e, np.zeros((3, 2), np.float32)),
        "(3, 2)"),
    bad("from-numpy-scalar", lambda v: cly.Memory.from_numpy(MD, v.e, 1.0), "()", "1.0"),
    bad("from-numpy-unsafe-f64", lambda v: cly.Memory.from_numpy(MD, v.e, np.ones((2, 3))), "float64"),
    bad("from-numpy-unsafe-int64-to-s8",
        lambda v: cly.Memory.from_numpy(MD_S8, v.e, np.ones((2, 3), np.int64)), "int64"),
    bad("from-numpy-complex", lambda v: cly.Memory.from_numpy(MD, v.e, np.ones((2, 3), np.complex64)),
        "complex64"),
    bad("from-numpy-strings", lambda v: cly.Memory.from_numpy(MD, v.e, [["a"] * 3] * 2),
        "<U1", "'a'", "str"),
    bad("from-numpy-objects", lambda v: cly.Memory.from_numpy(MD, v.e, [[1, None, 2], [3, 4, 5]]),
        "object", "None"),
    bad("from-numpy-str", lambda v: cly.Memory.from_numpy(MD, v.e, "abc"), "'abc'", "str"),
    bad("from-numpy-None", lambda v: cly.Memory.from_numpy(MD, v.e, None), "None"),
    bad("from-numpy-md-str", lambda v: cly.Memory.from_numpy("abc", v.e, VALUES), "'abc'"),
    bad("from-numpy-md-any", lambda v: cly.Memory.from_numpy(ANY, v.e, VALUES), "any"),
    bad("from-numpy-engine-None", lambda v: cly.Memory.from_numpy(MD, None, VALUES), "None"),
    bad("from-numpy-engine-str", lambda v: cly.Memory.from_numpy(MD, "host", VALUES), "'host'"),
]


# Attributes that do not fit the reorder's descriptors: checked at creation.
REORDER_ATTR_CASES = [
    bad("attr-mask-past-ndims",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales(1.0, mask=0b1000)),
        "0b1000", "mask 8", "mask=8"),
    bad("attr-mask-2pow70",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales(1.0, mask=2**70)),
        bin(2**70), str(2**70)),
    bad("attr-src-scales-count",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales([1.0] * 5, mask=0b1)), "5"),
    bad("attr-scales-count-two-dims",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales([1.0] * 7, mask=0b11)), "7"),
    bad("attr-dst-scales-count",
        lambda v: v.with_attr(MD3, MD3, dst_scales=cly.Scales([1.0] * 9, mask=0b100)), "9"),
    bad("attr-zero-points-count",
        lambda v: v.with_attr(S8_3, S8_3, src_zero_points=cly.ZeroPoints([1] * 11, mask=0b10)), "11"),
    bad("attr-scales-empty-common",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales([])), "[]", "0 values", "got 0"),
    bad("attr-scales-empty-masked-nonzero-dim",
        lambda v: v.with_attr(MD3, MD3, src_scales=cly.Scales([], mask=0b1)),
        "[]", "0 values", "got 0"),
    bad("attr-src-zero-point-on-f32",
        lambda v: v.with_attr(MD3, S8_3, src_zero_points=1), "f32"),
    bad("attr-dst-zero-point-on-f32",
        lambda v: v.with_attr(S8_3, MD3, dst_zero_points=1), "f32"),
    bad("attr-dst-zero-points-on-bf16",
        lambda v: v.with_attr(S8_3, BF16_3, dst_zero_points=cly.ZeroPoints([1, 2], mask=0b1)), "bf16"),
]


# execute(): a Stream (or CommandQueue) of the primitive's engine, Memory
# objects matching its descriptors, wait_for a list of events (none on the host).
EXECUTE_CASES = [
    bad("execute-stream-str", lambda v: v.run(stream="abc"), "'abc'"),
    bad("execute-stream-int", lambda v: v.run(stream=42), "42"),
    bad("execute-stream-None", lambda v: v.reorder().execute(None, v.src(), v.mem()), "None"),
    bad("execute-stream-descriptor", lambda v: v.run(stream=MD), "MemoryDesc"),
    bad("execute-src-str", lambda v: v.run(src="abc"), "'abc'"),
    bad("execute-src-None", lambda v: v.reorder().execute(v.stream(), None, v.mem()), "None"),
    bad("execute-src-array", lambda v: v.run(src=VALUES), "array(", "ndarray"),
    bad("execute-src-descriptor", lambda v: v.run(src=MD), "MemoryDesc"),
    bad("execute-dst-int", lambda v: v.run(dst=42), "42"),
    bad("execute-src-other-type", lambda v: v.run(src=v.mem(MD_S8)), "s8"),
    bad("execute-dst-other-type", lambda v: v.run(dst=v.mem(MD_S8)), "s8"),
    bad("execute-src-other-dims", lambda v: v.run(src=v.mem(MD_T)), "(3, 2)", "3x2"),
    bad("execute-shuffle-dst-other-dims",
        lambda v: cly.Shuffle(BLK, axis=1, group_size=4, engine=v.e).execute(
            v.stream(), v.mem(BLK), v.mem(MD)), "(2, 3)", "2x3"),
    bad("execute-wait-for-int-list", lambda v: v.run(wait_for=[1]), "[1]", "entry 1"),
    bad("execute-wait-for-str", lambda v: v.run(wait_for="abc"), "'abc'"),
    bad("execute-wait-for-int", lambda v: v.run(wait_for=42), "42"),
    bad("execute-wait-for-None-entry", lambda v: v.run(wait_for=[None]), "None"),
    bad("execute-wait-for-stream", lambda v: v.run(wait_for=[v.stream()]), "Stream"),
]


# The one-call helpers take two Memory objects.
HELPER_CASES = [
    bad("reorder-helper-src-str", lambda v: cly.reorder("a", v.mem()), "'a'"),
    bad("reorder-helper-dst-int", lambda v: cly.reorder(v.src(), 42), "42"),
    bad("reorder-helper-src-array", lambda v: cly.reorder(VALUES, v.mem()), "array(", "ndarray"),
    bad("reorder-helper-descriptors", lambda v: cly.reorder(MD, MD), "MemoryDesc"),
    bad("reorder-helper-attr-str", lambda v: cly.reorder(v.src(), v.mem(), attr="x"), "'x'"),
    bad("reorder-helper-dims-differ", lambda v: cly.reorder(v.src(), v.mem(MD_T)), "(3, 2)"),
    bad("shuffle-helper-src-str", lambda v: cly.shuffle("a", v.mem(), axis=1, group_size=1), "'a'"),
    bad("shuffle-helper-dst-int", lambda v: cly.shuffle(v.src(), 42, axis=1, group_size=1), "42"),
    bad("shuffle-helper-descriptors", lambda v: cly.shuffle(MD, MD, axis=1, group_size=1),
        "MemoryDesc"),
    bad("shuffle-helper-axis", lambda v: cly.shuffle(v.src(), v.mem(), axis=5, group_size=1),
        "axis 5", "axis=5"),
    bad("shuffle-helper-group", lambda v: cly.shuffle(v.mem(BLK), v.mem(BLK), axis=1, group_size=7),
        "7"),
]

EACH_CASES = MEMORY_CASES + REORDER_ATTR_CASES + EXECUTE_CASES + HELPER_CASES


@pytest.mark.parametrize("make, words", EACH_CASES)
def test_rejected_on_each_engine(engine, make, words):
    env = Env(engine)
    expect_invalid(lambda: make(env), words)


# ================================================================================
# OPENCL: pyopencl objects given where they do not fit
# ================================================================================

class ClEnv:
    """The OpenCL engine, the host engine, and pyopencl objects of another context."""

    def __init__(self, cl_engine, host_engine):
        import pyopencl as cl
        import pyopencl.array as cl_array

        self.cl, self.cl_array = cl, cl_array
        self.gpu, self.host = Env(cl_engine), Env(host_engine)
        self.ctx = cl_engine.context
        self.queue = cl.CommandQueue(self.ctx)
        self.other_ctx = cl.Context([cl_engine.device])
        self.other_queue = cl.CommandQueue(self.other_ctx)

    def other_engine(self):
        return Env(cly.Engine("opencl", context=self.other_ctx))

    def event(self, other=False):
        event = self.cl.enqueue_marker(self.other_queue if other else self.queue)
        event.wait()
        return event

    def array(self, shape=(2, 3), dtype=np.float32, other=False):
        return self.cl_array.zeros(self.other_queue if other else self.queue, shape, dtype)

    def buffer(self, nbytes, other=False):
        return self.cl.Buffer(self.other_ctx if other else self.ctx,
                              self.cl.mem_flags.READ_WRITE, nbytes)


OPENCL_CASES = [
    # streams
    bad("stream-cl-queue-str", lambda c: cly.Stream(c.gpu.e, queue="q"), "'q'"),
    bad("stream-cl-queue-other-context", lambda c: cly.Stream(c.gpu.e, queue=c.other_queue),
        "context"),
    bad("stream-cl-queue-is-context", lambda c: cly.Stream(c.gpu.e, queue=c.ctx), "Context"),
    bad("stream-host-given-cl-queue", lambda c: cly.Stream(c.host.e, queue=c.queue),
        "CommandQueue", "queue"),
    # memories
    bad("memory-cl-buffer-numpy", lambda c: cly.Memory(MD, c.gpu.e, buffer=np.zeros(24, np.uint8)),
        "ndarray", "array(", "numpy"),
    bad("memory-cl-buffer-too-small", lambda c: cly.Memory(MD, c.gpu.e, buffer=c.buffer(8)),
        "8 bytes", "8-byte"),
    bad("memory-cl-buffer-other-context",
        lambda c: cly.Memory(MD, c.gpu.e, buffer=c.buffer(24, other=True)), "context"),
    bad("memory-cl-array-transposed",
        lambda c: cly.Memory(MD_T, c.gpu.e, buffer=c.array().T),
        "strides", "stride", "transpos", "contiguous", "layout"),
    bad("memory-cl-array-int32-for-f32",
        lambda c: cly.Memory(MD, c.gpu.e, buffer=c.array(dtype=np.int32)), "int32"),
    bad("memory-cl-array-other-context",
        lambda c: cly.Memory(MD, c.gpu.e, buffer=c.array(other=True)), "context"),
    bad("memory-cl-array-offset",
        lambda c: cly.Memory(cly.MemoryDesc((6, 3), "f32"), c.gpu.e, buffer=c.array((8, 3))[2:]),
        "offset"),
    bad("memory-cl-raw-buffer", lambda c: cly.Memory(MD, c.gpu.e, raw=c.buffer(24)), "Buffer"),
    bad("memory-host-buffer-cl-buffer", lambda c: cly.Memory(MD, c.host.e, buffer=c.buffer(24)),
        "Buffer"),
    bad("memory-host-buffer-cl-memory", lambda c: cly.Memory(MD, c.host.e, buffer=c.gpu.mem()),
        "opencl"),
    bad("memory-cl-buffer-host-memory", lambda c: cly.Memory(MD, c.gpu.e, buffer=c.host.mem()),
        "host"),
    # execute(): streams and memories of another engine, queues of another context
    bad("execute-host-prim-cl-stream", lambda c: c.host.run(stream=c.gpu.stream()), "opencl"),
    bad("execute-cl-prim-host-stream", lambda c: c.gpu.run(stream=c.host.stream()), "host"),
    bad("execute-cl-prim-other-engine-stream",
        lambda c: c.gpu.run(stream=c.other_engine().stream()), "Stream", "context"),
    bad("execute-cl-prim-queue-other-context", lambda c: c.gpu.run(stream=c.other_queue),
        "context"),
    bad("execute-cl-prim-context-as-stream", lambda c: c.gpu.run(stream=c.ctx), "Context"),
    bad("execute-host-prim-cl-queue", lambda c: c.host.run(stream=c.queue), "CommandQueue", "queue"),
    bad("execute-cl-prim-host-src", lambda c: c.gpu.run(src=c.host.src()), "host"),
    bad("execute-cl-prim-host-dst", lambda c: c.gpu.run(dst=c.host.mem()), "host"),
    bad("execute-host-prim-cl-src", lambda c: c.host.run(src=c.gpu.src()), "opencl"),
    bad("execute-cl-prim-other-engine-dst", lambda c: c.gpu.run(dst=c.other_engine().mem()),
        "Engine", "context"),
    # wait_for
    bad("execute-wait-for-bare-event", lambda c: c.gpu.run(wait_for=c.event()), "Event"),
    bad("execute-wait-for-event-other-context",
        lambda c: c.gpu.run(wait_for=[c.event(other=True)]), "context"),
    bad("execute-host-wait-for-cl-event", lambda c: c.host.run(wait_for=[c.event()]),
        "wait_for", "Event"),
    # the one-call helpers
    bad("reorder-helper-cl-array", lambda c: cly.reorder(c.array(), c.gpu.mem()), "Array"),
    bad("shuffle-helper-cl-buffer",
        lambda c: cly.shuffle(c.gpu.src(), c.buffer(24), axis=1, group_size=1), "Buffer"),
]


@pytest.mark.parametrize("make, words", OPENCL_CASES)
def test_rejected_with_opencl(cl_engine, host_engine, make, words):
    env = ClEnv(cl_engine, host_engine)
    expect_invalid(lambda: make(env), words)


def test_the_tables_are_big_and_distinct():
    tables = (NO_ENGINE_CASES, HOST_CASES, EACH_CASES, OPENCL_CASES)
    ids = [case.id for table in tables for case in table]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 200


# ================================================================================
# Options are keyword-only: Python's own TypeError
# ================================================================================

@pytest.mark.parametrize("make", [
    pytest.param(lambda e: cly.Reorder(MD, MD, cly.Attr(dst_scales=2.0)), id="reorder-attr-positional"),
    pytest.param(lambda e: cly.Shuffle(BLK, 1, 4, e), id="shuffle-engine-positional"),
])
def test_options_are_keyword_only(host_engine, make):
    with pytest.raises(TypeError) as info:
        make(host_engine)
    assert not isinstance(info.value, cly.Error)
    assert "positional" in str(info.value)


# ================================================================================
# Valid inputs that look odd: they must work
# ================================================================================

def test_empty_masked_scales_on_zero_size_dim(engine):
    src_md, dst_md = cly.MemoryDesc((0, 16, 3), "f32"), cly.MemoryDesc((0, 16, 3), "s8")
    attr = cly.Attr(dst_scales=cly.Scales([], mask=0b1))
    prim = cly.Reorder(src_md, dst_md, engine=engine, attr=attr)
    src, dst = cly.Memory(src_md, engine), cly.Memory(dst_md, engine)
    stream = cly.Stream(engine)
    prim.execute(stream, src, dst)
    stream.wait()
    assert dst.to_numpy().shape == (0, 16, 3)


def test_negative_axis_counts_from_the_end(engine):
    values = np.arange(np.prod(BLK.dims), dtype=np.float32).reshape(BLK.dims)
    results = []
    for axis in (1, -3):
        src = cly.Memory.from_numpy(BLK, engine, values)
        dst = cly.Memory(BLK, engine)
        stream = cly.Stream(engine)
        cly.Shuffle(BLK, axis=axis, group_size=4, engine=engine).execute(stream, src, dst)
        stream.wait()
        results.append(dst.to_numpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.array_equal(results[0], values)


def test_memory_accepts_a_pyopencl_context(cl_engine):
    import pyopencl as cl

    ctx = cl.Context([cl_engine.device])
    assert cly.Memory(MD, ctx).to_numpy().shape == MD.dims
    np.testing.assert_array_equal(cly.Memory.from_numpy(MD, ctx, VALUES).to_numpy(), VALUES)


def test_reorder_and_stream_accept_a_pyopencl_context(cl_engine):
    import pyopencl as cl

    ctx = cl.Context([cl_engine.device])
    dst_md = cly.MemoryDesc((2, 3), "f32", tag="ba")
    src, dst = cly.Memory.from_numpy(MD, ctx, VALUES), cly.Memory(dst_md, ctx)
    stream = cly.Stream(ctx)
    cly.Reorder(MD, dst_md, engine=ctx).execute(stream, src, dst)
    stream.wait()
    np.testing.assert_array_equal(dst.to_numpy(), VALUES)


def test_execute_accepts_a_pyopencl_queue(cl_engine):
    import pyopencl as cl

    queue = cl.CommandQueue(cl_engine.context)
    dst_md = cly.MemoryDesc((2, 3), "f32", tag="ba")
    src, dst = cly.Memory.from_numpy(MD, cl_engine, VALUES), cly.Memory(dst_md, cl_engine)
    cly.Reorder(MD, dst_md, engine=cl_engine).execute(queue, src, dst)
    queue.finish()
    np.testing.assert_array_equal(dst.to_numpy(), VALUES)


@pytest.mark.parametrize("values", [1e300, [1.0, -1e39], [0.5, 1e-50]])
def test_f32_scales_out_of_its_range_are_refused_as_f16_ones_are(values):
    """A finite scale that f32 would hold as infinity or 0 is refused by
    name, as for f16 and bf16; NumPy's overflow warning does not come
    through (warnings are errors here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cly.InvalidArgumentError, match="out of the range of data_type f32"):
            cly.Scales(values)
        with pytest.raises(cly.InvalidArgumentError, match="out of the range of data_type f32"):
            cly.Scales(mask=0b10).with_values(values, (2, 2), "src_scales")
        assert cly.Scales([np.inf, 3.4e38, 1e-45]).values[0] == np.inf  # as f32 holds them
