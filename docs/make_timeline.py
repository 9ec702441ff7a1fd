"""Render docs/timeline.png: the demo story's first chapters as a turn timeline.

The second run's stream drops, then stalls on its retry, then is served: the stall lasts seconds
while everything else lasts fractions of one, which is what the timeline's broken time axis is
for.

Run: ``python docs/make_timeline.py`` (needs matplotlib; offline, fake provider; about 15 s, most
of it the stalled stream waiting out its two event timeouts).

The handler is the default one except for its event timeouts (two silences of 5 s in a row fail
an attempt, instead of ten of three minutes), so the stall costs seconds, not half an
hour.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from rxturn import AnthropicClient, FallbackManager, StreamHandler, TurnEngine
from rxturn.notebook import TurnRecorder, timeline
from rxturn.resilience.policies import TimeoutPolicy
from rxturn.testing import FakeProvider

SCENARIO = {
    "models": {
        "primary": [
            {"status": 529, "retry_after": 0.15},
            {"text": "Overloaded once, then served.", "chunk_chars": 3, "delay_ms": 8},
            {
                "text": "Dropped, went silent, then streamed again.",
                "chunk_chars": 3,
                "delay_ms": 8,
                "drop_after_events": 10,
            },
            {
                "text": "Dropped, went silent, then streamed again.",
                "chunk_chars": 3,
                "delay_ms": 8,
                "stall_after_events": 8,
                "stall_seconds": 30,
            },
            {"text": "Dropped, went silent, then streamed again.", "chunk_chars": 3, "delay_ms": 8},
            *[{"text": "Truncated, rescued.", "drop_after_events": 4, "delay_ms": 8}] * 4,
            {"text": "Truncated four times, rescued by the non-streaming call."},
            *[{"status": 500}] * 15,
        ],
        "backup": [{"text": "The backup model serves.", "chunk_chars": 3, "delay_ms": 8}],
    }
}
LABELS = [
    "529 absorbed",
    "dropped, then stalled",
    "rescue",
    "outage 1",
    "outage 2",
    "outage 3",
    "backup serves",
]


async def main() -> None:
    recorder = TurnRecorder()
    # the default handler, with event timeouts short enough for a stall to cost seconds
    handler = StreamHandler(
        timeouts=TimeoutPolicy(first_event=5.0, per_event=5.0, max_consecutive_timeouts=2)
    )
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, handler=handler, fallback=FallbackManager("primary", ["backup"])
        )
        recorder.attach(engine)
        for label in LABELS:
            with contextlib.suppress(Exception):  # the outages fail their turns, as scripted
                await engine.run(label)
    figure = timeline(
        recorder, title="rxturn: seven runs on one engine", labels=dict(enumerate(LABELS))
    )
    out = Path(__file__).with_name("timeline.png")
    figure.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out.name}")


if __name__ == "__main__":
    asyncio.run(main())
