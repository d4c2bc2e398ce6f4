"""Startup costs in fresh Python processes: what a program pays before and
at its first reorders, and a model-preparation workload from process start.

Every number comes from a new child process (this script run with
--child), --runs of each, the median reported. Each child runs on one
platform: PoCL or Intel's OpenCL CPU runtime (OCL_ICD_VENDORS names the
folder make intel-opencl writes), or the SYCL engine over Intel's runtime
(dpctl); a platform that does not start is skipped, with why. Each runs
with the caches empty (CLAYOUT_CACHE, POCL_CACHE_DIR and XDG_CACHE_HOME in
a new empty folder) and warm (the same folder, which the same child filled
once before the runs); empty and warm runs alternate, as the 2-core
machine's speed drifts. clayout's Python bytecode is compiled first, as pip
compiles an installed package's, and the children may use it.

(a) startup, one child: ``import clayout`` (next to ``import numpy,
    pyopencl`` alone, in a child of its own, and their ratio); engine
    creation (on SYCL with ``import dpctl`` and the queue), and the two
    together (what clayout defers to the engine shows there); the first
    reorder of the process, f32 nchw (2,32,5,5) -> nChw16c: its two memories
    (from NumPy, zero-filled), the Reorder, execute and wait; a second new
    shape of the same pair, (3,48,7,7), the same way.
(b) model preparation: every convolution weight of ResNet-50 (torchvision's
    resnet50: 53 weights, 20 shapes), random f32 in oihw, into OIhw16i16o,
    each uploaded, reordered, executed and read back to NumPy ("process ms":
    from the launch of the process, imports included, to the last weight
    read; "transforms ms": the 53 transforms alone, making the random data
    left out). Against NumPy doing the same transform (padding O and I to 16,
    reshape, transpose) and oneDNN's reorder through its C API
    (benchmarks/onednn_prep.py, when oneDNN is installed: pip install onednn
    onednn-devel), each in fresh processes too.
Usage: python benchmarks/bench_startup.py [--runs 5] [--quick] [--json PATH]
       [--platforms pocl,intel,sycl] [--no-model]
"""
from __future__ import annotations

# Only what the children need at the top: they time their own imports, and
# the parent's modules (statistics, subprocess, tempfile) are imported where
# it uses them.
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: CLAYOUT_TIERS as the user set it, before common.py (which the parent
#: imports) turns tiers off for the other benchmarks: the children measure
#: clayout as a program meets it, tiers on unless the user says otherwise.
USER_TIERS = os.environ.get("CLAYOUT_TIERS")
ICD_FOLDERS = os.path.join(sys.prefix, "etc", "OpenCL", "clayout")
PLATFORMS = ("pocl", "intel", "sycl")
#: The parent's monotonic clock (seconds) at a child's launch.
LAUNCH_VAR = "CLAYOUT_BENCH_LAUNCH"
FIRST_DIMS, SECOND_DIMS = (2, 32, 5, 5), (3, 48, 7, 7)
BLOCK = 16
SEED = 34
CHILD_TIMEOUT_S = 600


# -- the model-preparation workload --------------------------------------------------

def resnet50_conv_weights() -> list[tuple[str, tuple[int, int, int, int]]]:
    """(name, (O, I, kh, kw)) of every convolution of torchvision's resnet50:
    conv1 7x7, then four stages of bottlenecks ([3, 4, 6, 3] blocks of widths
    64, 128, 256, 512; 1x1 in, 3x3, 1x1 out to 4x the width), the first block
    of each stage with a 1x1 downsample from the stage's input."""
    weights = [("conv1", (64, 3, 7, 7))]
    channels = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3)), start=1):
        out = 4 * width
        for block in range(blocks):
            name = f"layer{stage}.{block}"
            weights += [(f"{name}.conv1", (width, channels, 1, 1)),
                        (f"{name}.conv2", (width, width, 3, 3)),
                        (f"{name}.conv3", (out, width, 1, 1))]
            if block == 0:
                weights.append((f"{name}.downsample.0", (out, channels, 1, 1)))
            channels = out
    return weights


RESNET50_WEIGHTS = resnet50_conv_weights()
assert len(RESNET50_WEIGHTS) == 53, len(RESNET50_WEIGHTS)
assert len({dims for _, dims in RESNET50_WEIGHTS}) == 20


def random_weights():
    """(name, f32 oihw array) for each ResNet-50 weight, the same values in
    every child."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    for name, dims in RESNET50_WEIGHTS:
        yield name, rng.standard_normal(dims, dtype=np.float32)


def oihw16i16o_numpy(weight):
    """NumPy's OIhw16i16o of an oihw array: O and I zero-padded to multiples
    of 16, then blocks of 16 i outside blocks of 16 o, innermost."""
    import numpy as np

    o, i, h, w = weight.shape
    padded = np.pad(weight, ((0, -o % BLOCK), (0, -i % BLOCK), (0, 0), (0, 0)))
    blocks = padded.reshape(padded.shape[0] // BLOCK, BLOCK, padded.shape[1] // BLOCK, BLOCK,
                            h, w)
    return np.ascontiguousarray(blocks.transpose(0, 2, 4, 5, 3, 1))


def since_launch_ms():
    """Milliseconds since the parent launched this process (None when not
    launched by this script). The monotonic clock is the system's, the same
    in every process."""
    launch = os.environ.get(LAUNCH_VAR)
    return None if launch is None else (time.monotonic() - float(launch)) * 1e3


# -- the children (each prints one JSON line) ------------------------------------------

def make_engine(cly, platform: str):
    """The engine a child of ``platform`` runs on: the default OpenCL device
    (the only platform OCL_ICD_VENDORS names), or a SYCL queue on Intel's
    OpenCL CPU device. Exits when that is not what starts."""
    if platform == "sycl":
        import dpctl

        engine = cly.Engine(queue=dpctl.SyclQueue("opencl:cpu"))
    else:
        engine = cly.Engine()
    if not engine.is_device:
        raise SystemExit(f"no OpenCL device on {platform}: clayout made {engine!r}")
    return engine


def child_import_base() -> dict:
    """``import numpy, pyopencl`` alone: what any pyopencl program pays."""
    start = time.perf_counter()
    import numpy  # noqa: F401
    import pyopencl  # noqa: F401
    return {"import_base_ms": (time.perf_counter() - start) * 1e3}


def child_startup(platform: str) -> dict:
    """(a): ``import clayout``, the engine, the first reorder and a second
    new shape, each timed in turn in this one process."""
    start = time.perf_counter()
    import clayout as cly
    times = {"import_ms": (time.perf_counter() - start) * 1e3}
    start = time.perf_counter()
    engine = make_engine(cly, platform)
    times["engine_ms"] = (time.perf_counter() - start) * 1e3
    times["ready_ms"] = times["import_ms"] + times["engine_ms"]
    stream = cly.Stream(engine)
    times["first_ms"], first_impl = timed_reorder(cly, engine, stream, FIRST_DIMS)
    times["second_ms"], second_impl = timed_reorder(cly, engine, stream, SECOND_DIMS)
    return {**times, "device": engine.describe(), "impls": [first_impl, second_impl],
            "clayout": cly.__version__}


def timed_reorder(cly, engine, stream, dims) -> tuple[float, str]:
    """Milliseconds to make an f32 nchw memory from NumPy and a zero-filled
    nChw16c one of ``dims``, create the Reorder between them, execute it and
    wait; then (untimed) check the result. Returns (ms, the implementation)."""
    import numpy as np

    x = np.random.default_rng(SEED).standard_normal(dims, dtype=np.float32)
    src_md = cly.MemoryDesc(dims, "f32", tag="nchw")
    dst_md = cly.MemoryDesc(dims, "f32", tag="nChw16c")
    start = time.perf_counter()
    src = cly.Memory.from_numpy(src_md, engine, x)
    dst = cly.Memory(dst_md, engine)
    reorder = cly.Reorder(src_md, dst_md, engine=engine)
    reorder.execute(stream, src, dst)
    stream.wait()
    ms = (time.perf_counter() - start) * 1e3
    assert (dst.to_numpy() == x).all(), f"reorder of {dims} gave other values"
    return ms, reorder.impl


def child_model_clayout(platform: str) -> dict:
    """(b) with clayout: imports, engine, then each weight uploaded
    (Memory.from_numpy), a zero-filled OIhw16i16o memory, the Reorder
    created and executed, the destination's bytes read back (Memory.raw);
    two results checked against NumPy after the last time is taken."""
    import numpy as np

    import clayout as cly

    engine = make_engine(cly, platform)
    stream = cly.Stream(engine)
    transform, kept, impls = 0.0, {}, set()
    for name, weight in random_weights():
        start = time.perf_counter()
        src_md = cly.MemoryDesc(weight.shape, "f32", tag="oihw")
        dst_md = cly.MemoryDesc(weight.shape, "f32", tag="OIhw16i16o")
        src = cly.Memory.from_numpy(src_md, engine, weight)
        dst = cly.Memory(dst_md, engine)
        reorder = cly.Reorder(src_md, dst_md, engine=engine)
        reorder.execute(stream, src, dst)
        out = dst.raw(stream).view(np.float32)
        transform += time.perf_counter() - start
        impls.add(reorder.impl)
        if name in CHECKED:
            kept[name] = (weight, out)
    process_ms = since_launch_ms()
    check(kept, "clayout")
    return {"process_ms": process_ms, "transform_ms": transform * 1e3, "impls": sorted(impls),
            "device": engine.describe()}


def child_model_numpy() -> dict:
    """(b) with NumPy: the same weights through oihw16i16o_numpy."""
    import numpy  # noqa: F401  (imported here as the other children import theirs)

    transform = 0.0
    for _, weight in random_weights():
        start = time.perf_counter()
        oihw16i16o_numpy(weight)
        transform += time.perf_counter() - start
    return {"process_ms": since_launch_ms(), "transform_ms": transform * 1e3}


#: The weights whose results the children check: conv1 (I=3, padded to 16)
#: and the last downsample (no padding).
CHECKED = ("conv1", "layer4.0.downsample.0")


def check(kept: dict, who: str):
    """Assert each kept (weight, flat result) has NumPy's bytes."""
    for name, (weight, out) in kept.items():
        assert out.tobytes() == oihw16i16o_numpy(weight).tobytes(), \
            f"{who}'s OIhw16i16o bytes differ from NumPy's for {name} {weight.shape}"


CHILDREN = {"import-base": lambda platform: child_import_base(),
            "startup": child_startup,
            "model-clayout": child_model_clayout,
            "model-numpy": lambda platform: child_model_numpy()}


# -- the parent --------------------------------------------------------------------

class ChildFailed(RuntimeError):
    """A child process that exited with an error; the message ends its stderr."""


def run_child(command: list[str], env: dict) -> dict:
    """Run ``command`` (a child printing one JSON line last) with ``env`` and
    the launch time in LAUNCH_VAR. Returns its numbers, with "exit_ms": its
    whole life as the parent saw it, exit included. Raises ChildFailed when
    it fails or runs past CHILD_TIMEOUT_S."""
    import subprocess

    env = dict(env)
    env[LAUNCH_VAR] = repr(time.monotonic())
    what = " ".join([os.path.basename(command[1]), *command[2:]])
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, cwd=HERE, capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ChildFailed(f"{what} ran past {CHILD_TIMEOUT_S} s") from None
    exit_ms = (time.perf_counter() - start) * 1e3
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-6:]
        raise ChildFailed(f"{what} exited {done.returncode}: " + " | ".join(tail))
    return {**json.loads(lines[-1]), "exit_ms": exit_ms}


def ours(kind: str, platform: str = "none") -> list[str]:
    return [sys.executable, os.path.abspath(__file__), "--child", kind, "--platform", platform]


def platform_env(platform: str) -> dict:
    """The environment of a child on ``platform``: OCL_ICD_VENDORS names PoCL
    or Intel's runtime alone (SYCL: Intel's); PYOPENCL_CTX is dropped, and
    so is PYTHONDONTWRITEBYTECODE (main() compiles clayout's bytecode first,
    as pip does when it installs a package)."""
    dropped = ("PYOPENCL_CTX", "PYTHONDONTWRITEBYTECODE", "CLAYOUT_TIERS")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    if USER_TIERS is not None:
        env["CLAYOUT_TIERS"] = USER_TIERS
    env["OCL_ICD_VENDORS"] = os.path.join(ICD_FOLDERS, "intel" if platform == "sycl"
                                          else platform)
    return env


def cache_env(env: dict, folder: str) -> dict:
    """``env`` with every persistent cache in ``folder``: clayout's, PoCL's
    kernels, and whatever lives under XDG_CACHE_HOME (pyopencl's)."""
    paths = {"CLAYOUT_CACHE": "clayout", "POCL_CACHE_DIR": "pocl", "XDG_CACHE_HOME": "xdg"}
    for sub in paths.values():
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    return {**env, **{var: os.path.join(folder, sub) for var, sub in paths.items()}}


def empty_and_warm(command: list[str], env: dict, runs: int,
                   alongside: list[str] | None = None) -> tuple[list, list, list]:
    """``runs`` results of ``command`` with the caches empty (a new folder
    each run) and as many warm (one folder, filled by a first run not
    counted), alternating, and as many of ``alongside`` (no caches of its
    own), one in each round. Raises ChildFailed when a run fails."""
    import tempfile

    empty, warm, other = [], [], []
    with tempfile.TemporaryDirectory(prefix="clayout-warm-") as warm_folder:
        run_child(command, cache_env(env, warm_folder))
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="clayout-empty-") as folder:
                empty.append(run_child(command, cache_env(env, folder)))
            warm.append(run_child(command, cache_env(env, warm_folder)))
            if alongside:
                other.append(run_child(alongside, env))
    return empty, warm, other


def medians(results: list[dict]) -> dict:
    """The median of each number the results share, and the samples."""
    import statistics

    numeric = [k for k, v in results[0].items() if k.endswith("_ms") and v is not None]
    out = {k: statistics.median(r[k] for r in results) for k in numeric}
    out["samples"] = {k: [r[k] for r in results] for k in numeric}
    return out


def ms(value) -> str:
    return "-" if value is None else f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def ratio(a, b) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def startup_rows(platform: str, runs: int) -> list[dict]:
    """Table (a) for ``platform``: a row for empty and one for warm caches."""
    empty, warm, base = empty_and_warm(ours("startup", platform), platform_env(platform), runs,
                                       alongside=ours("import-base", platform))
    base = medians(base)
    rows = []
    for caches, results in (("empty", empty), ("warm", warm)):
        m = medians(results)
        rows.append({
            "platform": platform, "caches": caches,
            "numpy+pyopencl": ms(base["import_base_ms"]), "import clayout": ms(m["import_ms"]),
            "ratio": ratio(m["import_ms"], base["import_base_ms"]), "engine": ms(m["engine_ms"]),
            "import+engine": ms(m["ready_ms"]),
            "1st reorder": ms(m["first_ms"]), "2nd shape": ms(m["second_ms"]),
            "impl": results[0]["impls"][0],
            "data": {"table": "startup", "platform": platform, "caches": caches,
                     "device": results[0]["device"], "impls": results[0]["impls"],
                     "clayout": results[0]["clayout"],
                     "import_base_ms": base["import_base_ms"], **m,
                     "import_base_samples": base["samples"]["import_base_ms"]}})
    return rows


def model_rows(platform: str, runs: int) -> list[dict]:
    """Table (b) for clayout on ``platform``: empty and warm caches."""
    empty, warm, _ = empty_and_warm(ours("model-clayout", platform), platform_env(platform),
                                    runs)
    return [model_row(f"clayout {platform}", caches, results, {"impls": results[0]["impls"]})
            for caches, results in (("empty", empty), ("warm", warm))]


def model_row(what: str, caches: str, results: list[dict], extra=None) -> dict:
    m = medians(results)
    return {"what": what, "caches": caches, "process": m["process_ms"],
            "transforms": m["transform_ms"],
            "data": {"table": "model", "what": what, "caches": caches, **m, **(extra or {})}}


def reference_rows(runs: int) -> tuple[list[dict], list[str]]:
    """Table (b)'s NumPy row and, where it runs, oneDNN's (caches play no
    part: each run is a fresh process all the same). Returns (rows, notes)."""
    import tempfile

    onednn = [sys.executable, os.path.join(HERE, "onednn_prep.py")]
    with tempfile.TemporaryDirectory(prefix="clayout-ref-") as folder:
        env = cache_env(platform_env("intel"), folder)
        rows = [model_row("numpy", "-",
                          [run_child(ours("model-numpy"), env) for _ in range(runs)])]
        try:
            results = [run_child(onednn, env) for _ in range(runs)]
        except ChildFailed as e:
            return rows, [f"oneDNN skipped: {e}"]
    rows.append(model_row(f"oneDNN {results[0]['onednn']}", "-", results,
                          {"onednn": results[0]["onednn"]}))
    return rows, []


def finish_model_table(rows: list[dict]) -> list[dict]:
    """Format table (b): each process time also as a multiple of NumPy's and
    oneDNN's."""
    numpy_ms = next(r["process"] for r in rows if r["what"] == "numpy")
    onednn_ms = next((r["process"] for r in rows if r["what"].startswith("oneDNN")), None)
    for r in rows:
        r["data"].update(vs_numpy=r["process"] / numpy_ms,
                         vs_onednn=onednn_ms and r["process"] / onednn_ms)
        r.update({"/ numpy": ratio(r["process"], numpy_ms),
                  "/ oneDNN": ratio(r["process"], onednn_ms)})
        r["process ms"], r["transforms ms"] = ms(r.pop("process")), ms(r.pop("transforms"))
    return rows


def write_json(path, runs: int, rows: list[dict], notes: list[str]):
    """The rows' numbers (``row["data"]``) and what was skipped, to ``path``."""
    if path is None:
        return
    clayout = next((r["data"]["clayout"] for r in rows if "clayout" in r.get("data", {})), None)
    document = {"script": "bench_startup.py", "clayout": clayout, "runs": runs,
                "python": sys.version.split()[0], "notes": notes,
                "rows": [r["data"] for r in rows]}
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per median")
    parser.add_argument("--quick", action="store_true", help="2 runs (as --runs 2)")
    parser.add_argument("--platforms", default=",".join(PLATFORMS))
    parser.add_argument("--no-model", action="store_true", help="table (a) alone")
    parser.add_argument("--json", metavar="PATH", default=None)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--platform", default="none", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args.platform)))
        return
    from common import print_table  # the parent only: it imports clayout

    runs = 2 if args.quick else args.runs
    # Python's own bytecode of clayout, as an installed package has it: with
    # PYTHONDONTWRITEBYTECODE set (or a read-only checkout) every child would
    # compile clayout's modules from source, some 50 ms that no install pays.
    import compileall
    compileall.compile_dir(os.path.join(HERE, "..", "clayout"), quiet=1)
    if os.environ.get("CLAYOUT_VERBOSE"):
        print("CLAYOUT_VERBOSE is set: the times include writing verbose lines")
    startup, model, notes = [], [], []
    for platform in args.platforms.split(","):
        icd = platform_env(platform)["OCL_ICD_VENDORS"]
        if not os.path.isdir(icd):
            notes.append(f"{platform} skipped: no {icd} (make intel-opencl writes the "
                         f"ICD folders)")
            print(notes[-1])
            continue
        try:
            startup += startup_rows(platform, runs)
            if not args.no_model:
                model += model_rows(platform, runs)
        except ChildFailed as e:
            notes.append(f"{platform} skipped: {e}")
            print(notes[-1])
    if startup:
        print_table(f"(a) startup in a fresh process, ms, median of {runs} "
                    f"(ratio: import clayout / import numpy, pyopencl)", startup,
                    ["platform", "caches", "numpy+pyopencl", "import clayout", "ratio",
                     "engine", "import+engine", "1st reorder", "2nd shape", "impl"])
    if not args.no_model:
        rows, skipped = reference_rows(runs)
        notes += skipped
        print(*skipped, sep="\n")
        model = finish_model_table(model + rows)
        print_table(f"(b) ResNet-50's {len(RESNET50_WEIGHTS)} conv weights oihw -> OIhw16i16o, "
                    f"fresh process, ms, median of {runs}", model,
                    ["what", "caches", "process ms", "transforms ms", "/ numpy", "/ oneDNN"])
    write_json(args.json, runs, startup + model, notes)


if __name__ == "__main__":
    main()
