"""clayout: oneDNN's memory formats, reorder and shuffle on any OpenCL device."""

# The one place the version is written: pyproject.toml reads it from here,
# and the tuning tables from the package (so it comes before any import).
__version__ = "0.1.0"

from . import tags
from .attr import Attr, Scales, ZeroPoints
from .dtypes import DataType, data_type
from .engine import Engine, Stream, default_engine
from .errors import Error, ExecutionError, InvalidArgumentError, UnimplementedError
from .extra import Extra
from .gpu.cache import kernel_cache
from .memory import Memory
from .memory_desc import RUNTIME_DIM, MemoryDesc
from .primitives import Reorder, Shuffle, reorder, shuffle

__all__ = ["Attr", "DataType", "data_type", "Reorder", "Shuffle", "shuffle", "Scales", "ZeroPoints", "reorder", "Engine", "Error", "ExecutionError", "Extra", "default_engine", "InvalidArgumentError", "kernel_cache", "Memory", "MemoryDesc", "RUNTIME_DIM",
           "Stream", "UnimplementedError", "tags"]
