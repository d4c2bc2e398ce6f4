"""Compile clayout's kernels for an AMD GPU without one (``make gcn``).

Each OpenCL program clayout built (the .cl files ``CLAYOUT_DUMP_KERNELS=DIR``
writes, one per program) goes through clang's AMDGPU target for gfx90a
(MI200) with ROCm's device libraries (Debian's rocm-device-libs), to
assembly. From the assembly's metadata it reports per kernel and in total:
failures (with their first error lines), VGPRs, scratch (private segment)
bytes, AGPRs, and how wide the global loads and stores are: the share that are
16-byte (``global_load_dwordx4``, ``global_store_dwordx4``) and 8-byte
(``..._dwordx2``) among the vector memory instructions that reach global
memory. Counts are static (instructions in the code, not executions).

Scratch is the GCN analogue of ptxas's spills: registers spilled to memory,
or a private array the compiler could not keep in registers. On gfx90a the
VGPR count (``.vgpr_count``) is the unified file's: the 256 architectural
VGPRs and the accumulation registers (AGPRs) above them, which the compiler
also fills when a kernel needs more than 256 (copies, not scratch): such
kernels are listed (AGPRS) with their occupancy, without failing. On gfx9 clang
addresses global memory with ``global_*`` instructions and scratch with
``buffer_*`` ones through the private segment's descriptor, so ``buffer_*``
accesses are counted apart (``scratch ld/st``), not as global traffic, as
are ``flat_*`` ones (a generic address: the compiler lost the address space;
ptx_check's ``generic``). Scalar loads (``s_load_*``: kernel arguments,
uniform constants) are not counted.

Usage:
  python scripts/gcn_check.py DIR [DIR ...]           check dumped kernels
  python scripts/gcn_check.py --tests tests/test_shuffle.py [--strategies cpu gpu]
      run the tests once per strategy with the dump set, then check those
Options: --json PATH, --per-kernel, --jobs N, --keep DIR, --clang,
--device-libs, --mcpu. Exits 1 on any failure or nonzero scratch, 2 when there
is nothing to check or a tool is missing. A program whose source says
``// A CPU kernel:`` (CPU_MARK: the CPU strategy's nibble tiles, whose tile
is a private array meant for a CPU's L1 cache) is listed when it takes
scratch, without failing.

This is upstream clang's AMDGPU back end (15), not AMD's OpenCL driver: it
proves the source is valid for the target and shows what the code asks for,
not what ROCm's compiler makes of it.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import ptx_check  # noqa: E402 - the same dump, test runs and error excerpts as make ptx

# Where Debian's rocm-device-libs and ROCm's own packages put the bitcode.
DEVICE_LIB_GLOBS = ("/usr/lib/*/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode",
                    "/opt/rocm*/amdgcn/bitcode",
                    "/opt/rocm*/lib/llvm/lib/clang/*/lib/amdgcn/bitcode")

# "global_load_dwordx4 v[0:3], v[4:5], off", "buffer_store_byte v1, off, s[0:3], 0" ...
_ACCESS = re.compile(r"^\s*(global|flat|buffer|scratch)_(load|store)_(?:lds_)?([a-z0-9_]+)\b")
_WIDTHS = (("dwordx", None), ("dword", 4), ("ubyte", 1), ("sbyte", 1), ("byte", 1),
           ("ushort", 2), ("sshort", 2), ("short", 2))
_TYPE_FUNCTION = re.compile(r"^\s*\.type\s+([\w$.]+)\s*,\s*@function")
_LABEL = re.compile(r"^([\w$.]+):")
_FUNC_END = re.compile(r"^\.Lfunc_end\d+:")
_INFO = re.compile(r"^; (Kernel|Function) info:")
_INFO_FIELD = re.compile(
    r"^; (NumVgprs|NumAgprs|TotalNumVgprs|NumSgprs|ScratchSize|Occupancy): (\d+)")
_META_ENTRY = re.compile(r"^  - \.(\w+):\s*(.*?)\s*$")
_META_FIELD = re.compile(r"^    \.(\w+):\s*(.*?)\s*$")
_KERNEL_NAME = re.compile(r"__kernel\s+void\s+(\w+)")
# The metadata's names for the figures kept per kernel.
_META_KEYS = {"vgpr_count": "vgprs", "agpr_count": "agprs", "sgpr_count": "sgprs",
              "private_segment_fixed_size": "scratch", "group_segment_fixed_size": "lds",
              "vgpr_spill_count": "vgpr_spills", "sgpr_spill_count": "sgpr_spills",
              "uses_dynamic_stack": "dynamic_stack"}
_COMMENT_KEYS = {"NumVgprs": "vgprs", "NumAgprs": "agprs", "NumSgprs": "sgprs",
                 "ScratchSize": "scratch", "Occupancy": "occupancy"}


def access_width(suffix: str) -> int | None:
    """Bytes one load/store with this mnemonic suffix moves per lane
    (``"dwordx4"`` -> 16, ``"ubyte_d16_hi"`` -> 1), or None (``format_x`` ...)."""
    for prefix, width in _WIDTHS:
        if suffix.startswith(prefix):
            if width is None:
                lanes = re.match(r"dwordx(\d)", suffix)
                return 4 * int(lanes.group(1)) if lanes else None
            return width
    return None


def _new_counts() -> dict:
    return {"ld": 0, "ld16": 0, "ld8": 0, "st": 0, "st16": 0, "st8": 0, "flat": 0,
            "scratch_ld": 0, "scratch_st": 0}


def _walk(asm: str):
    """The lines of a GCN assembly text, as (name, None) at the label that
    starts a function (one declared ``.type name,@function``) and
    (None, line) for every other line but those declarations."""
    functions: set[str] = set()
    for line in asm.splitlines():
        t = _TYPE_FUNCTION.match(line)
        if t:
            functions.add(t.group(1))
            continue
        label = _LABEL.match(line)
        if label and label.group(1) in functions:
            yield label.group(1), None
            continue
        yield None, line


def count_accesses(asm: str) -> dict[str, dict]:
    """Vector memory instructions per function of a GCN assembly text: for
    each kernel or helper function, how many ``global_load_*`` and
    ``global_store_*`` there are, how many of them move 16 and 8 bytes a
    lane, how many ``flat_*`` (generic address) and how many ``buffer_*`` /
    ``scratch_*`` (private memory: scratch) loads and stores."""
    counts: dict[str, dict] = {}
    current = None
    for name, line in _walk(asm):
        if name is not None:
            current = counts.setdefault(name, _new_counts())
            continue
        if _FUNC_END.match(line):
            current = None
            continue
        a = _ACCESS.match(line)
        if a is None or current is None:
            continue
        space, op, suffix = a.groups()
        op = "ld" if op == "load" else "st"
        if space in ("buffer", "scratch"):
            current["scratch_" + op] += 1
            continue
        if space == "flat":
            current["flat"] += 1
            continue
        current[op] += 1
        width = access_width(suffix)
        if width == 16:
            current[op + "16"] += 1
        elif width == 8:
            current[op + "8"] += 1
    return counts


def _value(text: str):
    text = text.strip("'\"")
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def parse_metadata(asm: str) -> dict[str, dict]:
    """Per kernel, from the ``.amdgpu_metadata`` block (amdhsa.kernels):
    VGPRs, AGPRs, SGPRs, scratch bytes (``.private_segment_fixed_size``,
    callees included), LDS bytes, spill counts and whether the stack is
    dynamic (recursion, calls through pointers: its size unknown)."""
    kernels: dict[str, dict] = {}
    section, entry = None, None
    for line in asm.splitlines() + ["end:"]:
        if line and not line[0].isspace():  # a top-level YAML key, or a label
            if entry is not None and "name" in entry:
                kernels[entry.pop("name")] = entry
            section, entry = line.split(":")[0], None
            continue
        if section != "amdhsa.kernels":
            continue
        m = _META_ENTRY.match(line)
        if m:
            if entry is not None and "name" in entry:
                kernels[entry.pop("name")] = entry
            entry = {}
        else:
            m = _META_FIELD.match(line)
        if m and entry is not None:
            key, value = m.groups()
            if key == "name":
                entry["name"] = _value(value)
            elif key in _META_KEYS:
                entry[_META_KEYS[key]] = _value(value)
    return kernels


def parse_comments(asm: str) -> dict[str, dict]:
    """Per function, the ``; Kernel info:`` / ``; Function info:`` block the
    compiler writes after it: VGPRs (``NumVgprs``), AGPRs, SGPRs, scratch
    bytes (``ScratchSize``), waves per SIMD (``Occupancy``, kernels only), and
    ``kernel``: whether it is one."""
    info: dict[str, dict] = {}
    last = current = None
    for name, line in _walk(asm):
        if name is not None:
            last = name
            continue
        m = _INFO.match(line)
        if m and last is not None:
            current = info.setdefault(last, {"kernel": m.group(1) == "Kernel"})
            continue
        if current is None:
            continue
        m = _INFO_FIELD.match(line)
        if m:
            if m.group(1) == "TotalNumVgprs":
                continue
            current[_COMMENT_KEYS[m.group(1)]] = int(m.group(2))
        elif not line.startswith(";"):
            current = None
    return info


CPU_MARK = ptx_check.CPU_MARK


def compile_program(path: Path, tools: dict, workdir: Path) -> list[dict]:
    """Compile one .cl file to GCN assembly; one result per kernel (or one
    failure for the program)."""
    asm_path = workdir / (path.stem + ".s")
    clang = [tools["clang"], "-x", "cl", "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa",
             f"-mcpu={tools['mcpu']}", f"--rocm-device-lib-path={tools['device_libs']}",
             "-Xclang", "-finclude-default-header", "-O2", "-S", str(path), "-o", str(asm_path)]
    source = path.read_text(encoding="utf-8", errors="replace")
    names = _KERNEL_NAME.findall(source) or [path.stem]
    sha1 = hashlib.sha1(source.encode()).hexdigest()  # the same program in two folders
    failed = {"file": path.name, "sha1": sha1, "kernel": ",".join(names), "ok": False,
              "cpu_only": CPU_MARK in source}
    step = ptx_check._run(clang)
    if step.returncode != 0:
        return [{**failed, "stage": "clang", "error": ptx_check._first_errors(step.stderr)}]
    asm = asm_path.read_text()
    metadata = parse_metadata(asm)
    comments = parse_comments(asm)
    accesses = count_accesses(asm)
    names = list(metadata) or [f for f, c in comments.items() if c["kernel"]] or names
    helpers = [f for f in accesses if f not in names]
    results = []
    for name in names:
        counts = dict(accesses.get(name, _new_counts()))
        for helper in helpers:  # not inlined: count its accesses with every kernel
            for key, value in accesses[helper].items():
                counts[key] += value
        # The metadata counts callees' registers and stack in; the comments
        # are the fallback (and the only source of occupancy).
        figures = {"vgprs": 0, "agprs": 0, "sgprs": 0, "scratch": 0, "lds": 0,
                   "vgpr_spills": 0, "sgpr_spills": 0, "dynamic_stack": False, "occupancy": 0}
        figures.update(comments.get(name, {}))
        figures.update(metadata.get(name, {}))
        figures.pop("kernel", None)
        results.append({"file": path.name, "sha1": sha1, "kernel": name, "ok": True,
                        "cpu_only": failed["cpu_only"], **figures, **counts})
    return results


def check_folder(folder: Path, tools: dict, jobs: int) -> list[dict]:
    """Every kernel of every .cl file in ``folder``, compiled on ``jobs`` threads."""
    files = sorted(folder.glob("*.cl"))
    with tempfile.TemporaryDirectory(prefix="gcn_check_") as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda p: compile_program(p, tools, Path(work)), files)
        return [kernel for program in results for kernel in program]


def uses_scratch(kernel: dict) -> bool:
    return bool(kernel["scratch"] or kernel["dynamic_stack"])


def summarise(kernels: list[dict]) -> dict:
    """Totals over ``kernels``: programs, kernels, failures, scratch, VGPRs, accesses."""
    ok = [k for k in kernels if k["ok"]]
    vgprs = [k["vgprs"] for k in ok]
    total = {"programs": len({k["sha1"] for k in kernels}), "kernels": len(kernels),
             "failures": len(kernels) - len(ok),
             "scratching": sum(1 for k in ok if uses_scratch(k)),
             "cpu_scratching": sum(1 for k in ok if uses_scratch(k) and k["cpu_only"]),
             "scratch_bytes": sum(k["scratch"] for k in ok),
             "using_agprs": sum(1 for k in ok if k["agprs"]),
             "min_vgprs": min(vgprs, default=0), "max_vgprs": max(vgprs, default=0),
             "median_vgprs": statistics.median(vgprs) if vgprs else 0,
             "max_lds": max((k["lds"] for k in ok), default=0)}
    for key in _new_counts():
        total[key] = sum(k[key] for k in ok)
    return total


_share = ptx_check._share


def _row(label: str, t: dict, width: int) -> str:
    return (f"{label:<{width}} {t['kernels']:>7} {t['failures']:>6} {t['scratch_bytes']:>9} "
            f"{t['max_vgprs']:>5} {t['ld']:>7} {_share(t['ld16'], t['ld'])} "
            f"{_share(t['ld8'], t['ld'])} {t['st']:>7} {_share(t['st16'], t['st'])} "
            f"{_share(t['st8'], t['st'])} {t['flat']:>5} "
            f"{t['scratch_ld'] + t['scratch_st']:>7}")


def _header(label: str, width: int) -> str:
    return (f"{label:<{width}} {'kernels':>7} {'failed':>6} {'scratch B':>9} {'vgprs':>5} "
            f"{'ld.glob':>7} {'16B':>6} {'8B':>6} {'st.glob':>7} {'16B':>6} {'8B':>6} "
            f"{'flat':>5} {'scr.mem':>7}")


def report(runs: dict[str, list[dict]], per_kernel: bool) -> str:
    """The text: failures, scratch, then per kernel (or per kernel family)
    and per run, then the VGPR spread."""
    lines = []
    everything = [k for kernels in runs.values() for k in kernels]
    for label, kernels in runs.items():
        for k in kernels:
            if not k["ok"]:
                lines.append(f"FAILED [{label}] {k['kernel']} ({k['file']}, {k['stage']}):")
                lines.extend("    " + e for e in k["error"].splitlines())
            elif uses_scratch(k):
                stack = ", dynamic stack" if k["dynamic_stack"] else ""
                kind = "CPU KERNEL SCRATCH (not failed)" if k["cpu_only"] else "SCRATCH"
                lines.append(f"{kind} [{label}] {k['kernel']} ({k['file']}): {k['scratch']} "
                             f"bytes{stack}, {k['vgprs']} VGPRs, {k['vgpr_spills']} VGPRs "
                             f"spilled, {k['sgpr_spills']} SGPRs spilled")
            elif k["agprs"]:
                lines.append(f"AGPRS [{label}] {k['kernel']} ({k['file']}): {k['agprs']} AGPRs "
                             f"of {k['vgprs']} VGPRs in all, occupancy {k['occupancy']} "
                             f"waves per SIMD (no scratch)")
    if lines:
        lines.append("")
    groups = defaultdict(list)
    for k in everything:
        key = f"{k['kernel']}  {k['sha1'][:10]}" if per_kernel else ptx_check.family(k["kernel"])
        groups[key].append(k)
    width = max([len(g) for g in groups] + [len(r) for r in runs] + [12])
    lines.append(_header("kernel" if per_kernel else "kernel family", width))
    lines.extend(_row(g, summarise(groups[g]), width) for g in sorted(groups))
    lines.append("")
    lines.append(_header("run", width))
    for label, kernels in runs.items():
        lines.append(_row(label, summarise(kernels), width))
    unique = list({(k["sha1"], k["kernel"]): k for k in everything}.values())
    if len(runs) > 1:
        lines.append(_row("all (unique)", summarise(unique), width))
    lines.append("16B / 8B: share of the global loads (stores) that move 16 (8) bytes a lane "
                 "(dwordx4, dwordx2); flat: generic-address loads and stores; scr.mem: "
                 "scratch (buffer_) loads and stores")
    t = summarise(unique)
    lines.append(f"{t['kernels']} kernels in {t['programs']} programs, {t['failures']} failed, "
                 f"{t['scratching']} with scratch ({t['scratch_bytes']} bytes), "
                 f"{t['using_agprs']} using AGPRs; VGPRs min "
                 f"{t['min_vgprs']}, median {t['median_vgprs']:g}, max {t['max_vgprs']}; "
                 f"LDS max {t['max_lds']} bytes")
    return "\n".join(lines)


def find_device_libs() -> str | None:
    """The amdgcn bitcode folder: rocm-device-libs' (dpkg), else the first of
    DEVICE_LIB_GLOBS holding ocml.bc."""
    candidates = []
    if shutil.which("dpkg"):
        listed = subprocess.run(["dpkg", "-L", "rocm-device-libs"], capture_output=True,
                                text=True).stdout.split()
        candidates += [p for p in listed if p.endswith("/amdgcn/bitcode")]
    for pattern in DEVICE_LIB_GLOBS:
        candidates += sorted(glob.glob(pattern))
    return next((c for c in candidates if Path(c, "ocml.bc").is_file()), None)


def find_tools(args) -> dict:
    """The tools, or SystemExit(2) naming what is missing and how to get it."""
    clang = shutil.which(args.clang)
    device_libs = args.device_libs or find_device_libs()
    missing = []
    if clang is None:
        missing.append(f"{args.clang} (apt-get install clang-15)")
    if device_libs is None or not Path(device_libs, "ocml.bc").is_file():
        missing.append(f"ROCm's device libraries ({device_libs or 'amdgcn/bitcode'}: "
                       "apt-get install rocm-device-libs, or set ROCM_DEVICE_LIB_PATH)")
    if missing:
        ptx_check._exit(2, "gcn_check: missing " + "; ".join(missing))
    return {"clang": clang, "device_libs": device_libs, "mcpu": args.mcpu}


def main(argv=None) -> int:
    parser = ptx_check.common_arguments(
        argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--device-libs", default=os.environ.get("ROCM_DEVICE_LIB_PATH"),
                        help="the amdgcn bitcode folder (found when not given)")
    parser.add_argument("--mcpu", default="gfx90a", help="clang -mcpu")
    args = parser.parse_args(argv)
    if not args.folders and not args.tests:
        parser.error("give folders of .cl files or --tests")
    tools = find_tools(args)

    with tempfile.TemporaryDirectory(prefix="clayout_kernels_") as scratch:
        runs_from = {str(f): f for f in args.folders}
        failed_tests = []
        if args.tests:
            dump = args.keep or Path(scratch)
            folders, failed_tests = ptx_check.run_tests(args.tests, args.strategies, dump,
                                                        args.pytest_args.split())
            runs_from.update({f"strategy {s}": f for s, f in folders.items()})
        runs = {label: check_folder(folder, tools, max(1, args.jobs))
                for label, folder in runs_from.items()}
    if not any(runs.values()):
        ptx_check._exit(2, "gcn_check: no .cl files in " + ", ".join(runs_from))
    print(report(runs, args.per_kernel))
    totals = {label: summarise(kernels) for label, kernels in runs.items()}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"mcpu": args.mcpu, "device_libs": tools["device_libs"],
                                         "totals": totals, "kernels": runs}, indent=1))
    bad = sum(t["failures"] + t["scratching"] - t["cpu_scratching"] for t in totals.values())
    for strategy in failed_tests:
        print(f"gcn_check: the tests failed with CLAYOUT_STRATEGY={strategy} "
              f"(the kernels they built are checked above)", file=sys.stderr)
    return 1 if bad or failed_tests else 0


if __name__ == "__main__":
    sys.exit(main())
