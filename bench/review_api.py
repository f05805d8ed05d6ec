"""Review API benchmark against the real server (gateway + workers, started as `make run` does).

    .venv/bin/python bench/review_api.py [--seconds 10] [--clients 32] [--issues 1000]
    .venv/bin/python bench/review_api.py --smoke     # 2 clients, 1 s per route, 10 issues: seconds

GET issues on a model with 1,000 issues and PUT properties, each under 32 concurrent clients, plus the anchor
GET /api/v1/models/{id} (the lightest route through the same stack) measured in the same run. Prints JSON: requests
per second, p50/p99 latency in ms, and the ratio of each figure to the anchor's; exits non-zero if any request failed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.stack import Stack  # noqa: E402
from tests.helpers import MINIMAL_IFC  # noqa: E402

GUIDS = [f"2O2Fr$t4X7Zf8NOew3F{i:03d}" for i in range(64)]


def load(stack: Stack, clients: int, seconds: float, make_request) -> dict:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    counter = itertools.count()

    def client():
        nonlocal errors
        session = requests.Session()
        local, local_errors = [], 0
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            response = make_request(session, next(counter))
            local.append(time.perf_counter() - started)
            if response.status_code != 200 or not response.content.startswith(b'{"code":0,'):
                local_errors += 1
        with lock:
            latencies.extend(local)
            errors += local_errors

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50ms": round(statistics.median(latencies) * 1000, 2),
        "p99ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="2 clients, 1 s per route, 10 issues")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.clients, args.issues = 1, 2, 10

    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        stack = Stack(Path(tmp)).start()
        try:
            model_id = stack.api("POST", "/api/v1/models", files={"file": ("bench.ifc", MINIMAL_IFC)}).json()["data"]["id"]
            issue = {"entityId": GUIDS[0], "entityName": "Wall", "entityType": "IfcWall", "comment": "bench", "camera": {"eye": [1, 2, 3], "look": [0, 0, 0], "up": [0, 0, 1]}}
            for index in range(args.issues):
                stack.api("POST", f"/api/v1/models/{model_id}/issues", files={"issue": (None, json.dumps({**issue, "title": f"issue {index}"}))}).raise_for_status()
            base = stack.url

            def get_issues(session, _):
                return session.get(f"{base}/api/v1/models/{model_id}/issues", timeout=60)

            def put_properties(session, n):
                return session.put(
                    f"{base}/api/v1/models/{model_id}/entities/{GUIDS[n % len(GUIDS)]}/properties",
                    json={"entityName": "Wall", "fields": {"Name": f"name {n}"}}, timeout=60,
                )

            def get_model(session, _):
                return session.get(f"{base}/api/v1/models/{model_id}", timeout=60)

            results = {
                "anchor GET /api/v1/models/{id}": load(stack, args.clients, args.seconds, get_model),
                f"GET issues ({args.issues} issues)": load(stack, args.clients, args.seconds, get_issues),
                "PUT properties": load(stack, args.clients, args.seconds, put_properties),
            }
        finally:
            stack.stop()
    anchor = results["anchor GET /api/v1/models/{id}"]
    for figures in results.values():
        figures["rpsRatioToAnchor"] = round(figures["rps"] / anchor["rps"], 3)
        figures["p50RatioToAnchor"] = round(figures["p50ms"] / anchor["p50ms"], 3)
    print(json.dumps({"clients": args.clients, "seconds": args.seconds, "database": "SQLite (embedded default)", "results": results}, indent=2))
    if any(figures["errors"] for figures in results.values()):
        sys.exit("some requests failed (errors above)")


if __name__ == "__main__":
    main()
