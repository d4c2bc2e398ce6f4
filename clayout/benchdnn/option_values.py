"""The values of benchdnn's options: numbers, types, tags and dims, and the
attribute strings (--attr-scales, --attr-zero-points, --attr-post-ops,
--oflag, --strides), each checked as benchdnn checks it (UsageError)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .layout import TagError, check_grammar
from .values import OTHER_TYPE_NAMES, SCALE_TYPES, TYPES, ZERO_POINT_TYPES


class UsageError(ValueError):
    """A command line or batch file benchdnn would refuse."""


# -- values -------------------------------------------------------------------------

def bool_value(name, value):
    if value.lower() in ("true", "1", "yes", "on"):
        return True
    if value.lower() in ("false", "0", "no", "off"):
        return False
    raise UsageError(f"--{name}={value}: expected true or false")


def int_value(name, value, low=0):
    if not re.fullmatch(r"-?\d+", value) or int(value) < low:
        raise UsageError(f"--{name}={value}: expected an integer >= {low}")
    return int(value)


def float_value(name, value):
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--{name}={value}: expected a number") from None


def data_type_value(name, value):
    if value not in TYPES and value not in OTHER_TYPE_NAMES:
        raise UsageError(f"--{name}={value}: unknown data type; benchdnn's are "
                         f"{', '.join(list(TYPES) + list(OTHER_TYPE_NAMES))}")
    return value


def tag_value(name, value):
    try:
        check_grammar(value)
    except TagError as error:
        raise UsageError(f"--{name}={value}: {error}") from None
    return value


def dims_value(text, what):
    if not re.fullmatch(r"\d+(x\d+)*", text):
        raise UsageError(f"{what}: expected integers joined by 'x', like 2x16x3x4")
    return tuple(int(v) for v in text.split("x"))


def choice(*allowed, upper=False):
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
            data_type_value(name, data_type)
            if data_type not in allowed:
                raise UsageError(f"--{name}={text}: {'zero points' if integer else 'scales'} "
                                 f"are stored as {', '.join(allowed)}, not {data_type}")
        groups = ()
        if rest:
            groups = dims_value(rest.pop(0), f"--{name}={text}: groups")
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
        scale = float_value("attr-post-ops", parts[1]) if len(parts) > 1 else 1.0
        zp = int_value("attr-post-ops", parts[2], low=-2**31) if len(parts) > 2 else 0
        dt = data_type_value("attr-post-ops", parts[3]) if len(parts) > 3 else ""
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
    return (dims_value(src, f"--strides={text}") if src else (),
            dims_value(dst, f"--strides={text}") if dst else ())
