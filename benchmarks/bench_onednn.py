"""clayout against oneDNN on the same CPU: the same tensors, in the same run,
timed in turns.

Each row is made once on clayout's OpenCL engine (--platform: Intel's OpenCL
CPU runtime or PoCL) and once on oneDNN's CPU engine (its C API through
tests/dnnl.py; in the PyPI build that engine runs on SYCL over Intel's
OpenCL CPU runtime, whatever --platform says), from the same source bytes.
Then, many times over, one clayout execution and wait, one oneDNN execution
and wait, and one run of the device's float4 copy kernel moving as many
bytes (the order turned around every other turn). The bandwidth of a shared
machine drifts by 2x from minute to minute, so only ratios taken within a
turn are reported: "clayout/oneDNN" is the median over the turns of
clayout's time over oneDNN's (below 1: clayout is faster), "% copy" the
median of clayout's GB/s over the copy kernel's (bytes read + written).

The rows: every reorder of bench_reorder.py's CASES and every shuffle of
bench_shuffle.py (same types, tags and attributes; activations of --shapes,
smaller than those scripts' defaults so that the whole runs in minutes on 2
cores), plus convolution weights into oneDNN's blocked formats and the
blocked shuffles of nChw16c and nChw8c whose blocks cut across the group
digits (C = 272 and 116 in groups of 4, C = 58 in groups of 2). A row
oneDNN's CPU engine does not implement, or clayout refuses, is printed as
not run, with why.

Each row's destination is checked once: a layout-only row (same type, no
attribute) must give oneDNN's bytes exactly, a conversion the same values
within one unit of the destination type's last place (rounding of
scaled values); anything else stops the run.

Exits with status 77 (and why, on stderr) when oneDNN cannot be loaded.
Usage: python benchmarks/bench_onednn.py [--platform intel|pocl] [--repeats N]
       [--row-seconds S] [--shapes 8x256x56x56] [--weights OxIxHxW]
       [--only TEXT[,TEXT...]] [--json PATH]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
#: --platform: the ICD folder (scripts/ensure_intel_opencl.sh writes them)
#: and the name of the OpenCL platform clayout must run on. oneDNN needs
#: Intel's runtime in either case, so PoCL's rows use the folder of both.
PLATFORMS = {"intel": ("intel", "Intel(R) OpenCL"),
             "pocl": ("all", "Portable Computing Language")}
UNAVAILABLE = 77  # the exit status of "skipped" (automake's convention)


def _platform_from_argv() -> str:
    """--platform, read before anything asks OpenCL for its platforms."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--platform", choices=sorted(PLATFORMS), default="intel")
    return early.parse_known_args()[0].platform


# The ICD loader reads OCL_ICD_VENDORS once, when pyopencl or oneDNN's SYCL
# runtime first lists platforms: it is set before either is imported.
os.environ["OCL_ICD_VENDORS"] = os.path.join(sys.prefix, "etc", "OpenCL", "clayout",
                                             PLATFORMS[_platform_from_argv()][0])
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # dnnl.py and its reference.py

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import bench_reorder  # noqa: E402
from common import CopyKernel, cly, gbps, print_table, shapes, write_json  # noqa: E402

#: The weights rows: oihw f32 into each blocked format, for each shape.
WEIGHT_SHAPES = ((256, 256, 3, 3), (512, 512, 3, 3), (1024, 1024, 1, 1))
WEIGHT_TAGS = ("OIhw16i16o", "OIhw8i8o", "OIhw4i16o4i")
#: bench_shuffle.py's tags and its default groups; a group of 3 divides
#: neither 256 nor 272 channels, so its rows take the nearest that it and
#: nChw16c's blocks both divide (the channel count before, 288 after).
SHUFFLE_TAGS = ("nchw", "nhwc", "nChw16c")
SHUFFLE_GROUPS = (4, 3)
BLOCKED_SHUFFLE_C = 272  # blocks of 16 that cut across the groups of 4
#: bench_shuffle.py's second table: C:G whose blocks (nChw16c, nChw8c) cut
#: across the group digits (C/G not a multiple of the block), on 1xCxHxW.
CUT_SHUFFLES = ((272, 4), (116, 4), (58, 2))
CUT_TAGS = ("nChw16c", "nChw8c")


def _channels_for(group, channels):
    """``channels``, or the nearest larger count that both ``group`` and 16 divide."""
    while channels % group or channels % 16:
        channels += 1
    return channels


@dataclasses.dataclass(frozen=True)
class Row:
    """One problem both libraries run: a reorder (``attr``: bench_reorder's
    attribute kinds) or, with ``shuffle`` = (axis, group), a shuffle."""
    name: str
    dims: tuple
    sdt: str
    stag: str
    ddt: str
    dtag: str
    attr: str | None = None
    shuffle: tuple | None = None

    @property
    def case(self) -> str:
        return f"{self.name} {'x'.join(map(str, self.dims))}"

    @property
    def layout_only(self) -> bool:
        """True when only the layout changes: the bytes must be oneDNN's exactly."""
        return self.sdt == self.ddt and self.attr is None


# -- the rows ------------------------------------------------------------------------

def reorder_rows(activations, weights) -> list[Row]:
    """bench_reorder.py's CASES: activations and 8-bit float rows on
    ``activations``, its 4-D weights on ``weights`` (when given), the 2-D
    grouped rows and the 3-channel image at their own shape."""
    rows = []
    for name, sdt, stag, ddt, dtag, attr, own in bench_reorder.CASES:
        if own is None or own == bench_reorder.F8_SHAPE:
            cases = activations
        else:
            cases = [weights if weights and len(own) == 4 and own != bench_reorder.IMAGE_SHAPE
                     else own]
        rows += [Row(name, dims, sdt, stag, ddt, dtag, attr) for dims in cases]
    return rows


def weight_rows(weights) -> list[Row]:
    """oihw into each of WEIGHT_TAGS, a grouped and a depthwise weight (all
    derived from ``weights`` when given)."""
    plain = [weights] if weights else WEIGHT_SHAPES
    rows = [Row(f"oihw->{tag}", dims, "f32", "oihw", "f32", tag)
            for dims in plain for tag in WEIGHT_TAGS]
    o, i, h, w = weights or (256, 256, 3, 3)
    rows.append(Row("goihw->gOIhw16i16o", (2, o // 2, i // 2, h, w), "f32", "goihw", "f32",
                    "gOIhw16i16o"))
    rows.append(Row("goihw->Goihw16g depthwise", (2 * o, 1, 1, h, w), "f32", "goihw", "f32",
                    "Goihw16g"))
    return rows


def shuffle_rows(activations) -> list[Row]:
    """bench_shuffle.py's rows on ``activations`` and on C = 272 (as its
    second default shape, 1x272xHxW), along the channels, then those of its
    second table (CUT_SHUFFLES; the nChw16c one of C = 272 is already there)."""
    n, _, h, w = activations[0]
    rows = []
    for dims in [*activations, (1, BLOCKED_SHUFFLE_C, h, w)]:
        for group in SHUFFLE_GROUPS:
            if dims[1] % group:
                dims = (dims[0], _channels_for(group, dims[1]), *dims[2:])
            rows += [Row(f"shuffle {tag} group {group}", dims, "f32", tag, "f32", tag,
                         shuffle=(1, group)) for tag in SHUFFLE_TAGS]
    rows += [Row(f"shuffle {tag} group {group}", (1, channels, h, w), "f32", tag, "f32", tag,
                 shuffle=(1, group)) for channels, group in CUT_SHUFFLES for tag in CUT_TAGS]
    return rows


def all_rows(activations, weights, only) -> list[Row]:
    """Every row once (the weights rows repeat two of bench_reorder's), those
    whose name holds one of ``only``'s texts when given."""
    rows = reorder_rows(activations, weights) + weight_rows(weights) + shuffle_rows(activations)
    unique = list(dict.fromkeys(rows))
    if only:
        unique = [r for r in unique if any(text in r.name for text in only.split(","))]
    return unique


# -- attributes, the same for both ----------------------------------------------------

@dataclasses.dataclass
class Values:
    """A row's attribute: clayout's Attr, oneDNN's attribute entries
    (scales, zero points), and oneDNN's execute values (arg, kind, values, type)."""
    attr: object = None
    scales: list = dataclasses.field(default_factory=list)
    zero_points: list = dataclasses.field(default_factory=list)
    execute: list = dataclasses.field(default_factory=list)


def row_values(row: Row, rng) -> Values:
    """bench_reorder.py's attribute of ``row``, with the same draws."""
    dims, kind = row.dims, row.attr
    if kind == "scale":
        return Values(cly.Attr(src_scales=0.5), [("src", 0, None, "f32")], [],
                      [("src", "scales", np.float32([0.5]), "f32")])
    if kind == "per-channel":
        scales = rng.uniform(0.5, 2.0, dims[1]).astype(np.float32)
        return Values(cly.Attr(src_scales=cly.Scales(scales, mask=0b10)),
                      [("src", 0b10, None, "f32")], [], [("src", "scales", scales, "f32")])
    if kind != "groups":
        return Values()
    group = (1, bench_reorder.GROUP)
    count = dims[0] * dims[1] // bench_reorder.GROUP
    scales = rng.uniform(0.01, 0.1, count).astype(np.float16).astype(np.float32)
    values = Values(None, [("src", 0b11, group, "f16")], [], [("src", "scales", scales, "f16")])
    scale = cly.Scales(scales, mask=0b11, groups=group, data_type="f16")
    if row.sdt != "u4":
        values.attr = cly.Attr(src_scales=scale)
        return values
    zero_points = rng.integers(0, 16, count).astype(np.int32)
    values.attr = cly.Attr(src_scales=scale, src_zero_points=cly.ZeroPoints(
        zero_points, mask=0b11, groups=group, data_type="u4"))
    values.zero_points.append(("src", 0b11, group, "u4"))
    values.execute.append(("src", "zero_points", zero_points, "u4"))
    return values


def onednn_values(lib, values, dt):
    """A oneDNN memory of scales or zero points stored as ``dt``; 4-bit ones
    packed two to a byte as oneDNN reads them (clayout's host packing, which
    the tests check against oneDNN's)."""
    if dt not in ("s4", "u4"):
        return lib.values_memory(values, dt)
    md = cly.MemoryDesc((len(values),), dt, tag="a")
    packed = cly.Memory.from_numpy(md, cly.Engine("host"),
                                   np.asarray(values).astype(md.dtype.numpy)).raw()
    return lib.memory(lib.memory_desc((len(values),), dt, tag="a"), packed)


# -- the two sides ---------------------------------------------------------------------

class NotRun(Exception):
    """A row one of the libraries refuses: the message says which and why."""


@dataclasses.dataclass
class Pair:
    """A row made on both sides: each one's run-to-completion callable,
    implementation name and destination, and the bytes moved."""
    clayout_run: object
    clayout_impl: str
    clayout_dst: object
    onednn_run: object
    onednn_impl: str
    onednn_dst: object
    dst_md: object
    moved: int


def make_clayout(row, engine, stream, values, a):
    """clayout's primitive, memories and run. Raises NotRun when it refuses."""
    src_md = cly.MemoryDesc(row.dims, row.sdt, tag=row.stag)
    dst_md = cly.MemoryDesc(row.dims, row.ddt, tag=row.dtag)
    try:
        if row.shuffle:
            prim = cly.Shuffle(src_md, axis=row.shuffle[0], group_size=row.shuffle[1],
                               engine=engine)
        else:
            prim = cly.Reorder(src_md, dst_md, engine=engine, attr=values.attr)
    except cly.Error as error:
        raise NotRun(f"clayout: {error}") from None
    src = cly.Memory.from_numpy(src_md, engine, a)
    dst = cly.Memory(dst_md, engine)

    def run():
        prim.execute(stream, src, dst)
        stream.wait()

    return run, prim.impl, src, dst


def make_onednn(lib, row, values, src_raw):
    """oneDNN's primitive, memories (source: ``src_raw``) and run. Raises
    NotRun when its CPU engine implements no such primitive; any other
    failure is a wrapper's or a row's mistake and goes up."""
    import dnnl

    src = lib.memory_desc(row.dims, row.sdt, tag=row.stag)
    dst = lib.memory_desc(row.dims, row.ddt, tag=row.dtag)
    try:
        if row.shuffle:
            prim = lib.shuffle(src, dst, row.shuffle[0], row.shuffle[1])
        else:
            attr = lib.attr(values.scales, values.zero_points) \
                if values.scales or values.zero_points else None
            prim = lib.reorder(src, dst, attr)
    except dnnl.DnnlError as error:
        if error.status != "dnnl_unimplemented":
            raise
        raise NotRun(f"oneDNN: {error}") from None
    src_mem, dst_mem = lib.memory(src, src_raw), lib.memory(dst)
    bound = prim.bind(src_mem, dst_mem, [(arg, kind, onednn_values(lib, v, dt))
                                         for arg, kind, v, dt in values.execute])
    return (lambda: prim.execute(bound)), prim.impl, dst_mem


def make_pair(row, engine, stream, lib) -> Pair:
    """Both sides of ``row`` on the same source bytes. Raises NotRun."""
    rng = np.random.default_rng(0)
    a = bench_reorder.source_values(row.dims, row.sdt, rng)
    values = row_values(row, rng)
    c_run, c_impl, src, dst = make_clayout(row, engine, stream, values, a)
    src_raw = np.ascontiguousarray(src.raw()).view(np.uint8).reshape(-1)
    o_run, o_impl, o_dst = make_onednn(lib, row, values, src_raw)
    return Pair(c_run, c_impl, dst, o_run, o_impl, o_dst, dst.md, src.md.size + dst.md.size)


# -- the check -------------------------------------------------------------------------

def tolerance(dt: str):
    """(relative, absolute) difference a conversion into ``dt`` may show:
    one unit in the last place (one for integers)."""
    numpy_type = cly.MemoryDesc((1,), dt).dtype.numpy
    if np.issubdtype(numpy_type, np.integer) or dt in ("s4", "u4"):
        return 0.0, 1.0
    info = ml_dtypes.finfo(numpy_type)
    return float(info.eps), float(info.smallest_subnormal)


def check(row: Row, pair: Pair) -> str:
    """Compare the two destinations once, after the first runs: "exact", or
    for a conversion "N of M within 1 ulp". Raises AssertionError otherwise."""
    mine = np.ascontiguousarray(pair.clayout_dst.raw()).view(np.uint8).reshape(-1)
    theirs = pair.onednn_dst.read()
    if mine.size != theirs.size:
        raise AssertionError(f"{row.case}: clayout's destination has {mine.size} bytes, "
                             f"oneDNN's {theirs.size}")
    if np.array_equal(mine, theirs):
        return "exact"
    where = np.flatnonzero(mine != theirs)
    if row.layout_only:
        raise AssertionError(f"{row.case}: {where.size} bytes differ from oneDNN's, the first "
                             f"at byte {where[0]} ({mine[where[0]]} against {theirs[where[0]]})")
    host = cly.Engine("host")
    ours = cly.Memory(pair.dst_md, host, raw=mine).to_numpy().astype(np.float64)
    other = cly.Memory(pair.dst_md, host, raw=theirs).to_numpy().astype(np.float64)
    rtol, atol = tolerance(row.ddt)
    close = np.isclose(ours, other, rtol=rtol, atol=atol, equal_nan=True)
    if not close.all():
        at = np.argwhere(~close)[0]
        raise AssertionError(f"{row.case}: {np.count_nonzero(~close)} values differ from "
                             f"oneDNN's by more than one unit, at {tuple(at)}: "
                             f"{ours[tuple(at)]} against {other[tuple(at)]}")
    # f8 destinations: oneDNN rounds to f16 first, then to f8 (tests/onednn_differences.py's
    # f8_through_f16), so values beside an f8 tie part by one unit.
    return f"{np.count_nonzero(ours != other)} of {ours.size} within 1 ulp"


# -- timing -------------------------------------------------------------------------------

#: A row of a fraction of a millisecond gets more turns than --repeats (its
#: ratio is noisier), up to --row-seconds of turns, at most MAX_TURNS.
MAX_TURNS = 400


def in_turns(runs, repeats: int, row_seconds: float) -> list[list[float]]:
    """Seconds of each of ``runs`` (callables that finish their work), one
    of each per turn, after a first turn untimed: ``repeats`` turns, or as
    many as fill ``row_seconds``. The order is reversed every other turn,
    so neither side always follows the other."""
    start = time.perf_counter()
    for run in runs:
        run()
    turn_seconds = time.perf_counter() - start
    turns = max(repeats, min(MAX_TURNS, int(row_seconds / max(turn_seconds, 1e-6))))
    times = [[] for _ in runs]
    for turn in range(turns):
        order = list(range(len(runs)))
        for k in (order if turn % 2 == 0 else order[::-1]):
            start = time.perf_counter()
            runs[k]()
            times[k].append(time.perf_counter() - start)
    return times


def measure(row: Row, pair: Pair, copy: CopyKernel, args, checked: str) -> dict:
    """Time ``pair`` in turns with ``copy`` (--repeats, --row-seconds): the
    table's row, its numbers in "data"."""
    ours, theirs, copies = in_turns([pair.clayout_run, pair.onednn_run, copy.run],
                                    args.repeats, args.row_seconds)
    rates = [gbps(2 * copy.nbytes, t) for t in copies]
    copy.rates += rates
    ratio = statistics.median(c / o for c, o in zip(ours, theirs))
    share = statistics.median(gbps(pair.moved, c) / r for c, r in zip(ours, rates))
    their_share = statistics.median(gbps(pair.moved, o) / r for o, r in zip(theirs, rates))
    t_c, t_o = statistics.median(ours), statistics.median(theirs)
    data = {"case": row.case, "impl": pair.clayout_impl, "onednn_impl": pair.onednn_impl,
            "seconds": t_c, "onednn_seconds": t_o, "gbps": gbps(pair.moved, t_c),
            "onednn_gbps": gbps(pair.moved, t_o), "over_onednn": ratio,
            "share_of_copy": share, "onednn_share_of_copy": their_share,
            "pairs": len(ours), "check": checked}
    return {"case": row.case, "impl": pair.clayout_impl, "oneDNN impl": pair.onednn_impl,
            "ms": f"{t_c * 1e3:.2f}", "oneDNN ms": f"{t_o * 1e3:.2f}",
            "GB/s": f"{data['gbps']:.2f}", "oneDNN GB/s": f"{data['onednn_gbps']:.2f}",
            "clayout/oneDNN": f"{ratio:.3g}", "% copy": f"{100 * share:.0f}%",
            "oneDNN % copy": f"{100 * their_share:.0f}%", "turns": len(ours), "check": checked,
            "data": data}


COLUMNS = ["case", "impl", "oneDNN impl", "ms", "oneDNN ms", "GB/s", "oneDNN GB/s",
           "clayout/oneDNN", "% copy", "oneDNN % copy", "turns", "check"]


def run_row(row, engine, stream, lib, copies, args) -> dict:
    """A row measured, or printed as not run with the reason."""
    try:
        pair = make_pair(row, engine, stream, lib)
    except NotRun as why:
        print(f"not run: {row.case}: {why}", flush=True)
        return {"case": row.case, "impl": "not run", "check": str(why),
                "data": {"case": row.case, "skipped": str(why)}}
    pair.clayout_run()
    pair.onednn_run()
    checked = check(row, pair)
    # a copy moving as many bytes: small rows pay the same launch cost
    nbytes = max(16, pair.moved // 32 * 16)
    copy = copies.setdefault(nbytes, CopyKernel(engine, nbytes))
    result = measure(row, pair, copy, args, checked)
    print(f"{row.case}: clayout/oneDNN {result['clayout/oneDNN']} ({checked})", flush=True)
    return result


# -- the run ---------------------------------------------------------------------------

def clayout_engine(platform: str):
    """An OpenCL engine on ``platform``'s device, chosen by the platform's
    name (PoCL's rows see Intel's runtime too; PYOPENCL_CTX plays no part)."""
    import pyopencl as cl

    wanted = PLATFORMS[platform][1]
    found = [p for p in cl.get_platforms() if p.name == wanted]
    if not found:
        names = [p.name for p in cl.get_platforms()]
        raise SystemExit(f"--platform {platform}: no OpenCL platform {wanted!r} "
                         f"(OCL_ICD_VENDORS={os.environ['OCL_ICD_VENDORS']} shows {names})")
    engine = cly.Engine("opencl", device=found[0].get_devices()[0])
    assert engine.device.platform.name == wanted, engine
    return engine


def load_onednn():
    """tests/dnnl.py's oneDNN; exits with UNAVAILABLE, saying why, when it
    cannot load."""
    import dnnl

    try:
        return dnnl.onednn()
    except dnnl.Unavailable as why:
        print(f"oneDNN unavailable: {why}", file=sys.stderr)
        raise SystemExit(UNAVAILABLE)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=sorted(PLATFORMS), default="intel",
                        help="the OpenCL implementation clayout runs on (oneDNN: always "
                             "Intel's, through SYCL)")
    parser.add_argument("--repeats", type=int, default=21, help="turns per row, at least")
    parser.add_argument("--row-seconds", type=float, default=0.5,
                        help="more turns for a short row, up to this long (0: --repeats)")
    parser.add_argument("--shapes", default="8x256x56x56",
                        help="activation shapes (reorders, 8-bit floats, shuffles)")
    parser.add_argument("--weights", default=None,
                        help="one OxIxHxW for every weights row (default: 256x256x3x3, "
                             "512x512x3x3, 1024x1024x1x1 and bench_reorder's own)")
    parser.add_argument("--only", default=None,
                        help="run the rows whose name holds TEXT (several: TEXT,TEXT)")
    parser.add_argument("--json", metavar="PATH", default=None,
                        help="also write the results to PATH")
    return parser.parse_args()


def main():
    args = parse_args()
    lib = load_onednn()
    engine = clayout_engine(args.platform)
    stream = cly.Stream(engine)
    print(f"clayout: {engine} ({engine.device.platform.name}), {engine.profile.strategy} "
          f"strategy; oneDNN {lib.version}, CPU engine (SYCL over Intel's OpenCL CPU runtime)")
    activations = shapes(args.shapes)
    weights = shapes(args.weights)[0] if args.weights else None
    copies, rows = {}, []
    for row in all_rows(activations, weights, args.only):
        rows.append(run_row(row, engine, stream, lib, copies, args))
    print_table(f"clayout on {engine.device.platform.name} against oneDNN {lib.version} "
                f"(CPU engine), median of at least {args.repeats} turns; activations "
                f"{args.shapes} "
                f"(also for the 8-bit float rows and the shuffles, which bench_reorder.py "
                f"and bench_shuffle.py run on 16 and 32 images)",
                rows, COLUMNS)
    write_json(args.json, "onednn", engine, rows, copies.values())
    if args.json:
        add_to_json(args.json, platform=engine.device.platform.name, onednn=lib.version,
                    min_turns=args.repeats, row_seconds=args.row_seconds)


def add_to_json(path, **entries):
    """Add ``entries`` to the document write_json wrote at ``path``."""
    import json

    with open(path) as f:
        document = json.load(f)
    document.update(entries)
    with open(path, "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
