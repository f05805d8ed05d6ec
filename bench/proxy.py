"""Proxy overhead: GET script and GET versions through the gateway vs directly on the edit service, same run,
alternating, one client (latency, not throughput). Beside them, the gateway's own floor: GET of the model's record,
a route that never calls the edit service, alternating with the rest (what any gateway request costs).

    .venv/bin/python bench/proxy.py [--requests 300]
    .venv/bin/python bench/proxy.py --smoke     # 5 requests per path: seconds

Prints JSON with the median and p90 latency of both paths and the median overhead in ms (goal <= 2 ms). Then, per
path, the processor time the gateway process spends per call, and the edit service per direct call (Linux:
/proc/<pid>/stat, all of a process's threads), over a block of the same calls in a row: on a shared machine latency
moves with the load, processor time much less.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.e2e.stack import Stack  # noqa: E402
from tests.helpers import MINIMAL_IFC  # noqa: E402


def timed(session: requests.Session, url: str) -> float:
    started = time.perf_counter()
    response = session.get(url, timeout=30)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed * 1000


def cpu_ms(pid: int) -> float:
    """Processor time (user + system) of a process so far, all its threads, in ms."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def cpu_per_call(session: requests.Session, url: str, pid: int, calls: int) -> float:
    before = cpu_ms(pid)
    for _ in range(calls):
        timed(session, url)
    return round((cpu_ms(pid) - before) / calls, 2)


def summary(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"medianMs": round(statistics.median(ordered), 2), "p90Ms": round(ordered[int(len(ordered) * 0.9)], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="5 requests per path")
    args = parser.parse_args()
    if args.smoke:
        args.requests = 5
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        stack = Stack(Path(tmp), workers=1).start()
        try:
            model_id = stack.api("POST", "/api/v1/models", files={"file": ("p.ifc", MINIMAL_IFC)}).json()["data"]["id"]
            script = (ROOT / "edit_service" / "examples" / "small_house.py").read_text()
            stack.api("PUT", f"/api/v1/models/{model_id}/script", json={"script": script}).raise_for_status()
            stack.api("POST", f"/api/v1/models/{model_id}/script/save", json={"note": "bench"}).raise_for_status()
            routes = {
                "GET script": (f"{stack.url}/api/v1/models/{model_id}/script", f"{stack.edit_url}/models/{model_id}/script"),
                "GET versions": (f"{stack.url}/api/v1/models/{model_id}/edit/versions", f"{stack.edit_url}/models/{model_id}/versions"),
            }
            session = requests.Session()
            session.headers.update(stack.edit_headers)  # the direct calls need the service secret; the gateway ignores it
            floor_url = f"{stack.url}/api/v1/models/{model_id}"
            gateway_pid, edit_pid = stack.processes["gateway"].pid, stack.processes["edit"].pid
            floor = []
            results = {}
            for name, (gateway_url, direct_url) in routes.items():
                for url in (gateway_url, direct_url, floor_url):  # warm-up: connections, caches
                    for _ in range(20):
                        timed(session, url)
                gateway, direct = [], []
                for _ in range(args.requests):
                    gateway.append(timed(session, gateway_url))
                    direct.append(timed(session, direct_url))
                    floor.append(timed(session, floor_url))
                results[name] = {
                    "gateway": summary(gateway),
                    "direct": summary(direct),
                    "medianOverheadMs": round(statistics.median(gateway) - statistics.median(direct), 2),
                    "ratio": round(statistics.median(gateway) / statistics.median(direct), 2),
                    "gatewayCpuMsPerCall": cpu_per_call(session, gateway_url, gateway_pid, args.requests),
                    "editServiceCpuMsPerDirectCall": cpu_per_call(session, direct_url, edit_pid, args.requests),
                }
            floor_cpu = cpu_per_call(session, floor_url, gateway_pid, args.requests)
        finally:
            stack.stop()
    print(json.dumps({
        "requests": args.requests, "anchor": "the same call directly on the edit service", "results": results,
        "gatewayFloor": {"route": "GET /api/v1/models/{id} (no edit-service call)", **summary(floor), "gatewayCpuMsPerCall": floor_cpu},
    }, indent=2))


if __name__ == "__main__":
    main()
