"""Compile clayout's generated OpenCL C into SPIR-V.

Level Zero (and the SYCL queues built on it) loads kernels as SPIR-V
modules, not OpenCL C source. The kernels are the same OpenCL C that
pyopencl builds: clang's SPIR target compiles them to LLVM bitcode and
llvm-spirv translates that to SPIR-V, so no runtime's own compiler is needed
to produce them. Plain Python: no OpenCL or Level Zero import.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading

from ..errors import UnimplementedError

#: The LLVM release whose clang and llvm-spirv are looked for first (Debian 12's).
PREFERRED_MAJOR = 15
#: Seconds one tool may run on one kernel before the build counts as failed.
TIMEOUT_S = 120
#: The OpenCL C standard the templates are written for (no generic address
#: space, no 2.0 built-ins): what every OpenCL and Level Zero device takes.
CL_STD = "CL1.2"
#: The newest SPIR-V version the modules may declare.
SPIRV_VERSION = "1.2"

_INSTALL = (f"apt-get install clang-{PREFERRED_MAJOR} llvm-spirv-{PREFERRED_MAJOR}, or set "
            f"CLAYOUT_CLANG and CLAYOUT_LLVM_SPIRV to a clang and an llvm-spirv of one "
            f"LLVM release")


def _major(tool: str) -> int | None:
    """The LLVM major version ``tool --version`` names (None if it says none)."""
    try:
        text = subprocess.run([tool, "--version"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"version (\d+)\.", text)
    return int(found.group(1)) if found else None


def _pick(chosen: str | None, names: list[str], path: str | None) -> str | None:
    """The path of the tool ``chosen`` if given, else of the first of ``names`` on ``path``."""
    if chosen:
        return shutil.which(chosen, path=path)
    return next((found for found in (shutil.which(n, path=path) for n in names) if found), None)


def _looked_for(variable: str, chosen: str | None, name: str) -> str:
    if chosen:
        return f"{name} ({variable}={chosen} is not found)"
    return f"{name} ({name}-{PREFERRED_MAJOR} or {name} on PATH)"


@functools.lru_cache(maxsize=None)
def _find(clang_env: str | None, spirv_env: str | None, path: str | None) -> tuple[str, str]:
    """(clang, llvm-spirv) paths, from CLAYOUT_CLANG, CLAYOUT_LLVM_SPIRV and
    PATH as given (looked up once per environment). Raises UnimplementedError."""
    spirv = _pick(spirv_env, [f"llvm-spirv-{PREFERRED_MAJOR}", "llvm-spirv"], path)
    # llvm-spirv reads the bitcode of its own LLVM release only: a clang of
    # that release first.
    spirv_major = _major(spirv) if spirv else None
    names = [f"clang-{spirv_major}"] if spirv_major else []
    clang = _pick(clang_env, names + [f"clang-{PREFERRED_MAJOR}", "clang"], path)
    missing = [_looked_for(variable, chosen, name) for variable, chosen, name, found in
               (("CLAYOUT_CLANG", clang_env, "clang", clang),
                ("CLAYOUT_LLVM_SPIRV", spirv_env, "llvm-spirv", spirv)) if not found]
    if missing:
        raise UnimplementedError(f"SPIR-V kernels need {' and '.join(missing)}: {_INSTALL}")
    clang_major = _major(clang)
    if spirv_major and clang_major and spirv_major != clang_major:
        raise UnimplementedError(
            f"SPIR-V kernels need a clang and an llvm-spirv of one LLVM release: {clang} is "
            f"{clang_major}, {spirv} is {spirv_major} ({_INSTALL})")
    return clang, spirv


def _tools() -> tuple[str, str]:
    env = os.environ
    return _find(env.get("CLAYOUT_CLANG") or None, env.get("CLAYOUT_LLVM_SPIRV") or None,
                 env.get("PATH"))


def spirv_tools() -> tuple[str, str] | None:
    """The paths of (clang, llvm-spirv) that compile_spirv runs, or None
    when either is missing or their LLVM releases differ."""
    try:
        return _tools()
    except UnimplementedError:
        return None


def clang_command(clang: str, source_path: str, output_path: str,
                  options=()) -> list[str]:
    """The clang command line that compiles ``source_path`` (OpenCL C) to
    SPIR LLVM bitcode at ``output_path``, ``options`` added."""
    # -O2 without LLVM's passes: code generated as for an optimized build
    # (no optnone or noinline, which llvm-spirv would turn into DontInline
    # on every helper), left for the runtime that loads the module to
    # optimize. LLVM 15's passes write what llvm-spirv 15 cannot translate:
    # freeze (InstCombine, DivRemPairs: most kernels divide and take the
    # remainder of one index) and vector-reduce intrinsics (the vectorizers).
    return [clang, "-target", "spir64", "-x", "cl", f"-cl-std={CL_STD}",
            "-Xclang", "-finclude-default-header", "-O2", "-Xclang", "-disable-llvm-passes",
            "-emit-llvm", "-c", *options, source_path, "-o", output_path]


def llvm_spirv_command(llvm_spirv: str, bitcode_path: str, output_path: str) -> list[str]:
    """The llvm-spirv command line that translates ``bitcode_path`` to SPIR-V."""
    # SPIR-V 1.2 at most: what every OpenCL 2.1+ and Level Zero driver takes
    # (llvm-spirv would mark modules 1.4, which older drivers refuse).
    return [llvm_spirv, f"--spirv-max-version={SPIRV_VERSION}", bitcode_path,
            "-o", output_path]


def _run(command: list[str], source: str) -> None:
    """Run one step; raises RuntimeError with its log when it fails."""
    tool = os.path.basename(command[0])
    first_line = source.split("\n", 1)[0]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{tool}: no result in {TIMEOUT_S} s for the kernel "
                           f"{first_line!r}") from None
    except OSError as exc:  # removed since it was found
        raise UnimplementedError(f"SPIR-V kernels need {tool} ({exc}): {_INSTALL}") from None
    if done.returncode != 0:
        raise RuntimeError(f"{tool} failed (exit {done.returncode}) on the kernel "
                           f"{first_line!r}:\n{done.stderr.strip()}\n"
                           f"command: {' '.join(command)}")


def _compile(source: str, options: list[str]) -> bytes:
    clang, spirv = _tools()
    with tempfile.TemporaryDirectory(prefix="clayout-spirv-") as folder:
        cl, bc, spv = (os.path.join(folder, f"kernel.{ext}") for ext in ("cl", "bc", "spv"))
        with open(cl, "w", encoding="utf-8") as f:
            f.write(source)
        _run(clang_command(clang, cl, bc, options), source)
        _run(llvm_spirv_command(spirv, bc, spv), source)
        with open(spv, "rb") as f:
            return f.read()


_built: dict[str, bytes] = {}
_building: dict[str, threading.Lock] = {}  # one lock per key: other kernels build meanwhile
_lock = threading.Lock()


def compile_spirv(source, options=(), key=None) -> bytes:
    """The SPIR-V module (bytes) of the OpenCL C ``source`` (a str, or a
    function that renders it), compiled with clang options ``options`` added
    (e.g. -cl-fp32-correctly-rounded-divide-sqrt). Built once per process
    for each (source, options), and kept across processes in the persistent
    cache (clayout/disk_cache.py) under what the source is made from
    (``key``: gpu/binaries.source_key) and the tools that compile it;
    threads may call it at once.

    Build options that govern precision (correctly rounded division and
    sqrt) are not carried by the SPIR-V module: the runtime that builds it
    must be given them again.

    Raises UnimplementedError when clang or llvm-spirv is missing (it says
    what to install), RuntimeError with the tool's log when either fails.
    """
    from ..disk_cache import disk_cache, entry_key
    from .binaries import source_key
    from .build import source_function

    render = source_function(source)
    options = [str(o) for o in options]
    tools = _tools()
    made_from = source_key(render, key)
    cache_key = entry_key(KIND, made_from, options, [_identity(t) for t in tools])
    binary = _built.get(cache_key)  # one dict read: safe without the lock
    if binary is not None:
        return binary
    with _lock:
        building = _building.setdefault(cache_key, threading.Lock())
    with building:
        if cache_key not in _built:
            cache = disk_cache()
            binary = cache.load(KIND, cache_key) if cache is not None else None
            if binary is None:
                binary = _compile(render(), options)
                if cache is not None:
                    cache.store(KIND, cache_key, binary)
            _built[cache_key] = binary
    with _lock:
        _building.pop(cache_key, None)  # later calls find the module in _built
    return _built[cache_key]


#: The persistent cache's folder for SPIR-V modules.
KIND = "spirv"


def _identity(path: str) -> tuple:
    """A tool's path, size and modification time: another build of it is another key."""
    info = os.stat(path)
    return (path, info.st_size, info.st_mtime_ns)
