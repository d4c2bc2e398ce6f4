"""MemoryDesc: construction by strides, submemory, reshape, permute_axes,
matches_tag, the tag property, equality/hash/repr, and bad inputs.

Expected values are worked out by hand (arithmetic in the comments) from the
rules in DESIGN.md sections 2 and 3 and the RFC/memory-formats seeds.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clayout as cly
from reference import element_offsets


def assert_names(excinfo, *values):
    """The error message names (at least one of) the offending value(s)."""
    msg = str(excinfo.value)
    forms = set()
    for value in values:
        forms.add(str(value))
        if isinstance(value, (tuple, list)):
            forms |= {str(tuple(value)), str(list(value)), "x".join(map(str, value))}
    assert any(f in msg for f in forms), f"message {msg!r} names none of {values!r}"


def md(dims, tag=None, strides=None, dt="f32"):
    return cly.MemoryDesc(dims, dt, tag=tag, strides=strides)


# --------------------------------------------------------------------------
# construction
# --------------------------------------------------------------------------


def test_default_is_dense_row_major():
    m = md((2, 3, 4))
    assert m.dims == (2, 3, 4)
    assert m.ndims == 3
    assert m.data_type == "f32"
    assert m.format_kind == "blocked"
    assert m.strides == (12, 4, 1)
    assert m.padded_dims == (2, 3, 4)
    assert m.padded_offsets == (0, 0, 0)
    assert m.offset0 == 0
    assert m.inner_blks == () and m.inner_idxs == ()
    assert m.size == 96
    assert m.nelems() == 24
    assert m.tag == "abc"


def test_attributes_are_tuples_of_ints():
    m = cly.MemoryDesc([2, 17, 3, 3], "f32", tag="nChw16c")  # dims given as a list
    for name in ("dims", "padded_dims", "padded_offsets", "strides", "inner_blks", "inner_idxs"):
        value = getattr(m, name)
        assert isinstance(value, tuple), name
        assert all(type(v) is int for v in value), name
    assert type(m.offset0) is int and type(m.size) is int


def test_immutable():
    m = md((2, 3))
    with pytest.raises((AttributeError, TypeError)):
        m.dims = (3, 2)


def test_format_any():
    m = md((2, 64, 56, 56), tag="any")
    assert m.format_kind == "any"
    assert m.dims == (2, 64, 56, 56)
    assert m != md((2, 64, 56, 56))
    assert m == md((2, 64, 56, 56), tag="any")


def test_api_example_from_design():
    m = md((2, 64, 56, 56), tag="nchw")
    assert m.strides == (200704, 3136, 56, 1)  # 64*56*56, 56*56, 56, 1
    r = m.reshape((2, 64, 3136))
    assert r.dims == (2, 64, 3136) and r.strides == (200704, 3136, 1)
    # input axis i becomes output axis perm[i]: dims (2, 56, 64, 56)
    p = m.permute_axes((0, 2, 3, 1))
    assert p.dims == (2, 56, 64, 56)
    assert p.strides == (200704, 1, 3136, 56)
    assert p == md((2, 56, 64, 56), tag="acdb")


# --------------------------------------------------------------------------
# by strides
# --------------------------------------------------------------------------


def test_strides_transposed_is_ba():
    m = md((64, 32), strides=(1, 64))
    assert m.strides == (1, 64)
    assert m.padded_dims == (64, 32)
    assert m.inner_blks == ()
    assert m == md((64, 32), tag="ba")
    assert m.tag == "ba"
    assert m.offset((5, 3)) == 5 + 3 * 64
    assert m.size == 64 * 32 * 4


def test_strides_with_gaps():
    m = md((4, 32), strides=(40, 1))  # a leading dimension of 40
    assert m.strides == (40, 1)
    assert m.padded_dims == (4, 32)
    assert m.nelems() == 128
    assert m.offset((1, 0)) == 40
    assert m.offset((3, 31)) == 151  # 3*40 + 31
    assert m.tag is None
    assert not m.matches_tag("ab")
    assert m.matches_tag("ab", strides=(40, 0))
    assert m.matches_tag("ab", strides=(-1, 1))
    assert not m.matches_tag("ab", strides=(32, -1))
    assert m != md((4, 32))


def test_strides_with_gaps_size_is_onednn_get_size():
    # oneDNN get_size(): max over d of padded_dims[d] * strides[d], times the
    # element size: max(4*40, 32*1) = 160 elements -> 640 bytes
    assert md((4, 32), strides=(40, 1)).size == 640
    # transposed with a leading dimension: max(3*1, 5*4) = 20 -> 80 bytes
    assert md((3, 5), strides=(1, 4)).size == 80


def test_strides_gap_in_the_middle():
    m = md((2, 3, 4), strides=(24, 8, 1))
    assert m.offset((1, 2, 3)) == 24 + 16 + 3
    assert m.tag is None
    assert not m.matches_tag("abc")
    assert m.matches_tag("abc", strides=(-1, 8, 0))
    assert m.matches_tag("abc", strides=(24, 8, 1))
    assert not m.matches_tag("abc", strides=(-1, 4, 0))


def test_size_one_dims_take_any_stride():
    m = md((1, 8), strides=(1000, 1))
    assert m.offset((0, 7)) == 7
    m = md((3, 1, 4), strides=(4, 999, 1))
    assert m.offset((2, 0, 3)) == 11
    m = md((4, 1), strides=(1, 1))
    assert m.offset((3, 0)) == 3


def test_strides_constructor_equals_tag():
    # acdb on (2,3,4,5): b:1 d:3 c:15 a:60
    assert md((2, 3, 4, 5), strides=(60, 1, 15, 3)) == md((2, 3, 4, 5), tag="nhwc")
    # cdba on (2,3,4,5): a:1 b:2 d:6 c:30
    assert md((2, 3, 4, 5), strides=(1, 2, 30, 6)) == md((2, 3, 4, 5), tag="hwio")


# --------------------------------------------------------------------------
# matches_tag and the tag property
# --------------------------------------------------------------------------


def test_matches_tag_blocked():
    m = md((2, 17, 3, 3), tag="nChw16c")  # strides (288, 144, 48, 16)
    assert m.matches_tag("aBcd16b")
    assert m.matches_tag("nChw16c")
    assert not m.matches_tag("nchw")
    assert not m.matches_tag("nhwc")
    assert not m.matches_tag("aBcd8b")
    assert not m.matches_tag("ABcd16a16b")
    assert m.matches_tag("aBcd16b", strides=(-1, 144, 48, 16))
    assert m.matches_tag("aBcd16b", strides=(-1, 0, 0, 0))
    assert m.matches_tag("aBcd16b", strides=(288, 0, 0, 0))
    assert not m.matches_tag("aBcd16b", strides=(289, 0, 0, 0))
    assert not m.matches_tag("aBcd16b", strides=(-1, 145, 48, 16))


def test_matches_tag_plain_with_strides():
    m = md((2, 3, 4), strides=(100, 4, 1))
    assert not m.matches_tag("abc")
    assert m.matches_tag("abc", strides=(-1, 0, 0))
    assert m.matches_tag("abc", strides=(100, 0, 0))
    assert m.matches_tag("abc", strides=(-1, 4, 1))
    assert not m.matches_tag("abc", strides=(99, -1, -1))
    assert not m.matches_tag("acb", strides=(-1, 0, 0))  # acb's own: b:1, c:3


@pytest.mark.parametrize(
    "dims,strides,expected",
    [
        ((64, 32), (1, 64), "ba"),
        ((2, 3, 4, 5), (60, 1, 15, 3), "acdb"),
        ((2, 3, 4, 5), (1, 40, 10, 2), "bcda"),
        ((2, 3, 4), (4, 8, 1), "bac"),
        ((2, 3, 4, 5), (61, 1, 15, 3), None),   # gap before a
        ((2, 3, 4), (13, 4, 1), None),          # gap before a
    ],
)
def test_tag_property_from_strides(dims, strides, expected):
    assert md(dims, strides=strides).tag == expected


def test_tag_property_blocked():
    assert md((2, 64, 56, 56), tag="nChw16c", dt="s8").tag == "aBcd16b"
    # every outer count >= 2 so the tag is unambiguous
    assert md((32, 32, 3, 5), tag="OIhw4i16o4i").tag == "ABcd4b16a4b"
    assert md((2, 32, 48, 3, 5), tag="gOIhw16i16o").tag == "aBCde16c16b"


# --------------------------------------------------------------------------
# equality, hash, repr
# --------------------------------------------------------------------------


def test_equality_and_hash():
    dims = (2, 3, 4, 5)
    a = md(dims, tag="nchw")
    b = md(dims, tag="abcd")
    c = md(dims)
    d = md(dims, strides=(60, 20, 5, 1))
    e = md(dims, tag="oihw")
    for other in (b, c, d, e):
        assert a == other
        assert hash(a) == hash(other)
    assert a != md(dims, tag="nhwc")
    assert a != md(dims, tag="nchw", dt="f16")
    assert a != md((2, 3, 5, 4), tag="nchw")
    assert a != "abcd"
    assert not (a == None)  # noqa: E711
    assert len({a, b, c, d, e, md(dims, tag="nhwc")}) == 2


def test_equality_blocked():
    dims = (2, 17, 3, 3)
    a = md(dims, tag="nChw16c")
    b = md(dims, tag="aBcd16b")
    assert a == b and hash(a) == hash(b)
    assert a != md(dims, tag="aBcd8b")
    assert a != md(dims, tag="nchw")
    assert md((17, 17, 3, 3), tag="OIhw16i16o") != md((17, 17, 3, 3), tag="OIhw16o16i")
    assert md((17, 17, 3, 3), tag="OIhw16i16o") == md((17, 17, 3, 3), tag="ABcd16b16a")


def test_usable_as_dict_keys():
    table = {md((2, 3, 4, 5), tag="nchw"): "plain", md((2, 17, 3, 3), tag="nChw16c"): "blocked"}
    assert table[md((2, 3, 4, 5), tag="abcd")] == "plain"
    assert table[md((2, 3, 4, 5), strides=(60, 20, 5, 1))] == "plain"
    assert table[md((2, 17, 3, 3), tag="aBcd16b")] == "blocked"
    assert md((2, 3, 4, 5), tag="acdb") not in table


def test_repr():
    assert repr(md((2, 64, 56, 56), tag="nChw16c", dt="s8")) == "<MemoryDesc 2x64x56x56 s8 aBcd16b>"
    r = repr(md((64, 32), strides=(1, 64)))
    assert "64x32" in r and "f32" in r and "ba" in r
    r = repr(md((2, 3, 4, 5), tag="nhwc", dt="bf16"))
    assert "2x3x4x5" in r and "bf16" in r and "acdb" in r


# --------------------------------------------------------------------------
# submemory
# --------------------------------------------------------------------------


def test_submemory_plain():
    p = md((4, 6, 5, 7))  # strides (210, 35, 7, 1), 840 elements, 3360 bytes
    s = p.submemory((2, 3, 5, 7), (1, 2, 0, 0))
    assert s.dims == (2, 3, 5, 7)
    assert s.padded_dims == (4, 6, 5, 7)
    assert s.padded_offsets == (1, 2, 0, 0)
    assert s.offset0 == 0
    assert s.strides == (210, 35, 7, 1)
    assert s.inner_blks == () and s.inner_idxs == ()
    assert s.size == 3360
    assert s.nelems() == 210
    assert s.data_type == "f32"
    assert s.offset((0, 0, 0, 0)) == 280        # 1*210 + 2*35
    assert s.offset((1, 2, 4, 6)) == 594        # parent (2,4,4,6): 420+140+28+6
    assert s != p
    for i in itertools.product(*map(range, s.dims)):
        j = (i[0] + 1, i[1] + 2, i[2], i[3])
        assert s.offset(i) == p.offset(j)
    # a submemory of a submemory accumulates the offsets
    s2 = s.submemory((1, 1, 5, 7), (1, 1, 0, 0))
    assert s2.padded_offsets == (2, 3, 0, 0)
    assert s2.padded_dims == (4, 6, 5, 7)
    assert s2.offset((0, 0, 0, 0)) == 525      # 2*210 + 3*35


def test_submemory_blocked():
    q = md((2, 40, 3, 3), tag="nChw16c")  # padded (2,48,3,3), strides (432,144,48,16)
    assert q.strides == (432, 144, 48, 16)
    t = q.submemory((2, 16, 3, 3), (0, 16, 0, 0))
    assert t.dims == (2, 16, 3, 3)
    assert t.padded_dims == (2, 48, 3, 3)
    assert t.padded_offsets == (0, 16, 0, 0)
    assert t.offset0 == 0
    assert t.strides == (432, 144, 48, 16)
    assert t.inner_blks == (16,) and t.inner_idxs == (1,)
    assert t.size == q.size == 2 * 48 * 9 * 4
    assert t.offset((0, 0, 0, 0)) == 144
    assert t.offset((1, 15, 2, 2)) == 432 + 144 + 15 + 96 + 32
    # the tail: 32 + 8 == 40, so 8 channels are allowed
    u = q.submemory((2, 8, 3, 3), (0, 32, 0, 0))
    assert u.padded_offsets == (0, 32, 0, 0)
    assert u.offset((0, 7, 0, 0)) == 2 * 144 + 7
    assert u.offset((1, 7, 2, 2)) == 432 + 288 + 7 + 96 + 32
    # dims that are not blocked can be cut anywhere
    v = q.submemory((1, 16, 2, 3), (1, 0, 1, 0))
    assert v.offset((0, 0, 0, 0)) == 432 + 48


def test_submemory_double_blocked():
    r = md((32, 48, 2, 2), tag="ABcd16a16b")  # inner 256: d:256 c:512 B:1024 A:3072
    assert r.strides == (3072, 1024, 512, 256)
    s = r.submemory((16, 16, 2, 2), (16, 32, 0, 0))
    assert s.padded_offsets == (16, 32, 0, 0)
    assert s.offset((0, 0, 0, 0)) == 3072 + 2 * 1024
    assert s.offset((15, 15, 1, 1)) == 5120 + 15 * 16 + 15 + 512 + 256


@pytest.mark.parametrize(
    "parent,dims,offsets",
    [
        (((4, 6), None), (3, 3), (2, 0)),                       # 2 + 3 > 4
        (((4, 6), None), (2, 3), (-1, 0)),                      # negative offset
        (((4, 6), None), (2, 7), (0, 0)),                       # bigger than the parent
        (((4, 6), None), (2, 3, 1), (0, 0, 0)),                 # wrong length
        (((2, 40, 3, 3), "nChw16c"), (2, 8, 3, 3), (0, 16, 0, 0)),   # splits a block
        (((2, 40, 3, 3), "nChw16c"), (2, 16, 3, 3), (0, 8, 0, 0)),   # unaligned offset
        (((2, 40, 3, 3), "nChw16c"), (2, 16, 3, 3), (0, 32, 0, 0)),  # 32 + 16 > 40
        (((32, 48, 2, 2), "ABcd16a16b"), (8, 16, 2, 2), (0, 0, 0, 0)),  # splits an O block
    ],
)
def test_submemory_errors(parent, dims, offsets):
    pdims, ptag = parent
    p = md(pdims, tag=ptag)
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        p.submemory(dims, offsets)
    assert_names(excinfo, dims, offsets)


def test_submemory_of_submemory_out_of_range():
    s = md((4, 6, 5, 7)).submemory((2, 3, 5, 7), (1, 2, 0, 0))
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        s.submemory((2, 3, 5, 7), (1, 0, 0, 0))  # 1 + 2 > 2
    assert_names(excinfo, (2, 3, 5, 7), (1, 0, 0, 0))
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        s.offset((2, 0, 0, 0))  # inside the parent, outside the submemory
    assert_names(excinfo, (2, 0, 0, 0))


# --------------------------------------------------------------------------
# reshape
# --------------------------------------------------------------------------


# (dims, tag, new dims, expected strides, the tag the result equals on the new dims)
RESHAPES = [
    # abcd (2,3,4,5): (60, 20, 5, 1)
    ((2, 3, 4, 5), "abcd", (6, 20), (20, 1), "ab"),                      # merge a,b and c,d
    ((2, 3, 4, 5), "abcd", (2, 3, 20), (60, 20, 1), "abc"),
    ((2, 3, 4, 5), "abcd", (2, 3, 2, 2, 5), (60, 20, 10, 5, 1), "abcde"),  # split c
    ((2, 3, 4, 5), "abcd", (120,), (1,), "a"),
    ((2, 1, 3, 4), "abcd", (2, 3, 4), (12, 4, 1), "abc"),                # drop a 1
    # acdb (2,3,4,5): (60, 1, 15, 3); c and d are adjacent in memory: merge to 20
    ((2, 3, 4, 5), "acdb", (2, 3, 20), (60, 1, 3), "acb"),
    # ba (6,4): a:1 b:6; split a into 2x3 -> (3, 1, 6), which is cab
    ((6, 4), "ba", (2, 3, 4), (3, 1, 6), "cab"),
    # cdba (2,3,4,5): (1, 2, 30, 6); split c=4 into 2x2 -> strides 60, 30
    ((2, 3, 4, 5), "cdba", (2, 3, 2, 2, 5), (1, 2, 60, 30, 6), "cdeba"),
]


@pytest.mark.parametrize("dims,tag,new,strides,same_as", RESHAPES)
def test_reshape_plain(dims, tag, new, strides, same_as):
    r = md(dims, tag=tag).reshape(new)
    assert r.dims == new
    assert r.padded_dims == new
    assert r.strides == strides
    assert r == md(new, tag=same_as)


def test_reshape_permuted_impossible():
    # a (stride 60) and b (stride 1) of acdb are not adjacent: cannot merge
    with pytest.raises(cly.Error):
        md((2, 3, 4, 5), tag="acdb").reshape((6, 4, 5))


def test_reshape_blocked_adds_and_removes_ones():
    m = md((2, 17, 3, 3), tag="nChw16c")  # (288, 144, 48, 16)
    r = m.reshape((2, 17, 3, 3, 1))
    assert r.dims == (2, 17, 3, 3, 1)
    assert r.padded_dims == (2, 32, 3, 3, 1)
    assert r.inner_blks == (16,) and r.inner_idxs == (1,)
    assert r.strides[:4] == (288, 144, 48, 16)
    assert r.offset((1, 16, 2, 1, 0)) == 288 + 144 + 96 + 16
    r = m.reshape((1, 2, 17, 3, 3))
    assert r.padded_dims == (1, 2, 32, 3, 3)
    assert r.inner_blks == (16,) and r.inner_idxs == (2,)
    assert r.strides[1:] == (288, 144, 48, 16)
    assert r.offset((0, 1, 16, 2, 1)) == 288 + 144 + 96 + 16
    # dropping a 1: (1,17,3,3) aBcd16b -> (17,3,3) Abc16a (144, 48, 16)
    r = md((1, 17, 3, 3), tag="aBcd16b").reshape((17, 3, 3))
    assert r.strides == (144, 48, 16)
    assert r.inner_idxs == (0,)
    assert r == md((17, 3, 3), tag="Abc16a")


def test_reshape_blocked_merge_refused():
    with pytest.raises(cly.Error):
        md((2, 32, 3, 3), tag="nChw16c").reshape((2, 32, 9))


def test_reshape_changing_nelems():
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        md((2, 3, 4, 5)).reshape((2, 3, 21))
    assert_names(excinfo, (2, 3, 21))


# --------------------------------------------------------------------------
# permute_axes (input axis i becomes output axis perm[i])
# --------------------------------------------------------------------------


def test_permute_plain():
    p = md((2, 3, 4, 5)).permute_axes((0, 2, 3, 1))
    assert p.dims == (2, 5, 3, 4)
    assert p.strides == (60, 1, 20, 5)
    assert p == md((2, 5, 3, 4), tag="acdb")
    # a 3-cycle tells perm from its inverse: out[2]=a, out[0]=b, out[1]=c
    m = md((2, 3, 4))  # (12, 4, 1)
    p = m.permute_axes((2, 0, 1))
    assert p.dims == (3, 4, 2)
    assert p.strides == (4, 1, 12)
    assert p == md((3, 4, 2), tag="cab")
    assert m.offset((1, 2, 3)) == 23 and p.offset((2, 3, 1)) == 23
    assert md((3, 5)).permute_axes((1, 0)) == md((5, 3), tag="ba")


def test_permute_blocked():
    p = md((2, 17, 3, 3), tag="nChw16c").permute_axes((1, 0, 2, 3))
    assert p.dims == (17, 2, 3, 3)
    assert p.padded_dims == (32, 2, 3, 3)
    assert p.strides == (144, 288, 48, 16)
    assert p.inner_blks == (16,) and p.inner_idxs == (0,)
    assert p == md((17, 2, 3, 3), tag="bAcd16a")
    p = md((17, 5, 2, 1), tag="OIhw4i16o4i").permute_axes((1, 0, 2, 3))
    assert p.dims == (5, 17, 2, 1)
    assert p.padded_dims == (16, 32, 2, 1)
    assert p.strides == (512, 512, 256, 256)
    assert p.inner_blks == (4, 16, 4) and p.inner_idxs == (0, 1, 0)
    assert p == md((5, 17, 2, 1), tag="BAcd4a16b4a")


def test_permute_submemory():
    s = md((4, 6, 5, 7)).submemory((2, 3, 5, 7), (1, 2, 0, 0))
    p = s.permute_axes((1, 0, 2, 3))
    assert p.dims == (3, 2, 5, 7)
    assert p.padded_dims == (6, 4, 5, 7)
    assert p.padded_offsets == (2, 1, 0, 0)
    assert p.strides == (35, 210, 7, 1)
    assert p.offset((0, 0, 0, 0)) == 280


@pytest.mark.parametrize("perm", [(0, 0, 1), (1, 0), (0, 1, 3), (0, 1, 2, 3), (-1, 0, 1)])
def test_permute_errors(perm):
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        md((2, 3, 4)).permute_axes(perm)
    assert_names(excinfo, perm)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.permutations(range(n)), st.lists(st.integers(1, 4), min_size=n, max_size=n))))
def test_permute_round_trip(case):
    perm, dims = tuple(case[0]), tuple(case[1])
    m = md(dims)
    p = m.permute_axes(perm)
    assert p.dims == tuple(dims[perm.index(k)] for k in range(len(dims)))
    inverse = tuple(perm.index(k) for k in range(len(perm)))
    assert p.permute_axes(inverse) == m
    for i in itertools.islice(itertools.product(*map(range, dims)), 50):
        j = [0] * len(dims)
        for k, v in enumerate(i):
            j[perm[k]] = v
        assert p.offset(tuple(j)) == m.offset(i)


# --------------------------------------------------------------------------
# random strided layouts (gaps allowed) against sum(i * stride)
# --------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.permutations(range(n)),
    st.lists(st.integers(1, 4), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n))))
def test_random_strides_with_gaps(case):
    order, dims, gaps = case
    dims = tuple(dims)
    strides = [0] * len(dims)
    s = 1
    for d, g in zip(reversed(order), gaps):  # innermost first, each one maybe padded
        strides[d] = s
        s = s * dims[d] + g
    strides = tuple(strides)
    m = md(dims, strides=strides)
    assert m.strides == strides
    assert m.dims == m.padded_dims == dims
    idx = np.array(list(itertools.product(*map(range, dims))), dtype=np.int64)
    want = element_offsets(dims, strides=strides).reshape(-1)  # C order, as idx
    got = np.array([m.offset(tuple(map(int, i))) for i in idx])
    np.testing.assert_array_equal(got, want)
    assert len(set(got.tolist())) == len(got)
    assert m.size >= (int(want.max()) + 1) * 4


# --------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dims,dt,strides,value",
    [
        ((2, -3, 4), "f32", None, -3),                    # negative dim
        ((2, 3), "f32", (3, 1, 1), (3, 1, 1)),            # strides length mismatch
        ((2, 3, 4), "f32", (12, 4), (12, 4)),             # strides length mismatch
        ((4, 8), "f32", (4, 1), (4, 1)),                  # rows overlap
        ((4, 8), "f32", (1, 3), (1, 3)),                  # columns overlap
        ((2, 3, 4), "f32", (12, 4, 2), (12, 4, 2)),       # c spans 8 > b's stride 4
        ((4, 8), "f32", (-8, 1), (-8, 1)),                # negative stride
        ((4, 8), "f32", (8, -1), (8, -1)),                # negative stride
        ((4, 8), "f32", (0, 1), (0, 1)),                  # zero stride on a dim of 4
        ((2, 3), "f31", None, "f31"),                     # unknown type
        ((2, 3), "s16", None, "s16"),                     # unknown type
    ],
)
def test_bad_constructor_arguments(dims, dt, strides, value):
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        cly.MemoryDesc(dims, dt, strides=strides)
    assert_names(excinfo, value)
    assert isinstance(excinfo.value, cly.Error) and isinstance(excinfo.value, ValueError)


def test_more_than_twelve_dims():
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        md((1,) * 13)
    assert_names(excinfo, 13, (1,) * 13)
    md((1,) * 12)  # 12 is fine


@pytest.mark.parametrize(
    "dims,tag,idx,padded",
    [
        ((2, 3), None, (2, 0), False),
        ((2, 3), None, (0, 3), False),
        ((2, 3), None, (0, -1), False),
        ((2, 3), None, (0, 0, 0), False),             # wrong length
        ((2, 17, 3, 3), "nChw16c", (0, 17, 0, 0), False),  # in the padding, padded=False
        ((2, 17, 3, 3), "nChw16c", (0, 32, 0, 0), True),   # beyond the padding
    ],
)
def test_offset_out_of_range(dims, tag, idx, padded):
    m = md(dims, tag=tag)
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        m.offset(idx, padded=padded)
    assert_names(excinfo, idx)


def test_offset_in_padding_is_allowed_with_padded():
    m = md((2, 17, 3, 3), tag="nChw16c")
    assert m.offset((0, 31, 0, 0), padded=True) == 144 + 15
    assert m.offset((0, 17, 0, 0), padded=True) == 144 + 1
