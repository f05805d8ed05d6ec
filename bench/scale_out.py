"""Scale-out benchmark: one chat session followed by N SSE clients, served by one gateway process and by two (the
clients split across them), on PostgreSQL + Redis, while turns stream from a local OpenAI-compatible provider.

    .venv/bin/python bench/scale_out.py [--clients 50] [--turns 5] [--pieces 200]
    .venv/bin/python bench/scale_out.py --smoke     # 4 clients, one turn of 20 pieces: seconds

Per configuration: first-frame latency (POST message -> the turn's session.status busy at each client; median and
p95 over clients and turns) and frames per second delivered to all clients together while a turn streams, after one
unmeasured turn through each process. The anchor is the one-process figure measured in the same run. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.scale_out import start_scale_out, temporary_database  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.sse import SSEStream  # noqa: E402


def follow_turns(session, urls: list[str], clients: int, turns: int, fake: FakeOpenAI, pieces: int) -> dict:
    """Clients spread round-robin over `urls`; messages posted to the first URL."""
    project = session.post(f"{urls[0]}/api/v1/chat/projects", json={"kind": "cad"}, timeout=60).json()["data"]
    cid = session.post(f"{urls[0]}/api/v1/chat/sessions", json={"projectId": project["projectId"]}, timeout=60).json()["data"]["chatSessionId"]
    streams = [SSEStream(f"{urls[index % len(urls)]}/api/v1/chat/sessions/{cid}/events").start() for index in range(clients)]
    latencies, rates = [], []
    try:
        for stream in streams:
            stream.wait_event("session.status")
        for turn in range(turns):
            fake.script(Reply().text(" ".join(f"w{i}" for i in range(pieces)), pieces=pieces))
            marks = [len(s.frames) for s in streams]
            posted = time.perf_counter()
            session.post(f"{urls[0]}/api/v1/chat/sessions/{cid}/messages", json={"text": f"turn {turn}"}, timeout=60)
            for stream, mark in zip(streams, marks):
                stream.wait_for(lambda f: f.event == "session.status" and f.data["status"] == "busy", timeout=60, since=mark)
                latencies.append(time.perf_counter() - posted)
            for stream, mark in zip(streams, marks):
                stream.wait_for(lambda f: f.event == "session.idle", timeout=120, since=mark)
            rates.append(sum(len(s.frames) - m for s, m in zip(streams, marks)) / (time.perf_counter() - posted))
    finally:
        for stream in streams:
            stream.close()
    latencies.sort()
    return {
        "gateways": len(urls),
        "clients": clients,
        "firstFrameMsMedian": round(statistics.median(latencies) * 1000, 1),
        "firstFrameMsP95": round(latencies[max(0, int(len(latencies) * 0.95) - 1)] * 1000, 1),
        "framesPerSecond": round(statistics.median(rates), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--pieces", type=int, default=200, help="text pieces the provider streams per turn")
    parser.add_argument("--smoke", action="store_true", help="4 clients, one turn of 20 pieces")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.turns, args.pieces = 4, 1, 20
    fake = FakeOpenAI()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, temporary_database() as dsn:
            stack, urls = start_scale_out(Path(tmp), dsn, workers=0, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"})
            try:
                # a turn through each process first, not measured: neither configuration pays a process's first turn
                # (lazy imports, the provider client's first connection)
                follow_turns(stack.session, urls, len(urls), 1, fake, pieces=10)
                one = follow_turns(stack.session, urls[:1], args.clients, args.turns, fake, args.pieces)
                two = follow_turns(stack.session, urls, args.clients, args.turns, fake, args.pieces)
            finally:
                stack.stop()
    finally:
        fake.close()
    two["firstFrameRatioToOneProcess"] = round(two["firstFrameMsMedian"] / one["firstFrameMsMedian"], 2)
    two["framesPerSecondRatioToOneProcess"] = round(two["framesPerSecond"] / one["framesPerSecond"], 2)
    print(json.dumps({"storage": "PostgreSQL", "channelLayer": "redis", "anchor (one gateway process)": one, "two gateway processes": two}, indent=2))


if __name__ == "__main__":
    main()
