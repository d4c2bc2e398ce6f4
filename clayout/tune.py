"""``python -m clayout tune``: measure each kernel family's candidate
parameters on this device and keep the fastest (clayout/tuning_table.py).

For each family (gpu/families.py) the tuner runs one representative problem
with every candidate: each strategy, with its Tuning's block sizes, work-group
sizes, elements per work-item, tile and vector widths. Candidates that plan
the same kernel are timed once; a candidate that does not build or launch is
skipped; one whose output differs from the host path's is refused. Each
time is paired with the device's own float4 copy kernel moving as many bytes
(interleaved, device times from profiling events) and the median of the
pair ratios is the candidate's share of copy, so a machine whose bandwidth
drifts still ranks candidates fairly.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import dataclass, replace

import numpy as np

from .gpu.families import FAMILIES
from .gpu.profile import CPU_TUNING, GPU_TUNING
from .gpu.shapes import SHAPES

USAGE_DEVICE = ("the OpenCL device: its index in python -m clayout info's list, or "
                "PYOPENCL_CTX's form (default: PYOPENCL_CTX, else Engine()'s choice)")

#: A candidate replaces the defaults only when its share of copy is this
#: much higher (relative): medians of 9 pairs on a 2-core machine still
#: move by a few percent from run to run.
MARGIN = 0.03

COPY_SOURCE = """
__kernel void copy_float4(__global const float4 *restrict src, __global float4 *restrict dst)
{
    dst[get_global_id(0)] = src[get_global_id(0)];
}
"""


@dataclass(frozen=True)
class Case:
    """A family's representative problem: ``make(engine, dims)`` returns
    (primitive-maker, src MemoryDesc, dst MemoryDesc)."""

    family: str
    label: str
    dims: tuple
    quick_dims: tuple


def _problems():
    import clayout as cly

    def reorder(src_tag, dst_tag, dst_type="f32", attr=None):
        def make(engine, dims):
            src = cly.MemoryDesc(dims, "f32", tag=src_tag)
            dst = cly.MemoryDesc(dims, dst_type, tag=dst_tag)
            return (lambda e: cly.Reorder(src, dst, engine=e, attr=attr)), src, dst
        return make

    def shuffle(tag, group):
        def make(engine, dims):
            src = cly.MemoryDesc(dims, "f32", tag=tag)
            return (lambda e: cly.Shuffle(src, 1, group, engine=e)), src, src
        return make

    return {
        "convert": (Case("convert", "f32 -> s8, scale 0.5", (8, 256, 56, 56), (2, 64, 56, 56)),
                    reorder("abcd", "abcd", "s8", cly.Attr(src_scales=0.5))),
        "transpose": (Case("transpose", "f32 nchw -> nhwc", (8, 256, 56, 56), (2, 64, 56, 56)),
                      reorder("nchw", "nhwc")),
        "blocked": (Case("blocked", "f32 nchw -> nChw16c", (8, 256, 56, 56), (2, 64, 56, 56)),
                    reorder("nchw", "nChw16c")),
        "weights": (Case("weights", "f32 oihw -> OIhw4i16o4i", (256, 256, 3, 3),
                         (128, 128, 3, 3)), reorder("oihw", "OIhw4i16o4i")),
        "shuffle": (Case("shuffle", "shuffle f32 nChw16c C=272 group 4", (4, 272, 56, 56),
                         (1, 272, 28, 28)), shuffle("nChw16c", 4)),
    }


def candidates(strategy: str, quick: bool) -> list:
    """The Tunings tried for ``strategy``, the default first."""
    base = CPU_TUNING if strategy == "cpu" else GPU_TUNING
    # Each kernel shape of the strategy's list (gpu/shapes.py) as a candidate:
    # the planner's first choice, then each one passed over so that the next
    # one serves (the last serves every problem).
    shapes = [()] + [(shape.name,) for shape in SHAPES[strategy][:-1]]
    if strategy == "cpu":
        grid = dict(block_sizes=[(16, 8, 4), (8, 4), (4,)], work_group=[256, 64],
                    byte_block_sizes=[(16, 8, 4), (8, 4)],
                    items_per_unit=[2048, 8192], max_chunks=[1, 4], skip_shapes=shapes)
        if quick:
            grid = dict(block_sizes=grid["block_sizes"], work_group=grid["work_group"],
                        skip_shapes=shapes)
    else:
        grid = dict(tile_bytes=[16 << 10, 8 << 10, 32 << 10], vector_bytes=[16, 8],
                    work_group=[256, 128], narrow_bytes=[16, 8], skip_shapes=shapes)
        if quick:
            grid = dict(tile_bytes=[16 << 10, 8 << 10], work_group=[256, 128],
                        skip_shapes=shapes)
    out = [base]
    for values in itertools.product(*grid.values()):
        tuning = replace(base, **dict(zip(grid, values)))
        if tuning not in out:
            out.append(tuning)
    return out


class _Timer:
    """Device times of a case and of a copy of as many bytes, in turns."""

    def __init__(self, engine, nbytes: int):
        import pyopencl as cl

        from .gpu.build import compile_program

        self.cl = cl
        self.queue = cl.CommandQueue(engine.context, engine.device,
                                     properties=cl.command_queue_properties.PROFILING_ENABLE)
        program, _ = compile_program(engine.context, COPY_SOURCE, [])
        self.kernel = cl.Kernel(program, "copy_float4")
        self.items = max(1, nbytes // 16)
        self.src = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, self.items * 16)
        self.dst = cl.Buffer(engine.context, cl.mem_flags.READ_WRITE, self.items * 16)
        self.kernel.set_args(self.src, self.dst)

    def copy_seconds(self) -> float:
        event = self.cl.enqueue_nd_range_kernel(self.queue, self.kernel, (self.items,), None)
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9


def _share_of_copy(run, timer: _Timer, repeats: int) -> float:
    """Median over ``repeats`` of copy time / case time, timed in turns."""
    run(), timer.copy_seconds()  # warm up both
    ratios = []
    for _ in range(repeats):
        case = run()
        ratios.append(timer.copy_seconds() / max(case, 1e-9))
    return statistics.median(ratios)


def tune_family(engine, family: str, quick: bool, repeats: int, say) -> dict | None:
    """Time every candidate for ``family`` on ``engine``; the table entry
    of the fastest (clayout/tuning_table.entry), or None if none ran."""
    import clayout as cly

    from .tuning_table import entry

    case, make = _problems()[family]
    dims = case.quick_dims if quick else case.dims
    maker, src_md, dst_md = make(engine, dims)
    rng = np.random.default_rng(0)
    values = rng.uniform(-100, 100, dims).astype(np.float32)
    host = cly.Engine("host")
    src_host = cly.Memory.from_numpy(src_md, host, values)
    dst_host = cly.Memory(maker(host).dst_md, host)
    maker(host).execute(cly.Stream(host), src_host, dst_host)
    want = dst_host.raw()

    src = cly.Memory.from_numpy(src_md, engine, values)
    base = engine.profile
    strategies = [base.strategy] + [s for s in ("cpu", "gpu") if s != base.strategy]
    trials = [(s, t) for s in strategies for t in candidates(s, quick)]
    say(f"{family} ({case.label}, {'x'.join(map(str, dims))}): {len(trials)} candidates ")
    timer = None
    seen, results, failures, runs = {}, [], [], {}  # seen: plan -> (ratio, run)
    for strategy, tuning in trials:
        trial = cly.Engine("opencl", context=engine.context)
        trial.profile = replace(base, strategy=strategy, tuning=tuning, tuned=(), forced=False)
        try:
            primitive = maker(trial)
            plan = getattr(primitive._implementation, "plan", None)
            if plan is not None and plan in seen:  # the same kernel: timed already
                ratio, runs[(strategy, tuning)] = seen[plan]
                results.append((ratio, strategy, tuning))
                say("=")
                continue
            dst = cly.Memory(primitive.dst_md, engine)
            stream = cly.Stream(trial, profiling=True)
            primitive.execute(stream, src, dst).wait()
            if not np.array_equal(dst.raw(), want):
                say("x")  # a candidate that is not exact never counts
                continue
            if timer is None:
                timer = _Timer(engine, (src_md.size + dst.md.size) // 2)

            def run(primitive=primitive, stream=stream, dst=dst):
                event = primitive.execute(stream, src, dst)
                event.wait()
                return (event.profile.end - event.profile.start) * 1e-9

            ratio = _share_of_copy(run, timer, repeats)
            runs[(strategy, tuning)] = run
        except Exception as error:  # noqa: BLE001 - a candidate that fails is skipped
            say("!")
            failures.append(f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
            continue
        if plan is not None:
            seen[plan] = ratio, run
        results.append((ratio, strategy, tuning))
        say(".")
    if failures:
        say(f" ({len(failures)} skipped: {failures[0]})")
    if not results:
        say(" none ran\n")
        return None
    default = next((r for r, s, t in results if s == base.strategy and t == trials[0][1]), None)
    ratio, strategy, tuning = max(results, key=lambda r: r[0])
    default_run = runs.get((base.strategy, trials[0][1]))
    best_run = runs.get((strategy, tuning))
    if default is not None and ratio >= default * (1 + MARGIN) and best_run and default_run:
        # The winner of many noisy medians: measured again against the
        # defaults, in turns, before it replaces them.
        say(" confirming")
        for _ in range(2):
            ratio = _share_of_copy(best_run, timer, repeats)
            default = _share_of_copy(default_run, timer, repeats)
    if default is not None and ratio < default * (1 + MARGIN):
        # Within the measurement's noise of the defaults: keep them.
        ratio, strategy, tuning = default, base.strategy, trials[0][1]
    plain = CPU_TUNING if strategy == "cpu" else GPU_TUNING
    changes = tuning.changes(plain)
    text = ", ".join(f"{k}={v}" for k, v in changes.items()) or "defaults"
    say(f" best {ratio:.2f} of copy ({strategy}: {text})"
        + (f", defaults {default:.2f}\n" if default is not None else "\n"))
    return entry(strategy, changes, ratio, default if default is not None else 0.0,
                 len(trials))


def _pick_engine(device_arg):
    import clayout as cly
    from clayout.engine import opencl_devices

    if device_arg is None:
        return cly.Engine("opencl")
    devices = opencl_devices()
    if device_arg.isdigit() and int(device_arg) < len(devices):
        return cly.Engine("opencl", device=devices[int(device_arg)])
    import pyopencl as cl

    return cly.Engine("opencl", context=cl.create_some_context(interactive=False,
                                                                answers=device_arg.split(":")))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m clayout tune",
        description="Measure each kernel family's parameters on this device and keep the "
                    "fastest in a tuning table that clayout reads from then on.")
    parser.add_argument("--quick", action="store_true",
                        help="fewer candidates and smaller problems (a few minutes on 2 cores)")
    parser.add_argument("--only", action="append", choices=FAMILIES, metavar="FAMILY",
                        help=f"tune this family alone (one of {', '.join(FAMILIES)}; "
                             f"repeatable); the table keeps the others")
    parser.add_argument("--device", help=USAGE_DEVICE)
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed pairs per candidate (default 5 with --quick, else 9)")
    parser.add_argument("--output", help="write the table here instead of the user's cache")
    args = parser.parse_args(argv)
    from .tuning_table import Identity, load_raw, save, table_path

    try:
        engine = _pick_engine(args.device)
    except Exception as error:  # noqa: BLE001 - pyopencl's or clayout's: say which
        print(f"tune: no device for --device={args.device!r}: {error}", file=sys.stderr)
        return 2
    if not engine.is_opencl:
        print("tune: no OpenCL device to tune (python -m clayout info says what there is)",
              file=sys.stderr)
        return 2
    identity = Identity.of(engine.device)
    path = args.output or table_path(identity)
    families = args.only or list(FAMILIES)
    repeats = args.repeats or (5 if args.quick else 9)
    # Tune against the defaults, whatever table is in force now.
    engine.profile = replace(engine.profile, tuned=(), forced=False)
    print(f"tuning {identity.device} ({identity.platform}, driver {identity.driver}): "
          f"{len(families)} families{' (quick)' if args.quick else ''}; "
          f"'.' timed, '=' same kernel as one timed, 'x' not exact, '!' failed")
    start = time.perf_counter()
    kept = load_raw(path, identity) if args.only else {}
    for index, family in enumerate(families, 1):
        print(f"[{index}/{len(families)}] ", end="")
        result = tune_family(engine, family, args.quick, repeats,
                             lambda text: print(text, end="", flush=True))
        if result is not None:
            kept[family] = result
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    written = save(identity, kept, when, path)
    print(f"wrote {written} ({time.perf_counter() - start:.0f} s)")
    return 0
