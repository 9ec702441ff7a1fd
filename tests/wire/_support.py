"""Shared helpers for the wire tests: the recorded corpus, chunkings, oracles.

Expected values never come from the code under test: the SSE oracle below is a direct,
line-at-a-time transcription of the WHATWG "interpret an event stream" steps working on ``str``
(plus rxturn's three documented departures), and the provider oracles are the official SDKs' own
stream accumulators run on the same bytes.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from rxturn.errors import RxturnError
from rxturn.events import Delta, PartStart, StreamEvent
from rxturn.wire.sse import ServerSentEvent

__all__ = [
    "ANTHROPIC_FILES",
    "FIXTURES",
    "OPENAI_FILES",
    "Feedable",
    "Outcome",
    "bytewise",
    "chunked",
    "lanes",
    "oracle_sse",
    "run",
    "sdk_anthropic",
    "sdk_openai",
]


from recorded import ANTHROPIC_FIXTURES as ANTHROPIC_FILES
from recorded import FIXTURES
from recorded import OPENAI_FIXTURES as OPENAI_FILES


class Feedable(Protocol):
    def feed(self, data: bytes, /) -> Sequence[Any]: ...

    def close(self) -> Sequence[Any]: ...


#: what a parser produced: the items, then ``"ErrorClass: message"`` if it failed
Outcome = tuple[list[Any], str | None]


def run(factory: Callable[[], Feedable], chunks: Iterable[bytes], *, close: bool = True) -> Outcome:
    """Feed ``chunks`` to a fresh parser (and close it); collect items and the error, if any."""
    parser = factory()
    items: list[Any] = []
    try:
        for chunk in chunks:
            items.extend(parser.feed(chunk))
        if close:
            items.extend(parser.close())
    except RxturnError as exc:
        return items, f"{type(exc).__name__}: {exc}"
    return items, None


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def chunked(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, duplicates and out-of-range allowed)."""
    points = sorted({min(max(cut, 0), len(data)) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


# --- the WHATWG oracle ---------------------------------------------------------------------------

_LINE_END = re.compile(r"\r\n|\r|\n")


def oracle_sse(data: bytes) -> tuple[list[ServerSentEvent], list[int]]:
    """WHATWG "interpret an event stream", one line at a time, on the whole stream at once.

    Returns the events and, for each, the 1-based line number of its first ``data`` line.
    rxturn's departures: the bytes must be UTF-8 (else ``UnicodeDecodeError``), a pending
    event is dispatched at end of stream, and a ``retry`` of more than 18 digits is ignored.
    """
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the stream ended with a line end: no unterminated last line
    events: list[ServerSentEvent] = []
    starts: list[int] = []
    event_type = ""
    buffer = ""
    has_data = False
    first = 0
    last_id: str | None = None
    retry: int | None = None

    def dispatch() -> None:
        nonlocal event_type, buffer, has_data, retry
        if has_data:
            events.append(ServerSentEvent(event_type or "message", buffer[:-1], last_id, retry))
            starts.append(first)
        event_type, buffer, has_data, retry = "", "", False, None

    for number, line in enumerate(lines, start=1):
        if line == "":
            dispatch()
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field == "event":
            event_type = value
        elif field == "data":
            if not has_data:
                first = number
            buffer += value + "\n"
            has_data = True
        elif field == "id":
            if "\0" not in value:
                last_id = value
        elif field == "retry" and 0 < len(value) <= 18 and all(c in "0123456789" for c in value):
            retry = int(value)
    dispatch()  # rxturn flushes a pending event at end of stream
    return events, starts


# --- canonical events, summarised by lane --------------------------------------------------------


def lanes(events: Sequence[StreamEvent]) -> list[tuple[str, str, str, str]]:
    """Each opened lane in order as ``(kind, id, name, concatenated delta text)``.

    A delta goes to the most recent lane opened at its index (what the fold does when lanes
    are closed before an index is reused).
    """
    opened: list[list[str]] = []
    latest: dict[int, int] = {}
    for event in events:
        if isinstance(event, PartStart):
            latest[event.index] = len(opened)
            opened.append([event.kind, event.id, event.name, ""])
        elif isinstance(event, Delta):
            lane = opened[latest[event.index]]
            if event.kind in ("signature", "redacted_thinking"):  # lane metadata, not text
                assert lane[0] == "thinking", f"{event} landed in a {lane[0]} lane"
                continue
            kinds = {
                "text": "text",
                "thinking": "thinking",
                "tool_json": "tool_call",
                "refusal": "refusal",
            }
            assert kinds[event.kind] == lane[0], f"{event} landed in a {lane[0]} lane"
            lane[3] += event.text
    return [(kind, id_, name, text) for kind, id_, name, text in opened]


# --- the official SDKs as oracles ----------------------------------------------------------------


def sdk_anthropic(data: bytes) -> Any:
    """The anthropic SDK's own fold (``accumulate_event``) of a recorded stream."""
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for sse in SSEDecoder().iter_bytes(iter([data])):
        if sse.event == "ping":
            continue
        snapshot = accumulate_event(
            event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=buffers
        )
    return snapshot


def sdk_openai(data: bytes) -> Any:
    """The openai SDK's own fold (``ChatCompletionStreamState``) of a recorded stream."""
    from openai._streaming import SSEDecoder
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter([data])):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_chunk(ChatCompletionChunk.model_validate(json.loads(sse.data)))
    return state.current_completion_snapshot
