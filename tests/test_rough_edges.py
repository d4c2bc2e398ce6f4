"""The rough edges of issue 37 (item 4), one group of tests each:

1. a format tag with strides that order the dims otherwise raises (naming the
   tag's strides, the given ones and the rule); strides that keep the tag's
   order (gaps) stay valid;
2. a message never quotes a whole array: arrays are described by type, shape
   and dtype, any other repr is cut short (clayout.errors.describe);
3. the hint for an array of a lossy dtype names the NumPy type to convert to
   (np.float32, ml_dtypes.bfloat16), with the right article;
4. tag errors use the letters the user wrote and suggest the corrected tag;
5. zero points are plural in Attr as at execute; the singular spelling still
   works but warns, and giving both spellings is an error.
"""
import warnings

import numpy as np
import pytest

import clayout as cly
from clayout.errors import MAX_SHOWN, describe

R = cly.RUNTIME_DIM


def _message(call) -> str:
    with pytest.raises(cly.InvalidArgumentError) as info:
        call()
    return str(info.value)


# -- 1. tag plus strides ------------------------------------------------------

def test_strides_that_reorder_a_tag_raise():
    text = _message(lambda: cly.MemoryDesc((2, 16), "f32", tag="ab", strides=(1, 2)))
    assert "'ab'" in text and "(1, 2)" in text and "(16, 1)" in text, text
    assert "order" in text and "'ba'" in text, text


def test_blocked_tag_with_strides_in_another_order_raises():
    dims = (2, 16, 3, 3)   # nChw8c has outer steps 2, 2, 3, 3; these strides are channels-last
    text = _message(lambda: cly.MemoryDesc(dims, "f32", tag="nChw8c", strides=(144, 8, 48, 16)))
    assert "'nChw8c'" in text and "(144, 8, 48, 16)" in text and "(144, 72, 24, 8)" in text, text


def test_strides_that_keep_the_tag_order_may_add_gaps():
    md = cly.MemoryDesc((2, 16), "f32", tag="ab", strides=(20, 1))
    assert md.strides == (20, 1) and md.tag is None   # not dense: a gap after each row
    blocked = cly.MemoryDesc((2, 16, 3, 3), "f32", tag="nChw8c", strides=(200, 80, 24, 8))
    assert blocked.inner_blks == (8,) and blocked.strides == (200, 80, 24, 8)
    # A dim of one step may have any stride; runtime strides are not compared.
    assert cly.MemoryDesc((1, 16), "f32", tag="ab", strides=(1, 1)).strides == (1, 1)
    cly.MemoryDesc((R, 20, R, R), "f32", tag="nChw16c", strides=(R, R, R, 16))


def test_a_runtime_pattern_takes_strides_of_any_order():
    pattern = cly.MemoryDesc((R, R), "f32", strides=(R, R))
    md = pattern.with_dims((2, 16), strides=(1, 2))
    assert md.strides == (1, 2) and md.tag == "ba"
    blocked = cly.MemoryDesc((R, 16, R, R), "f32", tag="aBcd8b", strides=(R, R, R, R))
    md = blocked.with_dims((2, 16, 3, 3), strides=(144, 8, 48, 16))
    assert md.strides == (144, 8, 48, 16) and md.inner_blks == (8,)


# -- 2. short descriptions of user values -------------------------------------

def test_describe_gives_arrays_by_shape_and_dtype_and_cuts_long_reprs():
    assert describe(np.zeros((64, 64))) == "numpy.ndarray of shape (64, 64), float64"
    assert describe(np.array([[2, 3]])) == "numpy.ndarray [[2, 3]] of shape (1, 2), int64"
    assert describe(np.float32(2)) == repr(np.float32(2))
    long = describe(list(range(1000)))
    assert len(long) == MAX_SHOWN and long.startswith("[0, 1, 2") and long.endswith("...")
    assert describe("nchw") == "'nchw'"


@pytest.fixture
def pair(host_engine):
    src_md = cly.MemoryDesc((64, 64), "f32", tag="ab")
    dst_md = cly.MemoryDesc((64, 64), "f32", tag="ba")
    return src_md, dst_md, cly.Memory(dst_md, host_engine), cly.Memory(src_md, host_engine)


@pytest.mark.parametrize("call", [
    lambda p, e: cly.Reorder(p[0], p[1], engine=e).execute(cly.Stream(e), np.zeros((64, 64)), p[2]),
    lambda p, e: cly.Reorder(p[0], p[1], engine=e).execute(cly.Stream(e), p[3], np.zeros((64, 64))),
    lambda p, e: cly.Reorder(np.zeros((64, 64)), p[1], engine=e),
    lambda p, e: cly.Reorder(p[0], p[1], engine=e, attr=np.zeros((64, 64))),
    lambda p, e: cly.Shuffle(np.zeros((64, 64)), axis=1, group_size=2, engine=e),
    lambda p, e: cly.Shuffle(p[0], axis=np.zeros((64, 64)), group_size=2, engine=e),
    lambda p, e: cly.Scales(np.zeros((64, 64))),
    lambda p, e: cly.ZeroPoints(np.zeros((64, 64)), mask=np.zeros((64, 64))),
    lambda p, e: cly.MemoryDesc(np.zeros((64, 64)), "f32"),
    lambda p, e: cly.MemoryDesc((64, 64), np.zeros((64, 64))),
    lambda p, e: cly.MemoryDesc((64, 64), "f32", tag=np.zeros((64, 64))),
    lambda p, e: p[0].offset(np.zeros((64, 64), np.float64)),
    lambda p, e: cly.Memory(p[0], e, buffer=np.zeros((64, 64))),
    lambda p, e: cly.Memory(p[0], e, raw=np.zeros((64, 128))[:, ::2]),
    lambda p, e: cly.Stream(np.zeros((64, 64))),
    lambda p, e: cly.Reorder(p[0], p[1], engine=e).execute(np.zeros((64, 64)), p[3], p[2]),
    lambda p, e: cly.Reorder(p[0], p[1], engine=e).execute(cly.Stream(e), p[3], p[2],
                                                          wait_for=np.zeros((64, 64))),
    lambda p, e: cly.shuffle(np.zeros((64, 64)), p[2], 1, 2),
], ids=["execute src", "execute dst", "Reorder md", "Reorder attr", "Shuffle md",
        "Shuffle axis", "Scales values", "ZeroPoints mask", "dims", "data type", "tag",
        "offset", "buffer", "raw", "engine", "stream", "wait_for", "shuffle helper"])
def test_an_array_in_a_message_is_described_not_printed(pair, host_engine, call):
    with pytest.raises(cly.Error) as info:
        call(pair, host_engine)
    text = str(info.value)
    assert len(text) < 400 and "(64, 64)" in text and "float64" in text, text
    assert "0., 0." not in text, text


def test_a_long_value_in_a_message_is_cut():
    text = _message(lambda: cly.MemoryDesc((2, 3), "f32", extra=list(range(10_000))))
    assert len(text) < MAX_SHOWN + 100 and "..." in text, text


# -- 3. the dtype hint --------------------------------------------------------

@pytest.mark.parametrize("data_type, array_dtype, convert, reorder", [
    ("f32", np.int32, "array.astype(np.float32)", "reorder from an int32 memory"),
    ("s8", np.uint8, "array.astype(np.int8)", "reorder from a uint8 memory"),
    ("bf16", np.float32, "array.astype(ml_dtypes.bfloat16)", "reorder from a float32 memory"),
    ("s8", np.int64, "array.astype(np.int8)", None),   # clayout has no int64 memory
])
def test_the_dtype_hint_names_the_numpy_type(host_engine, data_type, array_dtype, convert,
                                             reorder):
    md = cly.MemoryDesc((2, 3), data_type)
    text = _message(lambda: cly.Memory.from_numpy(md, host_engine, np.zeros((2, 3), array_dtype)))
    assert convert in text and "DATA_TYPES" not in text, text
    assert (reorder in text) if reorder else ("reorder" not in text), text


# -- 4. tag errors ------------------------------------------------------------

def test_a_blocked_dim_in_lowercase_gets_the_corrected_tag():
    text = _message(lambda: cly.MemoryDesc((2, 16, 4, 4), "f32", tag="nchw8c"))
    assert "dim 'c'" in text and "did you mean 'nChw8c'?" in text, text
    text = _message(lambda: cly.MemoryDesc((2, 16, 4, 4), "f32", tag="abcd8b"))
    assert "dim 'b'" in text and "did you mean 'aBcd8b'?" in text, text


def test_tag_errors_use_the_letters_written():
    text = _message(lambda: cly.MemoryDesc((2, 16, 4, 4), "f32", tag="NCHW"))
    assert "dim 'N'" in text and "'A'" not in text and "did you mean 'nchw'?" in text, text
    text = _message(lambda: cly.MemoryDesc((16, 16, 3, 3), "f32", tag="OIhw16I"))
    assert "16I" in text and "16B" not in text, text


# -- 5. zero points, plural ---------------------------------------------------

def test_zero_points_are_plural_in_attr():
    attr = cly.Attr(src_zero_points=3, dst_zero_points=cly.ZeroPoints([1, 2], mask=0b10))
    assert attr.src_zero_points.values.tolist() == [3]
    assert attr.dst_zero_points.mask == 0b10
    assert "src_zero_points=" in repr(attr) and "src_zero_point=" not in repr(attr)
    assert cly.Attr(None, None, 3).src_zero_points.values.tolist() == [3]   # positional order kept


@pytest.mark.parametrize("side", ["src", "dst"])
def test_the_singular_spelling_warns_and_still_works(side):
    with pytest.warns(DeprecationWarning, match=f"{side}_zero_points"):
        attr = cly.Attr(**{f"{side}_zero_point": 5})
    assert getattr(attr, f"{side}_zero_points").values.tolist() == [5]
    with pytest.warns(DeprecationWarning, match=f"{side}_zero_points"):
        assert getattr(attr, f"{side}_zero_point").values.tolist() == [5]


def test_both_spellings_are_an_invalid_argument():
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # refused before any warning
        text = _message(lambda: cly.Attr(src_zero_points=1, src_zero_point=1))
    assert "src_zero_points" in text and "src_zero_point=" in text, text


def test_the_singular_spelling_quantizes_alike(host_engine):
    src_md, dst_md = cly.MemoryDesc((2, 3), "f32"), cly.MemoryDesc((2, 3), "u8", tag="ba")
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    src = cly.Memory.from_numpy(src_md, host_engine, values)
    with pytest.warns(DeprecationWarning):
        old = cly.Attr(dst_zero_point=7)
    results = []
    for attr in (cly.Attr(dst_zero_points=7), old):
        dst = cly.Memory(dst_md, host_engine)
        cly.reorder(src, dst, attr=attr)
        results.append(dst.to_numpy())
    assert (results[0] == values + 7).all() and (results[1] == results[0]).all()
