"""The exceptions clayout raises."""


class Error(ValueError):
    """Base of every clayout error."""


class InvalidArgumentError(Error):
    """An argument breaks a rule: bad dims, tag, strides, group, axis, mask, size."""


class UnimplementedError(Error):
    """A valid request that no implementation serves; the message says which and why."""
