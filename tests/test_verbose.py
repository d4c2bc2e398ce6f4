"""Verbose lines: the logging route, the header, and columns that never shift."""
import logging
import os
import subprocess
import sys
import textwrap

import pytest

import clayout as cly
from clayout import verbose

HEADER_FIELDS = verbose.HEADER.split(",")

# Creations of every kind of line: a generated kernel with attributes, its
# execution, a shuffle (axis and group in the problem column), a host
# fallback (7 dims), a zero-size tensor and a shuffle that is a copy.
SCRIPT = """
import numpy as np, clayout as cly
eng = cly.Engine("opencl")
s = cly.Stream(eng)
md = cly.MemoryDesc((2, 21, 3, 3), "f32", tag="nchw")
dst_md = cly.MemoryDesc(md.dims, "s8", tag="nChw16c")
attr = cly.Attr(src_scales=cly.Scales(np.ones(21), mask=0b10), dst_zero_points=3)
src = cly.Memory.from_numpy(md, eng, np.ones(md.dims, np.float32))
cly.Reorder(md, dst_md, engine=eng, attr=attr).execute(s, src, cly.Memory(dst_md, eng))
sh = cly.MemoryDesc((2, 24, 3, 3), "f32", tag="nChw8c")
cly.Shuffle(sh, axis=1, group_size=4, backward=True, engine=eng)
cly.Shuffle(sh, axis=1, group_size=1, engine=eng)
big = cly.MemoryDesc((2,) * 7, "f32")
cly.Reorder(big, cly.MemoryDesc(big.dims, "f32", tag="gfedcba"), engine=eng)
cly.Reorder(cly.MemoryDesc((0, 3), "f32"), cly.MemoryDesc((0, 3), "f32", tag="ba"), engine=eng)
s.wait()
import time; time.sleep(0.5)  # the exec line comes from the completion callback
"""


def run(script, **env):
    environ = {k: v for k, v in os.environ.items() if k != "CLAYOUT_VERBOSE"}
    environ["CLAYOUT_CACHE"] = "off"  # every kernel built, never loaded: its lines are the same
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=300, env=dict(environ, **env))
    assert done.returncode == 0, done.stderr
    return done


def records(text):
    """The clayout_verbose lines of ``text`` (kernel sources left out), split."""
    return [line.split(",") for line in text.splitlines() if line.startswith("clayout_verbose,")]


def by_column(fields):
    return dict(zip(HEADER_FIELDS[2:], fields[2:]))


def test_header_first_then_fixed_columns_for_every_event(cl_engine):
    done = run(SCRIPT, CLAYOUT_VERBOSE="2")
    lines = records(done.stderr)
    assert done.stderr.splitlines()[0] == verbose.HEADER
    assert done.stderr.count("clayout_verbose,info,") == 1  # once per process
    assert HEADER_FIELDS == ["clayout_verbose", "info", "template:event", "engine", "primitive",
                             "implementation", "descriptors", "attributes", "problem", "time"]
    for fields in lines:
        assert len(fields) == len(HEADER_FIELDS), fields
    rows = [by_column(f) for f in lines[1:]]
    events = {row["template:event"] for row in rows}
    # "compiler": what the compiler said, where it said anything (Intel's does).
    assert events - {"compiler"} == {"build", "source", "decline", "create", "exec"}
    for row, fields in zip(rows, lines[1:]):
        assert fields[1] == ("kernel" if row["template:event"] in ("build", "compiler", "source")
                             else "primitive")
        # Times only where something ran or was built, in ms.
        if row["template:event"] in ("build", "exec"):
            assert row["time"].endswith("ms") and float(row["time"][:-2]) >= 0
        else:
            assert row["time"] == ""
    creates = [r for r in rows if r["template:event"] == "create"]
    assert [(r["primitive"], r["problem"]) for r in creates] == [
        ("reorder", "2x21x3x3"), ("shuffle", "2x24x3x3 axis:1 group:6 backward"),
        ("shuffle", "2x24x3x3 axis:1 group:1 (a copy)"), ("reorder", "2x2x2x2x2x2x2"),
        ("reorder", "0x3")]
    assert creates[0]["attributes"] == "attr-scales:src:2:f32 attr-zero-points:dst:0:s32"
    assert creates[0]["descriptors"] == "src:f32:abcd dst:s8:aBcd16b"
    assert creates[3]["implementation"] == "host:numpy (7 dims: OpenCL kernels serve up to 6)"
    assert creates[4]["implementation"] == "none (zero elements)"
    assert all(r["attributes"] == "" for r in creates[1:])
    (exec_row,) = [r for r in rows if r["template:event"] == "exec"]
    assert {k: v for k, v in exec_row.items() if k not in ("template:event", "time")} == \
        {k: v for k, v in creates[0].items() if k not in ("template:event", "time")}
    declines = [r for r in rows if r["template:event"] == "decline"]
    assert "ocl:generated (7 dims: OpenCL kernels serve up to 6)" in \
        [r["implementation"] for r in declines]
    # The kernel source follows its source line.
    assert "__kernel" in done.stderr


def test_level_1_leaves_out_declines_and_sources(cl_engine):
    done = run(SCRIPT, CLAYOUT_VERBOSE="1")
    events = {f[2] for f in records(done.stderr)[1:]}
    assert events == {"build", "create", "exec"} and "__kernel" not in done.stderr


def test_nothing_without_verbose_or_logging(cl_engine):
    assert run(SCRIPT).stderr == ""


def test_an_application_configures_logging_itself(cl_engine):
    done = run(textwrap.dedent("""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.WARNING,
                            format="%(name)s %(levelname)s %(message)s")
        logging.getLogger("clayout").setLevel(logging.INFO)
    """) + SCRIPT)
    assert done.stderr == ""
    out = done.stdout.splitlines()
    assert out[0] == "clayout INFO " + verbose.HEADER
    assert all(line.startswith("clayout INFO clayout_verbose,") for line in out), out
    assert {line.split(",")[2] for line in out[1:]} == {"build", "create", "exec"}


@pytest.fixture
def handler():
    """A handler on the clayout logger, collecting messages; removed after."""
    class Collect(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append((record.levelno, record.getMessage()))

    collect = Collect()
    logger = logging.getLogger("clayout")
    logger.addHandler(collect)
    yield collect
    logger.removeHandler(collect)
    logger.setLevel(logging.NOTSET)


def reorder_7_dims(engine):
    md = cly.MemoryDesc((2,) * 7, "f32")
    cly.Reorder(md, cly.MemoryDesc(md.dims, "f32", tag="gfedcba"), engine=engine)


def test_logger_level_chooses_the_lines(cl_engine, handler, monkeypatch, capsys):
    monkeypatch.delenv("CLAYOUT_VERBOSE", raising=False)
    logging.getLogger("clayout").setLevel(logging.INFO)
    reorder_7_dims(cl_engine)
    got = [m for m in handler.messages if m[1] != verbose.HEADER]
    assert [(lvl, m.split(",")[2]) for lvl, m in got] == [(logging.INFO, "create")]
    logging.getLogger("clayout").setLevel(logging.DEBUG)
    handler.messages.clear()
    reorder_7_dims(cl_engine)
    assert [(lvl, m.split(",")[2]) for lvl, m in handler.messages] == \
        [(logging.DEBUG, "decline")] * 3 + [(logging.INFO, "create")]
    assert capsys.readouterr().err == ""  # nothing but the application's handler


def test_clayout_verbose_goes_to_the_loggers_own_handlers(cl_engine, handler, monkeypatch,
                                                          capsys):
    monkeypatch.setenv("CLAYOUT_VERBOSE", "1")  # the logger's level stays unset
    reorder_7_dims(cl_engine)
    assert [m.split(",")[2] for _, m in handler.messages if m != verbose.HEADER] == ["create"]
    assert capsys.readouterr().err == ""


def test_commas_and_line_breaks_inside_a_value_do_not_shift_columns():
    text = verbose.line("decline", "opencl", "reorder", "x (a, b\nc)", "src", "", "2x3")
    assert text.split(",") == ["clayout_verbose", "primitive", "decline", "opencl", "reorder",
                               "x (a; b c)", "src", "", "2x3", ""]
