"""oneDNN's reorder through its C API (ctypes): the model-preparation
workload of bench_startup.py, every ResNet-50 convolution weight from oihw
f32 into OIhw16i16o on oneDNN's CPU engine, each result read back to NumPy.

oneDNN comes from PyPI into the virtual environment (``pip install onednn
onednn-devel``: the library in ``<venv>/lib``, its headers in
``<venv>/include/oneapi/dnnl``). Every enum value and argument index used here
is read from those headers when this runs (``header_values``), none is
written down. ``libdnnl.so.3`` has no RUNPATH: the libraries it needs (TBB,
Intel's math libraries, the SYCL runtime) are loaded first from the same
folder with RTLD_GLOBAL, so no LD_LIBRARY_PATH is needed. The CPU engine of
this build runs on SYCL, whose CPU device is Intel's OpenCL CPU runtime:
OCL_ICD_VENDORS must name it (bench_startup.py sets it).

Run alone, it prints one JSON line (the times in ms; ``process_ms`` from the
launch time bench_startup.py puts in CLAYOUT_BENCH_LAUNCH, when set) after
checking oneDNN's bytes against NumPy's transform for two weights (one with
padding): a wrong wrapper fails loudly.
Usage: OCL_ICD_VENDORS=.venv/etc/OpenCL/clayout/intel python benchmarks/onednn_prep.py
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import time

from bench_startup import RESNET50_WEIGHTS, oihw16i16o_numpy, random_weights, since_launch_ms

#: The libraries libdnnl.so.3 names (NEEDED) and finds only on the loader's
#: path, loaded first in this order (each may need the ones before it).
DEPENDENCIES = ("libintlc.so.5", "libimf.so", "libsvml.so", "libtbb.so.12", "libsycl.so.9")
HEADERS = ("dnnl_version.h", "dnnl_common_types.h", "dnnl_types.h")


# -- the headers -------------------------------------------------------------------

def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


_CAST = re.compile(r"\(\s*(?:void\s*\*|size_t|int|unsigned)\s*\)")


def _value(expr: str, known: dict):
    """The integer a C constant expression of the headers' simple kinds
    stands for: a literal (decimal or hex, with U/L suffixes), a name defined
    before, either in parentheses or behind casts to size_t or a pointer
    (taken as size_t). None when it is none of these."""
    expr = expr.strip()
    as_size_t = "size_t" in expr or "*" in expr
    expr = _CAST.sub("", expr).replace(" ", "")
    while expr.startswith("(") and expr.endswith(")"):
        expr = expr[1:-1]
    literal = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", expr)
    if literal:
        value = int(literal.group(2), 0) * (-1 if literal.group(1) else 1)
    elif expr in known and known[expr] is not None:
        value = known[expr]
    else:
        return None
    return value % (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) if as_size_t else value


def header_values(paths) -> tuple[dict, dict]:
    """Parse the enums and #defines of the headers ``paths``, in order:
    (every name -> its integer, or None where the expression is not a simple
    one; each enum's name -> its own {name: value}). An enumerator without
    ``=`` is the one before plus one, as in C."""
    values, enums = {}, {}
    pattern = re.compile(r"typedef\s+enum\s*\w*\s*\{(?P<body>.*?)\}\s*(?P<name>\w+)\s*;"
                         r"|^[ \t]*#[ \t]*define[ \t]+(?P<define>\w+)[ \t]+(?P<expr>[^\n]+)$",
                         re.S | re.M)
    for path in paths:
        with open(path) as header:
            text = _strip_comments(header.read())
        for match in pattern.finditer(text):
            if match.group("define"):
                values[match.group("define")] = _value(match.group("expr"), values)
                continue
            members, following = {}, 0
            for item in filter(None, (part.strip() for part in match.group("body").split(","))):
                name, _, expr = (piece.strip() for piece in item.partition("="))
                value = _value(expr, values) if expr else following
                members[name] = values[name] = value
                following = None if value is None else value + 1
            enums[match.group("name")] = members
    return values, enums


# -- the library -------------------------------------------------------------------

class DnnlError(RuntimeError):
    """A oneDNN call that did not return dnnl_success."""


class OneDNN:
    """oneDNN's C API as far as a reorder needs it: the library, the values
    from its headers, one CPU engine and one stream."""

    def __init__(self, prefix: str = sys.prefix):
        include = os.path.join(prefix, "include", "oneapi", "dnnl")
        if not os.path.isfile(os.path.join(include, HEADERS[-1])):
            raise SystemExit(f"oneDNN's headers are not in {include}: "
                             f"pip install onednn-devel")
        self.values, self.enums = header_values(os.path.join(include, h) for h in HEADERS)
        self.lib = self._load(os.path.join(prefix, "lib"))
        self._declare()
        self.engine, self.stream = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            self.call("dnnl_engine_create", ctypes.byref(self.engine), self.value("dnnl_cpu"), 0)
        except DnnlError as e:
            raise SystemExit(f"{e}: this oneDNN's CPU engine runs on SYCL, whose CPU device "
                             f"is Intel's OpenCL CPU runtime (OCL_ICD_VENDORS must name it)")
        self.call("dnnl_stream_create", ctypes.byref(self.stream), self.engine,
                  self.value("dnnl_stream_default_flags"))

    @staticmethod
    def _load(libdir: str):
        """libdnnl.so.3 after the libraries it needs (see DEPENDENCIES)."""
        path = os.path.join(libdir, "libdnnl.so.3")
        if not os.path.isfile(path):
            raise SystemExit(f"no {path}: pip install onednn")
        for name in DEPENDENCIES:
            ctypes.CDLL(os.path.join(libdir, name), mode=ctypes.RTLD_GLOBAL)
        return ctypes.CDLL(path)

    def value(self, name: str) -> int:
        """The integer the headers give ``name`` (an enumerator or a #define)."""
        value = self.values.get(name)
        if value is None:
            raise SystemExit(f"oneDNN's headers give no plain value for {name}")
        return value

    def _declare(self):
        p, i, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        pp = ctypes.POINTER(ctypes.c_void_p)
        self.Dims = ctypes.c_int64 * self.value("DNNL_MAX_NDIMS")

        class ExecArg(ctypes.Structure):  # dnnl_exec_arg_t
            _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]

        self.ExecArg = ExecArg
        prototypes = {
            "dnnl_engine_create": (pp, i, size), "dnnl_engine_destroy": (p,),
            "dnnl_stream_create": (pp, p, ctypes.c_uint), "dnnl_stream_wait": (p,),
            "dnnl_stream_destroy": (p,),
            "dnnl_memory_desc_create_with_tag": (pp, i, ctypes.POINTER(ctypes.c_int64), i, i),
            "dnnl_memory_desc_destroy": (p,),
            "dnnl_memory_create": (pp, p, p, p), "dnnl_memory_destroy": (p,),
            "dnnl_memory_map_data": (p, pp), "dnnl_memory_unmap_data": (p, p),
            "dnnl_reorder_primitive_desc_create": (pp, p, p, p, p, p),
            "dnnl_primitive_desc_destroy": (p,),
            "dnnl_primitive_create": (pp, p), "dnnl_primitive_destroy": (p,),
            "dnnl_primitive_execute": (p, p, i, ctypes.POINTER(ExecArg)),
        }
        for name, argtypes in prototypes.items():
            function = getattr(self.lib, name)
            function.argtypes, function.restype = argtypes, ctypes.c_int
        self.lib.dnnl_memory_desc_get_size.argtypes = (p,)
        self.lib.dnnl_memory_desc_get_size.restype = size

    def call(self, name: str, *args):
        """Call ``name``; raise DnnlError with the status's name unless it succeeded."""
        status = getattr(self.lib, name)(*args)
        if status != self.value("dnnl_success"):
            names = [k for k, v in self.enums["dnnl_status_t"].items() if v == status]
            raise DnnlError(f"{name} returned {names[0] if names else status}")

    def memory_desc(self, dims, data_type: str, tag: str) -> ctypes.c_void_p:
        md = ctypes.c_void_p()
        self.call("dnnl_memory_desc_create_with_tag", ctypes.byref(md), len(dims),
                  self.Dims(*dims), self.value(f"dnnl_{data_type}"), self.value(f"dnnl_{tag}"))
        return md

    def memory(self, md) -> ctypes.c_void_p:
        """A memory on the engine whose buffer oneDNN allocates."""
        mem = ctypes.c_void_p()
        self.call("dnnl_memory_create", ctypes.byref(mem), md, self.engine,
                  ctypes.c_void_p(self.value("DNNL_MEMORY_ALLOCATE")))
        return mem

    def copy(self, mem, array, into_memory: bool):
        """Copy the bytes of the contiguous NumPy ``array`` into the memory,
        or the memory's bytes into it, through a mapping."""
        mapped = ctypes.c_void_p()
        self.call("dnnl_memory_map_data", mem, ctypes.byref(mapped))
        try:
            if into_memory:
                ctypes.memmove(mapped, array.ctypes.data, array.nbytes)
            else:
                ctypes.memmove(array.ctypes.data, mapped, array.nbytes)
        finally:
            self.call("dnnl_memory_unmap_data", mem, mapped)

    def reorder(self, weight, tag_from: str = "oihw", tag_to: str = "OIhw16i16o"):
        """``weight`` (f32, logical order, ``tag_from``'s bytes) reordered into
        ``tag_to`` on the CPU engine: a new memory, primitive descriptor and
        primitive, executed, waited for and read back. Returns the destination's
        bytes as a flat float32 array (padding included)."""
        import numpy as np

        dims = weight.shape
        src_md = self.memory_desc(dims, "f32", tag_from)
        dst_md = self.memory_desc(dims, "f32", tag_to)
        src, dst = self.memory(src_md), self.memory(dst_md)
        pd, prim = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            self.copy(src, np.ascontiguousarray(weight, dtype=np.float32), into_memory=True)
            self.call("dnnl_reorder_primitive_desc_create", ctypes.byref(pd), src_md,
                      self.engine, dst_md, self.engine, None)
            self.call("dnnl_primitive_create", ctypes.byref(prim), pd)
            args = (self.ExecArg * 2)(self.ExecArg(self.value("DNNL_ARG_FROM"), src),
                                      self.ExecArg(self.value("DNNL_ARG_TO"), dst))
            self.call("dnnl_primitive_execute", prim, self.stream, 2, args)
            self.call("dnnl_stream_wait", self.stream)
            out = np.empty(self.lib.dnnl_memory_desc_get_size(dst_md) // 4, np.float32)
            self.copy(dst, out, into_memory=False)
            return out
        finally:
            for name, handle in (("dnnl_primitive_destroy", prim),
                                 ("dnnl_primitive_desc_destroy", pd),
                                 ("dnnl_memory_destroy", src), ("dnnl_memory_destroy", dst),
                                 ("dnnl_memory_desc_destroy", src_md),
                                 ("dnnl_memory_desc_destroy", dst_md)):
                if handle:
                    self.call(name, handle)


# -- the workload ------------------------------------------------------------------

def prepare_resnet50() -> dict:
    """Every ResNet-50 conv weight (random, the values every child of
    bench_startup.py makes) into OIhw16i16o through oneDNN. Returns the times
    in ms: loading oneDNN and its headers with the engine and stream
    ("setup_ms"), the 53 reorders with their transfers ("transform_ms",
    making the random data left out), and from the launch ("process_ms",
    None when not launched by bench_startup.py); checks two results against
    NumPy after the last time is taken."""
    start = time.perf_counter()
    import numpy as np

    dnnl = OneDNN()
    setup = time.perf_counter() - start
    transform, kept = 0.0, {}
    for name, weight in random_weights():
        begin = time.perf_counter()
        out = dnnl.reorder(weight)
        transform += time.perf_counter() - begin
        if name in CHECKED:
            kept[name] = (weight, out)
    process_ms = since_launch_ms()
    for name, (weight, out) in kept.items():
        expected = oihw16i16o_numpy(weight).reshape(-1)
        assert out.tobytes() == expected.tobytes(), \
            f"oneDNN's OIhw16i16o bytes differ from NumPy's for {name} {weight.shape}"
    version = ".".join(str(dnnl.values.get(f"DNNL_VERSION_{part}"))
                       for part in ("MAJOR", "MINOR", "PATCH"))
    return {"setup_ms": setup * 1e3, "transform_ms": transform * 1e3, "process_ms": process_ms,
            "weights": len(RESNET50_WEIGHTS), "checked": sorted(kept), "onednn": version}


#: The weights checked against NumPy: conv1 (I=3, padded to 16) and the last
#: downsample (no padding).
CHECKED = ("conv1", "layer4.0.downsample.0")


if __name__ == "__main__":
    print(json.dumps(prepare_resnet50()))
