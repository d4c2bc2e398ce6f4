"""Verbose lines through the ``logging`` module (logger ``"clayout"``).

One line per primitive creation, execution and kernel build (INFO), and per
implementation that declined, kernel source and the compiler's messages
(DEBUG; a failed build's messages at INFO), in fixed columns like
ONEDNN_VERBOSE's, after a header printed once per process::

    clayout_verbose,info,template:event,engine,primitive,implementation,descriptors,attributes,problem,time
    clayout_verbose,primitive,create,opencl,reorder,ocl:generated:...,src:f32:abcd dst:s8:aBcd16b,,2x16x3x3,

A column that does not apply is empty, so columns never shift. They reach
whatever handlers the application gives the logger (``logging.getLogger
("clayout").setLevel(logging.INFO)``, or ``logging.basicConfig(level=...)``).
``CLAYOUT_VERBOSE=1`` (``2`` adds the DEBUG lines) turns them on without any
setup: they go to the logger's own handlers if it has any, else to stderr.
"""
from __future__ import annotations

import logging
import os
import sys
import threading

LOGGER = logging.getLogger("clayout")

#: The columns after the line's category (``primitive`` or ``kernel``).
COLUMNS = ("event", "engine", "primitive", "implementation", "descriptors", "attributes",
           "problem", "time")
PREFIX = "clayout_verbose"
HEADER = f"{PREFIX},info,template:" + ",".join(COLUMNS)

_LEVELS = {1: logging.INFO, 2: logging.DEBUG}
# Events about kernels rather than primitives (oneDNN's second column).
_KERNEL_EVENTS = ("build", "load", "compiler", "source")


# Every execute asks whether to log, so the variable is read at each call
# (tests and users change it) but cheaply: os.environ.get of an unset name
# raises and catches a KeyError inside (1 us); os.environ's own dict, which
# setting and deleting through os.environ keep current, answers in 0.05 us.
_ENVIRON = getattr(os.environ, "_data", None)
_KEY = os.environ.encodekey("CLAYOUT_VERBOSE") if _ENVIRON is not None else None


def level() -> int:
    """The verbosity CLAYOUT_VERBOSE asks for now (read each time, so tests
    and users may change it); 0 when unset or not a number."""
    if _ENVIRON is not None and getattr(os.environ, "_data", None) is _ENVIRON:
        raw = _ENVIRON.get(_KEY)
        if raw is None:
            return 0
        text = os.environ.decodevalue(raw)
    else:  # an os.environ without its dict (another Python): the public way
        text = os.environ.get("CLAYOUT_VERBOSE", "0")
    try:
        return int(text or 0)
    except ValueError:
        return 0


class _Stderr(logging.Handler):
    """CLAYOUT_VERBOSE's handler when the application set none: the line to
    whatever ``sys.stderr`` is at the time (a handler holding the stream it
    was made with would miss a later redirection)."""

    def emit(self, record):
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging's own convention
            self.handleError(record)


_STDERR = _Stderr()
_header_lock = threading.Lock()
_header_done = False


def _route(min_level: int):
    """Where a line of this verbosity goes now: "logger" (its level lets it
    through), "handlers" (CLAYOUT_VERBOSE asks and the logger has handlers
    of its own), "stderr" (CLAYOUT_VERBOSE asks, nothing is configured) or None."""
    if LOGGER.isEnabledFor(_LEVELS.get(min_level, logging.DEBUG)):
        return "logger"
    if level() >= min_level:
        return "handlers" if LOGGER.handlers else "stderr"
    return None


def enabled(min_level: int = 1) -> bool:
    """True when a line of this verbosity would be written (callers skip
    the work of making one otherwise)."""
    return _route(min_level) is not None


def _emit(route: str, py_level: int, message: str):
    if route == "logger":
        LOGGER.log(py_level, message)
        return
    record = LOGGER.makeRecord(LOGGER.name, py_level, __file__, 0, message, None, None)
    if route == "handlers":
        LOGGER.handle(record)  # past the logger's level: CLAYOUT_VERBOSE asked
    else:
        _STDERR.handle(record)


def _field(value) -> str:
    # A comma or line break inside a value would shift the columns after it.
    return str(value).replace(",", ";").replace("\n", " ")


def line(event: str, engine="", primitive="", implementation="", descriptors="",
         attributes="", problem="", time="") -> str:
    """The text of one line, every column present."""
    category = "kernel" if event in _KERNEL_EVENTS else "primitive"
    values = (event, engine, primitive, implementation, descriptors, attributes, problem, time)
    return ",".join([PREFIX, category] + [_field(v) for v in values])


def log(event: str, engine="", primitive="", implementation="", descriptors="", attributes="",
        problem="", time="", *, min_level: int = 1, text: str = ""):
    """Log one line of the columns in COLUMNS when verbosity ``min_level``
    is on (1: INFO, 2: DEBUG); ``text`` (a kernel's source) follows the line
    on lines of its own. The header goes first, once per process. Never
    raises for a handler's failure (logging reports those)."""
    route = _route(min_level)
    if route is None:
        return
    global _header_done
    py_level = _LEVELS.get(min_level, logging.DEBUG)
    if not _header_done:
        with _header_lock:  # held while writing: no other thread's line comes first
            if not _header_done:
                # At INFO: a handler that passes only INFO still shows it.
                _emit(route, logging.INFO, HEADER)
                _header_done = True
    message = line(event, engine, primitive, implementation, descriptors, attributes, problem,
                   time)
    _emit(route, py_level, message + ("\n" + text if text else ""))
