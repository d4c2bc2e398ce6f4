"""GPU memory traffic of the GPU strategy's kernels, measured without a GPU:
gpusim_cases.py runs under Oclgrind with the gpusim plugin
(../shared/gpu-offline), and each case's kernels must reach their line:

- distinct bytes per warp-level global load and per store (warps of 32):
  >= 256 for f32 transposes and conversions from or to f32, >= 128 else;
- sector efficiency >= 0.95 for loads and for stores;
- local-memory bank conflicts <= 1.1 (wavefronts over the fewest).

Prints one row per kernel launch and exits 1 when a row misses a line
(gpusim_cases.KNOWN lists the cases known to miss one, and the figure
they must still keep).
Usage: python benchmarks/gpusim_check.py [--gpusim DIR] [--only TEXT] [--seed N] [--json PATH]
(--seed: the same cases on other shapes, drawn at random with seed N)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
MIN_EFFICIENCY, MAX_CONFLICT = 0.95, 1.1


def load_gpusim(folder: pathlib.Path):
    """gpusim.py of the shared folder, as a module (its metrics are the measure)."""
    spec = importlib.util.spec_from_file_location("gpusim", folder / "gpusim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(gpusim, only: str | None, seed: int | None) -> list[tuple[int, list[dict]]]:
    """Run the cases under Oclgrind; each case's kernel launches, in order."""
    if not os.path.exists(gpusim.LIB):
        subprocess.run(["bash", str(pathlib.Path(gpusim.HERE) / "build.sh")], check=True,
                       stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as out:
        # Tiers off: each case's own kernel is measured, not a stand-in (tiers.py).
        env = dict(os.environ, CLAYOUT_STRATEGY="gpu", CLAYOUT_TIERS="off",
                   OCLGRIND_PLUGINS=gpusim.LIB,
                   GPUSIM_ONLY=only or "", GPUSIM_SEED="" if seed is None else str(seed))
        done = subprocess.run(["oclgrind", sys.executable, str(HERE / "gpusim_cases.py"), out],
                              env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"gpusim_cases.py failed under oclgrind (rc {done.returncode}):\n"
                             f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
        results = []
        for path in sorted(pathlib.Path(out).glob("*.jsonl"), key=lambda p: int(p.stem)):
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            rows = [r for r in rows
                    if r["kernel"].startswith(("reorder_", "shuffle_", "quantize_"))]
            results.append((int(path.stem), rows))
        return results


def figures(gpusim, row: dict) -> dict:
    ld_eff, st_eff, conflict, share = gpusim.metrics(row)
    ld, st = row["load"], row["store"]
    return dict(kernel=row["kernel"], ld_eff=ld_eff, st_eff=st_eff, conflict=conflict,
                share=share, ld_bytes=ld["bytes"] / max(ld["warp_instructions"], 1),
                st_bytes=st["bytes"] / max(st["warp_instructions"], 1))


def misses(f: dict, line: int, known: dict) -> tuple[list[str], list[str]]:
    """(misses, known misses): the lines ``f`` falls below; those within
    what ``known`` still allows a case that is known to miss are apart."""
    out, allowed = [], []
    for side in ("ld", "st"):
        key = f"{side}_bytes"
        if f[key] < line:
            text = f"{side} {f[key]:.0f} B < {line}"
            (allowed if f[key] >= known.get(key, line) else out).append(text)
        key = f"{side}_eff"
        if f[key] < MIN_EFFICIENCY:
            text = f"{side} eff {f[key]:.3f} < {MIN_EFFICIENCY}"
            (allowed if f[key] >= known.get(key, MIN_EFFICIENCY) else out).append(text)
    if f["conflict"] > MAX_CONFLICT:
        text = f"conflicts {f['conflict']:.2f} > {MAX_CONFLICT}"
        (allowed if f["conflict"] <= known.get("conflict", 0) else out).append(text)
    return out, allowed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpusim", default=str(HERE.parent.parent / "shared" / "gpu-offline"),
                        help="the folder of gpusim.py and build.sh")
    parser.add_argument("--only", help="run the cases whose name contains TEXT")
    parser.add_argument("--seed", type=int, help="other shapes, drawn with this seed")
    parser.add_argument("--json", help="write the figures to PATH")
    args = parser.parse_args()
    gpusim = load_gpusim(pathlib.Path(args.gpusim))
    sys.path.insert(0, str(HERE))
    from gpusim_cases import CASES, KNOWN, varied
    cases = CASES if args.seed is None else varied(CASES, args.seed)

    failed, report = 0, []
    print(f"{'case':46s} {'kernel':44s} {'ld eff':>6s} {'st eff':>6s} {'conf':>5s} "
          f"{'ld B':>5s} {'st B':>5s} {'line':>4s}  result")
    for n, rows in measure(gpusim, args.only, args.seed):
        name, line = cases[n][0], cases[n][-1]
        name = name if args.seed is None else f"{name} {'x'.join(map(str, cases[n][3]))}"
        if not rows:
            print(f"{name:46s} no kernel launched")
            failed += 1
            continue
        for row in rows:
            f = figures(gpusim, row)
            missed, known = misses(f, line, KNOWN.get(cases[n][0], {}))
            failed += bool(missed)
            report.append(dict(f, case=name, line=line, missed=missed, known=known))
            result = "MISS: " + "; ".join(missed) if missed else \
                "known miss: " + "; ".join(known) if known else "ok"
            print(f"{name:46s} {f['kernel'][:44]:44s} {f['ld_eff']:6.3f} {f['st_eff']:6.3f} "
                  f"{f['conflict']:5.2f} {f['ld_bytes']:5.0f} {f['st_bytes']:5.0f} {line:4d}  "
                  + result)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))
    known = sum(bool(r["known"]) and not r["missed"] for r in report)
    print(f"{len(report) - failed - known} of {len(report)} kernels reach their line"
          + (f", {known} known to miss (gpusim_cases.KNOWN)" if known else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
