"""clayout: oneDNN's memory formats, reorder and shuffle on any OpenCL device."""
from . import tags
from .engine import Engine, Stream
from .errors import Error, InvalidArgumentError, UnimplementedError
from .memory import Memory
from .memory_desc import MemoryDesc

__all__ = ["Engine", "Error", "InvalidArgumentError", "Memory", "MemoryDesc",
           "Stream", "UnimplementedError", "tags"]
