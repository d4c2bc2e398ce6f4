"""``python -m clayout COMMAND``: ``info`` reports the OpenCL devices, the
profile each gets and what runs where (clayout/info.py).

``python -m clayout.benchdnn`` and ``python -m clayout.explain`` are
commands of their own.
"""
from __future__ import annotations

import sys

USAGE = """usage: python -m clayout info

  info   the OpenCL platforms and devices, the device profile each gets, the
         engine Engine() picks, and which implementation runs a few typical
         problems on each device

See also: python -m clayout.benchdnn (oneDNN's benchdnn batch files),
          python -m clayout.explain (how one reorder or shuffle would run)."""


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args != ["info"]:
        print(USAGE, file=sys.stderr)
        return 2
    from .info import main as info

    return info()


if __name__ == "__main__":
    sys.exit(main())
