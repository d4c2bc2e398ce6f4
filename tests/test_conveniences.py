"""The package's conveniences: version, license, typing, data types by NumPy name."""
import importlib.metadata
import inspect
import pathlib
import tomllib
import typing

import ml_dtypes
import numpy as np
import pytest

import clayout as cly
from clayout.errors import describe

ROOT = pathlib.Path(__file__).parents[1]


def test_version_is_the_installed_metadata_version():
    assert cly.__version__ == importlib.metadata.version("clayout")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # One source: pyproject reads the version from the package.
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "clayout.__version__"}


def test_license_file_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert pyproject["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_py_typed_ships_as_package_data():
    assert (pathlib.Path(cly.__file__).parent / "py.typed").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["clayout"]


@pytest.mark.parametrize("given, name", [
    ("f32", "f32"), ("float32", "f32"), (np.float32, "f32"), (np.dtype("float32"), "f32"),
    ("float16", "f16"), (np.dtype("float16"), "f16"), (np.float16, "f16"),
    ("bfloat16", "bf16"), (ml_dtypes.bfloat16, "bf16"), (np.dtype(ml_dtypes.bfloat16), "bf16"),
    ("float64", "f64"), (np.float64, "f64"),
    ("int32", "s32"), (np.int32, "s32"), ("int8", "s8"), (np.int8, "s8"),
    ("uint8", "u8"), (np.uint8, "u8"),
    ("float8_e5m2", "f8_e5m2"), (ml_dtypes.float8_e5m2, "f8_e5m2"),
    ("float8_e4m3fn", "f8_e4m3"), (ml_dtypes.float8_e4m3fn, "f8_e4m3"),
    ("int4", "s4"), (ml_dtypes.int4, "s4"), ("uint4", "u4"), (ml_dtypes.uint4, "u4"),
    ("float4_e2m1fn", "f4_e2m1"), (ml_dtypes.float4_e2m1fn, "f4_e2m1"),
    ("float8_e8m0fnu", "e8m0"), (ml_dtypes.float8_e8m0fnu, "e8m0"),
])
def test_data_types_by_numpy_name_or_dtype(given, name):
    md = cly.MemoryDesc((2, 3), given)
    # The descriptor stores and shows clayout's name, and equals one made by it.
    assert md.data_type == name and f" {name} " in repr(md)
    assert md == cly.MemoryDesc((2, 3), name) and hash(md) == hash(cly.MemoryDesc((2, 3), name))
    assert cly.data_type(given).name == name


@pytest.mark.parametrize("given, name", [("float16", "f16"), (ml_dtypes.bfloat16, "bf16"),
                                         (np.dtype("float32"), "f32")])
def test_scale_data_type_by_numpy_name(given, name):
    assert cly.Scales([1.0, 2.0], mask=1, data_type=given).data_type == name


@pytest.mark.parametrize("given, name", [("int8", "s8"), (np.uint8, "u8"),
                                         (ml_dtypes.uint4, "u4"), ("int32", "s32")])
def test_zero_point_data_type_by_numpy_name(given, name):
    assert cly.ZeroPoints([1, 2], mask=1, data_type=given).data_type == name


def test_a_reorder_by_numpy_names_converts(host_engine):
    values = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    src_md = cly.MemoryDesc((2, 3), np.float32)
    dst_md = cly.MemoryDesc((2, 3), "bfloat16", tag="ba")
    dst = cly.Memory(dst_md, host_engine)
    cly.reorder(cly.Memory.from_numpy(src_md, host_engine, values), dst)
    assert np.array_equal(dst.to_numpy(), values.astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("given", [
    "float", "int", "double", "half", "f8", "f4", "i1", "<f4", "Float32", "float32 ",
    "int64", "uint16", "bool", float, int, bool, complex, np.int64, np.uint16, np.bool_,
    np.complex64, object, np.dtype(">f4"), np.dtype("V4"), np.zeros(2, np.float32), None,
])
def test_unknown_or_ambiguous_data_types_list_what_is_accepted(given):
    with pytest.raises(cly.InvalidArgumentError) as info:
        cly.MemoryDesc((2, 3), given)
    message = str(info.value)
    assert describe(given) in message  # the repr; an array by its shape and dtype
    # The message lists both vocabularies.
    assert "f32" in message and "float32" in message and "bfloat16" in message


def test_python_float_is_called_ambiguous():
    with pytest.raises(cly.InvalidArgumentError, match="ambiguous"):
        cly.MemoryDesc((2,), float)


TYPED_NAMES = ["MemoryDesc", "Memory", "Engine", "Stream", "Attr", "Scales", "ZeroPoints", "Extra",
               "DataType", "data_type", "Reorder", "Shuffle", "reorder", "shuffle",
               "default_engine"]


def public_callables():
    """(label, function) of each public name's own functions, methods and
    property getters, inherited ones included (Scales from its base)."""
    for name in TYPED_NAMES:
        obj = getattr(cly, name)
        if not inspect.isclass(obj):
            yield name, obj
            continue
        seen = set()
        for klass in obj.__mro__:
            if not klass.__module__.startswith("clayout"):
                continue
            for attr, value in vars(klass).items():
                if attr in seen or (attr.startswith("_") and attr != "__init__"):
                    continue
                seen.add(attr)
                if isinstance(value, property):
                    value = value.fget
                elif isinstance(value, (classmethod, staticmethod)):
                    value = value.__func__
                if inspect.isfunction(value):
                    yield f"{name}.{attr}", value


def test_public_callables_have_annotations_that_resolve():
    labels = []
    for label, function in public_callables():
        labels.append(label)
        hints = typing.get_type_hints(function)  # raises for a name that does not resolve
        params = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
        missing = [p for p in params if p not in hints]
        assert not missing, f"{label}: parameters {missing} have no annotation"
        if function.__name__ != "__init__" or "return" in hints:
            assert "return" in hints, f"{label}: no return annotation"
    # The walk reached methods, properties and inherited methods.
    assert {"MemoryDesc.__init__", "MemoryDesc.submemory", "Memory.from_numpy",
            "Engine.queue", "Stream.wait", "Scales.__init__", "ZeroPoints.check",
            "Reorder.execute", "data_type"} <= set(labels)


def test_annotations_name_the_real_types():
    hints = typing.get_type_hints(cly.MemoryDesc.__init__)
    assert hints["data_type"] == cly.dtypes.DataTypeLike
    assert typing.get_type_hints(cly.data_type)["return"] is cly.DataType
    assert typing.get_type_hints(cly.Memory.to_numpy)["return"] is np.ndarray
    assert typing.get_type_hints(cly.Attr.__init__)["sum_beta"] == typing.Optional[float]
