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
