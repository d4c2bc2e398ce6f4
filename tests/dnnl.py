"""oneDNN's C API through ctypes, for the tests and the benchmarks only:
oneDNN's own reorders and shuffles, run on the same bytes as clayout's, as
an oracle (tests/test_onednn.py) and a peer (benchmarks/bench_onednn.py).
clayout never imports this.

oneDNN comes from PyPI into the virtual environment (the `onednn` extra:
``pip install onednn onednn-devel``; the library in ``<venv>/lib``, its
headers in ``<venv>/include/oneapi/dnnl``). Every enum value and argument
index is read from those headers when this loads (`header_values`), none is
written down. ``libdnnl.so.3`` has no RUNPATH: the libraries it needs (TBB,
Intel's math libraries, the SYCL runtime) are loaded first from the same
folder with RTLD_GLOBAL. The CPU engine of this build runs on SYCL, whose
CPU device is Intel's OpenCL CPU runtime: OCL_ICD_VENDORS must name it.

A layout is given as clayout's tests give one: a tag (a oneDNN alias such as
nChw16c or an abstract tag such as bAc16a), plain strides, or a window
(``parent`` dims and ``offsets``) of either. oneDNN's C API describes a
blocked layout only by the tags of its enum, so a tag is relabelled to the
enum's tag of the same shape (dims in the order of their first letter) and
its axes permuted back; blocked outer strides it cannot describe
(`Undescribable`).
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import sys

import numpy as np

import reference as ref

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


@functools.lru_cache(maxsize=None)
def headers(prefix: str = sys.prefix):
    """(values, enums) of oneDNN's headers under ``prefix`` (header_values),
    parsed once per process; None without them."""
    include = os.path.join(prefix, "include", "oneapi", "dnnl")
    if not os.path.isfile(os.path.join(include, HEADERS[-1])):
        return None
    return header_values(os.path.join(include, h) for h in HEADERS)


def format_tags(prefix: str = sys.prefix) -> frozenset:
    """The names of oneDNN's format tags (dnnl_format_tag_t, less ``dnnl_``),
    from its headers alone (the library is not loaded); empty without them."""
    parsed = headers(prefix)
    if parsed is None:
        return frozenset()
    return frozenset(name[5:] for name in parsed[1]["dnnl_format_tag_t"]
                     if name.startswith("dnnl_"))


# -- errors ------------------------------------------------------------------------

class Unavailable(RuntimeError):
    """oneDNN cannot be loaded here: the message says what to install or set."""


class DnnlError(RuntimeError):
    """A oneDNN call that did not return dnnl_success; ``status`` is its name."""

    def __init__(self, call, status):
        super().__init__(f"{call} returned {status}")
        self.call, self.status = call, status


class Undescribable(ValueError):
    """A layout oneDNN's C API has no way to describe (blocked outer strides,
    a tag of blocks its enum lacks)."""


# -- the library -------------------------------------------------------------------

_LIBRARY = None


def onednn(prefix: str = sys.prefix) -> "OneDNN":
    """The process's one OneDNN (loaded on first use). Raises Unavailable."""
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = OneDNN(prefix)
    return _LIBRARY


class _Handle:
    """A oneDNN object, destroyed with ``destroy`` when collected."""

    def __init__(self, dnnl, destroy):
        self.dnnl, self.destroy, self.ptr = dnnl, destroy, ctypes.c_void_p()

    def __del__(self):
        if self.ptr:
            getattr(self.dnnl.lib, self.destroy)(self.ptr)
            self.ptr = ctypes.c_void_p()


class OneDNN:
    """oneDNN's C API as far as reorders and shuffles need it: the library,
    the values from its headers, one CPU engine and one stream."""

    def __init__(self, prefix: str = sys.prefix):
        parsed = headers(prefix)
        if parsed is None:
            include = os.path.join(prefix, "include", "oneapi", "dnnl")
            raise Unavailable(f"oneDNN's headers are not in {include}: pip install onednn-devel "
                              f"(make test installs the onednn extra)")
        self.values, self.enums = parsed
        self.tags = format_tags(prefix)
        self.lib = self._load(os.path.join(prefix, "lib"))
        self._declare()
        self.version = ".".join(str(self.values.get(f"DNNL_VERSION_{part}"))
                                for part in ("MAJOR", "MINOR", "PATCH"))
        self.engine = _Handle(self, "dnnl_engine_destroy")
        try:
            self.call("dnnl_engine_create", ctypes.byref(self.engine.ptr), self.value("dnnl_cpu"), 0)
        except DnnlError as e:
            raise Unavailable(f"{e}: this oneDNN's CPU engine runs on SYCL, whose CPU device is "
                              f"Intel's OpenCL CPU runtime (OCL_ICD_VENDORS must name it)")
        self.stream = _Handle(self, "dnnl_stream_destroy")
        self.call("dnnl_stream_create", ctypes.byref(self.stream.ptr), self.engine.ptr,
                  self.value("dnnl_stream_default_flags"))

    @staticmethod
    def _load(libdir: str):
        """libdnnl.so.3 after the libraries it needs (see DEPENDENCIES)."""
        path = os.path.join(libdir, "libdnnl.so.3")
        if not os.path.isfile(path):
            raise Unavailable(f"no {path}: pip install onednn (make test installs the onednn "
                              f"extra)")
        try:
            for name in DEPENDENCIES:
                ctypes.CDLL(os.path.join(libdir, name), mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(path)
        except OSError as e:
            raise Unavailable(f"oneDNN does not load: {e}") from None

    @property
    def isa(self) -> str:
        """The instruction set oneDNN's CPU kernels use on this machine
        (avx512_core_bf16, avx512_core_amx, ...): which implementation it picks,
        and so which of its defects show, depends on it."""
        self.lib.dnnl_get_effective_cpu_isa.restype = ctypes.c_int
        isa = self.lib.dnnl_get_effective_cpu_isa()
        names = [k for k, v in self.enums["dnnl_cpu_isa_t"].items() if v == isa]
        return names[-1].removeprefix("dnnl_cpu_isa_") if names else hex(isa)

    def value(self, name: str) -> int:
        """The integer the headers give ``name`` (an enumerator or a #define)."""
        value = self.values.get(name)
        if value is None:
            raise KeyError(f"oneDNN's headers give no plain value for {name}")
        return value

    def _declare(self):
        p, i, size, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int64
        pp, dims = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)
        self.Dims = ctypes.c_int64 * self.value("DNNL_MAX_NDIMS")

        class ExecArg(ctypes.Structure):  # dnnl_exec_arg_t
            _fields_ = [("arg", ctypes.c_int), ("memory", ctypes.c_void_p)]

        self.ExecArg = ExecArg
        prototypes = {
            "dnnl_engine_create": (pp, i, size), "dnnl_engine_destroy": (p,),
            "dnnl_stream_create": (pp, p, ctypes.c_uint), "dnnl_stream_wait": (p,),
            "dnnl_stream_destroy": (p,),
            "dnnl_memory_desc_create_with_tag": (pp, i, dims, i, i),
            "dnnl_memory_desc_create_with_strides": (pp, i, dims, i, dims),
            "dnnl_memory_desc_create_submemory": (pp, p, dims, dims),
            "dnnl_memory_desc_permute_axes": (pp, p, ctypes.POINTER(ctypes.c_int)),
            "dnnl_memory_desc_destroy": (p,),
            "dnnl_memory_create": (pp, p, p, p), "dnnl_memory_destroy": (p,),
            "dnnl_memory_map_data": (p, pp), "dnnl_memory_unmap_data": (p, p),
            "dnnl_memory_get_data_handle": (p, pp),
            "dnnl_primitive_attr_create": (pp,), "dnnl_primitive_attr_destroy": (p,),
            "dnnl_primitive_attr_set_scales": (p, i, i, i, dims, i),
            "dnnl_primitive_attr_set_zero_points": (p, i, i, i, dims, i),
            "dnnl_primitive_attr_set_post_ops": (p, p),
            "dnnl_post_ops_create": (pp,), "dnnl_post_ops_destroy": (p,),
            "dnnl_post_ops_append_sum": (p, ctypes.c_float, ctypes.c_int32, i),
            "dnnl_reorder_primitive_desc_create": (pp, p, p, p, p, p),
            "dnnl_shuffle_forward_primitive_desc_create": (pp, p, i, p, p, i, i64, p),
            "dnnl_shuffle_backward_primitive_desc_create": (pp, p, p, p, i, i64, p, p),
            "dnnl_primitive_desc_destroy": (p,),
            "dnnl_primitive_desc_query": (p, i, i, p),
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
            raise DnnlError(name, names[0] if names else status)

    def data_type(self, dt: str) -> int:
        return self.value(f"dnnl_{dt}")

    # -- memory descriptors --------------------------------------------------------

    def memory_desc(self, dims, dt, tag=None, strides=None, parent=None, offsets=None) -> "Desc":
        """A memory descriptor of ``dims`` and type ``dt``: a tag (alias or
        abstract), plain strides (with a plain tag, or none), or a window of
        ``parent`` dims at ``offsets`` of either. Raises Undescribable."""
        full = tuple(parent or dims)
        if strides is not None:
            if tag is not None and ref.parse_tag(ref.abstract_tag(tag))[1]:
                raise Undescribable(f"blocked tag {tag} with outer strides {tuple(strides)}")
            desc = self._with_strides(full, dt, strides)
        else:
            desc = self._with_tag(full, dt, tag or ref.LETTERS[:len(full)])
        if parent is None:
            return desc
        window = Desc(self)
        self.call("dnnl_memory_desc_create_submemory", ctypes.byref(window.ptr), desc.ptr,
                  self.Dims(*dims), self.Dims(*offsets))
        window.parent = desc
        return window

    def from_memory_desc(self, md) -> "Desc":
        """oneDNN's descriptor of a clayout MemoryDesc: its tag where its
        strides are the tag's own, its strides where it has no blocks.
        Raises Undescribable for blocked outer strides and windows (describe
        the parent with this, then take ``memory_desc(..., parent=, offsets=)``)."""
        if md.is_submemory:
            raise Undescribable(f"{md!r} is a window: describe its parent and its offsets")
        dims, dt = tuple(md.dims), md.data_type
        if not md.inner_blks:
            return self._with_strides(dims, dt, tuple(md.strides))
        own = md.tag and ref.blocking(dims, md.tag)
        # (an outer stride over a single step is never used: any value will do)
        if not own or any(a != b for a, b, p, block in zip(
                own.strides, md.strides, md.padded_dims, _block_sizes(md)) if p // block > 1):
            raise Undescribable(f"{md!r}: blocks with outer strides of its own")
        return self._with_tag(dims, dt, md.tag)

    def _with_strides(self, dims, dt, strides):
        desc = Desc(self)
        self.call("dnnl_memory_desc_create_with_strides", ctypes.byref(desc.ptr), len(dims),
                  self.Dims(*dims), self.data_type(dt), self.Dims(*strides))
        return desc

    def _with_tag(self, dims, dt, tag):
        if tag in self.tags:  # an alias or an abstract tag oneDNN names
            desc = Desc(self)
            self.call("dnnl_memory_desc_create_with_tag", ctypes.byref(desc.ptr), len(dims),
                      self.Dims(*dims), self.data_type(dt), self.value(f"dnnl_{tag}"))
            return desc
        abstract = ref.abstract_tag(tag)
        outer, blocks = ref.parse_tag(abstract)
        if not blocks:  # any order of plain dims: its dense strides
            return self._with_strides(dims, dt, ref.blocking(dims, abstract).strides)
        # dims renamed in their outer order (a, b, c...): the enum's tag of that shape
        rename = {d: k for k, d in enumerate(outer)}
        canonical = "".join(ref.LETTERS[k].upper() if any(d == outer[k] for d, _ in blocks)
                            else ref.LETTERS[k] for k in range(len(outer)))
        canonical += "".join(f"{size}{ref.LETTERS[rename[d]]}" for d, size in blocks)
        if canonical not in self.tags:
            raise Undescribable(f"tag {tag} ({canonical} once its dims are renamed in order): "
                                f"oneDNN's format tags have no such blocks")
        inner = self._with_tag(tuple(dims[d] for d in outer), dt, canonical)
        desc = Desc(self)
        permutation = (ctypes.c_int * len(dims))(*outer)
        self.call("dnnl_memory_desc_permute_axes", ctypes.byref(desc.ptr), inner.ptr, permutation)
        return desc

    # -- memories ------------------------------------------------------------------

    def memory(self, desc: "Desc", raw=None, like=None) -> "Memory":
        """A memory of ``desc``: oneDNN's own buffer, filled with the bytes
        ``raw`` when given; or, with ``like``, the buffer of that memory."""
        mem = Memory(self, desc)
        handle = ctypes.c_void_p(self.value("DNNL_MEMORY_ALLOCATE"))
        if like is not None:
            handle = ctypes.c_void_p()
            self.call("dnnl_memory_get_data_handle", like.ptr, ctypes.byref(handle))
            mem.owner = like
        self.call("dnnl_memory_create", ctypes.byref(mem.ptr), desc.ptr, self.engine.ptr, handle)
        if raw is not None:
            mem.write(raw)
        return mem

    def values_memory(self, values, dt: str) -> "Memory":
        """A 1-d memory of the scales or zero points ``values`` stored as dt."""
        array = np.asarray(values)
        if dt in ("f32", "f16", "bf16"):
            stored = ref.stored_scales(np.asarray(array, np.float32), dt) if dt != "f32" else \
                np.asarray(array, np.float32)
            stored = stored.astype(ref.NP[dt])
        else:
            stored = np.asarray(array, ref.NP[dt])
        desc = self.memory_desc((max(stored.size, 1),), dt, "a")
        return self.memory(desc, stored.view(np.uint8).reshape(-1))

    # -- primitives ----------------------------------------------------------------

    def attr(self, scales=(), zero_points=(), sum_beta=None) -> "_Handle":
        """Primitive attributes: ``scales`` and ``zero_points`` as (argument
        name "src"/"dst", mask, groups or None, stored type), a sum post-op."""
        attr = _Handle(self, "dnnl_primitive_attr_destroy")
        self.call("dnnl_primitive_attr_create", ctypes.byref(attr.ptr))
        for setter, entries in (("scales", scales), ("zero_points", zero_points)):
            for arg, mask, groups, dt in entries:
                group_dims = self.Dims(*groups) if groups else None
                self.call(f"dnnl_primitive_attr_set_{setter}", attr.ptr,
                          self.value(f"DNNL_ARG_{arg.upper()}"), mask,
                          len(groups) if groups else 0, group_dims, self.data_type(dt))
        if sum_beta is not None:
            ops = _Handle(self, "dnnl_post_ops_destroy")
            self.call("dnnl_post_ops_create", ctypes.byref(ops.ptr))
            self.call("dnnl_post_ops_append_sum", ops.ptr, float(sum_beta), 0,
                      self.value("dnnl_data_type_undef"))
            self.call("dnnl_primitive_attr_set_post_ops", attr.ptr, ops.ptr)
        return attr

    def reorder(self, src: "Desc", dst: "Desc", attr=None) -> "Primitive":
        """oneDNN's reorder from ``src`` to ``dst`` on the CPU engine.
        Raises DnnlError (status dnnl_unimplemented where no implementation
        takes the problem)."""
        pd = _Handle(self, "dnnl_primitive_desc_destroy")
        self.call("dnnl_reorder_primitive_desc_create", ctypes.byref(pd.ptr), src.ptr,
                  self.engine.ptr, dst.ptr, self.engine.ptr, attr.ptr if attr else None)
        return Primitive(self, pd, ("FROM", "TO"), keep=(src, dst, attr))

    def shuffle(self, src: "Desc", dst: "Desc", axis: int, group: int,
                backward: bool = False) -> "Primitive":
        """oneDNN's shuffle forward (src -> dst) or backward (diff_dst ``src``
        -> diff_src ``dst``), along ``axis`` in groups of ``group``."""
        forward = self.value("dnnl_forward_training")
        pd = _Handle(self, "dnnl_primitive_desc_destroy")
        if not backward:
            self.call("dnnl_shuffle_forward_primitive_desc_create", ctypes.byref(pd.ptr),
                      self.engine.ptr, forward, src.ptr, dst.ptr, axis, group, None)
            return Primitive(self, pd, ("SRC", "DST"), keep=(src, dst))
        hint = _Handle(self, "dnnl_primitive_desc_destroy")  # oneDNN asks for the forward's
        self.call("dnnl_shuffle_forward_primitive_desc_create", ctypes.byref(hint.ptr),
                  self.engine.ptr, forward, dst.ptr, src.ptr, axis, group, None)
        self.call("dnnl_shuffle_backward_primitive_desc_create", ctypes.byref(pd.ptr),
                  self.engine.ptr, dst.ptr, src.ptr, axis, group, hint.ptr, None)
        return Primitive(self, pd, ("DIFF_DST", "DIFF_SRC"), keep=(src, dst, hint))


def _block_sizes(md):
    """Each dim's inner block size (product of its blocks) in a MemoryDesc."""
    sizes = [1] * len(md.dims)
    for size, d in zip(md.inner_blks, md.inner_idxs):
        sizes[d] *= size
    return sizes


class Desc(_Handle):
    """A memory descriptor (a window keeps its ``parent``)."""

    def __init__(self, dnnl):
        super().__init__(dnnl, "dnnl_memory_desc_destroy")
        self.parent = None

    @property
    def size(self) -> int:
        """oneDNN's size in bytes (a window's: its parent's)."""
        return self.dnnl.lib.dnnl_memory_desc_get_size((self.parent or self).ptr)


class Memory(_Handle):
    """A memory on the CPU engine; ``write`` and ``read`` its buffer's bytes."""

    def __init__(self, dnnl, desc):
        super().__init__(dnnl, "dnnl_memory_destroy")
        self.desc, self.owner = desc, None

    def _mapped(self, fn):
        mapped = ctypes.c_void_p()
        self.dnnl.call("dnnl_memory_map_data", self.ptr, ctypes.byref(mapped))
        try:
            return fn(mapped)
        finally:
            self.dnnl.call("dnnl_memory_unmap_data", self.ptr, mapped)

    def write(self, raw):
        raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
        if raw.size > self.desc.size:
            raise ValueError(f"{raw.size} bytes into a memory of {self.desc.size}")
        self._mapped(lambda at: ctypes.memmove(at, raw.ctypes.data, raw.size))

    def read(self) -> np.ndarray:
        out = np.empty(self.desc.size, np.uint8)
        self._mapped(lambda at: ctypes.memmove(out.ctypes.data, at, out.size))
        return out


class Primitive:
    """A oneDNN primitive with its descriptor; ``impl`` is the name of the
    implementation oneDNN picked (as ONEDNN_VERBOSE prints it)."""

    def __init__(self, dnnl, pd, args, keep=()):
        self.dnnl, self.pd, self.args, self.keep = dnnl, pd, args, keep
        impl = ctypes.c_char_p()
        dnnl.call("dnnl_primitive_desc_query", pd.ptr, dnnl.value("dnnl_query_impl_info_str"),
                  0, ctypes.byref(impl))
        self.impl = impl.value.decode()
        self.prim = _Handle(dnnl, "dnnl_primitive_destroy")
        dnnl.call("dnnl_primitive_create", ctypes.byref(self.prim.ptr), pd.ptr)

    def bind(self, src: Memory, dst: Memory, values=()):
        """The execution arguments: src, dst and ``values`` as (argument
        name such as "src", "scales" or "zero_points", its memory)."""
        v = self.dnnl.value
        pairs = [(v(f"DNNL_ARG_{self.args[0]}"), src), (v(f"DNNL_ARG_{self.args[1]}"), dst)]
        for arg, kind, mem in values:
            pairs.append((v(f"DNNL_ARG_ATTR_{kind.upper()}") | v(f"DNNL_ARG_{arg.upper()}"), mem))
        args = (self.dnnl.ExecArg * len(pairs))(*(self.dnnl.ExecArg(a, m.ptr) for a, m in pairs))
        return args, [m for _, m in pairs]

    def execute(self, bound, wait=True):
        """Run once with ``bound`` (from `bind`); wait for it unless asked not to."""
        args, _ = bound
        self.dnnl.call("dnnl_primitive_execute", self.prim.ptr, self.dnnl.stream.ptr,
                       len(args), args)
        if wait:
            self.dnnl.call("dnnl_stream_wait", self.dnnl.stream.ptr)
