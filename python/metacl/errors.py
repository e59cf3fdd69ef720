"""errors.py — one exception class per status code of the C library (status.h).

Every non-OK status raises a subclass of metacl.Error carrying the status and the context's
last message. Where a Python built-in means the same thing the class derives from it too, so
`except ValueError` catches a shape mismatch.
"""


class Error(Exception):
    """A failed metacl call: .status (the C status code) and the library's message."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class NullError(Error):
    status = 1


class InvalidError(Error, ValueError):
    status = 2


class ShapeError(Error, ValueError):
    status = 3


class OutOfMemoryError(Error, MemoryError):
    status = 4


class BackendError(Error):
    status = 5


class UnsupportedError(Error):
    status = 6


class StateError(Error):
    status = 7


class IOError(Error, OSError):  # noqa: A001 (the library's MCL_ERR_IO)
    status = 8


class FormatError(Error, ValueError):
    status = 9


BY_STATUS = {c.status: c for c in (NullError, InvalidError, ShapeError, OutOfMemoryError,
                                   BackendError, UnsupportedError, StateError, IOError,
                                   FormatError)}


def raise_status(status, message):
    """Raise the class of `status` (an int from the library) with `message`."""
    cls = BY_STATUS.get(status, Error)
    raise cls(message, status)
