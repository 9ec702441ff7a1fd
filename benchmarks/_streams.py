"""The streams every contender folds: one scenario, captured once per (format, size).

The fake provider serves one model per size, ``bench-<events>``, whose entry is ``events`` text
deltas of :data:`CHUNK_CHARS` characters (an English-like text, about one token per delta) with
scripted usage. The same scenario answers both wire formats, so the Anthropic and OpenAI streams
carry the same text.

For the in-memory contenders (LIMIT, replay) the harness needs the bytes themselves: they are
captured by one plain HTTP request to the same server, so the in-memory and the loopback
contenders fold the *same bytes* (the loopback ones get fresh copies per request that differ
only in the message id's sequence number and the ``created`` stamp).

The expected reply (the oracle every contender is checked against) is the scenario's own text
and usage, not anything a contender computed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp

__all__ = [
    "CHUNK_CHARS",
    "FIXED_MODEL",
    "FIXED_TEXT",
    "Case",
    "capture",
    "endpoint",
    "model_for",
    "request_body",
    "text_for",
    "usage_for",
    "wire_events",
    "write_scenario",
]

#: Characters per delta: about one token of English text, as real streams send.
CHUNK_CHARS: Final = 4
#: The model of the one-delta reply used to measure the fixed cost of a turn.
FIXED_MODEL: Final = "bench-fixed"
FIXED_TEXT: Final = "ok"
INPUT_TOKENS: Final = 12

_WORDS: Final = (
    "The quick brown fox jumps over the lazy dog while a streamed reply arrives one token at "
    "a time, and every fragment must reach the screen, the observers and the final message. "
)


def model_for(events: int) -> str:
    return f"bench-{events}"


def text_for(events: int) -> str:
    """Exactly ``events * CHUNK_CHARS`` characters of text."""
    size = events * CHUNK_CHARS
    return (_WORDS * (size // len(_WORDS) + 1))[:size]


def usage_for(events: int) -> tuple[int, int]:
    return INPUT_TOKENS, events


def write_scenario(path: Path, sizes: tuple[int, ...]) -> None:
    """Write the fake provider's scenario for ``sizes`` (plus the fixed-cost model)."""
    models: dict[str, Any] = {
        model_for(n): [
            {
                "text": text_for(n),
                "chunk_chars": CHUNK_CHARS,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": n},
            }
        ]
        for n in sizes
    }
    models[FIXED_MODEL] = [
        {"text": FIXED_TEXT, "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1}}
    ]
    path.write_text(json.dumps({"models": models}))


def request_body(fmt: str, model: str, prompt: str = "Write a long reply.") -> dict[str, Any]:
    """The streaming request rxturn's clients send, in plain JSON (for the raw-HTTP paths)."""
    messages = [{"role": "user", "content": prompt}]
    if fmt == "anthropic":
        return {"model": model, "max_tokens": 1024, "messages": messages, "stream": True}
    return {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def endpoint(fmt: str, base_url: str) -> str:
    return base_url + ("/v1/messages" if fmt == "anthropic" else "/v1/chat/completions")


def wire_events(body: bytes) -> int:
    """SSE events in ``body`` (its ``data:`` lines): the denominator of every µs/event."""
    return sum(1 for line in body.split(b"\n") if line.startswith(b"data:"))


@dataclass(frozen=True)
class Case:
    """One stream: a format and a size, its captured bytes and the reply it must fold to."""

    format: str
    events: int
    model: str
    body: bytes
    wire_events: int
    text: str
    usage: tuple[int, int]

    @property
    def label(self) -> str:
        return f"{self.format} {self.events:,}"


async def capture(session: aiohttp.ClientSession, base_url: str, fmt: str, events: int) -> Case:
    """Ask the fake for the ``events``-delta reply in ``fmt`` once and keep its bytes."""
    model = model_for(events)
    async with session.post(endpoint(fmt, base_url), json=request_body(fmt, model)) as response:
        response.raise_for_status()
        body = await response.read()
    return Case(
        format=fmt,
        events=events,
        model=model,
        body=body,
        wire_events=wire_events(body),
        text=text_for(events),
        usage=usage_for(events),
    )
