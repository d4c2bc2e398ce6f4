"""CLAYOUT_VERBOSE: one line per primitive creation, execution and kernel build.

CLAYOUT_VERBOSE=1 prints creations, executions and builds; 2 also prints the
source of each kernel built. Lines go to stderr and start with 'clayout_verbose'.
"""
from __future__ import annotations

import os
import sys


def level() -> int:
    """The verbosity asked for now (read each time, so tests and users may change it)."""
    try:
        return int(os.environ.get("CLAYOUT_VERBOSE", "0") or 0)
    except ValueError:
        return 0


def log(*fields, min_level: int = 1):
    """Print one comma-separated line when CLAYOUT_VERBOSE >= min_level."""
    if level() >= min_level:
        print("clayout_verbose," + ",".join(str(f) for f in fields), file=sys.stderr, flush=True)
