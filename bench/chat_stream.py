"""Chat event stream benchmark against the real gateway, turns streamed by the local OpenAI-compatible
provider (tests/fake_openai.py: each turn one reply of --pieces text pieces, sent without pauses).

    .venv/bin/python bench/chat_stream.py [--clients 50] [--turns 5] [--pieces 200] [--redis]
    .venv/bin/python bench/chat_stream.py --smoke     # 3 clients, one turn of 20 pieces: seconds

N SSE clients follow one session while it runs T turns. For each turn: first-frame latency (POST message -> the
turn's session.status busy at each client: median and p95 over clients) and frames per second delivered (all
clients together, while the turn streams), after one unmeasured turn. The anchor is the same measurement with one
client, in the same run. Prints JSON.
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
from tests.e2e.stack import Stack  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.sse import SSEStream  # noqa: E402


def measure(stack: Stack, fake: FakeOpenAI, clients: int, turns: int, pieces: int) -> dict:
    # a session without a model: the provider's reply is all text (no tool call, no permission to wait for)
    cid = stack.api("POST", "/api/v1/chat/sessions", json={"title": "bench", "modelId": ""}).json()["data"]["chatSessionId"]
    streams = [SSEStream(f"{stack.url}/api/v1/chat/sessions/{cid}/events").start() for _ in range(clients)]
    latencies, rates = [], []
    try:
        for stream in streams:
            stream.wait_event("session.status")
        for turn in range(turns):
            fake.script(Reply().text(" ".join(f"w{i}" for i in range(pieces)), pieces=pieces))
            marks = [len(s.frames) for s in streams]
            posted = time.perf_counter()
            stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": f"turn {turn}: describe the model"})
            firsts = []
            for stream, mark in zip(streams, marks):
                stream.wait_for(lambda f: f.event == "session.status" and f.data["status"] == "busy", timeout=60, since=mark)
                firsts.append(time.perf_counter() - posted)
            for stream, mark in zip(streams, marks):
                stream.wait_for(lambda f: f.event == "session.idle", timeout=120, since=mark)
            elapsed = time.perf_counter() - posted
            delivered = sum(len(s.frames) - m for s, m in zip(streams, marks))
            latencies += firsts
            rates.append(delivered / elapsed)
    finally:
        for stream in streams:
            stream.close()
    latencies.sort()
    return {
        "clients": clients,
        "firstFrameMsMedian": round(statistics.median(latencies) * 1000, 1),
        "firstFrameMsP95": round(latencies[max(0, int(len(latencies) * 0.95) - 1)] * 1000, 1),
        "framesPerSecond": round(statistics.median(rates), 1),
        "framesPerTurnPerClient": round(sum(len(s.frames) for s in streams) / clients / turns, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--pieces", type=int, default=200, help="text pieces the provider streams per turn")
    parser.add_argument("--redis", action="store_true", help="channel layer on Redis at 127.0.0.1:6379 instead of in-memory")
    parser.add_argument("--smoke", action="store_true", help="3 clients, one turn of 20 pieces")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.turns, args.pieces = 3, 1, 20
    fake = FakeOpenAI()
    # every client of the bench comes from 127.0.0.1: the per-address stream cap is lifted for it
    config = {"maxStreamsPerClient": max(args.clients, 20), "llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake",
              **({"redisURL": "redis://127.0.0.1:6379/0"} if args.redis else {})}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
            stack = Stack(Path(tmp), workers=0, config=config).start()
            try:
                measure(stack, fake, 1, 1, 10)  # not measured: the process's first turn (lazy imports, the provider's first connection)
                anchor = measure(stack, fake, 1, args.turns, args.pieces)
                loaded = measure(stack, fake, args.clients, args.turns, args.pieces)
            finally:
                stack.stop()
    finally:
        fake.close()
    loaded["firstFrameRatioToAnchor"] = round(loaded["firstFrameMsMedian"] / anchor["firstFrameMsMedian"], 2)
    loaded["framesPerSecondRatioToAnchor"] = round(loaded["framesPerSecond"] / anchor["framesPerSecond"], 2)
    print(json.dumps({"channelLayer": "redis" if args.redis else "in-memory", "piecesPerTurn": args.pieces,
                      "anchor (1 client)": anchor, "loaded": loaded}, indent=2))


if __name__ == "__main__":
    main()
