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

from .option_values import (UsageError, bool_value, choice, data_type_value, float_value,
                            int_value, parse_oflag, parse_post_ops, parse_quant, parse_strides,
                            tag_value)


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
        "sdt": ("f32", data_type_value), "ddt": ("f32", data_type_value),
        "stag": ("abx", tag_value), "dtag": ("abx", tag_value), "strides": ("", _strides),
        "attr-scales": ("", _quant(False)), "attr-zero-points": ("", _quant(True)),
        "attr-post-ops": ("", _post_ops), "oflag": ("", _oflag),
        "runtime-dim-mask": ("0", lambda n, v: str(int_value(n, v))),
        "cross-engine": ("none", choice("none", "cpu2gpu", "gpu2cpu")),
    },
    "shuffle": {
        "dir": ("FWD_D", choice("FWD_D", "FWD_I", "BWD_D", upper=True)),
        "dt": ("f32", data_type_value), "tag": ("abx", tag_value),
        "axis": ("1", lambda n, v: str(int_value(n, v, low=-12))),
        "group": ("1", lambda n, v: str(int_value(n, v, low=1))),
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
    return kind, int_value("engine", index or "0")


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
        return replace(settings, verbose=int_value(name, value))
    if name == "max-ms-per-prb":
        return replace(settings, max_ms=min(max(float_value(name, value), 10.0), 6e4))
    if name == "fix-times-per-prb":
        return replace(settings, fix_times=int_value(name, value))
    if name == "repeats-per-prb":
        return replace(settings, repeats=int_value(name, value, low=1))
    if name in ("skip-impl", "impl"):
        patterns = tuple(filter(None, value.split(",")))
        return replace(settings, **{name.replace("-", "_"): patterns})
    if name == "inplace":
        return replace(settings, inplace=bool_value(name, value))
    if name == "canonical":
        return replace(settings, canonical=bool_value(name, value))
    if name == "mem-check":
        return replace(settings, mem_check=bool_value(name, value))
    if name == "fail-unimplemented":
        return replace(settings, fail_unimplemented=bool_value(name, value))
    if name == "perf-template":
        return replace(settings, perf_template=value or "def")
    if name == "match":
        try:
            re.compile(value)
        except re.error as error:
            raise UsageError(f"--match={value}: not a regular expression ({error})") from None
        return replace(settings, match=value)
    if name == "start":
        return replace(settings, start=int_value(name, value))
    if name in INERT:
        if name in ("allow-enum-tags-only", "attr-same-pd-check", "fast-ref-gpu"):
            bool_value(name, value)
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

