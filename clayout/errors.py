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
