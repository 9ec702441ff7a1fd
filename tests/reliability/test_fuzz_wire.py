"""Fuzzing the wire layer: bytes from nowhere, cut anywhere, must end in events or a typed error.

docs/reliability.md: malformed input of any kind ends in a typed error (an
:class:`~rxturn.errors.RxturnError`) with a clear message — never another exception, never a hang,
never unbounded memory. These hypothesis tests throw at the sans-IO parsers and the three decoders:

- random bytes and SSE / NDJSON shaped noise (field names, line ends, BOMs, NULs, bad UTF-8);
- random chunk splits of everything (a network may cut a stream anywhere);
- mutated copies of the recorded provider streams in ``tests/fixtures`` (bytes flipped,
  deleted, inserted, duplicated, lines swapped, the stream cut short);
- JSON-shaped payloads of the right event types with wrong field types and values.

Expected results come from independent oracles, never from running the code under test:

- an SSE oracle written from the WHATWG "interpret an event stream" steps (plus the two
  departures rxturn documents: bad UTF-8 is an error, ``close()`` dispatches a pending event);
- an NDJSON oracle (split at CR / LF / CRLF, blank lines skipped);
- for valid recorded streams, the whole-buffer decode (chunking must not change the events).

``pytest-timeout`` turns a hang into a failure; :func:`test_memory_is_bounded_*` measure memory
with ``tracemalloc``. The number of examples per property is ``RXTURN_FUZZ_EXAMPLES`` (default
150, deterministic); set ``RXTURN_FUZZ_EXPLORE=1`` for fresh random examples on each run.
For long runs use the atheris target in ``fuzz/fuzz_wire.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded import RESPONSES_FIXTURES

from rxturn import replay_message
from rxturn.errors import RxturnError, StreamProtocolError
from rxturn.events import (
    AttemptReset,
    Delta,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
    StreamEvent,
)
from rxturn.fold import INITIAL_STATE, fold, fold_events, fold_handler
from rxturn.messages import message_to_json
from rxturn.wire import (
    FORMATS,
    decoder_for,
    parse_anthropic_message,
    parse_error_body,
    parse_ollama_chat,
    parse_openai_completion,
    parse_openai_response,
    sniff_format,
)
from rxturn.wire.ndjson import NDJSONSplitter
from rxturn.wire.sse import ServerSentEvent, SSEParser

from ._support import (
    ANTHROPIC_FIXTURES,
    OLLAMA_SAMPLES,
    OPENAI_FIXTURES,
    Outcome,
    run_chunks,
    split_at,
)

# the fuzz suite, many generated inputs per test: out of the inner loop
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

EXAMPLES = int(os.environ.get("RXTURN_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("RXTURN_FUZZ_EXPLORE"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Every recorded stream, with the format it is in.
CORPUS: list[tuple[str, str, bytes]] = [
    *(("anthropic", p.name, p.read_bytes()) for p in ANTHROPIC_FIXTURES),
    *(("openai", p.name, p.read_bytes()) for p in OPENAI_FIXTURES),
    *(("openai-responses", p.name, p.read_bytes()) for p in RESPONSES_FIXTURES),
    *(("ollama", name, data) for name, data in OLLAMA_SAMPLES.items()),
]
CORPUS_IDS = [f"{fmt}-{name}" for fmt, name, _ in CORPUS]

_STREAM_EVENT_TYPES = (MessageStart, PartStart, Delta, PartStop, MessageDelta, MessageStop, Ping)
_event_decoder = msgspec.json.Decoder(StreamEvent)


def test_the_corpus_is_all_there() -> None:
    # an empty glob would make every corpus-driven property pass vacuously
    assert len(ANTHROPIC_FIXTURES) >= 10 and len(OPENAI_FIXTURES) >= 12


# ---------------------------------------------------------------------------------- oracles

_LINE_END = re.compile(r"\r\n|\r|\n")
_LINE_END_BYTES = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


def whatwg_events(data: bytes) -> list[ServerSentEvent] | None:
    """The WHATWG event-stream algorithm over a whole buffer; ``None`` when not UTF-8.

    Written from the HTML standard (§9.2.6), independently of :mod:`rxturn.wire.sse`, with the
    two documented departures: undecodable bytes are an error (``None`` here) and a pending
    event that has data is dispatched at end of stream.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    *lines, tail = _LINE_END.split(text)
    if tail:
        lines.append(tail)
    events: list[ServerSentEvent] = []
    event_type, buffer, last_id, retry = "", list[str](), None, None
    for line in lines:
        if not line:
            if buffer:
                events.append(
                    ServerSentEvent(event_type or "message", "\n".join(buffer), last_id, retry)
                )
            event_type, buffer, retry = "", [], None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            event_type = value
        elif name == "data":
            buffer.append(value)
        elif name == "id":
            if "\0" not in value:
                last_id = value
        elif name == "retry" and value and all("0" <= ch <= "9" for ch in value):
            retry = int(value)
    if buffer:
        events.append(ServerSentEvent(event_type or "message", "\n".join(buffer), last_id, retry))
    return events


def ndjson_lines(data: bytes) -> list[bytes] | None:
    """Non-blank lines split at CR / LF / CRLF; ``None`` when a kept line is not UTF-8."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    lines = _LINE_END_BYTES.split(data)
    kept = [line for line in lines if line.strip(b" \t\r\n\x0b\x0c")]
    for line in kept:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return kept


# ---------------------------------------------------------------------------------- strategies

_FIELD_PIECES = [
    "data:",
    "data: ",
    "data",
    "data:  ",
    "event:",
    "event: ",
    "id:",
    "id: ",
    "retry:",
    "retry: ",
    ":",
    ": comment",
    "DATA:",
    "field:",
    "",
    " ",
    '{"type":"ping"}',
    "[DONE]",
]
_LINE_ENDS = ["\n", "\r", "\r\n", "\n\n", "\r\r", "\r\n\r\n"]


@st.composite
def sse_noise(draw: st.DrawFn) -> bytes:
    """Bytes shaped like an event stream: fields, values, every line end, BOMs, junk bytes."""
    parts: list[bytes] = []
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from([_BOM, _BOM[:1], _BOM[:2], _BOM + _BOM])))
    for _ in range(draw(st.integers(0, 12))):
        piece = draw(st.sampled_from(_FIELD_PIECES))
        value = draw(
            st.one_of(
                st.text(max_size=12),
                st.sampled_from(["123", "1x", "\0", "é", "\u2028", "\x85", "\x0b", "\ufeff"]),
            )
        )
        parts.append((piece + value).encode("utf-8"))
        if draw(st.integers(0, 9)) == 0:
            parts.append(draw(st.binary(min_size=1, max_size=4)))
        parts.append(draw(st.sampled_from(_LINE_ENDS)).encode())
    return b"".join(parts)


any_bytes = st.one_of(st.binary(max_size=300), sse_noise())


@st.composite
def cut_points(draw: st.DrawFn, size: int) -> list[int]:
    return draw(st.lists(st.integers(0, size), max_size=24))


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """A recorded stream, damaged the ways a network, a proxy or a buggy server damages one."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(
            st.sampled_from(
                ["flip", "delete", "insert", "duplicate", "truncate", "swap_lines", "set_byte"]
            )
        )
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            at = min(at, len(data) - 1)
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set_byte" and data:
            at = min(at, len(data) - 1)
            data[at] = draw(st.sampled_from(b'{}[]":,\\\n\r 0\xff\x80'))
        elif op == "delete":
            data[at : at + draw(st.integers(1, 40))] = b""
        elif op == "insert":
            data[at:at] = draw(st.one_of(st.binary(min_size=1, max_size=12), sse_noise()))
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
        elif op == "truncate":
            del data[at:]
        else:
            lines = bytes(data).split(b"\n")
            if len(lines) > 2:
                i = draw(st.integers(0, len(lines) - 1))
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
                data = bytearray(b"\n".join(lines))
    return bytes(data)


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# ---------------------------------------------------------------------------------- checks


def assert_prefix_consistent(fine: Outcome, coarse: Outcome, what: str) -> None:
    """Chunking may only decide *when* an error is noticed, never what the events are."""
    fine_items, fine_error = fine
    coarse_items, coarse_error = coarse
    assert (fine_error is None) == (coarse_error is None), (
        f"{what}: one chunking failed and another did not: {fine_error!r} vs {coarse_error!r}"
    )
    if fine_error is None:
        assert coarse_items == fine_items, f"{what}: events differ between chunkings"
    else:
        assert coarse_items == fine_items[: len(coarse_items)], (
            f"{what}: events before the error differ between chunkings"
        )


def assert_canonical(events: list[Any]) -> None:
    """Every item is a canonical StreamEvent whose fields have their declared types."""
    for event in events:
        assert isinstance(event, _STREAM_EVENT_TYPES), f"not a StreamEvent: {event!r}"
        assert _event_decoder.decode(msgspec.json.encode(event)) == event, (
            f"field types do not survive a round trip: {event!r}"
        )


def assert_folds_or_typed_error(events: list[Any]) -> None:
    """The fold over any decoded events gives a JSON-encodable message or a typed error."""
    try:
        state = fold_events(events)
        message = state.message()
    except RxturnError:
        return
    assert msgspec.json.decode(message_to_json(message))["role"] == "assistant"


# ---------------------------------------------------------------------------------- SSE parser


@FUZZ
@given(data=any_bytes, seed=st.data())
def test_sse_parser_matches_the_whatwg_oracle(data: bytes, seed: st.DataObject) -> None:
    cuts = seed.draw(cut_points(len(data)))
    expected = whatwg_events(data)
    for chunks in (split_at(data, cuts), bytewise(data), [data]):
        events, error = run_chunks(SSEParser, chunks)
        if expected is None:
            assert isinstance(error, StreamProtocolError), f"bad UTF-8 accepted: {data!r}"
            assert error.where and error.where.startswith("line "), error
        else:
            assert error is None, f"{error!r} for valid UTF-8 {data!r}"
            assert events == expected


@FUZZ
@given(data=any_bytes, seed=st.data())
def test_sse_parser_limits_hold_under_any_chunking(data: bytes, seed: st.DataObject) -> None:
    def make() -> SSEParser:
        return SSEParser(max_line_bytes=24, max_event_bytes=48)

    fine = run_chunks(make, bytewise(data))
    for chunks in (split_at(data, seed.draw(cut_points(len(data)))), [data]):
        assert_prefix_consistent(fine, run_chunks(make, chunks), "SSEParser")
    for event in fine[0]:
        assert len(event.data.encode()) <= 48


# ---------------------------------------------------------------------------------- NDJSON


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), sse_noise()), seed=st.data())
def test_ndjson_splitter_matches_the_oracle(data: bytes, seed: st.DataObject) -> None:
    expected = ndjson_lines(data)
    for chunks in (split_at(data, seed.draw(cut_points(len(data)))), bytewise(data), [data]):
        lines, error = run_chunks(NDJSONSplitter, chunks)
        if expected is None:
            assert isinstance(error, StreamProtocolError)
        else:
            assert error is None and lines == expected


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), sse_noise()), seed=st.data())
def test_ndjson_splitter_line_cap_under_any_chunking(data: bytes, seed: st.DataObject) -> None:
    def make() -> NDJSONSplitter:
        return NDJSONSplitter(max_line_bytes=16)

    fine = run_chunks(make, bytewise(data))
    assert_prefix_consistent(
        fine, run_chunks(make, split_at(data, seed.draw(cut_points(len(data))))), "NDJSON"
    )
    assert all(len(line) <= 16 for line in fine[0])


# ---------------------------------------------------------------------------------- decoders


@pytest.mark.parametrize(("fmt", "name", "data"), CORPUS, ids=CORPUS_IDS)
def test_recorded_streams_decode_the_same_whole_and_byte_by_byte(
    fmt: str, name: str, data: bytes
) -> None:
    whole = run_chunks(lambda: decoder_for(fmt), [data])
    assert whole[1] is None, f"{name}: {whole[1]!r}"
    assert whole[0] and isinstance(whole[0][0], MessageStart)
    assert_canonical(whole[0])
    assert run_chunks(lambda: decoder_for(fmt), bytewise(data)) == whole
    assert_folds_or_typed_error(whole[0])


@FUZZ
@given(pick=st.sampled_from(range(len(CORPUS))), seed=st.data())
def test_recorded_streams_decode_the_same_under_random_chunking(
    pick: int, seed: st.DataObject
) -> None:
    fmt, _, data = CORPUS[pick]
    whole = run_chunks(lambda: decoder_for(fmt), [data])
    chunks = split_at(data, seed.draw(cut_points(len(data))))
    assert run_chunks(lambda: decoder_for(fmt), chunks) == whole


@FUZZ
@given(fmt=st.sampled_from(FORMATS), data=any_bytes, seed=st.data())
def test_decoders_turn_random_bytes_into_events_or_typed_errors(
    fmt: str, data: bytes, seed: st.DataObject
) -> None:
    chunks = split_at(data, seed.draw(cut_points(len(data))))
    events, _ = run_chunks(lambda: decoder_for(fmt), chunks)
    assert_canonical(events)
    assert_folds_or_typed_error(events)


@FUZZ
@given(pick=st.sampled_from(range(len(CORPUS))), seed=st.data())
def test_decoders_survive_mutated_recordings(pick: int, seed: st.DataObject) -> None:
    fmt, _, base = CORPUS[pick]
    data = seed.draw(mutated(base))
    whole = run_chunks(lambda: decoder_for(fmt), [data])
    assert_canonical(whole[0])
    chunked = run_chunks(lambda: decoder_for(fmt), split_at(data, seed.draw(cut_points(len(data)))))
    assert_prefix_consistent(chunked, whole, f"{fmt} decoder")
    assert_prefix_consistent(whole, chunked, f"{fmt} decoder")
    assert_folds_or_typed_error(whole[0])
    # and through the public replay entry point, sniffing the format too
    for fmt_arg in (fmt, "auto"):
        with contextlib.suppress(RxturnError):
            replay_message(data, fmt_arg)


# JSON values of every type, to put where a field of another type belongs.
def _extend_json_values(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function: hypothesis cannot read a multi-line lambda's source.
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.integers(-(10**400), 10**400)  # past any float: JSON keeps integers exact
    | st.floats()
    | st.text(max_size=8),
    _extend_json_values,
    max_leaves=8,
)

_ANTHROPIC_TYPES = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "unknown_future_event",
]
_BLOCK_TYPES = ["text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "x"]
_DELTA_TYPES = [
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
    "x_delta",
]


@st.composite
def anthropic_event(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(_ANTHROPIC_TYPES))
    payload: dict[str, Any] = {"type": kind}
    maybe = st.one_of(json_values, st.integers(0, 3), st.text(max_size=6))
    if kind == "message_start":
        payload["message"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "id": maybe,
                        "model": maybe,
                        "usage": st.one_of(
                            json_values,
                            st.fixed_dictionaries({"input_tokens": maybe, "output_tokens": maybe}),
                        ),
                    }
                ),
            )
        )
    elif kind == "content_block_start":
        payload["index"] = draw(maybe)
        payload["content_block"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(_BLOCK_TYPES),
                        "id": maybe,
                        "name": maybe,
                        "input": maybe,
                    }
                ),
            )
        )
    elif kind == "content_block_delta":
        payload["index"] = draw(maybe)
        payload["delta"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "type": st.sampled_from(_DELTA_TYPES),
                        "text": maybe,
                        "partial_json": maybe,
                        "thinking": maybe,
                    }
                ),
            )
        )
    elif kind in ("content_block_stop",):
        payload["index"] = draw(maybe)
    elif kind == "message_delta":
        payload["delta"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "stop_reason": st.one_of(
                            maybe,
                            st.sampled_from(["end_turn", "tool_use", "max_tokens", "pause_turn"]),
                        )
                    }
                ),
            )
        )
        payload["usage"] = draw(
            st.one_of(json_values, st.fixed_dictionaries({"output_tokens": maybe}))
        )
    elif kind == "error":
        payload["error"] = draw(
            st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "type": st.one_of(
                            maybe, st.sampled_from(["overloaded_error", "rate_limit_error"])
                        ),
                        "message": maybe,
                    }
                ),
            )
        )
    body = msgspec.json.encode(payload)
    return b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n"


@st.composite
def openai_chunk(draw: st.DrawFn) -> bytes:
    maybe = st.one_of(json_values, st.integers(0, 2), st.text(max_size=6))
    if draw(st.integers(0, 9)) == 0:
        return b"data: [DONE]\n\n"
    tool = st.fixed_dictionaries(
        {
            "index": maybe,
            "id": maybe,
            "function": st.one_of(
                json_values, st.fixed_dictionaries({"name": maybe, "arguments": maybe})
            ),
        }
    )
    delta = st.fixed_dictionaries(
        {
            "content": maybe,
            "reasoning_content": maybe,
            "tool_calls": st.one_of(json_values, st.lists(tool, max_size=2)),
        }
    )
    choice = st.fixed_dictionaries(
        {
            "index": st.one_of(st.just(0), maybe),
            "delta": st.one_of(delta, json_values),
            "finish_reason": st.one_of(
                maybe, st.sampled_from(["stop", "length", "tool_calls", "content_filter"])
            ),
        }
    )
    chunk = draw(
        st.fixed_dictionaries(
            {
                "id": maybe,
                "model": maybe,
                "choices": st.one_of(st.lists(choice, max_size=2), json_values),
            },
            optional={
                "usage": st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {"prompt_tokens": maybe, "completion_tokens": maybe},
                        optional={"cost": maybe},
                    ),
                ),
                "error": json_values,
            },
        )
    )
    return b"data: " + msgspec.json.encode(chunk) + b"\n\n"


@st.composite
def ollama_line(draw: st.DrawFn) -> bytes:
    maybe = st.one_of(json_values, st.integers(0, 2), st.text(max_size=6))
    call = st.fixed_dictionaries(
        {
            "function": st.one_of(
                json_values, st.fixed_dictionaries({"name": maybe, "arguments": maybe})
            )
        },
        optional={"id": maybe},
    )
    line = draw(
        st.fixed_dictionaries(
            {
                "model": maybe,
                "created_at": maybe,
                "message": st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {
                            "content": maybe,
                            "thinking": maybe,
                            "tool_calls": st.one_of(json_values, st.lists(call, max_size=2)),
                        }
                    ),
                ),
                "done": st.one_of(st.booleans(), maybe),
            },
            optional={
                "done_reason": maybe,
                "prompt_eval_count": maybe,
                "eval_count": maybe,
                "error": json_values,
            },
        )
    )
    return msgspec.json.encode(line) + b"\n"


@st.composite
def responses_event(draw: st.DrawFn) -> bytes:
    """A Responses API event of a known type whose fields have arbitrary JSON types."""
    maybe = st.one_of(json_values, st.integers(0, 2), st.text(max_size=6))
    item = st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"type": st.sampled_from(["message", "function_call", "reasoning", "web_search_call"])},
            optional={
                "id": maybe,
                "call_id": maybe,
                "name": maybe,
                "arguments": maybe,
                "encrypted_content": maybe,
                "summary": maybe,
                "content": maybe,
            },
        ),
    )
    kind = draw(
        st.sampled_from(
            [
                "response.created",
                "response.output_item.added",
                "response.output_item.done",
                "response.content_part.added",
                "response.content_part.done",
                "response.output_text.delta",
                "response.refusal.delta",
                "response.function_call_arguments.delta",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_part.added",
                "response.completed",
                "response.incomplete",
                "response.failed",
                "error",
                "response.something_new",
            ]
        )
    )
    event = draw(
        st.fixed_dictionaries(
            {"type": st.just(kind)},
            optional={
                "output_index": maybe,
                "content_index": maybe,
                "summary_index": maybe,
                "delta": maybe,
                "item": item,
                "part": st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["output_text", "refusal", "x"])},
                        optional={"text": maybe, "refusal": maybe},
                    ),
                ),
                "response": st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "id": maybe,
                            "model": maybe,
                            "usage": maybe,
                            "output": maybe,
                            "incomplete_details": maybe,
                            "error": maybe,
                        },
                    ),
                ),
                "code": maybe,
                "message": maybe,
            },
        )
    )
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode(event) + b"\n\n"


_SHAPED: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {
    "anthropic": anthropic_event,
    "openai": openai_chunk,
    "openai-responses": responses_event,
    "ollama": ollama_line,
}


@FUZZ
@given(fmt=st.sampled_from(FORMATS), seed=st.data())
def test_decoders_survive_well_framed_events_with_wrong_field_types(
    fmt: str, seed: st.DataObject
) -> None:
    strategy = _SHAPED[fmt]()
    prefix = CORPUS[[f for f, _, _ in CORPUS].index(fmt)][2]
    head = prefix[: seed.draw(st.integers(0, len(prefix)))] if seed.draw(st.booleans()) else b""
    head = head[: head.rfind(b"\n") + 1]
    data = head + b"".join(seed.draw(st.lists(strategy, min_size=1, max_size=6)))
    whole = run_chunks(lambda: decoder_for(fmt), [data])
    assert_canonical(whole[0])
    chunked = run_chunks(lambda: decoder_for(fmt), split_at(data, seed.draw(cut_points(len(data)))))
    assert_prefix_consistent(chunked, whole, f"{fmt} decoder")
    assert_prefix_consistent(whole, chunked, f"{fmt} decoder")
    assert_folds_or_typed_error(whole[0])


# ---------------------------------------------------------------------------------- the rest


@FUZZ
@given(
    data=st.one_of(st.binary(max_size=200), json_values.map(msgspec.json.encode)),
    pick=st.sampled_from(range(len(CORPUS))),
    seed=st.data(),
)
def test_non_streaming_parsers_and_error_bodies_only_raise_typed_errors(
    data: bytes, pick: int, seed: st.DataObject
) -> None:
    _, _, base = CORPUS[pick]
    for body in (data, seed.draw(mutated(base))):
        for parse in (
            parse_anthropic_message,
            parse_openai_completion,
            parse_openai_response,
            parse_ollama_chat,
        ):
            try:
                message = parse(body)
            except RxturnError:
                continue
            message_to_json(message)
        etype, text = parse_error_body(body)  # never raises
        assert etype is None or isinstance(etype, str)
        assert text is None or isinstance(text, str)
        with contextlib.suppress(StreamProtocolError):
            assert sniff_format(body) in FORMATS


_event_strategy = st.one_of(
    st.builds(MessageStart, id=st.text(max_size=4), model=st.text(max_size=4)),
    st.builds(
        PartStart,
        index=st.integers(-2, 3),
        kind=st.sampled_from(["text", "thinking", "tool_call"]),
        id=st.text(max_size=3),
        name=st.sampled_from(["", "f", "g"]),
    ),
    st.builds(
        Delta,
        index=st.integers(-2, 3),
        text=st.one_of(
            st.text(max_size=6), st.sampled_from(['{"a":', "1}", '"x', "]", "{}", "null"])
        ),
        kind=st.sampled_from(["text", "thinking", "tool_json"]),
    ),
    st.builds(PartStop, index=st.one_of(st.none(), st.integers(-2, 3))),
    st.builds(
        MessageDelta,
        stop_reason=st.one_of(
            st.none(), st.sampled_from(["end_turn", "tool_use", "max_tokens", "weird"])
        ),
    ),
    st.just(MessageStop()),
    st.just(Ping()),
)


@FUZZ
@given(events=st.lists(_event_strategy, max_size=30), reset_at=st.integers(0, 30))
def test_fold_of_any_event_sequence_is_a_message_or_a_typed_error(
    events: list[StreamEvent], reset_at: int
) -> None:
    assert_folds_or_typed_error(events)
    # an AttemptReset anywhere makes the fold forget everything before it
    state = INITIAL_STATE
    try:
        for position, event in enumerate(events):
            if position == reset_at:
                state = fold_handler(state, AttemptReset(attempt=2, reason="fuzz"))
            state = fold(state, event)
    except RxturnError:
        return
    if reset_at < len(events):
        assert state.message() == fold_events(events[reset_at:]).message()


# ---------------------------------------------------------------------------------- memory

_MIB = 1 << 20


def _peak_while(feed: Callable[[], None]) -> int:
    tracemalloc.start()
    try:
        feed()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _endless(unit: bytes, total: int) -> Callable[[Callable[[bytes], object]], None]:
    def pump(sink: Callable[[bytes], object]) -> None:
        chunk = unit * (64 * 1024 // len(unit))
        for _ in range(total // len(chunk)):
            sink(chunk)

    return pump


# One event made of many tiny ``data`` lines costs a Python object per line on top of the bytes
# the event cap counts, so its bound is wider: still a constant, whatever the stream's length.
_LINE_BOUND = 8 * _MIB
_EVENT_BOUND = 64 * _MIB


@pytest.mark.parametrize(
    ("make", "head", "unit", "bound"),
    [
        pytest.param(SSEParser, b"data: ", b"x", _LINE_BOUND, id="sse-endless-line"),
        pytest.param(
            SSEParser, b"", b"data: " + b"y" * 1000 + b"\n", _LINE_BOUND, id="sse-endless-event"
        ),
        pytest.param(SSEParser, b"", b"data:\n", _EVENT_BOUND, id="sse-endless-empty-data"),
        pytest.param(NDJSONSplitter, b'{"a":"', b"z", _LINE_BOUND, id="ndjson-endless-line"),
        pytest.param(
            lambda: decoder_for("anthropic"),
            b"event: ping\ndata: ",
            b"x",
            _LINE_BOUND,
            id="anthropic-endless-line",
        ),
        pytest.param(
            lambda: decoder_for("openai"),
            b"",
            b"data: {}\n",
            _EVENT_BOUND,
            id="openai-endless-event",
        ),
        pytest.param(
            lambda: decoder_for("ollama"),
            b'{"message":{"content":"',
            b"x",
            _LINE_BOUND,
            id="ollama-endless-line",
        ),
    ],
)
def test_memory_is_bounded_when_a_stream_never_ends_its_line_or_event(
    make: Callable[[], Any], head: bytes, unit: bytes, bound: int
) -> None:
    """16 MiB without a line (or event) end: a typed error at the 1 MiB cap, memory bounded."""
    parser = make()
    seen = {"bytes": 0}

    def run() -> None:
        def sink(chunk: bytes) -> None:
            seen["bytes"] += len(chunk)
            parser.feed(chunk)

        sink(head)
        with pytest.raises(StreamProtocolError, match=r"longer than \d+ bytes|exceed"):
            _endless(unit, 16 * _MIB)(sink)

    peak = _peak_while(run)
    # the caps count line bytes / data bytes, so framing overhead may pass before they fire
    assert seen["bytes"] <= 8 * _MIB, f"the cap fired only after {seen['bytes']} bytes"
    assert peak < bound, f"peak {peak / _MIB:.1f} MiB while rejecting the stream"


@pytest.mark.parametrize("fmt", FORMATS)
def test_events_before_an_over_long_line_are_not_lost(fmt: str) -> None:
    """Nothing a provider sent before a failure is lost, whatever the chunk held.

    docs/reliability.md states the promise.

    One chunk carries a good text delta and then a line over the cap: the delta must still be
    delivered (to observers and the audit) before the typed error ends the stream.
    """
    good = {
        "anthropic": (
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x"}}'
            b'\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\n'
            b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
            b'"text":"kept"}}\n\n'
        ),
        "openai": (
            b'data: {"id":"c","model":"x","choices":[{"index":0,"delta":{"content":"kept"}}]}\n\n'
        ),
        "ollama": b'{"model":"x","message":{"role":"assistant","content":"kept"},"done":false}\n',
        "openai-responses": (
            b'data: {"type":"response.created","response":{"id":"r","model":"x"}}\n\n'
            b'data: {"type":"response.output_text.delta","output_index":0,"content_index":0,'
            b'"delta":"kept"}\n\n'
        ),
    }[fmt]
    over = b"data: " + b"x" * 300 + b"\n\n" if fmt != "ollama" else b'{"a":"' + b"x" * 300 + b'"}\n'
    for tail in (over, over[:-2]):  # the long line ended in the same chunk, or still open
        events, error = run_chunks(lambda: decoder_for(fmt, max_line_bytes=200), [good + tail])
        assert isinstance(error, StreamProtocolError), error
        texts = [e.text for e in events if isinstance(e, Delta)]
        assert texts == ["kept"], f"{fmt}: events before the over-long line were dropped"


def test_the_atheris_target_runs_on_its_seed_corpus(tmp_path: Path) -> None:
    """``fuzz/fuzz_wire.py`` stays runnable: its seed corpus and one mutation of each pass."""
    import importlib.util
    import random

    path = Path(__file__).resolve().parent.parent.parent / "fuzz" / "fuzz_wire.py"
    spec = importlib.util.spec_from_file_location("rxturn_fuzz_wire", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.seed_corpus(tmp_path) >= len(ANTHROPIC_FIXTURES) + len(OPENAI_FIXTURES)
    rng = random.Random(9)
    for seed_file in sorted(tmp_path.iterdir()):
        raw = bytearray(seed_file.read_bytes())
        module.one_input(bytes(raw))
        raw[rng.randrange(5, len(raw))] = rng.randrange(256)
        module.one_input(bytes(raw))
