"""Draw docs/trace.png: one turn with a retry, a rescue and a failover, as OpenTelemetry spans.

The turn runs against the fake provider on 127.0.0.1: the primary model answers 529 (a
rate-limit retry), then drops its stream (the transport budget is 0, so the non-streaming rescue
runs), the rescue gets a 500 (the primary has failed definitively), and same-turn failover sends
the turn to the backup, which serves. The spans come from the SDK's in-memory exporter; the
picture is a timeline, one row per span, indented by depth.

Run: ``python docs/trace_picture.py [out.png]`` (needs the test extra: the SDK, matplotlib).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from rxturn import AnthropicClient, FallbackManager, StreamHandler, TurnEngine
from rxturn.otel import OTelObserver
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing import FakeProvider

SCENARIO = {
    "models": {
        "primary": [
            {"status": 529, "retry_after": 0.15},
            {"text": "A reply that never finishes", "chunk_chars": 4, "delay_ms": 15,
             "drop_after_events": 8},
            {"status": 500, "delay_ms": 40},
        ],
        "backup": [
            {"text": "The backup served this reply.", "chunk_chars": 5, "delay_ms": 12,
             "usage": {"input_tokens": 24, "output_tokens": 7}},
        ],
    }
}  # fmt: skip


async def collect() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            handler=StreamHandler(retry=RetryPolicy(max_retries=0)),
            fallback=FallbackManager("primary", ["backup"]),
            failover=True,
            observers=[OTelObserver(tracer_provider=provider)],
        )
        result = await engine.run("Summarise the incident report.")
    assert result.text == "The backup served this reply.", result.text
    return list(exporter.get_finished_spans())


def _label(span: ReadableSpan) -> str:
    a: dict[str, Any] = dict(span.attributes or {})
    if span.name == "rxturn.attempt":
        number, kind = a["rxturn.attempt.number"], a["rxturn.attempt.kind"]
        text = f"attempt {number} · {kind} · {a['gen_ai.request.model']}"
        if "http.response.status_code" in a:
            text += f" · HTTP {a['http.response.status_code']}"
        outcome = a.get("rxturn.attempt.outcome", "")
        return f"{text} · {outcome}"
    if span.name.startswith("chat "):
        return (
            f"{span.name} → served by {a.get('gen_ai.response.model')} "
            f"({a.get('rxturn.attempts')} attempts, rescued={a.get('rxturn.rescued')})"
        )
    return span.name


def draw(spans: list[ReadableSpan], out: Path) -> None:
    by_id = {s.context.span_id: s for s in spans}

    def depth(span: ReadableSpan) -> int:
        d = 0
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            d += 1
        return d

    ordered = sorted(spans, key=lambda s: (s.start_time or 0, depth(s)))
    origin = min(s.start_time or 0 for s in spans)
    fig, ax = plt.subplots(figsize=(12, 0.62 * len(ordered) + 1.4))
    colours = {0: "#6c8ebf", 1: "#82b366"}
    for row, span in enumerate(ordered):
        start = ((span.start_time or 0) - origin) / 1e6
        width = max(((span.end_time or 0) - (span.start_time or 0)) / 1e6, 0.5)
        failed = span.status.status_code.name == "ERROR"
        colour = "#e07b67" if failed else colours.get(depth(span), "#9673a6")
        ax.barh(row, width, left=start, height=0.55, color=colour, edgecolor="#333333")
        ax.text(
            start + 1, row - 0.36, "   " * depth(span) + _label(span), fontsize=8.5, va="bottom"
        )
        a = dict(span.attributes or {})
        wait = a.get("rxturn.attempt.wait")
        if span.name == "rxturn.attempt" and isinstance(wait, float) and wait > 0.02:
            ax.barh(row, wait * 1e3, left=start - wait * 1e3, height=0.18, color="#bbbbbb")
            ax.text(
                start - wait * 1e3,
                row + 0.42,
                f"wait {wait * 1e3:.0f} ms",
                fontsize=7,
                color="#555555",
            )
        for event in span.events:
            x = ((event.timestamp or 0) - origin) / 1e6
            ax.plot([x], [row], marker="v", color="black", markersize=8)
            ev = dict(event.attributes or {})
            switch = f"{event.name}: {ev.get('rxturn.from_model')} → {ev.get('rxturn.to_model')}"
            ax.text(x + 1, row + 0.36, switch, fontsize=7.5, va="top")
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds since the run started")
    ax.set_title(
        "One turn: a 529 retry, a dropped stream and its rescue, then failover to the backup"
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("trace.png")
    draw(asyncio.run(collect()), target)
    print(f"wrote {target}")
