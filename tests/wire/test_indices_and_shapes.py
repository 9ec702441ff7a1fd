"""Classes of bad provider input, on every decode site, and wire-wide promises.

1. Absurd indices — negative, huge, out of order, not an int — in the places a stream numbers
   its parts (OpenAI chat tool calls, Responses ``output_index`` / ``content_index`` /
   ``summary_index``, Anthropic content blocks, Ollama tool calls) end in the typed
   malformed-stream error, ``StreamProtocolError``; never ``IndexError`` / ``AttributeError``,
   and a huge index allocates nothing.
2. A Responses stream whose events disagree about an item (another id in ``output_item.done`` or
   in the completed response than in ``output_item.added``) is refused exactly when the official
   SDK's accumulator refuses it, and otherwise folds to what the SDK keeps — checked against the
   SDK on the same bytes.
3. A body whose last event lacks its terminating blank line (or newline) decodes on every wire
   as the decoders' base class documents.
4. A string the server sent that an error message quotes (an event type, an item or tool call
   id, a tool name) is quoted cut short, however long it was.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recorded import ANTHROPIC_FIXTURES, OPENAI_FIXTURES, RESPONSES_FIXTURES

import rxturn
from rxturn import replay_message
from rxturn.errors import StreamProtocolError
from rxturn.messages import Message, ToolCallPart
from rxturn.wire import decoder_for

# --- streams built around the index under test ------------------------------------------------


def _sse(events: list[dict[str, Any]], named: bool = False) -> bytes:
    out = b""
    for event in events:
        if named:
            out += f"event: {event['type']}\n".encode()
        out += b"data: " + json.dumps(event).encode() + b"\n\n"
    return out


def openai_chat(indices: list[Any]) -> bytes:
    chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    chunks: list[dict[str, Any]] = [chunk]
    for n, index in enumerate(indices):
        call = {"index": index, "id": f"call{n}", "function": {"name": "f", "arguments": "{}"}}
        chunks.append({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    chunks.append(
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    )
    return _sse(chunks) + b"data: [DONE]\n\n"


def anthropic(indices: list[Any]) -> bytes:
    start = {
        "type": "message_start",
        "message": {"id": "m1", "model": "m", "content": [], "usage": {"input_tokens": 1}},
    }
    events: list[dict[str, Any]] = [start]
    for n, index in enumerate(indices):
        block = {"type": "tool_use", "id": f"t{n}", "name": "f", "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        delta = {"type": "input_json_delta", "partial_json": "{}"}
        events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}})
    events.append({"type": "message_stop"})
    return _sse(events, named=True)


def responses(indices: list[Any], content_index: Any = 0, summary_index: Any = 0) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "model": "m", "output": []}}
    ]
    for n, index in enumerate(indices):
        item = {"type": "function_call", "id": f"fc{n}", "call_id": f"c{n}", "name": "f"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append(
            {"type": "response.function_call_arguments.delta", "output_index": index, "delta": "{}"}
        )
        done = {**item, "arguments": "{}"}
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    message = len(indices)
    events += [
        {
            "type": "response.output_item.added",
            "output_index": message,
            "item": {"type": "message", "id": "msg"},
        },
        {
            "type": "response.output_text.delta",
            "output_index": message,
            "content_index": content_index,
            "delta": "hi",
        },
        {
            "type": "response.reasoning_summary_part.added",
            "output_index": message,
            "summary_index": summary_index,
        },
        {"type": "response.completed", "response": {"id": "r", "model": "m", "output": []}},
    ]
    return _sse(events, named=True)


def ollama(indices: list[Any]) -> bytes:
    calls = [{"function": {"index": i, "name": "f", "arguments": {}}} for i in indices]
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": calls}},
        {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True},
    ]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


WIRES = {
    "openai": openai_chat,
    "anthropic": anthropic,
    "openai-responses": responses,
    "ollama": ollama,
}

ABSURD: dict[str, list[Any]] = {
    "negative": [-1],
    "minus-three": [-3],  # OpenAI chat: lane -1, the refusal lane, were it not refused
    "huge": [10**18],
    "past-int64": [2**64],
    "float": [1.5],
    "string": ["0"],
    "bool": [True],
    "descending": [1, 0],
}
# a stream numbers blocks / items in order; the chat API may skip a tool index (the SDK
# tolerates it), Ollama's numbering is per chunk
OUT_OF_ORDER: dict[str, list[Any]] = {"anthropic": [0, 2], "openai-responses": [1, 0]}


def _decode(fmt: str, body: bytes) -> list[Any]:
    decoder = decoder_for(fmt)
    return [*decoder.feed(body), *decoder.close()]


@pytest.mark.parametrize("case", list(ABSURD), ids=list(ABSURD))
@pytest.mark.parametrize("fmt", list(WIRES))
def test_absurd_indices_are_malformed_streams(fmt: str, case: str) -> None:
    indices = ABSURD[case]
    if fmt == "ollama" and case == "descending":
        indices = [1, 0]  # in one chunk: out of order
    with pytest.raises(StreamProtocolError, match=r"index|block|JSON shape"):
        _decode(fmt, WIRES[fmt](indices))
    with pytest.raises(StreamProtocolError):
        replay_message(WIRES[fmt](indices), fmt)


@pytest.mark.parametrize("fmt", list(OUT_OF_ORDER))
def test_out_of_order_items_are_malformed_streams(fmt: str) -> None:
    with pytest.raises(StreamProtocolError, match="out of order"):
        _decode(fmt, WIRES[fmt](OUT_OF_ORDER[fmt]))


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"content_index": -1}, "content_index -1"),
        ({"content_index": 10**12}, "content_index 1000000000000"),
        ({"summary_index": -2}, "summary_index -2"),
    ],
)
def test_responses_content_and_summary_indices_are_checked(
    kwargs: dict[str, int], says: str
) -> None:
    with pytest.raises(StreamProtocolError, match=says):
        _decode("openai-responses", responses([0], **kwargs))


@pytest.mark.parametrize("fmt", list(WIRES))
def test_sane_indices_still_fold(fmt: str) -> None:
    message = replay_message(WIRES[fmt]([0, 1]), fmt)
    assert len(message.tool_calls) == 2


@pytest.mark.parametrize("fmt", list(WIRES))
def test_the_1025th_part_in_order_is_out_of_range_on_every_wire(fmt: str) -> None:
    # before, Anthropic took block after block past 1023 (10,000 tool calls in one reply ran
    # 10,000 tools) where the other wires refuse index 1024, as docs/reliability.md says of all
    most = 1023 if fmt == "openai-responses" else 1024  # the Responses message takes one index
    assert len(replay_message(WIRES[fmt](list(range(most))), fmt).tool_calls) == most
    with pytest.raises(StreamProtocolError, match="1024 is out of range"):
        replay_message(WIRES[fmt](list(range(1025))), fmt)


@pytest.mark.parametrize("fmt", list(WIRES))
def test_a_huge_index_allocates_nothing(fmt: str) -> None:
    body = WIRES[fmt]([10**15])
    tracemalloc.start()
    try:
        with pytest.raises(StreamProtocolError):
            _decode(fmt, body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


INDEX = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-2, max_value=4),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.booleans(),
    st.none(),
)


@pytest.mark.parametrize("fmt", list(WIRES))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(indices=st.lists(INDEX, max_size=5))
def test_any_index_ends_in_a_message_or_the_typed_error(fmt: str, indices: list[Any]) -> None:
    try:
        message = replay_message(WIRES[fmt](indices), fmt)
    except StreamProtocolError:
        return
    assert isinstance(message, Message)
    for index in indices:  # what was accepted was sane
        if isinstance(index, int) and not isinstance(index, bool) and fmt != "openai":
            assert 0 <= index <= 1023


# --- events that disagree about an item: the official SDK is the oracle -----------------------


def _sdk_final(body: bytes) -> Any:
    """The openai SDK's accumulator on ``body``: its final response, or the error it raises."""
    from openai._models import construct_type
    from openai._streaming import SSEDecoder
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    try:
        for sse in SSEDecoder().iter_bytes(iter([body])):
            event = construct_type(type_=ResponseStreamEvent, value=json.loads(sse.data))
            state.handle_event(event)
    except RuntimeError as exc:
        return exc
    return state._completed_response


def _call_stream(added_id: str | None, done_id: str | None, final_id: str | None) -> bytes:
    def item(item_id: str | None, arguments: str = "") -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": "function_call",
            "call_id": "call_1",
            "name": "lookup",
            "arguments": arguments,
            "status": "completed",
        }
        if item_id is not None:
            body["id"] = item_id
        return body

    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": _response([], "in_progress"),
        },
        {
            "type": "response.output_item.added",
            "sequence_number": 1,
            "output_index": 0,
            "item": item(added_id),
        },
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 2,
            "output_index": 0,
            "item_id": added_id or "",
            "delta": '{"q": 1}',
        },
    ]
    if done_id != "-":
        events.append(
            {
                "type": "response.output_item.done",
                "sequence_number": 3,
                "output_index": 0,
                "item": item(done_id, '{"q": 1}'),
            }
        )
    events.append(
        {
            "type": "response.completed",
            "sequence_number": 4,
            "response": _response([item(final_id, '{"q": 1}')], "completed"),
        }
    )
    return _sse(events, named=True)


def _response(output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-x",
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 3,
            "output_tokens": 2,
            "total_tokens": 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


DISAGREEMENTS = {
    # (added id, done id or "-" for no done event, id in the completed response)
    "all-agree": ("fc_1", "fc_1", "fc_1"),
    "added-without-id": (None, None, "fc_1"),
    "added-without-id-no-done": (None, "-", "fc_1"),
    "done-names-another-id": ("fc_1", "fc_2", "fc_2"),
    "completed-names-another-id": ("fc_1", "fc_1", "fc_2"),
    "unfinished-and-another-id": ("fc_1", "-", "fc_2"),
}


@pytest.mark.parametrize("case", list(DISAGREEMENTS), ids=list(DISAGREEMENTS))
def test_disagreeing_items_fold_as_the_sdk_keeps_them(case: str) -> None:
    body = _call_stream(*DISAGREEMENTS[case])
    sdk = _sdk_final(body)
    if isinstance(sdk, BaseException):
        with pytest.raises(StreamProtocolError, match=r"output_index 0|output item 0"):
            replay_message(body, "openai-responses")
        return
    message = replay_message(body, "openai-responses")
    calls = [item for item in sdk.output if item.type == "function_call"]
    assert message.tool_calls == [
        ToolCallPart(call.call_id, call.name, json.loads(call.arguments)) for call in calls
    ]


# --- the last event without its terminator ---------------------------------------------------

RECORDED = [
    *[("anthropic", path) for path in ANTHROPIC_FIXTURES],
    *[("openai", path) for path in OPENAI_FIXTURES],
    *[("openai-responses", path) for path in RESPONSES_FIXTURES],
]


@pytest.mark.parametrize(
    ("fmt", "path"), RECORDED, ids=[f"{fmt}-{path.stem}" for fmt, path in RECORDED]
)
def test_a_last_event_without_its_blank_line_decodes_on_every_wire(fmt: str, path: Path) -> None:
    bare = path.read_bytes().rstrip(b"\r\n")
    whole = replay_message(bare + b"\n\n", fmt)
    for tail in (b"", b"\n", b"\r\n"):
        assert replay_message(bare + tail, fmt) == whole


def test_a_last_ollama_line_without_its_newline_decodes() -> None:
    body = ollama([0])
    assert replay_message(body.rstrip(b"\n"), "ollama") == replay_message(body, "ollama")


def test_a_responses_stream_closing_a_part_then_ending_unterminated_is_complete() -> None:
    """The case that broke: a closed content part, then ``response.completed`` cut short of its
    blank line — the decoder's own set of closed parts hid the base class's close-once flag."""
    events = [
        {"type": "response.created", "response": {"id": "r", "model": "m"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": ""},
        },
        {
            "type": "response.output_text.delta",
            "output_index": 0,
            "content_index": 0,
            "delta": "hi",
        },
        {
            "type": "response.content_part.done",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "hi"},
        },
        {
            "type": "response.completed",
            "response": {"id": "r", "model": "m", "status": "completed"},
        },
    ]
    decoder = decoder_for("openai-responses")
    body = _sse(events, named=True).rstrip(b"\n")
    events_out = [*decoder.feed(body), *decoder.close()]
    assert decoder.saw_terminal
    assert replay_message(body, "openai-responses").text == "hi"
    assert events_out


# --- no class hides a base class's attribute ---------------------------------------------------


def _classes() -> list[type]:
    found: list[type] = []
    for info in pkgutil.walk_packages(rxturn.__path__, "rxturn."):
        if info.name.startswith(("rxturn.notebook", "rxturn.otel")) or info.name.endswith(
            "__main__"
        ):
            continue  # optional extras (their imports need more packages), and the CLI entry
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                found.append(value)
    return found


def test_no_slot_shadows_a_base_class_attribute() -> None:
    """A subclass slot named like a base class's slot, method or attribute silently replaces it
    for the base class's code too (how the Responses decoder once broke ``close()``)."""
    shadowed = [
        f"{cls.__module__}.{cls.__qualname__}.{name} hides {base.__qualname__}.{name}"
        for cls in _classes()
        for name in cls.__dict__.get("__slots__", ())
        for base in cls.__mro__[1:]
        if name in vars(base) and name not in ("__weakref__", "__dict__")
    ]
    assert shadowed == []


def test_the_shadow_check_sees_the_decoders() -> None:
    from rxturn.wire._decoder import FramedDecoder

    decoders = [cls for cls in _classes() if issubclass(cls, FramedDecoder)]
    assert len(decoders) >= 4


# --- a server's megabyte-long string in an error message -------------------------------------

HUGE = "n" * 200_000
_A_START = {
    "type": "message_start",
    "message": {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": []},
}
_R_START = {"type": "response.created", "response": {"id": "r", "model": "m"}}


def _huge_event_type(fmt: str) -> tuple[bytes, str]:
    start = {"anthropic": _A_START, "openai-responses": _R_START}.get(fmt)
    head = _sse([start]) if start is not None else b""
    return head + f"event: {HUGE}\ndata: {{broken\n\n".encode(), fmt


def _anthropic_tool(closed: bool) -> tuple[bytes, str]:
    block = {"type": "tool_use", "id": HUGE, "name": HUGE, "input": {}}
    events: list[dict[str, Any]] = [
        _A_START,
        {"type": "content_block_start", "index": 0, "content_block": block},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{bad"},
        },
    ]
    if closed:
        events.append({"type": "content_block_stop", "index": 0})
    events += [
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
        {"type": "message_stop"},
    ]
    return _sse(events), "anthropic"


def _responses_items() -> tuple[bytes, str]:
    added = {"type": "function_call", "call_id": HUGE, "name": "f"}
    done = {"type": "function_call", "call_id": "other" + HUGE, "name": "f"}
    return _sse(
        [
            _R_START,
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
    ), "openai-responses"


def _reply_tool(fmt: str) -> bytes:
    if fmt == "openai":
        call = {"id": "c", "type": "function", "function": {"name": HUGE, "arguments": "{bad"}}
        message = {"role": "assistant", "tool_calls": [call]}
        return json.dumps({"id": "c", "choices": [{"index": 0, "message": message}]}).encode()
    item = {"type": "function_call", "call_id": "c", "name": HUGE, "arguments": "{bad"}
    return json.dumps({"id": "r", "output": [item]}).encode()


HUGE_STREAMS = {
    "event type, anthropic": lambda: _huge_event_type("anthropic"),
    "event type, openai": lambda: _huge_event_type("openai"),
    "event type, responses": lambda: _huge_event_type("openai-responses"),
    "closed tool call": lambda: _anthropic_tool(True),
    "unfinished tool call": lambda: _anthropic_tool(False),
    "responses item": _responses_items,
}


def _assert_cut_short(error: BaseException) -> None:
    text = str(error)
    assert len(text) < 400 and "nnnn..." in text, (len(text), text[:300])


@pytest.mark.parametrize("site", list(HUGE_STREAMS))
def test_a_huge_server_string_is_quoted_cut_short_in_a_stream_error(site: str) -> None:
    """An event type, an item id, a tool name or id: whatever the server sent, the message
    quotes a few dozen characters of it, never the megabyte."""
    data, fmt = HUGE_STREAMS[site]()
    with pytest.raises(rxturn.RxturnError) as caught:
        replay_message(data, fmt)
    _assert_cut_short(caught.value)


@pytest.mark.parametrize("fmt", ["openai", "openai-responses"])
def test_a_huge_tool_name_is_quoted_cut_short_in_a_reply_error(fmt: str) -> None:
    from rxturn.wire import parse_openai_completion
    from rxturn.wire.openai_responses import parse_openai_response

    parse = parse_openai_completion if fmt == "openai" else parse_openai_response
    with pytest.raises(rxturn.RxturnError) as caught:
        parse(_reply_tool(fmt))
    _assert_cut_short(caught.value)
