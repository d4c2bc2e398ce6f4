"""Tuning tables: what ``python -m clayout tune`` measured on one device.

One JSON file per device, named after its platform and device, in the
user's cache folder (``$XDG_CACHE_HOME/clayout/tuning``, else
``~/.cache/clayout/tuning``), written atomically. It records the device's
identity (platform, device, driver version), the clayout version, when it
was tuned and, per kernel family, the strategy and the Tuning fields that
differ from the defaults, with the measured share of copy before and after.

``CLAYOUT_TUNING=off`` ignores every table; ``CLAYOUT_TUNING=PATH`` reads
that file instead. Tables shipped in ``clayout/tuning_tables/`` serve the
devices the user has not tuned. A table that is stale (another clayout or
driver version), corrupt or of another device never breaks anything: it is
logged once as a warning and the defaults are used.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass

from .gpu.families import FAMILIES
from .gpu.profile import CPU_TUNING, GPU_TUNING, STRATEGIES
from .gpu.shapes import shape_names

LOGGER = logging.getLogger("clayout")


def _clayout_version() -> str:
    """clayout.__version__. The package's __init__ sits above this module
    (it imports the engines), so it is looked up rather than imported: it
    writes the version as its first statement, before it imports any of its
    modules."""
    return sys.modules[__package__].__version__


FORMAT = 1
SHIPPED = os.path.join(os.path.dirname(__file__), "tuning_tables")


@dataclass(frozen=True)
class Identity:
    """What a table is for: the OpenCL platform, the device and its driver."""

    platform: str
    device: str
    driver: str

    @classmethod
    def of(cls, device) -> "Identity":
        """The identity of a pyopencl Device."""
        return cls(device.platform.name.strip(), device.name.strip(),
                   device.driver_version.strip())

    @property
    def file_name(self) -> str:
        """platform-device-<hash>.json (the driver is checked inside, so that
        a driver update finds the old table and calls it stale)."""
        slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{self.platform}-{self.device}").strip("-")
        digest = hashlib.sha1(f"{self.platform}\n{self.device}".encode()).hexdigest()[:10]
        return f"{slug[:80]}-{digest}.json"


def cache_folder() -> str:
    """Where tuned tables go: $XDG_CACHE_HOME/clayout/tuning (~/.cache by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "clayout", "tuning")


def table_path(identity: Identity) -> str:
    return os.path.join(cache_folder(), identity.file_name)


def save(identity: Identity, families: dict, when: str, path: str | None = None) -> str:
    """Write a table (``families``: family -> entry, see ``entry``) for
    ``identity`` atomically; returns its path."""
    path = path or table_path(identity)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {"format": FORMAT, "clayout": _clayout_version(), "platform": identity.platform,
            "device": identity.device, "driver": identity.driver, "tuned": when,
            "families": families}
    part = f"{path}.{os.getpid()}.{threading.get_ident()}.part"
    try:
        with open(part, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(part, path)
    finally:
        if os.path.exists(part):
            os.remove(part)
    return path


def entry(strategy: str, changes: dict, ratio: float, default_ratio: float,
          candidates: int) -> dict:
    """One family's entry in a table."""
    return {"strategy": strategy, "tuning": changes, "ratio": round(ratio, 4),
            "default_ratio": round(default_ratio, 4), "candidates": candidates}


@dataclass(frozen=True)
class Table:
    """A table that loaded: its path, what it says, and the profile entries."""

    path: str
    data: dict
    tuned: tuple  # (family, strategy, Tuning), as DeviceProfile.tuned holds them


_WARNED: set = set()
_WARN_LOCK = threading.Lock()
_LOADED: dict = {}


def _warn_once(path: str, reason: str) -> None:
    with _WARN_LOCK:
        if (path, reason) in _WARNED:
            return
        _WARNED.add((path, reason))
    LOGGER.warning("clayout: tuning table %s ignored (%s); the defaults are used", path,
                   reason)


def parse(data, identity: Identity | None) -> tuple:
    """The profile entries of a table's JSON ``data``. Raises ValueError,
    saying why, for a table that is corrupt, stale or of another device
    (``identity`` None: any device)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a clayout tuning table of format {FORMAT}")
    if identity is not None:
        for key in ("platform", "device"):
            if data.get(key) != getattr(identity, key):
                raise ValueError(f"made for {key} {data.get(key)!r}, not "
                                 f"{getattr(identity, key)!r}")
        if data.get("driver") != identity.driver:
            raise ValueError(f"stale: made with driver {data.get('driver')!r}, this one is "
                             f"{identity.driver!r}; run python -m clayout tune again")
    version = _clayout_version()
    if data.get("clayout") != version:
        raise ValueError(f"stale: made by clayout {data.get('clayout')!r}, this is "
                         f"{version}; run python -m clayout tune again")
    families = data.get("families")
    if not isinstance(families, dict):
        raise ValueError("no 'families' object")
    tuned = []
    for family, item in sorted(families.items()):
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}")
        if not isinstance(item, dict) or item.get("strategy") not in STRATEGIES:
            raise ValueError(f"{family}: no strategy of {STRATEGIES}")
        base = CPU_TUNING if item["strategy"] == "cpu" else GPU_TUNING
        tuning = base.changed(item.get("tuning") or {}, shape_names(item["strategy"]))
        tuned.append((family, item["strategy"], tuning))
    return tuple(tuned)


def _read(path: str, identity: Identity | None) -> Table | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (path, stat.st_mtime_ns, stat.st_size, identity)
    if key in _LOADED:
        return _LOADED[key]
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        table = Table(path, data, parse(data, identity))
    except (OSError, ValueError) as error:  # json's errors are ValueErrors
        _warn_once(path, str(error))
        table = None
    _LOADED[key] = table
    return table


def load(identity: Identity) -> Table | None:
    """The table that applies to ``identity``: per CLAYOUT_TUNING (off, or a
    file's path), else the user's tuned table, else a shipped one. None
    where there is none, or the one there is was refused (logged once)."""
    setting = os.environ.get("CLAYOUT_TUNING", "").strip()
    if setting.lower() == "off":
        return None
    if setting:
        if not os.path.exists(setting):
            _warn_once(setting, "CLAYOUT_TUNING names no file")
            return None
        return _read(setting, identity)
    path = table_path(identity)
    if os.path.exists(path):
        return _read(path, identity)
    shipped = os.path.join(SHIPPED, identity.file_name)
    return _read(shipped, identity) if os.path.exists(shipped) else None


def load_raw(path: str, identity: Identity) -> dict:
    """The families of the table at ``path`` if it is a valid table for
    ``identity`` (so that tuning one family keeps the others), else {}."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        parse(data, identity)
    except (OSError, ValueError):
        return {}
    return dict(data["families"])


def shipped_tables() -> list[str]:
    """The paths of the tables that ship with clayout."""
    if not os.path.isdir(SHIPPED):
        return []
    return sorted(os.path.join(SHIPPED, name) for name in os.listdir(SHIPPED)
                  if name.endswith(".json"))
