"""``python -m clayout info``: the OpenCL devices and the SYCL devices (with
dpctl), the profile each gets, the default engine, and which implementation
runs a few typical problems on each device (as ``Reorder(...).impl`` /
``Shuffle(...).impl`` says).

``report()`` returns the text; it works, and says so, with no OpenCL driver.
"""
from __future__ import annotations

import os
import platform
import sys
from typing import Callable

import numpy as np

from . import __version__
from .attr import Attr, Scales, ZeroPoints
from .disk_cache import disk_cache
from .engine import Engine, opencl_devices
from .memory_desc import MemoryDesc
from .primitives import Reorder, Shuffle

#: The environment variables that change what clayout picks or does.
ENVIRONMENT = ("PYOPENCL_CTX", "OCL_ICD_VENDORS", "CLAYOUT_STRATEGY", "CLAYOUT_TUNING",
               "CLAYOUT_VERBOSE", "CLAYOUT_CONVERT_ON_DEVICE_BYTES", "CLAYOUT_DUMP_KERNELS",
               "CLAYOUT_SYCL_PROGRAM", "CLAYOUT_CLANG", "CLAYOUT_LLVM_SPIRV", "CLAYOUT_CACHE",
               "CLAYOUT_CACHE_BYTES", "CLAYOUT_TIERS")


def _problems() -> list[tuple[str, Callable[[Engine], object]]]:
    """(name, make(engine) -> primitive) of the problems the table shows."""
    act = (2, 64, 7, 7)

    def md(dims, data_type, tag=None):
        return MemoryDesc(dims, data_type, tag=tag)

    def per_channel_s8(engine):
        return Reorder(md(act, "f32", "nchw"), md(act, "s8", "nChw16c"), engine=engine,
                       attr=Attr(src_scales=Scales(np.ones(64), mask=0b10)))

    def grouped_u4(engine):
        groups = 64 * 256 // 32
        return Reorder(md((64, 256), "u4"), md((64, 256), "f16"), engine=engine, attr=Attr(
            src_scales=Scales(np.ones(groups), mask=0b11, groups=(1, 32), data_type="f16"),
            src_zero_points=ZeroPoints(np.full(groups, 8), mask=0b11, groups=(1, 32),
                                      data_type="u4")))

    seven = (2, 3, 2, 3, 2, 3, 2)
    return [
        ("f32 nchw -> nChw16c", lambda e: Reorder(md(act, "f32", "nchw"),
                                                  md(act, "f32", "nChw16c"), engine=e)),
        ("f32 -> s8 nChw16c, per-channel scales", per_channel_s8),
        ("u4 -> f16, 1x32 grouped scales and zero points", grouped_u4),
        ("f64 nchw -> nhwc", lambda e: Reorder(md(act, "f64", "nchw"), md(act, "f64", "nhwc"),
                                               engine=e)),
        ("f32 7 dims, reversed", lambda e: Reorder(md(seven, "f32"), md(seven, "f32", "gfedcba"),
                                                   engine=e)),
        ("shuffle f32 nChw16c, axis 1, group 4",
         lambda e: Shuffle(md(act, "f32", "nChw16c"), axis=1, group_size=4, engine=e)),
    ]


def _profile_lines(profile) -> list[str]:
    kib = profile.local_mem // 1024
    return [
        f"strategy {profile.strategy} (kind {profile.kind}"
        + (", forced by CLAYOUT_STRATEGY)" if profile.strategy != profile.strategy_of_kind
           else ")"),
        f"vendor {profile.vendor or '?'}, {profile.compute_units} compute units",
        f"work-group: max {profile.max_work_group_size}, preferred multiple "
        f"{profile.preferred_multiple}, asked {profile.tuning.work_group}",
        f"local memory {kib} KiB, buffer alignment {profile.base_align} B",
        f"fp16 {'yes' if profile.fp16 else 'no'}, fp64 {'yes' if profile.fp64 else 'no'}, "
        f"sub-groups {', '.join(profile.subgroups) or 'none'}",
    ]


def _tuning_lines(device) -> list[str]:
    """What tuning table applies to ``device``, when it was made, and what it
    measured per family (share of copy: defaults -> tuned)."""
    from .tuning_table import Identity, load, table_path

    if os.environ.get("CLAYOUT_TUNING", "").strip().lower() == "off":
        return ["tuning: off (CLAYOUT_TUNING=off): the defaults"]
    identity = Identity.of(device)
    table = load(identity)
    if table is None:
        return [f"tuning: none, the defaults (python -m clayout tune writes "
                f"{table_path(identity)})"]
    data = table.data
    lines = [f"tuning: {table.path} (tuned {data.get('tuned', '?')}, clayout "
             f"{data.get('clayout', '?')})"]
    for family, item in sorted(data["families"].items()):
        changes = ", ".join(f"{k}={v}" for k, v in item.get("tuning", {}).items()) or "defaults"
        lines.append(f"  {family}: {item['strategy']} ({changes}), share of copy "
                     f"{item.get('default_ratio', 0):.2f} -> {item.get('ratio', 0):.2f}")
    return lines


def _impl(make, engine) -> str:
    try:
        return make(engine).impl
    except Exception as error:  # noqa: BLE001 - a report names any failure, it does not stop
        return f"refused: {type(error).__name__}: {error}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in rows]


def _sycl_lines(engines: list) -> list[str]:
    """The SYCL devices dpctl finds, each with how clayout builds for it
    (their engines join ``engines``)."""
    from .backends.sycl import require_dpctl

    try:
        dpctl = require_dpctl()
        devices = dpctl.get_devices()
    except Exception as error:  # noqa: BLE001 - ImportError, or dpctl's own
        return [f"SYCL: {error}"]
    if not devices:
        return ["SYCL: dpctl finds no device"]
    def details(engine, device):
        backend = engine.backend
        return [f"programs from {'SPIR-V' if backend.spirv else 'OpenCL C'}; plans "
                + ("as on the OpenCL engine of the same device"
                   if backend.cl_device is not None else "from what dpctl tells")
                + f" (strategy {engine.profile.strategy})"]

    return ["SYCL devices (Engine('sycl', device=...)):"] + _device_lines(
        "sycl", devices, lambda d: f"{d.backend.name}: {d.sycl_platform.name.strip()}",
        details, engines, "sycl ")


def _device_lines(kind: str, devices: list, describe, details, engines: list,
                  label: str = "") -> list[str]:
    """A line per device (``describe(device)`` in brackets), then
    ``details(engine, device)`` indented, or why no engine is made on it;
    the engines join ``engines``, labelled ``label`` + index and name."""
    lines = []
    for index, device in enumerate(devices):
        name = device.name.strip()
        lines.append(f"[{index}] {name} ({describe(device)})")
        try:
            engine = Engine(kind, device=device)
        except Exception as error:  # noqa: BLE001 - a report names any failure
            lines.append(f"    no engine: {type(error).__name__}: {error}")
            continue
        lines += ["    " + text for text in details(engine, device)]
        engines.append((f"{label}[{index}] {name}", engine))
    return lines


def report() -> str:
    """The whole report as text (see the module's docstring)."""
    lines = [f"clayout {__version__} on Python {platform.python_version()}, "
             f"NumPy {np.__version__}"]
    set_vars = [f"{name}={os.environ[name]!r}" for name in ENVIRONMENT if name in os.environ]
    lines.append("environment: " + (", ".join(set_vars) or "none of " + ", ".join(ENVIRONMENT)))
    cache = disk_cache()
    lines.append("persistent cache: " + (cache.describe() if cache is not None else
                                         "off (CLAYOUT_CACHE=off)") +
                 "; python -m clayout cache clear empties it")

    devices = opencl_devices()
    engines: list[tuple[str, Engine]] = []
    lines.append("")
    if not devices:
        lines.append("OpenCL: no platform or device found (no driver installed, e.g. "
                     "apt-get install pocl-opencl-icd); everything runs on the host engine "
                     "(NumPy).")
    else:
        lines.append("OpenCL devices:")
        lines += _device_lines(
            "opencl", devices, lambda d: f"{d.platform.name.strip()}, {d.version.strip()}",
            lambda engine, d: _profile_lines(engine.profile) + _tuning_lines(d), engines)

    lines.append("")
    lines += _sycl_lines(engines)

    lines.append("")
    try:
        default = Engine()
        lines.append(f"Engine() picks: {default!r}"
                     + (" (from PYOPENCL_CTX)" if "PYOPENCL_CTX" in os.environ else ""))
    except Exception as error:  # noqa: BLE001
        lines.append(f"Engine() fails: {type(error).__name__}: {error}")
    engines.append(("host", Engine("host")))

    lines += ["", "What runs where (Reorder/Shuffle(...).impl):"]
    problems = _problems()
    from .gpu.build import batch_builds

    for label, engine in engines:
        lines.append(f"on {label}:")
        with batch_builds():  # one OpenCL program per device for all its kernels
            rows = [[name, _impl(make, engine)] for name, make in problems]
        lines += _table(rows)
    return "\n".join(lines)


def main(argv=None) -> int:
    """Print the report; returns the exit status."""
    print(report())
    sys.stdout.flush()
    return 0
