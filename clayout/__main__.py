"""``python -m clayout COMMAND``: ``info`` reports the OpenCL devices, the
profile each gets and what runs where (clayout/info.py); ``tune`` measures
each kernel family's parameters on a device and keeps the fastest
(clayout/tune.py); ``build`` builds the kernels of a benchdnn batch file's
problems into the persistent cache (clayout/ahead.py); ``cache`` shows or
clears that cache (clayout/disk_cache.py).

``python -m clayout.benchdnn`` and ``python -m clayout.explain`` are
commands of their own.
"""
from __future__ import annotations

import sys

USAGE = """usage: python -m clayout info
       python -m clayout tune [--quick] [--only FAMILY] [--device N] [--output PATH]
       python -m clayout build FILE...
       python -m clayout cache [clear]

  info   the OpenCL platforms and devices, the device profile each gets, the
         engine Engine() picks, and which implementation runs a few typical
         problems on each device
  tune   time each kernel family's candidate parameters on the device, paired
         with its copy kernel, and keep the fastest in a tuning table that
         clayout reads from then on (CLAYOUT_TUNING=off ignores it)
  build  build the kernels of every problem in benchdnn batch FILEs (as
         python -m clayout.benchdnn reads them) on the default engine, in
         parallel, into the persistent cache: later processes load them
  cache  the persistent cache's folder, entries and size (CLAYOUT_CACHE,
         CLAYOUT_CACHE_BYTES); "clear" removes every entry

See also: python -m clayout.benchdnn (oneDNN's benchdnn batch files),
          python -m clayout.explain (how one reorder or shuffle would run)."""


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args[:1] == ["build"] and len(args) > 1:
        return _build(args[1:])
    if args in (["cache"], ["cache", "clear"]):
        return _cache(clear=len(args) == 2)
    if args[:1] == ["tune"]:
        from .tune import main as tune

        return tune(args[1:])
    if args != ["info"]:
        print(USAGE, file=sys.stderr)
        return 2
    from .info import main as info

    return info()


def _build(paths: list[str]) -> int:
    """Build every problem of the batch files ``paths``; 1 when one failed."""
    import pathlib
    import time

    from . import build
    from .benchdnn.cases import Declined, prepare
    from .benchdnn.options import UsageError, parse
    from .engine import default_engine
    from .errors import Error

    try:
        problems = parse([f"--batch={p}" for p in paths], pathlib.Path.cwd())
    except UsageError as exc:
        print(f"python -m clayout build: {exc}", file=sys.stderr)
        return 2
    makers, skipped = [], 0
    for problem in problems:
        try:
            makers.append(prepare(problem).create)
        except (Declined, Error) as exc:
            skipped += 1
            print(f"skipped {problem.name}: {exc}", file=sys.stderr)
    engine = default_engine()
    start = time.perf_counter()
    try:
        primitives = build(makers, engine)
    except Error as exc:
        print(f"python -m clayout build: {exc}", file=sys.stderr)
        return 1
    kernels = sum(1 for p in primitives if p.runs_kernel)
    print(f"{len(primitives)} primitives ({kernels} with a kernel) on {engine.describe()} "
          f"in {time.perf_counter() - start:.2f} s; {skipped} problems skipped")
    return 0


def _cache(clear: bool) -> int:
    from .disk_cache import disk_cache

    cache = disk_cache()
    if cache is None:
        print("the persistent cache is off (CLAYOUT_CACHE=off)")
        return 0
    if clear:
        print(f"removed {cache.clear()} entries from {cache.folder}")
    print(cache.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
