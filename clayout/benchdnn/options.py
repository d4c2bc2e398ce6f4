"""benchdnn's command line: options, batch files, and the problems they make.

Parsing is done in full before anything runs, so a misspelled option or a
malformed value at the end of a long batch stops the run at once, with an
error that names it (UsageError), as benchdnn does.
"""
from __future__ import annotations

import itertools
import pathlib
import re
import shlex
from dataclasses import dataclass, replace

from .layout import TagError, check_grammar
from .values import OTHER_TYPE_NAMES, SCALE_TYPES, TYPES, ZERO_POINT_TYPES


class UsageError(ValueError):
    """A command line or batch file benchdnn would refuse."""


# -- values -------------------------------------------------------------------------

def _bool(name, value):
    if value.lower() in ("true", "1", "yes", "on"):
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise UsageError(f"--{name}={value}: expected true or false")


def _int(name, value, low=0):
    if not re.fullmatch(r"-?\d+", value) or int(value) < low:
        raise UsageError(f"--{name}={value}: expected an integer >= {low}")
    return int(value)


def _float(name, value):
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--{name}={value}: expected a number") from None


def _data_type(name, value):
    if value not in TYPES and value not in OTHER_TYPE_NAMES:
        raise UsageError(f"--{name}={value}: unknown data type; benchdnn's are "
                         f"{', '.join(list(TYPES) + list(OTHER_TYPE_NAMES))}")
    return value


def _tag(name, value):
    try:
        check_grammar(value)
    except TagError as error:
        raise UsageError(f"--{name}={value}: {error}") from None
    return value


def _dims(text, what):
    if not re.fullmatch(r"\d+(x\d+)*", text):
        raise UsageError(f"{what}: expected integers joined by 'x', like 2x16x3x4")
    return tuple(int(v) for v in text.split("x"))


def _choice(*allowed, upper=False):
    def check(name, value):
        v = value.upper() if upper else value
        if v not in allowed:
            raise UsageError(f"--{name}={value}: expected one of {', '.join(allowed)}")
        return v
    return check


# -- attributes ------------------------------------------------------------------------

@dataclass(frozen=True)
class ArgQuant:
    """One argument's scales or zero points from --attr-scales / --attr-zero-points."""

    arg: str              # "src" or "dst"
    policy: str           # common, per_dim_N..., per_oc, per_ocic, per_tensor
    value: float          # the common value
    data_type: str        # "" when not given
    groups: tuple = ()    # () when not given, else the two group sizes (last two dims)

    def mask(self, ndims: int) -> int:
        """benchdnn's mask of the policy for a reorder's src or dst (not
        weights): per_oc is per_dim_1, per_ocic is per_dim_01."""
        if self.policy == "common":
            return 0
        if self.policy == "per_tensor":
            return (1 << ndims) - 1
        if self.policy == "per_oc":
            return 1 << 1
        if self.policy == "per_ocic":
            return (1 << 0) | (1 << 1)
        return sum(1 << int(d) for d in self.policy[len("per_dim_"):])


_POLICY = re.compile(r"common|per_tensor|per_ocic|per_oc|per_dim_\d+")
_POLICIES = "common, per_dim_0, per_dim_1, per_dim_01, per_oc, per_ocic or per_tensor"


def parse_quant(name: str, text: str, integer: bool) -> tuple[ArgQuant, ...]:
    """``ARG:POLICY[:VALUE][:DATA_TYPE[:GROUPS]][+...]`` (benchdnn's syntax): a
    VALUE only for the common policy; DATA_TYPE f32, bf16, f16 or e8m0 for
    scales, s32, s8, u8, s4 or u4 for zero points; GROUPS two sizes, 1x32."""
    entries = []
    allowed = ZERO_POINT_TYPES if integer else SCALE_TYPES
    for entry in filter(None, text.split("+")):
        parts = entry.split(":")
        arg = {"src0": "src"}.get(parts[0], parts[0])
        if arg not in ("src", "dst"):
            raise UsageError(f"--{name}={text}: argument {parts[0]!r}; the reorder driver "
                             f"takes src (or src0) and dst")
        if len(parts) < 2 or not _POLICY.fullmatch(parts[1]):
            raise UsageError(f"--{name}={text}: {entry!r} needs a policy: {_POLICIES}")
        policy = parts[1]
        rest = parts[2:]
        value = 0.0 if integer else 1.0
        if rest and rest[0].rstrip("*") and rest[0] not in TYPES \
                and rest[0] not in OTHER_TYPE_NAMES:
            number = rest.pop(0).rstrip("*")
            try:
                value = float(int(number)) if integer else float(number)
            except ValueError:
                raise UsageError(f"--{name}={text}: {number!r} is not "
                                 f"{'an integer' if integer else 'a number'}") from None
            if policy != "common":
                raise UsageError(f"--{name}={text}: {entry!r}: a value is given for the "
                                 f"common policy only, not {policy} (its values are "
                                 f"generated)")
        elif rest and not rest[0]:
            rest.pop(0)
        data_type = rest.pop(0) if rest else ""
        if data_type:
            _data_type(name, data_type)
            if data_type not in allowed:
                raise UsageError(f"--{name}={text}: {'zero points' if integer else 'scales'} "
                                 f"are stored as {', '.join(allowed)}, not {data_type}")
        groups = ()
        if rest:
            groups = _dims(rest.pop(0), f"--{name}={text}: groups")
            if len(groups) != 2 or 0 in groups:
                raise UsageError(f"--{name}={text}: groups "
                                 f"{'x'.join(map(str, groups))}: expected two sizes >= 1 "
                                 f"(the last two dims), like 1x32")
        if rest:
            raise UsageError(f"--{name}={text}: unexpected {':'.join(rest)!r} after the groups")
        entries.append(ArgQuant(arg, policy, value, data_type, groups))
    if len({e.arg for e in entries}) != len(entries):
        raise UsageError(f"--{name}={text}: an argument is given twice")
    return tuple(entries)


@dataclass(frozen=True)
class PostOp:
    kind: str
    scale: float = 1.0
    zero_point: int = 0
    data_type: str = ""


# Post-op kinds benchdnn knows (eltwise and binary); only sum is a reorder's.
KNOWN_POST_OPS = frozenset((
    "sum abs exp exp_dst gelu_erf gelu_tanh log logistic logistic_dst mish round sqrt "
    "sqrt_dst square tanh tanh_dst elu elu_dst relu relu_dst soft_relu swish clip clip_v2 "
    "clip_v2_dst hardsigmoid hardswish linear pow add div eq ge gt le lt max min mul ne sub "
    "prelu").split())


def parse_post_ops(text: str) -> tuple[PostOp, ...]:
    ops = []
    for entry in filter(None, text.split("+")):
        parts = entry.split(":")
        kind = parts[0]
        if kind not in KNOWN_POST_OPS and not kind.startswith("dw"):
            raise UsageError(f"--attr-post-ops={text}: unknown post-op {kind!r}")
        if kind != "sum":
            ops.append(PostOp(kind))
            continue
        scale = _float("attr-post-ops", parts[1]) if len(parts) > 1 else 1.0
        zp = _int("attr-post-ops", parts[2], low=-2**31) if len(parts) > 2 else 0
        dt = _data_type("attr-post-ops", parts[3]) if len(parts) > 3 else ""
        if len(parts) > 4:
            raise UsageError(f"--attr-post-ops={text}: sum takes SCALE:ZERO_POINT:DATA_TYPE")
        ops.append(PostOp("sum", scale, zp, dt))
    return tuple(ops)


def parse_oflag(text: str) -> tuple[tuple[str, int], ...]:
    """``FLAG:MASK[+FLAG:MASK]`` with FLAG s8s8_comp or zp_comp, each at most once."""
    flags = []
    for entry in filter(None, text.split("+")):
        flag, colon, mask = entry.partition(":")
        if flag not in ("s8s8_comp", "zp_comp"):
            raise UsageError(f"--oflag={text}: flag {flag!r}; expected s8s8_comp or zp_comp")
        if not colon or not re.fullmatch(r"\d+", mask):
            raise UsageError(f"--oflag={text}: {entry!r} needs a mask >= 0, like {flag}:1")
        if any(f == flag for f, _ in flags):
            raise UsageError(f"--oflag={text}: {flag} is given twice")
        flags.append((flag, int(mask)))
    return tuple(flags)


def parse_strides(text: str) -> tuple[tuple, tuple]:
    if not text:
        return (), ()
    if text.count(":") != 1:
        raise UsageError(f"--strides={text}: expected SRC_STRIDES:DST_STRIDES, e.g. 48x1x16:48x16x1")
    src, dst = text.split(":")
    return (_dims(src, f"--strides={text}") if src else (),
            _dims(dst, f"--strides={text}") if dst else ())


# -- the drivers' options -----------------------------------------------------------------

def _quant(integer):
    def check(name, value):
        parse_quant(name, value, integer)
        return value
    return check


def _post_ops(name, value):
    parse_post_ops(value)
    return value


def _oflag(name, value):
    parse_oflag(value)
    return value


def _strides(name, value):
    parse_strides(value)
    return value


# name -> (default, validator); the order is the order of the repro line.
DRIVER_OPTIONS = {
    "reorder": {
        "sdt": ("f32", _data_type), "ddt": ("f32", _data_type),
        "stag": ("abx", _tag), "dtag": ("abx", _tag), "strides": ("", _strides),
        "attr-scales": ("", _quant(False)), "attr-zero-points": ("", _quant(True)),
        "attr-post-ops": ("", _post_ops), "oflag": ("", _oflag),
        "runtime-dim-mask": ("0", lambda n, v: str(_int(n, v))),
        "cross-engine": ("none", _choice("none", "cpu2gpu", "gpu2cpu")),
    },
    "shuffle": {
        "dir": ("FWD_D", _choice("FWD_D", "FWD_I", "BWD_D", upper=True)),
        "dt": ("f32", _data_type), "tag": ("abx", _tag),
        "axis": ("1", lambda n, v: str(_int(n, v, low=-12))),
        "group": ("1", lambda n, v: str(_int(n, v, low=1))),
    },
}


@dataclass(frozen=True)
class Settings:
    """benchdnn's common options (not reset by --reset)."""

    engine: str = "opencl"
    engine_index: int = 0
    mode: str = "C"
    max_ms: float = 3000.0
    fix_times: int = 0
    repeats: int = 1
    skip_impl: tuple = ()
    impl: tuple = ()
    inplace: bool = False
    canonical: bool = False
    mem_check: bool = True
    verbose: int = 0
    fail_unimplemented: bool = False
    perf_template: str = "def"
    match: str = ""
    start: int = 0


_MODES = {"C": "C", "P": "P", "CP": "CP", "PC": "CP", "L": "L", "I": "I", "R": "R", "F": "P"}
# Common options that change nothing clayout computes; accepted so batch files
# written for benchdnn run unchanged.
INERT = {"allow-enum-tags-only", "attr-scratchpad", "attr-same-pd-check", "cold-cache",
         "cpu-isa-hints", "ctx-exe", "ctx-init", "fast-ref-gpu", "memory-kind",
         "mode-modifier", "num-streams", "summary", "check-ref-impl", "def-scales"}


def _engine(value):
    kind, _, index = value.partition(":")
    if kind not in ("opencl", "gpu", "sycl", "host", "cpu"):
        raise UsageError(f"--engine={value}: expected opencl (or gpu), sycl or host (or "
                         f"cpu), with an optional :INDEX")
    kind = {"gpu": "opencl", "cpu": "host"}.get(kind, kind)
    return kind, _int("engine", index or "0")


def common_option(settings: Settings, name: str, value: str) -> Settings | None:
    """The settings after a common option, or None if ``name`` is not one."""
    if name == "engine":
        kind, index = _engine(value)
        return replace(settings, engine=kind, engine_index=index)
    if name == "mode":
        if value.upper() not in _MODES:
            raise UsageError(f"--mode={value}: expected C, P, CP, F, R, I or L")
        changes = {"mode": _MODES[value.upper()]}
        if value.upper() == "F":
            changes["max_ms"] = 10.0
        return replace(settings, **changes)
    if name in ("v", "verbose"):
        return replace(settings, verbose=_int(name, value))
    if name == "max-ms-per-prb":
        return replace(settings, max_ms=min(max(_float(name, value), 10.0), 6e4))
    if name == "fix-times-per-prb":
        return replace(settings, fix_times=_int(name, value))
    if name == "repeats-per-prb":
        return replace(settings, repeats=_int(name, value, low=1))
    if name in ("skip-impl", "impl"):
        patterns = tuple(filter(None, value.split(",")))
        return replace(settings, **{name.replace("-", "_"): patterns})
    if name == "inplace":
        return replace(settings, inplace=_bool(name, value))
    if name == "canonical":
        return replace(settings, canonical=_bool(name, value))
    if name == "mem-check":
        return replace(settings, mem_check=_bool(name, value))
    if name == "fail-unimplemented":
        return replace(settings, fail_unimplemented=_bool(name, value))
    if name == "perf-template":
        return replace(settings, perf_template=value or "def")
    if name == "match":
        try:
            re.compile(value)
        except re.error as error:
            raise UsageError(f"--match={value}: not a regular expression ({error})") from None
        return replace(settings, match=value)
    if name == "start":
        return replace(settings, start=_int(name, value))
    if name in INERT:
        if name in ("allow-enum-tags-only", "attr-same-pd-check", "fast-ref-gpu"):
            _bool(name, value)
        return settings
    return None


# -- problems ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One problem: a driver, its option values, dims, the settings in force."""

    driver: str
    options: tuple            # (name, value) in DRIVER_OPTIONS order
    dims: tuple
    name: str
    settings: Settings
    index: int

    def get(self, key: str) -> str:
        return dict(self.options)[key]

    def text(self, canonical: bool = False) -> str:
        """The problem as benchdnn prints it (defaults left out unless canonical)."""
        defaults = DRIVER_OPTIONS[self.driver]
        shown = [f"--{k}={v}" for k, v in self.options if canonical or v != defaults[k][0]]
        dims = "x".join(map(str, self.dims)) + (f'_n"{self.name}"' if self.name else "")
        return " ".join([f"--{self.driver}"] + shown + [dims])

    def repro(self) -> str:
        """A command line that runs this problem again, the same data included."""
        s = self.settings
        engine = f"--engine={s.engine}" + (f":{s.engine_index}" if s.engine_index else "")
        mode = "" if s.mode == "C" else f"--mode={s.mode} "
        return f"{engine} {mode}{self.text(s.canonical)}"


_PROBLEM = re.compile(r'^(\d+(?:x\d+)*)(?:_n"?([^"]*)"?)?$')


class Parser:
    """Turns tokens (command line or batch files) into Problems."""

    def __init__(self):
        self.driver = None
        self.values = {}
        self.settings = Settings()
        self.problems: list[Problem] = []

    def set_driver(self, driver):
        self.driver = driver
        self.reset()

    def reset(self):
        self.values = {k: [d] for k, (d, _) in DRIVER_OPTIONS.get(self.driver, {}).items()}

    def feed(self, tokens, folder: pathlib.Path):
        for token in tokens:
            self.token(token, folder)

    def token(self, token: str, folder: pathlib.Path):
        if token in ("--reorder", "--shuffle"):
            return self.set_driver(token[2:])
        if token == "--reset":
            return self.reset()
        if re.fullmatch(r"-v\d+", token):
            self.settings = replace(self.settings, verbose=int(token[2:]))
            return None
        if token.startswith("--"):
            return self.option(*token[2:].partition("=")[::2], folder=folder)
        if self.driver is None:
            raise UsageError(f"problem {token!r} before --reorder or --shuffle")
        match = _PROBLEM.match(token)
        if not match:
            raise UsageError(f"problem {token!r}: expected dims like 2x16x3x4")
        dims = tuple(int(x) for x in match.group(1).split("x"))
        keys = list(self.values)
        for combo in itertools.product(*(self.values[k] for k in keys)):
            self.problems.append(Problem(self.driver, tuple(zip(keys, combo)), dims,
                                         match.group(2) or "", self.settings,
                                         len(self.problems)))
        return None

    def option(self, name, value, folder):
        if name == "driver":
            if value not in DRIVER_OPTIONS:
                raise UsageError(f"--driver={value}: expected reorder or shuffle")
            return self.set_driver(value)
        if name == "batch":
            path = pathlib.Path(value)
            path = path if path.is_absolute() else folder / path
            if not path.is_file():
                raise UsageError(f"--batch={value}: no file {path}")
            return self.feed(batch_tokens(path), path.parent)
        settings = common_option(self.settings, name, value)
        if settings is not None:
            self.settings = settings
            return None
        options = DRIVER_OPTIONS.get(self.driver, {})
        if name not in options:
            where = f"the {self.driver} driver" if self.driver else "benchdnn before a driver"
            raise UsageError(f"--{name}: unknown option for {where}")
        check = options[name][1]
        # Comma-separated values multiply the problems; an empty one is the default.
        self.values[name] = [check(name, v) for v in value.split(",")]
        return None


def batch_tokens(path: pathlib.Path) -> list[str]:
    """The tokens of a batch file: comments dropped, continuation lines joined."""
    lines = [line.split("#", 1)[0] for line in path.read_text().splitlines()]
    text = "\n".join(lines)
    # A list continued on the next line ("a, \\ b") is one value; other
    # continuations just join the lines.
    text = re.sub(r",\s*\\\s*\n\s*", ",", text)
    joined = re.sub(r"\\\s*\n", " ", text)
    return shlex.split(joined, posix=False)


def parse(tokens, folder: pathlib.Path) -> list[Problem]:
    """Every problem the tokens describe. Raises UsageError."""
    parser = Parser()
    parser.feed(tokens, folder)
    return parser.problems

