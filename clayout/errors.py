"""The exceptions clayout raises."""


class Error(ValueError):
    """Base of every clayout error."""


class InvalidArgumentError(Error):
    """An argument breaks a rule: bad dims, tag, strides, group, axis, mask, size."""


class UnimplementedError(Error):
    """A valid request that no implementation serves; the message says which and why."""


class ExecutionError(Error):
    """Work clayout enqueued failed (it waited on an event that failed, or the
    host path raised): what it wrote holds undefined values."""


class KernelBuildError(UnimplementedError):
    """The device's compiler refused a generated kernel (a clayout bug). The
    implementation list then declines that kernel and the next
    implementation serves the problem; ``log`` holds the compiler's messages."""

    def __init__(self, kernel: str, log: str):
        first = next((line.strip() for line in log.splitlines() if "error" in line.lower()),
                     log.strip().splitlines()[0] if log.strip() else "no message")
        super().__init__(f"the device's compiler refused kernel {kernel}: {first}")
        self.kernel, self.log, self.summary = kernel, log, first


#: The longest repr of a user value that a message quotes.
MAX_SHOWN = 200
#: A NumPy array of at most this many elements is shown with its values.
SHOWN_ELEMENTS = 8


def describe(value) -> str:
    """A short text for ``value`` in a message: arrays (anything with a shape
    and a dtype) by type, shape and dtype, e.g. "numpy.ndarray of shape
    (64, 64), float64" (a NumPy array of a few elements with its values too,
    "numpy.ndarray [[2, 3]] of shape (1, 2), int64");
    anything else (NumPy scalars too) by its repr, cut to MAX_SHOWN characters."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and shape != () and dtype is not None:
        kind = type(value)
        values = ""
        if kind.__module__ == "numpy" and value.size <= SHOWN_ELEMENTS:
            values = f" {_capped(repr(value.tolist()))}"
        return (f"{kind.__module__.split('.')[0]}.{kind.__qualname__}{values} of shape "
                f"{tuple(shape)}, {dtype}")
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__qualname__} object>"
    return _capped(text)


def _capped(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."
