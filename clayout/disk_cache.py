"""The persistent cache: compiled templates, program binaries and SPIR-V kept
across processes, in one folder per user.

The folder is ``$CLAYOUT_CACHE`` (a path), or ``$XDG_CACHE_HOME/clayout``
(``~/.cache/clayout``); ``CLAYOUT_CACHE=off`` keeps nothing. It holds one
file per entry, ``<kind>/<sha256 of the key>``, and stays under
``CLAYOUT_CACHE_BYTES`` (256 MiB unless set): the entries used longest ago
go first.

A program binary is native code the driver runs, and a compiled template is
Python code: the cache is the user's own. Its folders are created private
(0700); a folder that others may write, or that another user owns, is not
used. An entry is loaded only when the user owns it and its content matches
the SHA-256 recorded when it was written; anything else (truncated,
corrupt, tampered, foreign) is ignored with a warning, once per file, and
rebuilt. Writers write a private temporary file and rename it into place,
so two processes writing one entry at once leave one whole entry.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import re
import stat
import sys
import tempfile
import threading
import time
from collections import Counter

from . import verbose

#: The first line of every entry: a format change makes old entries foreign.
MAGIC = b"clayout-cache 1\n"
#: The kinds of entries, one folder each: nothing else in the folder is touched.
KINDS = ("templates", "programs", "spirv")
_KEY = re.compile(r"[0-9a-f]{64}")
DEFAULT_BYTES = 256 * 2**20


def cache_folder() -> str | None:
    """The folder CLAYOUT_CACHE and XDG_CACHE_HOME name now; None when
    ``CLAYOUT_CACHE=off`` (read each time: tests and users change it)."""
    setting = os.environ.get("CLAYOUT_CACHE", "").strip()
    if setting.lower() in ("off", "0", "none", "false"):
        return None
    if setting:
        return os.path.abspath(os.path.expanduser(setting))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "clayout")


def size_limit() -> int:
    """The bound CLAYOUT_CACHE_BYTES sets (a whole number of bytes)."""
    raw = os.environ.get("CLAYOUT_CACHE_BYTES", "")
    try:
        return max(0, int(raw)) if raw else DEFAULT_BYTES
    except ValueError:
        _warn_once(f"CLAYOUT_CACHE_BYTES={raw!r}", "not a whole number of bytes; the "
                   f"cache keeps up to {DEFAULT_BYTES} bytes")
        return DEFAULT_BYTES


def entry_key(*parts) -> str:
    """The SHA-256 (hex) of ``parts`` (``stable_text``), with clayout's version."""
    # clayout's __init__ sits above this module (tests/test_structure.py):
    # its version is read where it is, as tuning_table.py does.
    version = sys.modules[__package__].__version__
    return hashlib.sha256(stable_text((version,) + parts).encode()).hexdigest()


def stable_text(value) -> str:
    """Text that names ``value`` exactly and is the same in every process:
    frozen dataclasses field by field, descriptors by their pickled fields,
    sets sorted. Raises TypeError for anything else (an object whose repr
    may hide a field or hold an address must not become a key)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(stable_text(v) for v in value) + ")"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(stable_text(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(sorted(f"{stable_text(k)}:{stable_text(v)}"
                                     for k, v in value.items())) + "}"
    kind = type(value)
    if dataclasses.is_dataclass(value):
        fields = (getattr(value, f.name) for f in dataclasses.fields(value))
        return kind.__name__ + stable_text(tuple(fields))
    if "__reduce__" in vars(kind):  # MemoryDesc, Extra: what pickling keeps is the value
        return kind.__name__ + stable_text(value.__reduce__()[1])
    raise TypeError(f"{kind.__name__} {value!r}: no stable text for a cache key")


_code_digest: list = []


def code_digest() -> str:
    """A digest of clayout's own code and templates, and of Mako's (each
    file's path, size and modification time): what renders a kernel's source
    from its plan.
    An edited module or template changes it, so entries keyed by a plan
    rather than by its source never outlive the code that made them."""
    if not _code_digest:
        package = os.path.dirname(os.path.abspath(__file__))
        files = []
        for folder, subfolders, names in os.walk(package):
            subfolders[:] = [d for d in subfolders if d != "__pycache__"]
            for name in names:
                if name.endswith((".py", ".mako")):
                    try:
                        info = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue  # a dangling link (an editor's lock file): no code
                    files.append((os.path.relpath(os.path.join(folder, name), package),
                                  info.st_size, info.st_mtime_ns))
        # Mako renders the templates too: its version (found, not imported).
        mako = importlib.util.find_spec("mako")
        if mako is not None and mako.origin:
            info = os.stat(mako.origin)
            files.append((mako.origin, info.st_size, info.st_mtime_ns))
        _code_digest.append(hashlib.sha256(repr(sorted(files)).encode()).hexdigest())
    return _code_digest[0]


_warned: set = set()
_warned_lock = threading.Lock()


def _warn_once(what: str, why: str) -> None:
    with _warned_lock:
        if what in _warned:
            return
        _warned.add(what)
    verbose.LOGGER.warning("clayout cache: %s: %s", what, why)


class DiskCache:
    """The entries under one folder. ``counts`` tallies, per kind, the
    ``hit``s, ``miss``es, entries ``stored`` and entries ``rejected``
    (corrupt or not the user's): tests and ``info`` read it."""

    def __init__(self, folder: str):
        self.folder = folder
        self.counts: Counter = Counter()
        self._usable = None  # checked once, on first use
        self._writable = True  # until a write fails

    def _path(self, kind: str, key: str) -> str:
        return os.path.join(self.folder, kind, key)

    def usable(self) -> bool:
        """Whether the folder can hold entries: created 0700 where missing;
        False (with a warning) when others may write it or it is not the user's."""
        if self._usable is None:
            self._usable = _private_folder(self.folder, create=True)
        return self._usable

    def contains(self, kind: str, key: str) -> bool:
        """Whether an entry is there (not yet checked: ``load`` may still reject it)."""
        try:
            return self.usable() and stat.S_ISREG(os.lstat(self._path(kind, key)).st_mode)
        except OSError:
            return False

    def load(self, kind: str, key: str) -> bytes | None:
        """The entry's content, or None (a miss, or an entry rejected with a warning)."""
        if not self.usable():
            return None
        path = self._path(kind, key)
        try:
            # No link followed, no FIFO waited on: what is read is checked first.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            self.counts[kind, "miss"] += 1
            return None
        except OSError as exc:
            return self._reject(kind, path, f"cannot be read ({exc})", remove=False)
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                return self._reject(kind, path, f"not a file of this user's (uid "
                                    f"{info.st_uid}, mode {info.st_mode:o}): not loaded",
                                    remove=False)
            try:
                data = f.read()
            except OSError as exc:
                return self._reject(kind, path, f"cannot be read ({exc})")
        header_end = len(MAGIC) + 65
        if not data.startswith(MAGIC) or len(data) < header_end:
            return self._reject(kind, path, "not a clayout cache entry (truncated or foreign)")
        recorded, payload = data[len(MAGIC):header_end - 1], data[header_end:]
        if hashlib.sha256(payload).hexdigest().encode() != recorded:
            return self._reject(kind, path, "its content does not match its SHA-256 "
                                "(corrupt or modified)")
        try:
            os.utime(path)  # recently used: the size bound removes it last
        except OSError:
            pass
        self.counts[kind, "hit"] += 1
        return payload

    def _reject(self, kind, path, why, remove=True):
        self.counts[kind, "rejected"] += 1
        _warn_once(path, why + "; rebuilt")
        if remove:
            try:
                os.remove(path)
            except OSError:
                pass
        return None

    def store(self, kind: str, key: str, payload: bytes) -> None:
        """Write the entry (atomically: a new private temporary file renamed
        into place), then keep the folder under the size bound. A failure
        is one warning for the folder, after which this process writes no more."""
        if not self.usable() or not self._writable:
            return
        folder = os.path.join(self.folder, kind)
        part = None
        try:
            # Both again: the folder may have been removed since usable() looked.
            if not (_private_folder(self.folder, create=True) and
                    _private_folder(folder, create=True)):
                return
            fd, part = tempfile.mkstemp(dir=folder, prefix=key + ".", suffix=".part")
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
                f.write(payload)
            os.replace(part, os.path.join(folder, key))
            self.counts[kind, "stored"] += 1
            self.trim(size_limit())
        except OSError as exc:
            if part is not None:
                try:
                    os.remove(part)
                except OSError:
                    pass
            self._writable = False
            _warn_once(self.folder, f"cannot be written ({exc}); entries are loaded from it "
                       f"but no more are written by this process")

    def remove(self, kind: str, key: str) -> None:
        """Remove one entry (one the driver refused), if there."""
        try:
            os.remove(self._path(kind, key))
        except OSError:
            pass

    def entries(self, stale_parts: bool = False) -> list[tuple[str, int, float]]:
        """(path, bytes, last used) of every entry: the files named as keys
        in the kinds' folders, never a link or anything else found there
        (the folder may be one the user also keeps other files in). With
        ``stale_parts``, also the temporary files of writers gone for an hour."""
        found = []
        now = time.time()
        for kind in KINDS:
            folder = os.path.join(self.folder, kind)
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    continue
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                key = name.split(".", 1)[0]
                is_part = name.endswith(".part")
                if not _KEY.fullmatch(key) or (name != key and not is_part):
                    continue
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue  # removed meanwhile by another process
                if not stat.S_ISREG(info.st_mode) or \
                        is_part and not (stale_parts and now - info.st_mtime > 3600):
                    continue
                found.append((os.path.join(folder, name), info.st_size, info.st_mtime))
        return found

    def trim(self, limit: int) -> None:
        """Remove the entries used longest ago until the rest fit ``limit``
        bytes (and temporary files left by writers gone for an hour)."""
        entries = sorted(self.entries(stale_parts=True), key=lambda e: e[2])
        total = sum(size for _, size, _ in entries)
        for path, size, _ in entries:
            if total <= limit and not path.endswith(".part"):
                continue
            try:
                os.remove(path)
            except OSError:
                pass
            total -= size

    def clear(self) -> int:
        """Remove every entry; returns how many (none from a folder the
        cache does not use: see ``usable``)."""
        if not self.usable():
            return 0
        entries = self.entries(stale_parts=True)
        for path, _, _ in entries:
            try:
                os.remove(path)
            except OSError:
                pass
        return len(entries)

    def describe(self) -> str:
        """One line: the folder, its entries and bytes, the bound."""
        entries = self.entries()
        state = "" if self.usable() else " (not used: see the warning)"
        return (f"{self.folder}{state}: {len(entries)} entries, "
                f"{sum(size for _, size, _ in entries)} bytes (bound {size_limit()} bytes, "
                f"CLAYOUT_CACHE_BYTES)")


def _private_folder(folder: str, create: bool) -> bool:
    """Whether ``folder`` is the user's and no one else may write it; made
    0700 when ``create`` (missing parents as os.makedirs makes them).
    Warns once when not."""
    try:
        if create:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        _warn_once(folder, f"cannot be used ({exc}); nothing is cached")
        return False
    if not stat.S_ISDIR(info.st_mode):  # a link could lead anywhere
        _warn_once(folder, "not a folder (a link?): nothing is cached")
        return False
    if info.st_uid != os.getuid():
        _warn_once(folder, f"owned by uid {info.st_uid}, not this user: nothing is cached")
        return False
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _warn_once(folder, f"others may write it (mode {stat.S_IMODE(info.st_mode):o}): "
                   f"nothing is cached; chmod 700 it")
        return False
    return True


_caches: dict = {}
_caches_lock = threading.Lock()


def disk_cache() -> DiskCache | None:
    """The cache CLAYOUT_CACHE names now (one object per folder), or None when off."""
    folder = cache_folder()
    if folder is None:
        return None
    with _caches_lock:
        cache = _caches.get(folder)
        if cache is None:
            cache = _caches[folder] = DiskCache(folder)
        return cache
