"""python -m edit_service: serves the edit service (serving/http_server.py) on EDIT_SERVICE_HOST:EDIT_SERVICE_PORT, judging each
request by its line and headers (edit_service/door.py) and refusing bodies over their route's limit before they
are buffered."""

import json
import os
import sys
from http import HTTPStatus

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "edit_service.settings")

MULTIPART_OVERHEAD_BYTES = 64 * 1024


def main() -> None:
    from serving.http_server import RequestHead, raw_response, serve
    from serving.lifetime import die_with_parent_if_asked

    die_with_parent_if_asked()
    from core.service_secret import HEADER, SecretUnavailable, ensure_secret, secret_path
    from edit_service import door, settings

    for folder in ("models", "tmp"):
        settings.DATA_DIR.joinpath(folder).mkdir(parents=True, exist_ok=True)
    try:
        ensure_secret(settings.DATA_DIR)
    except SecretUnavailable as exc:
        sys.exit(f"edit service not started: {exc}")

    def detail_response(status: int, detail: str) -> bytes:
        body = json.dumps({"detail": detail}).encode()
        return raw_response(f"{status} {HTTPStatus(status).phrase}", {"Content-Type": "application/json"}, body)

    def header_check(head: RequestHead) -> bytes | None:
        refused = door.refusal(head.method, head.path, head.headers, settings.DATA_DIR)
        return None if refused is None else detail_response(refused.status, refused.detail)

    def body_limit(method: str, path: str) -> int:
        return settings.UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES if door.UPLOAD_ROUTE.match(path) else settings.JSON_BODY_MAX_BYTES

    def refusal(limit: int, headers: dict, what: str = "request body") -> bytes:
        return detail_response(413, f"the {what} exceeds the limit of {limit / (1024 * 1024):g} MB")

    from edit_service.engine.sandbox import Sandbox
    from sandboxing.cgroups import remove_stale

    remove_stale(settings.SANDBOX_LIMITS.cgroup_root)
    print(f"edit service on http://{settings.HOST}:{settings.PORT} (data: {settings.DATA_DIR}); every call but /health "
          f"and the docs needs the {HEADER} header ({secret_path(settings.DATA_DIR)})", flush=True)
    print(Sandbox(settings.SANDBOX_LIMITS).isolation_summary(), flush=True)
    serve("edit_service.asgi:application", host=settings.HOST, port=settings.PORT,
          body_limit=body_limit, refusal=refusal, header_check=header_check)


if __name__ == "__main__":
    main()
