"""A benchdnn-compatible command line for the reorder and shuffle drivers.

    python -m clayout.benchdnn --reorder --sdt=f32 --ddt=s8 --stag=abx --dtag=aBx16b 2x17x3x3
    python -m clayout.benchdnn --shuffle --batch=path/to/test_shuffle_ci
    python -m clayout.benchdnn --mode=P --reorder --stag=nchw --dtag=nhwc 32x256x56x56

Options apply to the problems after them until ``--reset`` (or a new driver);
comma-separated values multiply the problems; ``--batch=FILE`` reads options
and problems from a file (``#`` comments, ``\\`` continuations; nested batch
paths resolve from the file's folder). ``--mode=C`` checks each problem
against an f32 reference written here; ``--mode=P`` times it. ``--engine=``
picks ``opencl`` or ``host``. Options clayout does not serve mark the
problems SKIPPED with the reason.
"""
from __future__ import annotations

import itertools
import math
import pathlib
import re
import shlex
import statistics
import sys
import time

import numpy as np

from . import Attr, Engine, Memory, MemoryDesc, Reorder, Scales, Shuffle, Stream, ZeroPoints
from .dtypes import DATA_TYPES
from .errors import InvalidArgumentError, UnimplementedError

DEFAULTS = {
    "reorder": {"sdt": "f32", "ddt": "f32", "stag": "abx", "dtag": "abx", "attr-scales": "",
                "attr-zero-points": "", "attr-post-ops": "", "runtime-dim-mask": "0",
                "oflag": "", "cross-engine": "none", "strides": ""},
    "shuffle": {"dir": "FWD_D", "dt": "f32", "tag": "abx", "axis": "1", "group": "1"},
}
# Options of either driver that change nothing clayout computes.
NEUTRAL = {"allow-enum-tags-only", "match", "start", "skip-impl", "impl", "inplace",
           "attr-scratchpad", "ctx-init", "ctx-exe", "cpu-isa-hints", "memory-kind",
           "fix-times-per-prb", "max-ms-per-prb", "num-streams", "verbose", "canonical",
           "cold-cache", "check-ref-impl", "repeats-per-prb", "v", "summary"}
_PROBLEM = re.compile(r'^(\d+(?:x\d+)*)(?:_n"?([^"]*)"?)?$')


class Outcome:
    def __init__(self, status, reason=""):
        self.status, self.reason = status, reason


class Session:
    """The state of a benchdnn run: driver, options in force, counters."""

    def __init__(self, out=sys.stdout):
        self.driver = None
        self.options = {}
        self.unsupported = {}
        self.mode = "C"
        self.engine_kind = None
        self._engine = None
        self.counts = dict.fromkeys(
            ("tests", "passed", "skipped", "mistrusted", "unimplemented", "failed"), 0)
        self.out = out
        self.repeats = 5

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(self.engine_kind)
        return self._engine

    def set_driver(self, driver):
        self.driver = driver
        self.reset()

    def reset(self):
        self.options = {k: [v] for k, v in DEFAULTS.get(self.driver, {}).items()}
        self.unsupported = {}

    # -- parsing ----------------------------------------------------------------

    def run_tokens(self, tokens, folder: pathlib.Path):
        for token in tokens:
            self.run_token(token, folder)

    def run_token(self, token: str, folder: pathlib.Path):
        if token in ("--reorder", "--shuffle"):
            self.set_driver(token[2:])
            return
        if token == "--reset":
            self.reset()
            return
        if token.startswith("--"):
            name, _, value = token[2:].partition("=")
            if name == "driver":
                self.set_driver(value)
            elif name == "batch":
                path = (folder / value) if not pathlib.Path(value).is_absolute() else pathlib.Path(value)
                if not path.is_file():
                    raise InvalidArgumentError(f"--batch={value}: no file {path}")
                self.run_tokens(batch_tokens(path), path.parent)
            elif name == "mode":
                if value.upper() not in ("C", "P", "CP", "PC"):
                    raise InvalidArgumentError(f"--mode={value}: expected C or P")
                self.mode = value.upper()
            elif name == "engine":
                if value not in ("opencl", "host", "cpu", "gpu"):
                    raise InvalidArgumentError(f"--engine={value}: expected opencl or host")
                self.engine_kind = "host" if value in ("host", "cpu") else "opencl"
                self._engine = None
            elif name in self.options:
                self.options[name] = value.split(",")
            elif name in NEUTRAL:
                pass
            else:
                self.unsupported[name] = value
            return
        if self.driver is None:
            raise InvalidArgumentError(f"problem {token!r} before --reorder or --shuffle")
        match = _PROBLEM.match(token)
        if not match:
            raise InvalidArgumentError(f"problem {token!r}: expected dims like 2x16x3x4")
        dims = tuple(int(x) for x in match.group(1).split("x"))
        keys = list(self.options)
        for values in itertools.product(*(self.options[k] for k in keys)):
            self.run_problem(dims, dict(zip(keys, values)))

    # -- problems -----------------------------------------------------------------

    def repro(self, dims, options) -> str:
        defaults = DEFAULTS[self.driver]
        shown = [f"--{k}={v}" for k, v in options.items() if v != defaults[k]]
        shown += [f"--{k}={v}" for k, v in self.unsupported.items()]
        return " ".join([f"--{self.driver}"] + shown + ["x".join(map(str, dims))])

    def run_problem(self, dims, options):
        index = self.counts["tests"]
        self.counts["tests"] += 1
        start = time.perf_counter()
        try:
            outcome = self.check(dims, options)
        except UnimplementedError as error:
            outcome = Outcome("UNIMPLEMENTED", str(error))
        except InvalidArgumentError as error:
            outcome = Outcome("SKIPPED", f"invalid case: {error}")
        key = {"PASSED": "passed", "SKIPPED": "skipped", "MISTRUSTED": "mistrusted",
               "UNIMPLEMENTED": "unimplemented", "FAILED": "failed"}[outcome.status]
        self.counts[key] += 1
        reason = f" ({outcome.reason})" if outcome.reason else ""
        ms = (time.perf_counter() - start) * 1e3
        print(f"{index}:{outcome.status}{reason} ({ms:.0f} ms) __REPRO: {self.repro(dims, options)}",
              file=self.out, flush=True)

    def check(self, dims, options) -> Outcome:
        for name, value in self.unsupported.items():
            return Outcome("SKIPPED", f"option --{name}={value} is not supported by clayout")
        if self.driver == "reorder":
            return self.check_reorder(dims, options)
        return self.check_shuffle(dims, options)

    def check_reorder(self, dims, o) -> Outcome:
        if o["runtime-dim-mask"] not in ("", "0"):
            return Outcome("SKIPPED", f"--runtime-dim-mask={o['runtime-dim-mask']}: "
                                      "runtime dims are not supported")
        if o["oflag"]:
            return Outcome("SKIPPED", f"--oflag={o['oflag']}: compensation flags are not supported")
        if o["cross-engine"] not in ("", "none"):
            return Outcome("SKIPPED", f"--cross-engine={o['cross-engine']}: not supported")
        if o["strides"]:
            return Outcome("SKIPPED", f"--strides={o['strides']}: not supported yet")
        for arg in ("sdt", "ddt"):
            if o[arg] not in DATA_TYPES:
                raise UnimplementedError(f"data type {o[arg]} is not supported by clayout")
        src_md = MemoryDesc(dims, o["sdt"], tag=o["stag"])
        dst_md = MemoryDesc(dims, o["ddt"], tag=o["dtag"])
        attr = parse_attr(o, len(dims), dims, self.problem_rng(dims, o))
        engine = self.engine
        prim = Reorder(src_md, dst_md, engine=engine, attr=attr)
        rng = self.problem_rng(dims, o)
        src_values = fill_reorder_source(src_md, dst_md, rng)
        old = fill_values(dst_md.data_type, dims, rng, 16) if attr and attr.sum_beta is not None \
            else np.zeros(dims, dst_md.dtype.numpy)
        src = Memory.from_numpy(src_md, engine, src_values)
        dst = Memory.from_numpy(dst_md, engine, old)
        stream = Stream(engine)
        if "P" in self.mode:
            return self.time(prim, stream, src, dst, src_md.size + dst_md.size)
        prim.execute(stream, src, dst)
        stream.wait()
        expect = reference_reorder(src_values, old, dst_md.dtype, attr)
        return compare(dst.to_numpy(), expect, dst_md.dtype, exact=attr is None)

    def check_shuffle(self, dims, o) -> Outcome:
        if o["dt"] not in DATA_TYPES:
            raise UnimplementedError(f"data type {o['dt']} is not supported by clayout")
        direction = o["dir"].upper()
        if direction not in ("FWD_D", "FWD_I", "BWD_D"):
            raise InvalidArgumentError(f"--dir={o['dir']}: expected FWD_D, FWD_I or BWD_D")
        axis, group = int(o["axis"]), int(o["group"])
        md = MemoryDesc(dims, o["dt"], tag=o["tag"])
        engine = self.engine
        prim = Shuffle(md, axis=axis, group_size=group, backward=direction == "BWD_D",
                       engine=engine)
        values = fill_values(o["dt"], dims, self.problem_rng(dims, o), None)
        src = Memory.from_numpy(md, engine, values)
        dst = Memory(md, engine)
        stream = Stream(engine)
        if "P" in self.mode:
            return self.time(prim, stream, src, dst, 2 * md.size)
        prim.execute(stream, src, dst)
        stream.wait()
        effective = dims[axis] // group if direction == "BWD_D" else group
        expect = reference_shuffle(values, axis, effective)
        got = dst.to_numpy()
        if got.tobytes() == expect.tobytes():
            return Outcome("PASSED")
        wrong = int(np.sum(got.view(np.uint8) != expect.view(np.uint8)))
        return Outcome("FAILED", f"{wrong} bytes differ from the reference")

    def time(self, prim, stream, src, dst, nbytes) -> Outcome:
        prim.execute(stream, src, dst)
        stream.wait()
        times = []
        for _ in range(self.repeats):
            start = time.perf_counter()
            prim.execute(stream, src, dst)
            stream.wait()
            times.append(time.perf_counter() - start)
        ms = statistics.median(times) * 1e3
        print(f"perf,{prim.impl},{ms:.4f} ms,{nbytes / ms / 1e6:.2f} GB/s", file=self.out)
        return Outcome("PASSED", f"perf {ms:.4f} ms")

    def problem_rng(self, dims, options):
        return np.random.default_rng(abs(hash((dims, tuple(sorted(options.items()))))) % 2**32)

    def summary(self) -> str:
        return " ".join(f"{k}:{v}" for k, v in self.counts.items())


def batch_tokens(path: pathlib.Path) -> list[str]:
    """The tokens of a batch file: comments dropped, continuation lines joined."""
    text = path.read_text()
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    text = "\n".join(lines)
    # A list continued on the next line ("a, \\ b") is one value; other
    # continuations just join the lines.
    text = re.sub(r",\s*\\\s*\n\s*", ",", text)
    joined = re.sub(r"\\\s*\n", " ", text)
    return shlex.split(joined, posix=False)


# -- attributes -----------------------------------------------------------------

def _policy_mask(policy: str, ndims: int) -> int:
    if policy == "common":
        return 0
    if policy == "per_tensor":
        return (1 << ndims) - 1
    if policy == "per_oc":
        return 1
    match = re.fullmatch(r"per_dim_(\d+)", policy)
    if not match:
        raise UnimplementedError(f"attribute policy {policy!r} is not supported")
    return sum(1 << int(d) for d in match.group(1))


def parse_attr(o, ndims, dims, rng) -> Attr | None:
    """An Attr from benchdnn's --attr-scales, --attr-zero-points and --attr-post-ops."""
    kwargs = {}
    for option, cls, default in (("attr-scales", Scales, 1.0), ("attr-zero-points", ZeroPoints, 0)):
        for entry in filter(None, o[option].split("+")):
            parts = entry.split(":")
            arg, policy = parts[0], parts[1] if len(parts) > 1 else "common"
            if arg not in ("src", "dst"):
                raise UnimplementedError(f"--{option}={o[option]}: argument {arg!r} is not served")
            mask = _policy_mask(policy, ndims)
            if mask >> ndims:
                raise InvalidArgumentError(f"--{option}={entry}: policy {policy} beyond {ndims} dims")
            if mask == 0:
                value = float(parts[2]) if len(parts) > 2 else default
                values = int(value) if cls is ZeroPoints else value
            else:
                count = math.prod(dims[d] for d in range(ndims) if mask >> d & 1)
                values = (rng.integers(-2, 3, count) if cls is ZeroPoints
                          else rng.choice([0.125, 0.25, 0.5, 1.0, 2.0, 4.0], count))
            name = f"{arg}_{'scales' if cls is Scales else 'zero_point'}"
            kwargs[name] = cls(values, mask)
    for entry in filter(None, o["attr-post-ops"].split("+")):
        kind, _, scale = entry.partition(":")
        if kind != "sum":
            raise UnimplementedError(f"--attr-post-ops={entry}: only sum is served")
        kwargs["sum_beta"] = float(scale.split(":")[0]) if scale else 1.0
    return Attr(**kwargs) if kwargs else None


# -- data and the reference -------------------------------------------------------

def fill_values(dt_name, dims, rng, spread):
    """Random values of a type: integers across the type (or +-spread), floats
    with halves; for the small float types, any bit pattern but NaN."""
    dt = DATA_TYPES[dt_name]
    if dt.is_int:
        low, high = (dt.min, dt.max) if spread is None else (max(dt.min, -spread), min(dt.max, spread))
        return rng.integers(low, high, size=dims, endpoint=True).astype(dt.numpy)
    values = rng.integers(-64, 65, size=dims) / 2
    return values.astype(dt.numpy)


def fill_reorder_source(src_md, dst_md, rng):
    """Source values that exercise the destination's saturation and rounding."""
    src, dst = src_md.dtype, dst_md.dtype
    if dst.is_int:
        bound = min(float(dst.max) * 1.5 + 2, 2.0**20)
    else:
        bound = 1000.0
    if src.is_int:
        low, high = max(src.min, -bound), min(src.max, bound)
        return rng.integers(int(low), int(high), size=src_md.dims, endpoint=True).astype(src.numpy)
    halves = np.round(rng.uniform(-bound, bound, size=src_md.dims) * 2) / 2
    with np.errstate(over="ignore"):
        values = halves.astype(src.numpy)
    if not np.isfinite(values.astype(np.float64)).all():  # f8 / f16 ranges: stay finite
        values = np.nan_to_num(values.astype(np.float32), posinf=0, neginf=0).astype(src.numpy)
    return values


def reference_reorder(src, old, dst_dt, attr):
    """f32 reference of the reorder formula, written independently of clayout.host."""
    ndims = src.ndim

    def per(v):
        shape = [src.shape[d] if v.mask >> d & 1 else 1 for d in range(ndims)]
        return v.values.astype(np.float32).reshape(shape)

    x = src.astype(np.float32)
    if attr is not None:
        if attr.src_zero_point is not None:
            x = x - per(attr.src_zero_point)
        if attr.src_scales is not None:
            x = per(attr.src_scales) * x
        if attr.sum_beta is not None:
            y = old.astype(np.float32)
            if attr.dst_zero_point is not None:
                y = y - per(attr.dst_zero_point)
            x = x + np.float32(attr.sum_beta) * y
        if attr.dst_scales is not None:
            x = x / per(attr.dst_scales)
        if attr.dst_zero_point is not None:
            x = x + per(attr.dst_zero_point)
    if dst_dt.is_int:
        top = 2147483520.0 if dst_dt.name == "s32" else dst_dt.max
        return np.rint(np.clip(np.nan_to_num(x, nan=0.0), dst_dt.min, top)).astype(dst_dt.numpy)
    with np.errstate(over="ignore"):
        return x.astype(dst_dt.numpy)


def reference_shuffle(values, axis, group):
    """dst(.., u + v*C/G, ..) = src(.., u*G + v, ..)."""
    channels = values.shape[axis]
    rows = channels // group
    source = [0] * channels
    for u in range(rows):
        for v in range(group):
            source[u + v * rows] = u * group + v
    return np.take(values, source, axis=axis)


def compare(got, expect, dt, exact) -> Outcome:
    """Bit exact for plain copies; for conversions, equal values (NaN equals NaN),
    integers within 1 where rounding of an f32 near .5 may differ."""
    if exact and got.tobytes() == expect.tobytes():
        return Outcome("PASSED")
    g, e = got.astype(np.float64), expect.astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    if not exact and dt.is_int:
        same |= np.abs(g - e) <= 1
    if same.all():
        return Outcome("PASSED")
    first = np.argwhere(~same)[0]
    return Outcome("FAILED", f"{int((~same).sum())} of {same.size} wrong, e.g. at "
                             f"{tuple(int(i) for i in first)}: got {g[tuple(first)]}, "
                             f"expected {e[tuple(first)]}")


def main(argv=None) -> int:
    """Run benchdnn-style arguments; returns 1 if any problem failed."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    session = Session()
    try:
        session.run_tokens(argv, pathlib.Path.cwd())
    except InvalidArgumentError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(session.summary())
    return 1 if session.counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
