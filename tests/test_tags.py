"""Format tags: the grammar, the aliases of the memory-formats seed, meta-tags,
and the blocking structure (padded dims, strides, inner blocks) each tag gives.

Every expected value below was worked out by hand from the rules in
DESIGN.md section 3 (the arithmetic is in the comments where it is not
obvious). The only computed expectations are in the hypothesis tests and in
the strides of plain tags, where the tests' independent reference
(tests/reference.py: ``blocking``, ``blocked_offsets``) stands in.
"""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import clayout as cly
from clayout.tags import expand_tag
from reference import Blocking, blocked_offsets, blocking

SEED = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "memory-formats.md"

# --------------------------------------------------------------------------
# helpers (independent of the library)
# --------------------------------------------------------------------------


def assert_names(excinfo, value):
    """The error message names the offending value."""
    msg = str(excinfo.value)
    forms = {str(value)}
    if isinstance(value, (tuple, list)):
        forms |= {str(tuple(value)), str(list(value)), "x".join(map(str, value))}
    assert any(f in msg for f in forms), f"message {msg!r} does not name {value!r}"


def padded_index_space(padded_dims):
    if math.prod(padded_dims) == 0:
        return np.zeros((0, len(padded_dims)), dtype=np.int64)
    return np.array(list(np.ndindex(*padded_dims)), dtype=np.int64).reshape(-1, len(padded_dims))


def lib_offsets(md, idx):
    return np.array([md.offset(tuple(int(v) for v in i), padded=True) for i in idx], dtype=np.int64)


# --------------------------------------------------------------------------
# 1. aliases of the memory-formats seed
# --------------------------------------------------------------------------

# Hand copy of the seed's "an alias for dnnl::memory::format_tag::Y" lines,
# used when the seed is not next to this checkout.
SEED_ALIASES_FALLBACK = {
    "x": "a",
    "nc": "ab", "cn": "ba", "tn": "ab", "nt": "ba",
    "ncw": "abc", "nwc": "acb",
    "nchw": "abcd", "nhwc": "acdb", "chwn": "bcda",
    "ncdhw": "abcde", "ndhwc": "acdeb",
    "oi": "ab", "io": "ba",
    "oiw": "abc", "owi": "acb", "wio": "cba", "iwo": "bca",
    "oihw": "abcd", "hwio": "cdba", "ohwi": "acdb", "ihwo": "bcda", "iohw": "bacd",
    "oidhw": "abcde", "dhwio": "cdeba", "odhwi": "acdeb", "iodhw": "bacde", "idhwo": "bcdea",
    "goiw": "abcd", "wigo": "dcab",
    "goihw": "abcde", "hwigo": "decab", "giohw": "acbde",
    "goidhw": "abcdef", "giodhw": "abcdef",  # sic, see SEED_ERRATA
    "dhwigo": "defcab",
}
# The abstract tags the seed lists ("plain/permuted ND tensor").
SEED_PLAIN_FALLBACK = [
    "a", "ab", "ba", "abc", "acb", "bac", "bca", "cba",
    "abcd", "abdc", "acdb", "bacd", "bcda", "cdba", "dcab",
    "abcde", "abdec", "acbde", "acdeb", "bacde", "bcdea", "cdeba", "decab",
    "abcdef", "acbdef", "defcab",
]
# RNN tags the seed describes in words only (no "an alias for" line).
RNN_ALIASES = {
    "tnc": "abc", "ntc": "bac",
    "ldnc": "abcd", "ldigo": "abcde", "ldgoi": "abdec",
    "ldio": "abcd", "ldoi": "abdc", "ldgo": "abcd",
}
# Blocked aliases: letter by letter within the family (hand translated).
BLOCKED_ALIASES = {
    "nCw16c": "aBc16b",
    "nChw16c": "aBcd16b",
    "nChw8c": "aBcd8b",
    "nChw4c": "aBcd4b",
    "nCdhw8c": "aBcde8b",
    "nCdhw16c": "aBcde16b",
    "NChw16n16c": "ABcd16a16b",
    "Oihw16o": "Abcd16a",
    "Ohwi16o": "Acdb16a",
    "OIw16i16o": "ABc16b16a",
    "OIhw16i16o": "ABcd16b16a",
    "OIhw16o16i": "ABcd16a16b",
    "IOhw16o16i": "BAcd16a16b",
    "OIhw4i16o4i": "ABcd4b16a4b",
    "OIhw8i16o2i": "ABcd8b16a2b",
    "OIdhw16i16o": "ABcde16b16a",
    "gOIhw16i16o": "aBCde16c16b",
    "gOIhw4i16o4i": "aBCde4c16b4c",
    "gOIw4i16o4i": "aBCd4c16b4c",
    "gOIdhw16i16o": "aBCdef16c16b",
    "Goiw16g": "Abcd16a",
    "Goihw8g": "Abcde8a",
    "Goihw16g": "Abcde16a",
}


def parse_seed():
    """(aliases, plain abstract tags) from the seed's enumerator list."""
    aliases, plain = {}, []
    last = None
    for line in SEED.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*enumerator\s+(\w+)\s*$", line)
        if m:
            last = m.group(1)
            if re.fullmatch(r"[a-l]+", last):
                plain.append(last)
            continue
        m = re.search(r"an alias for dnnl::memory::format_tag::(\w+)", line)
        if m and last is not None:
            aliases[last] = m.group(1)
    return aliases, plain


if SEED.is_file():
    SEED_ALIASES, SEED_PLAIN = parse_seed()
else:  # pragma: no cover - only outside the shared workspace
    SEED_ALIASES, SEED_PLAIN = dict(SEED_ALIASES_FALLBACK), list(SEED_PLAIN_FALLBACK)

# The seed's page lists giodhw as abcdef, a slip: letter by letter g,i,o,d,h,w
# is a,c,b,d,e,f (as giohw is acbde, and as oneDNN's header defines it). The
# test holds the rule, and checks that the seed still says what we correct.
SEED_ERRATA = {"giodhw": ("abcdef", "acbdef")}
for _alias, (_printed, _correct) in SEED_ERRATA.items():
    assert SEED_ALIASES[_alias] == _printed, "the seed changed: revisit SEED_ERRATA"
    SEED_ALIASES[_alias] = _correct

DISTINCT = (2, 3, 4, 5, 6, 7)  # distinct sizes: different layouts give different strides
DISTINCT_BLK = (5, 18, 3, 7, 2, 4)  # distinct, and not multiples of the blocks


def test_seed_table_was_read():
    # the seed has 36 alias lines; guard against a parser that silently finds nothing
    assert len(SEED_ALIASES) >= 36
    assert SEED_ALIASES["nhwc"] == "acdb"
    assert SEED_ALIASES["hwigo"] == "decab"
    assert len(SEED_PLAIN) >= 26
    assert "defcab" in SEED_PLAIN


@pytest.mark.parametrize("alias,abstract", sorted({**SEED_ALIASES, **RNN_ALIASES}.items()))
def test_alias_maps_to_listed_abstract_tag(alias, abstract):
    dims = DISTINCT[: len(abstract)]
    a = cly.MemoryDesc(dims, "f32", tag=alias)
    b = cly.MemoryDesc(dims, "f32", tag=abstract)
    assert a == b
    assert hash(a) == hash(b)
    assert a.strides == blocking(dims, abstract).strides
    assert a.inner_blks == () and a.inner_idxs == ()
    assert expand_tag(alias, len(dims)) == abstract


@pytest.mark.parametrize("tag", SEED_PLAIN)
def test_plain_abstract_tags_of_the_seed(tag):
    dims = DISTINCT[: len(tag)]
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    assert md.format_kind == "blocked"
    assert md.dims == dims and md.padded_dims == dims
    assert md.strides == blocking(dims, tag).strides
    assert md.inner_blks == () and md.inner_idxs == ()
    assert md.tag == tag
    assert expand_tag(tag, len(tag)) == tag


@pytest.mark.parametrize("alias,abstract", sorted(BLOCKED_ALIASES.items()))
def test_blocked_alias(alias, abstract):
    n = sum(ch.isalpha() for ch in re.match(r"[A-Za-z]+", abstract).group(0))
    dims = DISTINCT_BLK[:n]
    assert expand_tag(alias, n) == abstract
    assert cly.MemoryDesc(dims, "f32", tag=alias) == cly.MemoryDesc(dims, "f32", tag=abstract)


# spot checks of the translation, by hand
@pytest.mark.parametrize(
    "alias,ndims,abstract",
    [
        ("nChw16c", 4, "aBcd16b"),
        ("nCdhw8c", 5, "aBcde8b"),
        ("OIhw16i16o", 4, "ABcd16b16a"),
        ("gOIhw16i16o", 5, "aBCde16c16b"),
        ("OIhw4i16o4i", 4, "ABcd4b16a4b"),
        ("Goihw16g", 5, "Abcde16a"),
        ("nhwc", 4, "acdb"),
        ("ntc", 3, "bac"),
        ("hwigo", 5, "decab"),
        # abstract tags come back unchanged
        ("aBcd16b", 4, "aBcd16b"),
        ("ABcd4b16a4b", 4, "ABcd4b16a4b"),
        ("cdba", 4, "cdba"),
    ],
)
def test_expand_tag_aliases(alias, ndims, abstract):
    assert expand_tag(alias, ndims) == abstract


@pytest.mark.parametrize(
    "meta,ndims,abstract",
    [
        ("abx", 5, "abcde"),
        ("abx", 4, "abcd"),
        ("abx", 3, "abc"),
        ("abx", 2, "ab"),       # x stands for zero dims
        ("axb", 4, "acdb"),
        ("axb", 3, "acb"),
        ("axb", 5, "acdeb"),
        ("xba", 4, "cdba"),
        ("xba", 3, "cba"),
        ("xba", 5, "cdeba"),
        ("aBx16b", 3, "aBc16b"),
        ("aBx16b", 4, "aBcd16b"),
        ("aBx16b", 5, "aBcde16b"),
        ("ABx16a16b", 4, "ABcd16a16b"),
        ("ABx16a16b", 3, "ABc16a16b"),
    ],
)
def test_expand_meta_tags(meta, ndims, abstract):
    assert expand_tag(meta, ndims) == abstract


def test_meta_tag_in_constructor():
    dims = (2, 3, 4, 5)
    assert cly.MemoryDesc(dims, "f32", tag="axb") == cly.MemoryDesc(dims, "f32", tag="acdb")
    assert cly.MemoryDesc(dims, "f32", tag="abx") == cly.MemoryDesc(dims, "f32")
    # aBx16b on 3 dims == aBc16b: dims (2,20,3) -> (96,48,16), see TAG_TABLE
    assert cly.MemoryDesc((2, 20, 3), "f32", tag="aBx16b").strides == (96, 48, 16)


# --------------------------------------------------------------------------
# 2. hand-computed blocking structures
# --------------------------------------------------------------------------
# (tag, dims, padded_dims, strides, inner_blks, inner_idxs)
# Strides: start at prod(inner_blks) at the innermost outer letter and walk
# outwards, multiplying by padded_dim / block of the letter just passed.
TAG_TABLE = [
    # ---- plain -------------------------------------------------------------
    ("a", (5,), (5,), (1,), (), ()),
    ("ab", (3, 5), (3, 5), (5, 1), (), ()),
    ("ba", (3, 5), (3, 5), (1, 3), (), ()),
    ("abc", (2, 3, 4), (2, 3, 4), (12, 4, 1), (), ()),
    ("acb", (2, 3, 4), (2, 3, 4), (12, 1, 3), (), ()),      # b:1 c:3 a:12
    ("bac", (2, 3, 4), (2, 3, 4), (4, 8, 1), (), ()),       # c:1 a:4 b:8
    ("bca", (2, 3, 4), (2, 3, 4), (1, 8, 2), (), ()),       # a:1 c:2 b:8
    ("cba", (2, 3, 4), (2, 3, 4), (1, 2, 6), (), ()),       # a:1 b:2 c:6
    ("cab", (2, 3, 4), (2, 3, 4), (3, 1, 6), (), ()),       # b:1 a:3 c:6
    ("abcd", (2, 3, 4, 5), (2, 3, 4, 5), (60, 20, 5, 1), (), ()),
    ("abdc", (2, 3, 4, 5), (2, 3, 4, 5), (60, 20, 1, 4), (), ()),   # c:1 d:4 b:20 a:60
    ("acdb", (2, 3, 4, 5), (2, 3, 4, 5), (60, 1, 15, 3), (), ()),   # b:1 d:3 c:15 a:60
    ("bacd", (2, 3, 4, 5), (2, 3, 4, 5), (20, 40, 5, 1), (), ()),   # d:1 c:5 a:20 b:40
    ("bcda", (2, 3, 4, 5), (2, 3, 4, 5), (1, 40, 10, 2), (), ()),   # a:1 d:2 c:10 b:40
    ("cdba", (2, 3, 4, 5), (2, 3, 4, 5), (1, 2, 30, 6), (), ()),    # a:1 b:2 d:6 c:30
    ("dcab", (2, 3, 4, 5), (2, 3, 4, 5), (3, 1, 6, 24), (), ()),    # b:1 a:3 c:6 d:24
    ("abcde", (2, 3, 2, 2, 3), (2, 3, 2, 2, 3), (36, 12, 6, 3, 1), (), ()),
    ("acdeb", (2, 3, 2, 2, 3), (2, 3, 2, 2, 3), (36, 1, 18, 9, 3), (), ()),  # b:1 e:3 d:9 c:18 a:36
    ("decab", (2, 3, 2, 2, 3), (2, 3, 2, 2, 3), (3, 1, 6, 36, 12), (), ()),  # b:1 a:3 c:6 e:12 d:36
    # f:1 e:2 d:4 b:4 c:12 a:24
    ("acbdef", (2, 3, 2, 1, 2, 2), (2, 3, 2, 1, 2, 2), (24, 4, 12, 4, 2, 1), (), ()),
    # b:1 a:3 c:6 f:12 e:24 d:48
    ("defcab", (2, 3, 2, 1, 2, 2), (2, 3, 2, 1, 2, 2), (3, 1, 6, 48, 24, 12), (), ()),
    ("abcdefg", (2, 1, 2, 1, 2, 1, 2), (2, 1, 2, 1, 2, 1, 2), (8, 8, 4, 4, 2, 2, 1), (), ()),
    ("abcdefghijkl", (2, 1) * 6, (2, 1) * 6, (32, 32, 16, 16, 8, 8, 4, 4, 2, 2, 1, 1), (), ()),
    ("lkjihgfedcba", (1, 2) * 6, (1, 2) * 6, (1, 1, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32), (), ()),
    # ---- one blocked dim ----------------------------------------------------
    ("aB4b", (3, 5), (3, 8), (8, 4), (4,), (1,)),                    # B:4 a:4*2
    ("Ab16a", (20, 3), (32, 3), (48, 16), (16,), (0,)),              # b:16 A:16*3
    ("Ba4b", (3, 6), (3, 8), (4, 12), (4,), (1,)),                   # a:4 B:4*3
    ("bA16a", (20, 3), (32, 3), (16, 32), (16,), (0,)),              # A:16 b:16*2
    ("aBc16b", (2, 20, 3), (2, 32, 3), (96, 48, 16), (16,), (1,)),   # c:16 B:48 a:48*2
    ("aBc3b", (2, 7, 2), (2, 9, 2), (18, 6, 3), (3,), (1,)),         # c:3 B:6 a:6*3
    ("aBc32b", (1, 33, 2), (1, 64, 2), (128, 64, 32), (32,), (1,)),  # c:32 B:64 a:64*2
    ("cBa2b", (3, 5, 2), (3, 6, 2), (2, 6, 18), (2,), (1,)),         # a:2 B:2*3 c:6*3
    ("aBcd4b", (1, 6, 2, 2), (1, 8, 2, 2), (32, 16, 8, 4), (4,), (1,)),
    ("aBcd8b", (2, 11, 2, 3), (2, 16, 2, 3), (96, 48, 24, 8), (8,), (1,)),
    # the brief's example: d:16 c:48 B:144 a:144*2
    ("aBcd16b", (2, 17, 3, 3), (2, 32, 3, 3), (288, 144, 48, 16), (16,), (1,)),
    ("aBdc16b", (2, 17, 2, 3), (2, 32, 2, 3), (192, 96, 16, 32), (16,), (1,)),   # c:16 d:32 B:96 a:192
    ("acdB8b", (2, 9, 3, 2), (2, 16, 3, 2), (96, 8, 32, 16), (8,), (1,)),        # B:8 d:16 c:32 a:96
    ("Acdb8a", (9, 2, 3, 2), (16, 2, 3, 2), (96, 8, 32, 16), (8,), (0,)),        # b:8 d:16 c:32 A:96
    ("cdBa16b", (3, 17, 2, 2), (3, 32, 2, 2), (16, 48, 192, 96), (16,), (1,)),   # a:16 B:48 d:96 c:192
    ("aBcde8b", (2, 9, 2, 2, 2), (2, 16, 2, 2, 2), (128, 64, 32, 16, 8), (8,), (1,)),
    ("Abcde16a", (17, 2, 3, 1, 2), (32, 2, 3, 1, 2), (192, 96, 32, 32, 16), (16,), (0,)),
    ("aBcdef4b", (1, 5, 1, 2, 1, 2), (1, 8, 1, 2, 1, 2), (32, 16, 16, 8, 8, 4), (4,), (1,)),
    # ---- two or more blocks ---------------------------------------------------
    ("AB8a4b", (9, 5), (16, 8), (64, 32), (8, 4), (0, 1)),           # inner 32; B:32 A:32*2
    ("AcB8b4a", (6, 9, 2), (8, 16, 2), (128, 32, 64), (8, 4), (1, 0)),  # inner 32; B:32 c:64 A:128
    ("BA16a64b", (17, 3), (32, 64), (1024, 2048), (16, 64), (0, 1)),  # inner 1024; A:1024 B:2048
    ("aCB16b48c", (1, 17, 50), (1, 32, 96), (3072, 768, 1536), (16, 48), (1, 2)),  # inner 768
    ("aBCd4b4c", (2, 5, 6, 3), (2, 8, 8, 3), (192, 96, 48, 16), (4, 4), (1, 2)),  # inner 16; d:16 C:48 B:96 a:192
    # inner 256; d:256 c:512 B:512*1 A:512*2
    ("ABcd16a16b", (17, 20, 1, 2), (32, 32, 1, 2), (1024, 512, 512, 256), (16, 16), (0, 1)),
    # inner 256; d:256 c:256*1 B:256*2 A:512*2
    ("ABcd16b16a", (3, 18, 2, 1), (16, 32, 2, 1), (1024, 512, 256, 256), (16, 16), (1, 0)),
    # inner 256; d:256 c:512 A:512*1... order B,A: A:512 B:512*2
    ("BAcd16a16b", (20, 5, 1, 2), (32, 16, 1, 2), (512, 1024, 512, 256), (16, 16), (0, 1)),
    # OIhw4i16o4i: b padded to 4*4=16; inner 256; d:256 c:256 B:512 A:512
    ("ABcd4b16a4b", (17, 5, 2, 1), (32, 16, 2, 1), (512, 512, 256, 256), (4, 16, 4), (1, 0, 1)),
    # OIhw8i16o2i: b padded to 8*2=16 -> 32; inner 256; d:256 c:512 B:512 A:1024
    ("ABcd8b16a2b", (3, 18, 1, 2), (16, 32, 1, 2), (1024, 512, 512, 256), (8, 16, 2), (1, 0, 1)),
    ("ABCd2a2b2c", (3, 3, 3, 2), (4, 4, 4, 2), (64, 32, 16, 8), (2, 2, 2), (0, 1, 2)),
    ("aBCd2b4c2b", (2, 3, 5, 2), (2, 4, 8, 2), (64, 64, 32, 16), (2, 4, 2), (1, 2, 1)),
    ("ABcde4b16a4b", (20, 4, 1, 2, 2), (32, 16, 1, 2, 2), (1024, 1024, 1024, 512, 256), (4, 16, 4), (1, 0, 1)),
    # gOIhw16i16o: inner 256; e:256 d:512 C:512 B:512*2 a:1024*1
    ("aBCde16c16b", (2, 3, 17, 1, 2), (2, 16, 32, 1, 2), (1024, 1024, 512, 512, 256), (16, 16), (2, 1)),
    # gOIhw4i16o4i: inner 256; e,d,C:256 B:256 a:256*2
    ("aBCde4c16b4c", (2, 17, 5, 1, 1), (2, 32, 16, 1, 1), (512, 256, 256, 256, 256), (4, 16, 4), (2, 1, 2)),
    # gOIhw2i8o4i: c padded to 8 -> 16; inner 64; e,d,C:64 B:64*2 a:128*2
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (2, 16, 16, 1, 1), (256, 128, 64, 64, 64), (2, 8, 4), (2, 1, 2)),
]
TAG_IDS = [t[0] for t in TAG_TABLE]


def test_table_is_big_enough():
    assert len(TAG_TABLE) >= 40
    assert sum(1 for t in TAG_TABLE if len(t[4]) >= 2) >= 10  # multi-level ones


@pytest.mark.parametrize("tag,dims,padded,strides,blks,idxs", TAG_TABLE, ids=TAG_IDS)
def test_tag_blocking(tag, dims, padded, strides, blks, idxs):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    assert md.format_kind == "blocked"
    assert md.dims == dims
    assert md.ndims == len(dims)
    assert md.data_type == "f32"
    assert md.padded_dims == padded
    assert md.padded_offsets == (0,) * len(dims)
    assert md.offset0 == 0
    assert md.strides == strides
    assert md.inner_blks == blks
    assert md.inner_idxs == idxs
    assert md.size == math.prod(padded) * 4
    assert md.nelems() == math.prod(dims)
    assert md.nelems(padded=True) == math.prod(padded)
    assert md.matches_tag(tag)


@pytest.mark.parametrize("tag,dims,padded,strides,blks,idxs", TAG_TABLE, ids=TAG_IDS)
def test_tag_offsets_are_a_bijection(tag, dims, padded, strides, blks, idxs):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    idx = padded_index_space(padded)
    got = lib_offsets(md, idx)
    # against the hand-written descriptor ...
    want = blocked_offsets(idx.T, Blocking(padded, strides, blks, idxs))
    np.testing.assert_array_equal(got, want)
    # ... and dense: every element of [0, size/4) exactly once
    np.testing.assert_array_equal(np.sort(got), np.arange(md.size // 4))


@pytest.mark.parametrize(
    "tag,dims",
    [("aBcd16b", (2, 17, 3, 3)), ("ABcd4b16a4b", (17, 5, 2, 1)), ("ab", (3, 5)), ("aBc3b", (2, 7, 2))],
)
@pytest.mark.parametrize("dt", ["s4", "u4"])
def test_tag_offsets_4bit(tag, dims, dt):
    # element offsets are the same as for any other type; size is ceil(n / 2) bytes
    md = cly.MemoryDesc(dims, dt, tag=tag)
    n = md.nelems(padded=True)
    assert md.size == (n + 1) // 2
    got = lib_offsets(md, padded_index_space(md.padded_dims))
    np.testing.assert_array_equal(np.sort(got), np.arange(n))


# offsets of single elements, worked by hand: (tag, dims, idx, padded?, offset)
HAND_OFFSETS = [
    # aBcd16b (2,17,3,3), strides (288,144,48,16)
    ("aBcd16b", (2, 17, 3, 3), (0, 5, 1, 2), False, 5 + 48 + 32),
    ("aBcd16b", (2, 17, 3, 3), (1, 16, 2, 1), False, 288 + 144 + 96 + 16),
    ("aBcd16b", (2, 17, 3, 3), (1, 31, 2, 2), True, 288 + 144 + 15 + 96 + 32),
    # OIhw4i16o4i (17,5,2,1), strides (512,512,256,256); inner [i_hi 4][o 16][i_lo 4]
    ("ABcd4b16a4b", (17, 5, 2, 1), (0, 0, 0, 0), False, 0),
    ("ABcd4b16a4b", (17, 5, 2, 1), (0, 1, 0, 0), False, 1),                  # i_lo=1
    ("ABcd4b16a4b", (17, 5, 2, 1), (1, 0, 0, 0), False, 4),                  # o=1 -> 4
    ("ABcd4b16a4b", (17, 5, 2, 1), (0, 4, 0, 0), False, 64),                 # i_hi=1 -> 64
    ("ABcd4b16a4b", (17, 5, 2, 1), (0, 4, 1, 0), False, 64 + 256),
    ("ABcd4b16a4b", (17, 5, 2, 1), (3, 2, 0, 0), False, 12 + 2),
    ("ABcd4b16a4b", (17, 5, 2, 1), (16, 0, 0, 0), False, 512),               # next O block
    ("ABcd4b16a4b", (17, 5, 2, 1), (16, 15, 1, 0), True, 512 + 256 + 3 * 64 + 3),
    # OIhw8i16o2i (3,18,1,2), strides (1024,512,512,256); inner [i_hi 8][o 16][i_lo 2]
    ("ABcd8b16a2b", (3, 18, 1, 2), (1, 1, 0, 0), False, 2 + 1),
    ("ABcd8b16a2b", (3, 18, 1, 2), (0, 2, 0, 0), False, 32),
    ("ABcd8b16a2b", (3, 18, 1, 2), (2, 15, 0, 0), False, 7 * 32 + 2 * 2 + 1),
    ("ABcd8b16a2b", (3, 18, 1, 2), (0, 17, 0, 1), False, 512 + 1 + 256),
    # gOIhw2i8o4i (2,9,9,1,1), strides (256,128,64,64,64); inner [c_hi 2][b 8][c_lo 4]
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (0, 0, 1, 0, 0), False, 1),
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (0, 1, 0, 0, 0), False, 4),
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (0, 0, 4, 0, 0), False, 32),
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (0, 3, 6, 0, 0), False, 12 + 32 + 2),
    ("aBCde2c8b4c", (2, 9, 9, 1, 1), (1, 8, 8, 0, 0), False, 256 + 128 + 64),
    # aCB16b48c (1,17,50), strides (3072,768,1536); inner [b 16][c 48]
    ("aCB16b48c", (1, 17, 50), (0, 1, 0), False, 48),
    ("aCB16b48c", (1, 17, 50), (0, 0, 1), False, 1),
    ("aCB16b48c", (1, 17, 50), (0, 16, 0), False, 768),
    ("aCB16b48c", (1, 17, 50), (0, 0, 48), False, 1536),
    ("aCB16b48c", (1, 17, 50), (0, 17, 49), True, 768 + 48 + 1536 + 1),  # b=17 is padding
    # gOIhw16i16o (2,3,17,1,2), strides (1024,1024,512,512,256); inner [c 16][b 16]
    ("aBCde16c16b", (2, 3, 17, 1, 2), (0, 1, 0, 0, 0), False, 1),
    ("aBCde16c16b", (2, 3, 17, 1, 2), (0, 0, 1, 0, 0), False, 16),
    ("aBCde16c16b", (2, 3, 17, 1, 2), (1, 2, 16, 0, 1), False, 1024 + 512 + 256 + 2),
    # plain permutations
    ("cdba", (2, 3, 4, 5), (1, 2, 3, 4), False, 1 + 4 + 90 + 24),
    ("decab", (2, 3, 2, 2, 3), (1, 2, 1, 1, 2), False, 3 + 2 + 6 + 36 + 24),
]


@pytest.mark.parametrize("tag,dims,idx,padded,expected", HAND_OFFSETS)
def test_hand_offsets(tag, dims, idx, padded, expected):
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    assert md.offset(idx, padded=padded) == expected


@pytest.mark.parametrize(
    "dt,elsize",
    [("f32", 4), ("f16", 2), ("bf16", 2), ("s32", 4), ("s8", 1), ("u8", 1),
     ("f64", 8), ("f8_e5m2", 1), ("f8_e4m3", 1)],
)
def test_size_per_type(dt, elsize):
    md = cly.MemoryDesc((2, 17, 3, 3), dt, tag="nChw16c")
    assert md.data_type == dt
    assert md.size == 2 * 32 * 3 * 3 * elsize
    md = cly.MemoryDesc((3, 5), dt, tag="ba")
    assert md.size == 15 * elsize


@pytest.mark.parametrize("dt", ["s4", "u4"])
def test_size_4bit(dt):
    assert cly.MemoryDesc((3, 5), dt, tag="ab").size == 8          # 15 nibbles
    assert cly.MemoryDesc((2, 17, 3, 3), dt, tag="aBcd16b").size == 288  # 576 nibbles
    assert cly.MemoryDesc((3, 3), dt, tag="ba").size == 5          # 9 nibbles


# --------------------------------------------------------------------------
# zero-size dims
# --------------------------------------------------------------------------


def test_zero_size_plain():
    md = cly.MemoryDesc((2, 0, 3), "f32", tag="abc")
    assert md.size == 0
    assert md.nelems() == 0 and md.nelems(padded=True) == 0
    assert md.padded_dims == (2, 0, 3)
    assert md.strides == (3, 3, 1)  # b contributes max(1, 0) = 1


def test_zero_size_blocked():
    md = cly.MemoryDesc((2, 0, 3, 3), "f32", tag="nChw16c")
    assert md.size == 0
    assert md.nelems() == 0
    assert md.padded_dims == (2, 0, 3, 3)
    assert md.strides == (144, 144, 48, 16)  # d:16 c:48 B:144 a:144*max(1, 0)
    assert md.inner_blks == (16,) and md.inner_idxs == (1,)


# --------------------------------------------------------------------------
# bad tags
# --------------------------------------------------------------------------

BAD_TAGS = [
    ("abcd", (2, 3, 4)),          # 4 letters for 3 dims
    ("ab", (2, 3, 4)),            # too few letters
    ("abcc", (2, 3, 4, 5)),       # repeated letter
    ("abd", (2, 3, 4)),           # skips c
    ("aBcd", (2, 16, 3, 3)),      # uppercase with no block
    ("ABcd16a", (16, 16, 3, 3)),  # B uppercase, not blocked
    ("abcd16b", (2, 16, 3, 3)),   # blocked dim written lowercase
    ("aBcd0b", (2, 16, 3, 3)),    # block of size 0
    ("aBcd16e", (2, 16, 3, 3)),   # block on a dim that does not exist
    ("aBBcd16b", (2, 16, 3, 3)),  # letter twice (uppercase)
    ("a1b", (2, 3)),              # digit in the middle
    ("ab?", (2, 3)),              # junk character
    ("aB16", (2, 16)),            # block without its letter
    ("nchw", (2, 3, 4)),          # alias for 4 dims, given 3
    ("nChw16c", (2, 16, 3)),      # blocked alias for 4 dims, given 3
    ("ncdhwq", (1, 2, 3, 4, 5, 6)),  # not a tag at all
]


@pytest.mark.parametrize("tag,dims", BAD_TAGS)
def test_bad_tag(tag, dims):
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        cly.MemoryDesc(dims, "f32", tag=tag)
    assert_names(excinfo, tag)
    assert isinstance(excinfo.value, cly.Error)
    assert isinstance(excinfo.value, ValueError)


def test_thirteen_letters_rejected():
    tag = "abcdefghijklm"
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        cly.MemoryDesc((1,) * 13, "f32", tag=tag)
    msg = str(excinfo.value)
    assert "13" in msg or tag in msg


def test_expand_tag_rejects_bad_tags():
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        expand_tag("abcc", 4)
    assert_names(excinfo, "abcc")
    with pytest.raises(cly.InvalidArgumentError) as excinfo:
        expand_tag("nchw", 3)
    assert_names(excinfo, "nchw")


# --------------------------------------------------------------------------
# property-based: random abstract tags against the reference
# --------------------------------------------------------------------------


@st.composite
def blocked_tags(draw):
    nd = draw(st.integers(1, 5))
    order = draw(st.permutations(range(nd)))
    blocked = draw(st.lists(st.sampled_from(range(nd)), min_size=0, max_size=2, unique=True))
    blocks = [(draw(st.sampled_from([2, 3, 4, 8, 16])), d) for d in blocked]
    extra = draw(st.lists(st.tuples(st.sampled_from([2, 4]), st.sampled_from(blocked)), max_size=1)) if blocked else []
    blocks = draw(st.permutations(blocks + extra))
    outer = "".join(chr(97 + d).upper() if d in blocked else chr(97 + d) for d in order)
    tag = outer + "".join(f"{b}{chr(97 + d)}" for b, d in blocks)
    dims = tuple(draw(st.lists(st.integers(0, 7), min_size=nd, max_size=nd)))
    return tag, dims


@settings(max_examples=60, deadline=None)
@given(blocked_tags())
def test_random_tags_against_reference(case):
    tag, dims = case
    padded, strides, blks, idxs = blocking(dims, tag)
    assume(math.prod(padded) <= 1024)
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    assert md.padded_dims == padded
    assert md.strides == strides
    assert md.inner_blks == blks
    assert md.inner_idxs == idxs
    assert md.size == math.prod(padded) * 4
    idx = padded_index_space(padded)
    got = lib_offsets(md, idx)
    want = blocked_offsets(idx.T, Blocking(padded, strides, blks, idxs))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.sort(got), np.arange(math.prod(padded)))
    assert md.matches_tag(tag)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(
    lambda n: st.tuples(st.permutations("abcdef"[:n]), st.lists(st.integers(2, 5), min_size=n, max_size=n))))
def test_random_plain_tags(case):
    letters, dims = case
    tag, dims = "".join(letters), tuple(dims)
    md = cly.MemoryDesc(dims, "f32", tag=tag)
    assert md.strides == blocking(dims, tag).strides
    assert md.tag == tag  # every dim >= 2, so the tag is unique
    by_strides = cly.MemoryDesc(dims, "f32", strides=blocking(dims, tag).strides)
    assert by_strides == md
    assert by_strides.tag == tag
