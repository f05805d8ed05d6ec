"""What a chat turn costs on top of the language model, on the real gateway with the real openai client
against the local fake provider (tests/fake_openai.py), whose every reply waits --latency-ms before its first chunk.

    .venv/bin/python bench/turn_overhead.py [--turns 10] [--steps 3] [--latency-ms 150]
    .venv/bin/python bench/turn_overhead.py --smoke     # one turn of 2 steps, 20 ms provider latency, one abort: seconds

Each turn of a session without a model runs --steps model steps (a session_info call each, then a closing text).
Measured per turn: the first frame after POST message (session.status busy, at an SSE client) and the per-step
overhead: (the turn's wall time from POST to session.idle - the provider's own time for the turn's requests, as the
fake server measured it) / steps. Abort latency: in a turn whose provider reply is held open after its first chunk,
the time from POST .../abort to the session.idle frame at the SSE client (the frame's arrival time, not the polling
of the waiting loop), --turns times. The anchor is the provider's latency in the same run: one streamed completion
asked for directly with the openai client. Prints JSON with medians and the ratios to the anchor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.stack import Stack  # noqa: E402
from tests.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.helpers import poll  # noqa: E402
from tests.sse import SSEStream  # noqa: E402


def step_reply(latency: float, last: bool) -> Reply:
    reply = Reply().pause(latency)
    return reply.text("All done here.") if last else reply.text("Looking.").tool("session_info", {})


def anchor_ms(fake: FakeOpenAI, latency: float, repeat: int) -> float:
    """The provider's own latency seen by a client: one streamed completion, asked for directly."""
    client = openai.OpenAI(api_key="k", base_url=fake.url, max_retries=0)
    times = []
    for _ in range(repeat):
        fake.script(step_reply(latency, last=True))
        started = time.perf_counter()
        for _chunk in client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}], stream=True):
            pass
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(stack: Stack, fake: FakeOpenAI, turns: int, steps: int, latency: float) -> dict:
    cid = stack.api("POST", "/api/v1/chat/sessions", json={"title": "bench", "modelId": ""}).json()["data"]["chatSessionId"]
    sse = SSEStream(f"{stack.url}/api/v1/chat/sessions/{cid}/events").start()
    first_frames, overheads, per_step = [], [], []
    try:
        sse.wait_event("session.status")
        for turn in range(turns):
            fake.script(*(step_reply(latency, last=index == steps - 1) for index in range(steps)))
            mark, requests_before = len(sse.frames), len(fake.requests)
            posted = time.perf_counter()
            stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": f"turn {turn}"})
            sse.wait_for(lambda f: f.event == "session.status" and f.data["status"] == "busy", timeout=60, since=mark)
            first_frames.append((time.perf_counter() - posted) * 1000)
            sse.wait_for(lambda f: f.event == "session.idle", timeout=120, since=mark)
            wall = time.perf_counter() - posted
            provider = sum(r["seconds"] or 0 for r in fake.requests[requests_before:])
            overheads.append((wall - provider) / steps * 1000)
            per_step.append(wall / steps * 1000)
    finally:
        sse.close()
    first_frames.sort()
    return {
        "turns": turns,
        "stepsPerTurn": steps,
        "firstFrameMsMedian": round(statistics.median(first_frames), 1),
        "firstFrameMsP95": round(first_frames[max(0, int(len(first_frames) * 0.95) - 1)], 1),
        "stepMsMedian": round(statistics.median(per_step), 1),
        "overheadMsPerStepMedian": round(statistics.median(overheads), 1),
    }


def abort_latency(stack: Stack, fake: FakeOpenAI, repeat: int) -> dict:
    """ms from POST abort to the session.idle frame, in turns whose provider reply is held open (the fake's hold)."""
    cid = stack.api("POST", "/api/v1/chat/sessions", json={"title": "bench abort", "modelId": ""}).json()["data"]["chatSessionId"]
    sse = SSEStream(f"{stack.url}/api/v1/chat/sessions/{cid}/events").start()
    latencies = []
    try:
        sse.wait_event("session.status")
        for turn in range(repeat):
            fake.released.clear()
            fake.script(Reply().text("Working on it").hold().text(" and done."))
            mark, requests_before = len(sse.frames), len(fake.requests)
            stack.api("POST", f"/api/v1/chat/sessions/{cid}/messages", json={"text": f"long turn {turn}"})
            sse.wait_for(lambda f: f.event == "message.part.delta", timeout=60, since=mark)
            held = fake.requests[requests_before]
            posted = time.perf_counter()
            aborted = stack.api("POST", f"/api/v1/chat/sessions/{cid}/abort").json()["data"]
            idle = sse.wait_for(lambda f: f.event == "session.idle", timeout=60, since=mark)
            if aborted != {"aborted": True} or held["seconds"] is not None:
                raise RuntimeError(f"not an abort of a held reply: {aborted}, provider request ended: {held['seconds']}")
            latencies.append((idle.received - posted) * 1000)
            fake.release()
            poll(lambda: held["seconds"], lambda seconds: seconds is not None, timeout=60)  # noqa: B023 - the held request has ended (polled in this turn)
    finally:
        fake.release()
        sse.close()
    return {"aborts": repeat, "abortLatencyMsMedian": round(statistics.median(latencies), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=150)
    parser.add_argument("--smoke", action="store_true", help="one turn of 2 steps, 20 ms provider latency, one abort")
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.steps, args.latency_ms = 1, 2, 20
    latency = args.latency_ms / 1000
    fake = FakeOpenAI()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
            stack = Stack(Path(tmp), workers=0, config={"llmAPIKey": "k", "llmBaseURL": fake.url, "llmModel": "fake"}).start()
            try:
                measure(stack, fake, 2, args.steps, latency)  # warm-up: imports, connections, the thread pools
                abort_latency(stack, fake, 1)
                result = measure(stack, fake, args.turns, args.steps, latency)
                result.update(abort_latency(stack, fake, args.turns))
                provider = anchor_ms(fake, latency, max(5, args.turns))
            finally:
                stack.stop()
    finally:
        fake.close()
    result["anchor: providerMsPerStep"] = round(provider, 1)
    result["overheadRatioToProvider"] = round(result["overheadMsPerStepMedian"] / provider, 3)
    result["firstFrameRatioToProvider"] = round(result["firstFrameMsMedian"] / provider, 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
