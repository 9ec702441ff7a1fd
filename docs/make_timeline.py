"""Render docs/timeline.png: the demo story's first chapters as a turn timeline.

Run: ``python docs/make_timeline.py`` (needs matplotlib; offline, fake provider).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from rxturn import AnthropicClient, FallbackManager, StreamHandler, TurnEngine
from rxturn.notebook import TurnRecorder, timeline
from rxturn.testing import FakeProvider

SCENARIO = {
    "models": {
        "primary": [
            {"status": 529, "retry_after": 0.15},
            {"text": "Overloaded once, then served.", "chunk_chars": 3, "delay_ms": 8},
            {
                "text": "Dropped mid-reply, then streamed again.",
                "chunk_chars": 3,
                "delay_ms": 8,
                "drop_after_events": 10,
            },
            {"text": "Dropped mid-reply, then streamed again.", "chunk_chars": 3, "delay_ms": 8},
            *[{"text": "Truncated, rescued.", "drop_after_events": 4, "delay_ms": 8}] * 4,
            {"text": "Truncated four times, rescued by the non-streaming call."},
            *[{"status": 500}] * 15,
        ],
        "backup": [{"text": "The backup model serves.", "chunk_chars": 3, "delay_ms": 8}],
    }
}
LABELS = [
    "529 absorbed",
    "dropped stream",
    "rescue",
    "outage 1",
    "outage 2",
    "outage 3",
    "backup serves",
]


async def main() -> None:
    recorder = TurnRecorder()
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as c,
    ):
        engine = TurnEngine(
            c, handler=StreamHandler.default(), fallback=FallbackManager("primary", ["backup"])
        )
        recorder.attach(engine)
        for label in LABELS:
            with contextlib.suppress(Exception):  # the outages fail their runs, by design
                await engine.run(label)
    figure = timeline(
        recorder, title="rxturn: seven runs on one engine", labels=dict(enumerate(LABELS))
    )
    out = Path(__file__).with_name("timeline.png")
    figure.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(main())
