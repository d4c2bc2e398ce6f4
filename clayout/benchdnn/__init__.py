"""A benchdnn-compatible command line for the reorder and shuffle drivers.

    python -m clayout.benchdnn --reorder --sdt=f32 --ddt=s8 --stag=abx --dtag=aBx16b 2x17x3x3
    python -m clayout.benchdnn --shuffle --batch=path/to/test_shuffle_ci
    python -m clayout.benchdnn --mode=P --reorder --stag=nchw --dtag=nhwc 32x256x56x56

Options apply to the problems after them until ``--reset`` (or a new driver);
comma-separated values multiply the problems; ``--batch=FILE`` reads options
and problems from a file (``#`` comments, ``\\`` continuations; nested batch
paths resolve from the file's folder). The whole command line is parsed
before anything runs: an unknown option or a malformed value stops with an
error (exit status 2).

Common options: ``--engine=opencl|sycl|host[:INDEX]`` (benchdnn's ``gpu`` and
``cpu`` name them too), ``--mode=C|P|CP|F|R|I|L``, ``--match=REGEX``,
``--start=N``, ``--skip-impl=A,B``, ``--impl=A,B``, ``-vN``,
``--canonical=BOOL``, ``--mem-check=BOOL``, ``--max-ms-per-prb=N``,
``--fix-times-per-prb=N``, ``--repeats-per-prb=N``, ``--inplace=BOOL``,
``--fail-unimplemented=BOOL`` (clayout's own: UNIMPLEMENTED counts as a
failure in the exit status). Options that change nothing clayout computes
(``--attr-scratchpad``, ``--memory-kind``, ``--cold-cache`` ...) are accepted.

Reorder attributes as benchdnn spells them: ``--attr-scales=src:per_ocic:f16:1x32``
(``ARG:POLICY[:VALUE][:DATA_TYPE[:GROUPS]]``; per_oc is dim 1, per_ocic dims 0
and 1 of a reorder's src or dst), ``--attr-zero-points=src:per_dim_01:u4:32x1``,
``--oflag=s8s8_comp:1+zp_comp:1`` (compensation after s8 weights).
``--cross-engine=cpu2gpu|gpu2cpu`` puts the source (cpu2gpu) or the
destination (gpu2cpu) on the host: a cross-engine reorder, with
``--engine=opencl`` (SKIPPED on the host engine). clayout's own batches are
in ``clayout/benchdnn/batches/``.

Each problem prints ``N:STATUS (reason) __REPRO: --engine=... --reorder ...``;
the run ends with ``tests:N passed:N ... engine:...`` and the time split.
The exit status is 1 when a problem FAILED or had INVALID_ARGUMENTS.
"""
from __future__ import annotations

import pathlib
import sys

from .options import UsageError, parse
from .run import Runner

__all__ = ["main", "parse", "Runner", "UsageError"]


def main(argv=None, out=None, err=None) -> int:
    """Run benchdnn-style arguments; returns the exit status (0, 1, or 2 for
    a command line benchdnn would refuse)."""
    argv = sys.argv[1:] if argv is None else argv
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=out)
        return 0
    try:
        problems = parse(argv, pathlib.Path.cwd())
        runner = Runner(out=out, err=err)
        runner.run(problems)
    except UsageError as error:
        print(f"error: {error}", file=err)
        return 2
    for line in runner.summary():
        print(line, file=out)
    return runner.exit_status()
