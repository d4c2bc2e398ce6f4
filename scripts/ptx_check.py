"""Compile clayout's kernels for an NVIDIA GPU without one (``make ptx``).

Each OpenCL program clayout built (the .cl files ``CLAYOUT_DUMP_KERNELS=DIR``
writes, one per program) goes through clang's NVPTX target with libclc's
built-ins, then NVIDIA's ``ptxas -v`` for sm_90. Per kernel and in total it
reports failures (with their first error lines), registers, spill bytes, and
how wide the global loads and stores in the PTX are: the share that are
16-byte vectors (``ld.global.v4.f32``, ``.v2.f64`` ...) and 8-byte ones.
Counts are static (instructions in the PTX, not executions).

Usage:
  python scripts/ptx_check.py DIR [DIR ...]           check dumped kernels
  python scripts/ptx_check.py --tests tests/test_shuffle.py [--strategies cpu gpu]
      run the tests once per strategy with the dump set, then check those
Options: --json PATH, --per-kernel, --jobs N, --keep DIR, --clang, --ptxas,
--libclc, --arch. Exits 1 on any failure or spill, 2 when there is nothing
to check or a tool is missing. A program whose source says ``// A CPU
kernel:`` (CPU_MARK: the CPU strategy's nibble tiles, whose tile is a
private array meant for a CPU's L1 cache) is listed when it spills, without
failing.

This is clang's NVPTX back end, not NVIDIA's OpenCL compiler: it proves the
source is valid for the target and shows what the code asks for, not what
NVIDIA's driver makes of it.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LIBCLC = "/usr/lib/clc/nvptx64--nvidiacl.bc"
# clang 15 knows NVPTX up to sm_86 / PTX 7.5; ptxas then assembles that PTX for sm_90.
CLANG_ARCH = "sm_86"
CLANG_PTX = "+ptx75"
STATE_SPACES = {"global", "shared", "local", "param", "const"}

# "ld.global.nc.v4.f32", "@%p1 st.global.v2.u64", "ldu.global.f32" ...
_ACCESS = re.compile(r"^\s*(?:@!?%\w+\s+)?(ld|ldu|st)((?:\.[\w:]+)+)\s")
_FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+"
                       r"(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_TYPE = re.compile(r"^[bsuf](8|16|32|64)$")
_KERNEL_NAME = re.compile(r"__kernel\s+void\s+(\w+)")


def access_width(modifiers: list[str]) -> int | None:
    """Bytes one ld/st with these dot-separated modifiers moves per thread
    (``["global", "nc", "v4", "f32"]`` -> 16), or None without a type."""
    lanes = 1
    for m in modifiers:
        if m in ("v2", "v4", "v8"):
            lanes = int(m[1:])
    for m in reversed(modifiers):
        t = _TYPE.match(m)
        if t:
            return lanes * int(t.group(1)) // 8
    return None


def _new_counts() -> dict:
    return {"ld": 0, "ld16": 0, "ld8": 0, "st": 0, "st16": 0, "st8": 0, "generic": 0}


def count_accesses(ptx: str) -> dict[str, dict]:
    """Global loads and stores per function of a PTX text: for each entry or
    helper function, how many ``ld``/``st`` (and ``ldu``) instructions reach
    global memory, how many of them are 16 and 8 bytes wide, and how many
    ``generic`` ones (no state space: the compiler lost it)."""
    counts: dict[str, dict] = {}
    current = None
    for line in ptx.splitlines():
        f = _FUNCTION.match(line)
        if f:
            current = counts.setdefault(f.group(2), _new_counts())
            continue
        a = _ACCESS.match(line)
        if a is None or current is None:
            continue
        op = "ld" if a.group(1) in ("ld", "ldu") else "st"
        modifiers = a.group(2).split(".")[1:]
        spaces = STATE_SPACES.intersection(modifiers)
        if not spaces:
            current["generic"] += 1
        if "global" not in spaces:
            continue
        current[op] += 1
        width = access_width(modifiers)
        if width == 16:
            current[op + "16"] += 1
        elif width == 8:
            current[op + "8"] += 1
    return counts


def parse_ptxas(text: str) -> dict[str, dict]:
    """Registers and spill bytes per function from ``ptxas -v`` output."""
    info: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            current = info.setdefault(m.group(1), {"registers": 0, "spill_stores": 0,
                                                   "spill_loads": 0, "stack": 0})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m:
            current["stack"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
    return info


def _first_errors(text: str, lines: int = 6) -> str:
    kept = [line for line in text.splitlines() if line.strip() and "linking module" not in line
            and "-Wlinker-warnings" not in line and "warning generated" not in line]
    errors = [i for i, line in enumerate(kept) if "error" in line.lower()]
    start = errors[0] if errors else 0
    return "\n".join(kept[start:start + lines])


def _run(command: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 1, "", f"error: no result in {timeout} s")


#: What a program's source says when its kernel is meant for CPUs only
#: (templates/reorder.cl.mako, ``nibble_tile``).
CPU_MARK = "// A CPU kernel:"


def compile_program(path: Path, tools: dict, workdir: Path) -> list[dict]:
    """Compile one .cl file to PTX and sm_90 code; one result per kernel (or
    one failure for the program)."""
    ptx_path = workdir / (path.stem + ".ptx")
    clang = [tools["clang"], "-x", "cl", "-target", "nvptx64-nvidia-nvcl", "-cl-std=CL1.2", "-O3",
             "-Xclang", "-finclude-default-header", "-Xclang", "-mlink-builtin-bitcode",
             "-Xclang", tools["libclc"], f"-march={CLANG_ARCH}", "-Xclang", "-target-feature",
             "-Xclang", CLANG_PTX, "-cl-fp32-correctly-rounded-divide-sqrt",
             "-Wno-linker-warnings", "-S", str(path), "-o", str(ptx_path)]
    source = path.read_text(encoding="utf-8", errors="replace")
    names = _KERNEL_NAME.findall(source) or [path.stem]
    sha1 = hashlib.sha1(source.encode()).hexdigest()  # the same program in two folders
    failed = {"file": path.name, "sha1": sha1, "kernel": ",".join(names), "ok": False,
              "cpu_only": CPU_MARK in source}
    step = _run(clang)
    if step.returncode != 0:
        return [{**failed, "stage": "clang", "error": _first_errors(step.stderr)}]
    ptxas = [tools["ptxas"], f"-arch={tools['arch']}", "-v", str(ptx_path),
             "-o", str(ptx_path.with_suffix(".cubin"))]
    step = _run(ptxas)
    if step.returncode != 0:
        return [{**failed, "stage": "ptxas", "error": _first_errors(step.stderr + step.stdout)}]
    ptx = ptx_path.read_text()
    names = re.findall(r"\.entry\s+([\w$]+)", ptx) or names  # the compiler's own list
    accesses = count_accesses(ptx)
    info = parse_ptxas(step.stderr + step.stdout)
    helpers = [f for f in accesses if f not in names]
    results = []
    for name in names:
        counts = dict(accesses.get(name, _new_counts()))
        for helper in helpers:  # not inlined: count its accesses with every kernel
            for key, value in accesses[helper].items():
                counts[key] += value
        regs = info.get(name, {"registers": 0, "spill_stores": 0, "spill_loads": 0, "stack": 0})
        spill_stores = regs["spill_stores"] + sum(info.get(h, {}).get("spill_stores", 0)
                                                  for h in helpers)
        spill_loads = regs["spill_loads"] + sum(info.get(h, {}).get("spill_loads", 0)
                                                for h in helpers)
        results.append({"file": path.name, "sha1": sha1, "kernel": name, "ok": True,
                        "cpu_only": failed["cpu_only"],
                        "registers": regs["registers"], "stack": regs["stack"],
                        "spill_stores": spill_stores, "spill_loads": spill_loads, **counts})
    return results


def check_folder(folder: Path, tools: dict, jobs: int) -> list[dict]:
    """Every kernel of every .cl file in ``folder``, compiled on ``jobs`` threads."""
    files = sorted(folder.glob("*.cl"))
    with tempfile.TemporaryDirectory(prefix="ptx_check_") as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda p: compile_program(p, tools, Path(work)), files)
        return [kernel for program in results for kernel in program]


def summarise(kernels: list[dict]) -> dict:
    """Totals over ``kernels``: programs, kernels, failures, spills, registers, accesses."""
    ok = [k for k in kernels if k["ok"]]
    total = {"programs": len({k["sha1"] for k in kernels}), "kernels": len(kernels),
             "failures": len(kernels) - len(ok),
             "spilling": sum(1 for k in ok if k["spill_stores"] or k["spill_loads"]),
             "cpu_spilling": sum(1 for k in ok if (k["spill_stores"] or k["spill_loads"])
                                 and k["cpu_only"]),
             "spill_bytes": sum(k["spill_stores"] + k["spill_loads"] for k in ok),
             "max_registers": max((k["registers"] for k in ok), default=0)}
    for key in _new_counts():
        total[key] = sum(k[key] for k in ok)
    return total


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def _row(label: str, t: dict, width: int) -> str:
    return (f"{label:<{width}} {t['kernels']:>7} {t['failures']:>6} {t['spill_bytes']:>7} "
            f"{t['max_registers']:>5} {t['ld']:>7} {_share(t['ld16'], t['ld'])} "
            f"{_share(t['ld8'], t['ld'])} {t['st']:>7} {_share(t['st16'], t['st'])} "
            f"{_share(t['st8'], t['st'])} {t['generic']:>7}")


def _header(label: str, width: int) -> str:
    return (f"{label:<{width}} {'kernels':>7} {'failed':>6} {'spill B':>7} {'regs':>5} "
            f"{'ld.glob':>7} {'16B':>6} {'8B':>6} {'st.glob':>7} {'16B':>6} {'8B':>6} "
            f"{'generic':>7}")


def family(name: str) -> str:
    """A kernel's name without the batch suffix build.py adds (_<10 hex>)."""
    return re.sub(r"_[0-9a-f]{10}$", "", name)


def report(runs: dict[str, list[dict]], per_kernel: bool) -> str:
    """The text: failures, spills, then per kernel (or per kernel family) and per run."""
    lines = []
    everything = [k for kernels in runs.values() for k in kernels]
    for label, kernels in runs.items():
        for k in kernels:
            if not k["ok"]:
                lines.append(f"FAILED [{label}] {k['kernel']} ({k['file']}, {k['stage']}):")
                lines.extend("    " + e for e in k["error"].splitlines())
            elif k["spill_stores"] or k["spill_loads"]:
                kind = "CPU KERNEL SPILLS (not failed)" if k["cpu_only"] else "SPILLS"
                lines.append(f"{kind} [{label}] {k['kernel']} ({k['file']}): {k['spill_stores']} "
                             f"bytes stored, {k['spill_loads']} loaded, {k['registers']} registers")
    if lines:
        lines.append("")
    groups = defaultdict(list)
    for k in everything:
        groups[f"{k['kernel']}  {k['sha1'][:10]}" if per_kernel else family(k["kernel"])].append(k)
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
    lines.append("16B / 8B: share of the global loads (stores) in the PTX that are 16-byte "
                 "(8-byte) vectors; generic: loads and stores with no state space")
    return "\n".join(lines)


def find_tools(args) -> dict:
    """The tools, or SystemExit(2) naming what is missing and how to get it."""
    clang = shutil.which(args.clang)
    ptxas = shutil.which(args.ptxas)
    missing = []
    if clang is None:
        missing.append(f"{args.clang} (apt-get install clang-15)")
    if ptxas is None:
        missing.append(f"{args.ptxas} (NVIDIA's CUDA toolkit)")
    if not Path(args.libclc).is_file():
        missing.append(f"{args.libclc} (apt-get install libclc-15)")
    if missing:
        _exit(2, "ptx_check: missing " + "; ".join(missing))
    return {"clang": clang, "ptxas": ptxas, "libclc": args.libclc, "arch": args.arch}


def _exit(code: int, message: str):
    print(message, file=sys.stderr)
    sys.exit(code)


def run_tests(tests: list[str], strategies: list[str], dump: Path, pytest_args: list[str]) \
        -> tuple[dict[str, Path], list[str]]:
    """Run ``tests`` once per strategy with CLAYOUT_DUMP_KERNELS set to
    ``dump/<strategy>``; the folders and the runs whose tests failed."""
    folders, failed = {}, []
    for strategy in strategies:
        folder = dump / strategy
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CLAYOUT_STRATEGY": strategy, "CLAYOUT_DUMP_KERNELS": str(folder)}
        print(f"== CLAYOUT_STRATEGY={strategy} pytest {' '.join(pytest_args + tests)}", flush=True)
        if subprocess.run([sys.executable, "-m", "pytest", *pytest_args, *tests],
                          env=env, cwd=ROOT).returncode != 0:
            failed.append(strategy)
        folders[strategy] = folder
    return folders, failed


def common_arguments(parser):
    """The options ptx_check and gcn_check share (dumped folders or tests to
    run, strategies, output, jobs, clang); returns ``parser``."""
    parser.add_argument("folders", nargs="*", type=Path, help="folders of dumped .cl files")
    parser.add_argument("--tests", nargs="+", default=[],
                        help="test files to run (once per strategy) with the dump set")
    parser.add_argument("--strategies", nargs="+", default=["cpu", "gpu"],
                        choices=["cpu", "gpu"], help="CLAYOUT_STRATEGY of each test run")
    parser.add_argument("--pytest-args", default="-q -p no:cacheprovider",
                        help="options for those pytest runs")
    parser.add_argument("--keep", type=Path, help="dump the test runs' kernels here (kept)")
    parser.add_argument("--json", type=Path, help="write every kernel's figures here")
    parser.add_argument("--per-kernel", action="store_true",
                        help="one row per kernel, not per kernel family")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--clang", default=os.environ.get("CLANG", "clang-15"))
    return parser


def main(argv=None) -> int:
    parser = common_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--ptxas", default=os.environ.get("PTXAS", "ptxas"))
    parser.add_argument("--libclc", default=os.environ.get("LIBCLC_NVPTX", DEFAULT_LIBCLC))
    parser.add_argument("--arch", default="sm_90", help="ptxas -arch")
    args = parser.parse_args(argv)
    if not args.folders and not args.tests:
        parser.error("give folders of .cl files or --tests")
    tools = find_tools(args)

    with tempfile.TemporaryDirectory(prefix="clayout_kernels_") as scratch:
        runs_from = {str(f): f for f in args.folders}
        failed_tests = []
        if args.tests:
            dump = args.keep or Path(scratch)
            folders, failed_tests = run_tests(args.tests, args.strategies, dump,
                                              args.pytest_args.split())
            runs_from.update({f"strategy {s}": f for s, f in folders.items()})
        runs = {label: check_folder(folder, tools, max(1, args.jobs))
                for label, folder in runs_from.items()}
    if not any(runs.values()):
        _exit(2, "ptx_check: no .cl files in " + ", ".join(runs_from))
    print(report(runs, args.per_kernel))
    totals = {label: summarise(kernels) for label, kernels in runs.items()}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"arch": args.arch, "totals": totals, "kernels": runs},
                                        indent=1))
    bad = sum(t["failures"] + t["spilling"] - t["cpu_spilling"] for t in totals.values())
    for strategy in failed_tests:
        print(f"ptx_check: the tests failed with CLAYOUT_STRATEGY={strategy} "
              f"(the kernels they built are checked above)", file=sys.stderr)
    return 1 if bad or failed_tests else 0


if __name__ == "__main__":
    sys.exit(main())
