"""clayout: oneDNN's memory formats, reorder and shuffle on any OpenCL device.

The public names load on first use (PEP 562): ``import clayout`` costs a
few milliseconds, and a script that only describes tensors never imports
pyopencl, Mako or the planner; the first engine, memory or primitive
imports what running needs, Mako only when a kernel must compile.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# The one place the version is written: pyproject.toml reads it from here,
# and the tuning tables from the package (so it comes before any import).
__version__ = "0.1.0"

#: Each public name and the module that defines it.
_WHERE = {
    "Attr": "attr", "Scales": "attr", "ZeroPoints": "attr",
    "DataType": "dtypes", "data_type": "dtypes",
    "Engine": "engine", "Stream": "engine", "default_engine": "engine",
    "HostEvent": "backends.host",
    "Error": "errors", "ExecutionError": "errors", "InvalidArgumentError": "errors",
    "UnimplementedError": "errors",
    "Extra": "extra",
    "kernel_cache": "gpu.cache",
    "Memory": "memory",
    "RUNTIME_DIM": "memory_desc", "MemoryDesc": "memory_desc",
    "Reorder": "primitives", "Shuffle": "primitives", "reorder": "primitives",
    "shuffle": "primitives",
    "build": "ahead",
    "Quantize": "quantize",
}

__all__ = ["Attr", "DataType", "data_type", "Reorder", "Shuffle", "shuffle", "Scales",
           "ZeroPoints", "reorder", "Engine", "Error", "ExecutionError", "Extra",
           "default_engine", "InvalidArgumentError", "kernel_cache", "Memory", "MemoryDesc",
           "RUNTIME_DIM", "Stream", "UnimplementedError", "build", "tags", "Quantize",
           "HostEvent"]


#: The modules any engine, memory or primitive needs (all but Mako and the
#: renderer, which only a kernel that must compile needs), imported
#: together on first use of any of these names: a process pays for them
#: where it sets up its device, not inside its first result.
_RUNNING = ("engine", "memory", "primitives", "implementations", "gpu.build",
            "gpu.binaries", "tiers")
_RUNNING_NAMES = {"Engine", "Stream", "default_engine", "Memory", "Reorder", "Shuffle",
                  "reorder", "shuffle", "build", "Quantize"}


def __getattr__(name: str):
    if name in _RUNNING_NAMES:
        for module in _RUNNING:
            importlib.import_module(f".{module}", __name__)
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    elif name == "tags":
        value = importlib.import_module(".tags", __name__)
    else:
        raise AttributeError(f"module 'clayout' has no attribute {name!r}")
    globals()[name] = value  # found directly from now on
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from . import tags
    from .ahead import build
    from .attr import Attr, Scales, ZeroPoints
    from .dtypes import DataType, data_type
    from .backends.host import HostEvent
    from .engine import Engine, Stream, default_engine
    from .errors import Error, ExecutionError, InvalidArgumentError, UnimplementedError
    from .extra import Extra
    from .gpu.cache import kernel_cache
    from .memory import Memory
    from .memory_desc import RUNTIME_DIM, MemoryDesc
    from .primitives import Reorder, Shuffle, reorder, shuffle
    from .quantize import Quantize
