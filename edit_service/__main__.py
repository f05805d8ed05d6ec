"""python -m edit_service: serves the edit service with Daphne on EDIT_SERVICE_HOST:EDIT_SERVICE_PORT, refusing
request bodies over their route's limit before they are buffered."""

import ipaddress
import json
import logging
import os
import re

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "edit_service.settings")

logger = logging.getLogger("edit_service")
UPLOAD_ROUTE = re.compile(r"^/models/[^/]+/diff/upload$")
MULTIPART_OVERHEAD_BYTES = 64 * 1024


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def main() -> None:
    from serving.daphne import raw_response, serve
    from serving.lifetime import die_with_parent_if_asked

    die_with_parent_if_asked()
    from edit_service import settings

    for folder in ("models", "tmp"):
        settings.DATA_DIR.joinpath(folder).mkdir(parents=True, exist_ok=True)
    if not _is_loopback(settings.HOST):
        logging.basicConfig()
        logger.warning("the edit service listens on %s: it has no authentication; only trusted callers may reach it", settings.HOST)

    def body_limit(method: str, path: str) -> int:
        return settings.UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES if UPLOAD_ROUTE.match(path) else settings.JSON_BODY_MAX_BYTES

    def refusal(limit: int, headers: dict) -> bytes:
        body = json.dumps({"detail": f"the request body exceeds the limit of {limit / (1024 * 1024):g} MB"}).encode()
        return raw_response("413 Payload Too Large", {"Content-Type": "application/json"}, body)

    from edit_service.engine.sandbox import Sandbox
    from sandboxing.cgroups import remove_stale

    remove_stale(settings.SANDBOX_LIMITS.cgroup_root)
    print(f"edit service on http://{settings.HOST}:{settings.PORT} (data: {settings.DATA_DIR})", flush=True)
    print(Sandbox(settings.SANDBOX_LIMITS).isolation_summary(), flush=True)
    serve(["-b", settings.HOST, "-p", str(settings.PORT), "edit_service.asgi:application"], body_limit=body_limit, refusal=refusal)


if __name__ == "__main__":
    main()
