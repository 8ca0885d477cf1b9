"""Exceptions that the CLI turns into one-line messages and exit statuses.

UsageError   bad input on the command line or in a file: "locklab: <what>: <problem>", exit 2.
FileError    a UsageError about one file: message "FILE: problem", with .path and .problem.
DriverError  locklab-bench failed: its stderr is shown; exit 1, or 2 when the driver itself said 2.
Interrupted  Ctrl-C during a bench: what was measured is kept; exit 130.
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


class FileError(UsageError):
    """A file that cannot be read, is not what it should be, or cannot be written (exit 2)."""

    def __init__(self, path, problem, status=2):
        super().__init__(f"{path}: {problem}", status)
        self.path = str(path)
        self.problem = problem


class DriverError(LocklabError):
    """The driver exited nonzero or printed something that is not a run record."""

    def __init__(self, message, status=1, stderr=""):
        super().__init__(message, 2 if status == 2 else 1)
        self.driver_status = status
        self.stderr = stderr


class Interrupted(LocklabError):
    """Ctrl-C stopped a measurement; the message says where what was measured went (exit 130)."""

    status = 130
