"""Exceptions that the CLI turns into one-line messages and exit statuses.

UsageError   bad input on the command line or in a file: "locklab: <what>: <problem>", exit 2.
DriverError  locklab-bench failed: its stderr is shown; exit 1, or 2 when the driver itself said 2.
"""


class LocklabError(Exception):
    """Base class: `message` is printed after "locklab: ", `status` is the exit status."""

    status = 1

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class UsageError(LocklabError):
    """Bad input caught before anything runs (exit 2)."""

    status = 2


class DriverError(LocklabError):
    """The driver exited nonzero or printed something that is not a run record."""

    def __init__(self, message, status=1, stderr=""):
        super().__init__(message, 2 if status == 2 else 1)
        self.driver_status = status
        self.stderr = stderr
