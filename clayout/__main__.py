"""``python -m clayout COMMAND``: ``info`` reports the OpenCL devices, the
profile each gets and what runs where (clayout/info.py); ``tune`` measures
each kernel family's parameters on a device and keeps the fastest
(clayout/tune.py).

``python -m clayout.benchdnn`` and ``python -m clayout.explain`` are
commands of their own.
"""
from __future__ import annotations

import sys

USAGE = """usage: python -m clayout info
       python -m clayout tune [--quick] [--only FAMILY] [--device N] [--output PATH]

  info   the OpenCL platforms and devices, the device profile each gets, the
         engine Engine() picks, and which implementation runs a few typical
         problems on each device
  tune   time each kernel family's candidate parameters on the device, paired
         with its copy kernel, and keep the fastest in a tuning table that
         clayout reads from then on (CLAYOUT_TUNING=off ignores it)

See also: python -m clayout.benchdnn (oneDNN's benchdnn batch files),
          python -m clayout.explain (how one reorder or shuffle would run)."""


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args[:1] == ["tune"]:
        from .tune import main as tune

        return tune(args[1:])
    if args != ["info"]:
        print(USAGE, file=sys.stderr)
        return 2
    from .info import main as info

    return info()


if __name__ == "__main__":
    sys.exit(main())
