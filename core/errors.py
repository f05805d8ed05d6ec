"""Application errors: what a use case reports when it cannot do what was asked, with no HTTP framework in it.

Each error carries the envelope code of the interface spec and the HTTP status that code is answered with; the API
edge (api/envelope.py, the exception handler) turns one into the envelope {code, message, data}, and any
other caller (a management command, the chat agent's tools) reads `message` and `data` directly.
"""

from __future__ import annotations

OK = 0
INVALID = 40001
TOO_LARGE = 40002
UNAUTHORIZED = 40100
# a known resource the caller may not act on: a role that may not, a read-only token, a cross-site request (HTTP 403)
FORBIDDEN = 40300
CROSS_SITE = FORBIDDEN
# an extension of the spec: too many failed token attempts or open event streams from one client address (HTTP 429)
TOO_MANY_REQUESTS = 42900
NOT_FOUND = 40400
CONFLICT = 40900
INTERNAL = 50000
UPSTREAM = 50200

HTTP_STATUS = {
    INVALID: 400,
    TOO_LARGE: 400,
    UNAUTHORIZED: 401,
    FORBIDDEN: 403,
    NOT_FOUND: 404,
    CONFLICT: 409,
    TOO_MANY_REQUESTS: 429,
    INTERNAL: 500,
    UPSTREAM: 502,
}


class ApplicationError(Exception):
    """A business error with an envelope code; `code` may be given per instance (an upstream refusal mapped to the
    code it stands for), `status` defaults to the code's HTTP status."""

    code = INVALID

    def __init__(self, message: str, code: int | None = None, data=None, http_status: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.code
        self.status = http_status or HTTP_STATUS[self.code]
        self.data = data

    @property
    def detail(self) -> str:
        """The message (the name DRF's exceptions use, kept for callers that read or amend it)."""
        return self.message

    @detail.setter
    def detail(self, message: str) -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


class Invalid(ApplicationError):
    code = INVALID


class TooLarge(ApplicationError):
    code = TOO_LARGE


class NotFound(ApplicationError):
    code = NOT_FOUND


class Conflict(ApplicationError):
    code = CONFLICT


class Upstream(ApplicationError):
    code = UPSTREAM
