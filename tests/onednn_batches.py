"""The problems of benchdnn's batch files (../shared/benchdnn) as the
differential suite's cases (tests/sweep_cases.py's Case), so that clayout
and oneDNN run each on the same bytes (tests/test_onednn.py).

clayout's benchdnn driver parses the files (clayout.benchdnn) and picks the
scales and zero points as benchdnn does; what it declines, and what this
suite does not carry over (runtime dims, compensation, cross-engine,
in-place), comes back as a reason instead of a case.
"""
import pathlib

from clayout.benchdnn.cases import Declined, prepare
from clayout.benchdnn.layout import trim_meta_tag
from clayout.benchdnn.option_values import parse_strides
from clayout.benchdnn.options import parse
from clayout.tags import expand_tag
from sweep_cases import Case, Layout, Values

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "benchdnn"
#: Every batch file of the reorder and shuffle drivers, by driver.
BATCHES = sorted((p.parent.name, p) for p in SHARED.glob("*/test_*"))


def problems_of(driver, path):
    """benchdnn's Problems of one batch file."""
    return parse([f"--{driver}", f"--batch={path}"], pathlib.Path.cwd())


def _layout(tag, strides, ndims):
    """The Layout of a benchdnn tag or strides. Meta-tags (axb, aBx16b) are
    expanded by clayout's own rule (clayout.tags), as its driver does: the
    names of a layout, not the bytes under test."""
    if strides:
        return Layout(None, tuple(strides))
    return Layout(expand_tag(trim_meta_tag(tag, ndims), ndims))


def case_of(problem):
    """(Case, None) for a benchdnn Problem, or (None, the reason it is left out)."""
    o = dict(problem.options)
    dims = tuple(problem.dims)
    if problem.driver == "shuffle":
        if problem.settings.inplace:
            return None, "in place"
        layout = _layout(o["tag"], (), len(dims))
        axis = int(o["axis"]) % len(dims)
        return Case(problem.index, problem.index, "shuffle", dims, o["dt"], o["dt"], layout,
                    layout, shuffle=(axis, int(o["group"]), o["dir"] == "BWD_D")), None
    for option, default in (("runtime-dim-mask", "0"), ("oflag", ""), ("cross-engine", "none")):
        if o.get(option, default) not in (default, "", None):
            return None, f"--{option}={o[option]}"
    try:
        bcase = prepare(problem)
    except Declined as e:
        return None, f"declined by clayout's driver: {e.reason}"
    except Exception as e:  # descriptors clayout rejects: the driver's own tests cover them
        return None, f"rejected: {type(e).__name__}"
    src_strides, dst_strides = parse_strides(o["strides"])
    kw = {}
    for name, (mask, values, groups) in bcase.per_slice.items():
        groups = getattr(bcase.attr, name).groups
        if "scales" in name:
            kw[name] = Values(mask, tuple(values.tolist()), getattr(bcase.attr, name).data_type,
                              groups)
        else:
            kw[name] = Values(mask, tuple(int(v) for v in values), None, groups)
    if bcase.beta is not None:
        kw["sum_beta"] = bcase.beta
    return Case(bcase.seed, problem.index, "reorder", dims, o["sdt"], o["ddt"],
                _layout(o["stag"], src_strides, len(dims)),
                _layout(o["dtag"], dst_strides, len(dims)), **kw), None
