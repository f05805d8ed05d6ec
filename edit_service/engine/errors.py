"""Engine errors; the HTTP layer maps them to statuses (404, 409, 422, 503)."""


class EngineError(Exception):
    status = 422

    def __init__(self, detail):
        super().__init__(detail if isinstance(detail, str) else str(detail))
        self.detail = detail


class NotFound(EngineError):
    status = 404


class Invalid(EngineError):
    status = 422


class Conflict(EngineError):
    status = 409


class RunFailed(EngineError):
    """The build script failed, timed out, or produced an invalid IFC; detail ends with the last 2 KB of stderr."""

    status = 422


class SandboxUnavailable(EngineError):
    status = 503


class SandboxBusy(EngineError):
    """Every run slot is taken and the wait queue is full (overall or for this requester): retry after N s."""

    status = 503

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}
