"""``replay()`` (cold Observable of decoded events) and ``replay_message()`` (the folded reply)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import operators as ops
from reactivex.scheduler import ImmediateScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler
from recorded import FIXTURES

from rxturn import replay, replay_batches, replay_message
from rxturn.errors import (
    ConfigError,
    InvalidToolInputError,
    OverloadedError,
    RxturnError,
    StreamProtocolError,
    TruncatedStreamError,
)
from rxturn.events import MessageStart, MessageStop, StreamEvent
from rxturn.fold import INITIAL_STATE, fold, fold_events
from rxturn.messages import Message, StopReason, TextPart, Usage, message_to_json
from rxturn.wire import decoder_for

ALL = sorted(FIXTURES.glob("*/*.sse"))
#: the wire format of each fixtures folder (the folder's name, unless listed here)
_FORMAT_OF_FOLDER = {"openai-compatible": "openai"}


def fmt_of(path: Path) -> str:
    return _FORMAT_OF_FOLDER.get(path.parent.name, path.parent.name)


BASIC = FIXTURES / "anthropic" / "basic_response.sse"


class Recorder:
    """Collects one subscription's notifications."""

    def __init__(self) -> None:
        self.events: list[StreamEvent] = []
        self.error: Exception | None = None
        self.completed = False

    def subscribe(self, source: reactivex.Observable[StreamEvent], **kwargs: Any) -> Recorder:
        source.subscribe(self.events.append, self._on_error, self._on_completed, **kwargs)
        return self

    def _on_error(self, error: Exception) -> None:
        self.error = error

    def _on_completed(self) -> None:
        self.completed = True


def decode_whole(body: bytes, fmt: str) -> list[StreamEvent]:
    """An independent driver: the decoder fed the whole body at once."""
    decoder = decoder_for(fmt)
    return [*decoder.feed(body), *decoder.close()]


def fold_via_rx(source: reactivex.Observable[StreamEvent]) -> Message:
    state = source.pipe(ops.scan(fold, INITIAL_STATE), ops.last()).run()
    return state.message()


def synthetic_anthropic(deltas: list[str]) -> bytes:
    """A well-formed Anthropic stream whose text is ``"".join(deltas)``."""

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    parts = [
        event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_syn",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 7, "output_tokens": 1},
                },
            },
        ),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    parts += [
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        )
        for text in deltas
    ]
    parts += [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": len(deltas)},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(parts)


# -- the happy path ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_replay_emits_what_the_decoder_decodes_and_completes(path: Path) -> None:
    body = path.read_bytes()
    recorder = Recorder().subscribe(replay(path))
    assert recorder.error is None and recorder.completed
    assert recorder.events == decode_whole(body, fmt_of(path))
    assert type(recorder.events[0]) is MessageStart
    assert type(recorder.events[-1]) is MessageStop


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_scan_fold_over_replay_equals_replay_message(path: Path) -> None:
    assert fold_via_rx(replay(path.read_bytes())) == replay_message(path)


def test_sources_bytes_like_str_and_pathlike_are_equivalent() -> None:
    body = BASIC.read_bytes()
    expected = replay_message(body)
    for source in (bytearray(body), memoryview(body), str(BASIC), BASIC):
        assert replay_message(source) == expected
        assert fold_via_rx(replay(source)) == expected
    assert replay_message(body, "anthropic") == expected


def test_replay_is_cold_and_reads_the_file_at_subscribe_time(tmp_path: Path) -> None:
    file = tmp_path / "stream.sse"
    source = replay(file)  # the file does not exist yet: nothing is read here
    file.write_bytes(synthetic_anthropic(["first"]))
    assert fold_via_rx(source).text == "first"
    file.write_bytes(synthetic_anthropic(["second", " time"]))
    assert fold_via_rx(source).text == "second time"


def test_streams_larger_than_one_feed_chunk() -> None:
    deltas = [f"<{i:05d}|{'é' * (i % 7)}>" for i in range(12_000)]
    body = synthetic_anthropic(deltas)
    assert len(body) > 10 * 64 * 1024
    message = fold_via_rx(replay(body))
    assert message.content == (TextPart("".join(deltas)),)
    assert message.usage == Usage(input_tokens=7, output_tokens=len(deltas))
    assert replay_message(body) == message


def test_ollama_ndjson_is_sniffed_and_folded() -> None:
    lines = [
        {
            "model": "llama3",
            "created_at": "2024-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "Hel"},
            "done": False,
        },
        {
            "model": "llama3",
            "created_at": "2024-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": "lo"},
            "done": False,
        },
        {
            "model": "llama3",
            "created_at": "2024-01-01T00:00:02Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 5,
            "eval_count": 2,
        },
    ]
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    message = replay_message(body)
    assert message.text == "Hello"
    assert message.model == "llama3"
    assert message.stop_reason is StopReason.END_TURN
    assert message.usage == Usage(input_tokens=5, output_tokens=2)
    assert fold_via_rx(replay(body, "ollama")) == message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ALL), cuts=st.lists(st.integers(0, 60_000), max_size=25))
def test_folding_does_not_depend_on_how_the_bytes_were_chunked(path: Path, cuts: list[int]) -> None:
    body = path.read_bytes()
    bounds = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    decoder = decoder_for(fmt_of(path))
    events: list[StreamEvent] = []
    for start, end in itertools.pairwise(bounds):
        events.extend(decoder.feed(body[start:end]))
    events.extend(decoder.close())
    assert message_to_json(fold_events(events).message()) == message_to_json(replay_message(body))


# -- scheduling and disposal ---------------------------------------------------------------------


def test_emission_runs_on_the_subscribe_time_scheduler() -> None:
    scheduler = TestScheduler()
    recorder = Recorder().subscribe(replay(BASIC.read_bytes()), scheduler=scheduler)
    assert recorder.events == [] and not recorder.completed  # nothing until the scheduler runs
    scheduler.start()
    assert recorder.completed and recorder.events == decode_whole(BASIC.read_bytes(), "anthropic")


def test_disposal_stops_decoding() -> None:
    seen: list[StreamEvent] = []
    body = synthetic_anthropic(["x"] * 5000)
    taken = replay(body).pipe(ops.do_action(seen.append), ops.take(3), ops.to_list()).run()
    assert len(taken) == 3
    assert len(seen) == 3  # the source stopped as soon as take() disposed it


@pytest.mark.parametrize("batched", [False, True], ids=["replay", "replay_batches"])
async def test_on_the_asyncio_scheduler_the_loop_runs_between_chunks(batched: bool) -> None:
    """Each 64 KiB of input is one scheduled action: a callback queued right after subscribing
    runs after the first chunk's events, and a dispose there stops the replay. Before, the
    whole input was decoded and emitted in one action (a 27 MB body held the loop for 200 ms,
    512 MiB for seconds), so the callback ran only once every event was out."""
    body = synthetic_anthropic([f"<{i:05d}>" for i in range(30_000)])
    assert len(body) > 8 * 64 * 1024
    loop = asyncio.get_running_loop()
    seen: list[object] = []
    ended: list[object] = []
    source = replay_batches(body) if batched else replay(body)
    subscription = source.subscribe(
        seen.append,
        ended.append,
        lambda: ended.append("completed"),
        scheduler=AsyncIOScheduler(loop),
    )
    at_callback: list[int] = []

    def interject() -> None:  # what another task of the loop would get to do
        at_callback.append(len(seen))
        subscription.dispose()

    loop.call_soon(interject)
    for _ in range(20):  # bounded: a replay that goes on would have ended long before
        await asyncio.sleep(0)
    assert at_callback == [len(seen)] and len(seen) > 0
    if batched:
        assert len(seen) == 1  # the first chunk's batch, then the dispose
    else:
        assert len(seen) < len(decode_whole(body, "anthropic"))
    assert ended == []  # disposed: neither completed nor failed


def _depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def test_on_the_immediate_scheduler_the_stack_does_not_grow_with_the_chunks() -> None:
    """Before, the ImmediateScheduler ran each 64 KiB chunk's step inside the previous one: a
    recording of ~800 chunks (50 MB) failed with RecursionError; each batch is now handed on
    at the same depth."""
    body = synthetic_anthropic([f"<{i:05d}>" for i in range(30_000)])
    assert len(body) > 8 * 64 * 1024
    depths: list[int] = []
    ended: list[object] = []
    replay_batches(body).subscribe(
        lambda _: depths.append(_depth()),
        ended.append,
        lambda: ended.append("completed"),
        scheduler=ImmediateScheduler(),
    )
    assert ended == ["completed"] and len(depths) > 8
    assert max(depths) == min(depths)


# -- failures ------------------------------------------------------------------------------------


def _blocks(body: bytes) -> list[bytes]:
    return [b for b in re.split(rb"(?:\r\n|\n){2,}", body) if b.strip()]


def _before_terminal(path: Path) -> bytes:
    """The first half of the events that precede the stream's first terminal marker."""
    blocks = _blocks(path.read_bytes())
    terminal = re.compile(
        rb'"message_stop"|"finish_reason":\s*"|\[DONE\]|"response\.(?:completed|incomplete)"'
    )
    first = next(i for i, block in enumerate(blocks) if terminal.search(block))
    return b"\n\n".join(blocks[: max(1, first // 2)]) + b"\n\n"


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_truncated_stream_emits_everything_then_fails(path: Path) -> None:
    body = _before_terminal(path)
    recorder = Recorder().subscribe(replay(body))
    assert recorder.events == decode_whole(body, fmt_of(path))
    assert recorder.events and not recorder.completed
    assert isinstance(recorder.error, TruncatedStreamError)
    assert recorder.error.events == len(recorder.events)
    with pytest.raises(TruncatedStreamError) as info:
        replay_message(body)
    last_line = len(body.splitlines())
    assert f"(line {last_line})" in str(info.value)


@pytest.mark.parametrize("body", [b"", b"   \n\r\n\t\n"], ids=["empty", "blank"])
def test_empty_stream(body: bytes) -> None:
    recorder = Recorder().subscribe(replay(body))
    assert isinstance(recorder.error, StreamProtocolError)
    assert str(recorder.error).startswith("empty stream")
    with pytest.raises(StreamProtocolError, match="empty stream"):
        replay_message(body)


def test_missing_file_is_a_config_error_at_subscribe_time(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sse"
    source = replay(missing)  # no error yet: the file is read when subscribed
    recorder = Recorder().subscribe(source)
    assert isinstance(recorder.error, ConfigError)
    assert str(missing) in str(recorder.error)
    with pytest.raises(ConfigError, match="no such file"):
        replay_message(str(missing))
    with pytest.raises(ConfigError, match="directory"):
        replay_message(tmp_path)


def test_a_path_no_file_system_can_encode_is_a_config_error() -> None:
    # a lone surrogate os.fsencode refuses (before: UnicodeEncodeError, through on_error too)
    recorder = Recorder().subscribe(replay("rec\ud800.sse"))
    assert isinstance(recorder.error, ConfigError)
    with pytest.raises(ConfigError, match=r"^no file name the file system can encode \('rec"):
        replay_message("rec\ud800.sse")


def test_unknown_format_is_rejected_immediately() -> None:
    with pytest.raises(ConfigError, match="unknown stream format 'gemini'"):
        replay(b"data: {}\n\n", "gemini")
    with pytest.raises(ConfigError, match="unknown stream format"):
        replay_message(b"data: {}\n\n", "sse")


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (123, "the source must be the recorded bytes or a file's path (a str or a Path), got int"),
        (
            None,
            "the source must be the recorded bytes or a file's path (a str or a Path), got None",
        ),
        ([b"data: {}"], "the source must be the recorded bytes or a file's path"),
        ("", "the source's path is empty"),
        ("a\0b.sse", "the source's path holds a NUL character"),
        # the recorded text itself (``replay(path.read_text())``): it was read as a file name,
        # and the error quoted the whole stream over many lines ('File name too long')
        (BASIC.read_text(), "the source is a str of "),
        ("data: [DONE]\r\r", "the source is a str of "),
    ],
    ids=["int", "none", "list", "empty-path", "nul", "text", "short-text"],
)
def test_a_source_that_is_neither_bytes_nor_a_path_is_rejected_immediately(
    source: object, says: str
) -> None:
    for name, call in (
        ("replay", lambda: replay(source)),  # pyright: ignore[reportArgumentType]
        ("replay_batches", lambda: replay_batches(source)),  # pyright: ignore[reportArgumentType]
        ("replay_message", lambda: replay_message(source)),  # pyright: ignore[reportArgumentType]
    ):
        with pytest.raises(ConfigError) as raised:
            call()  # before any subscription: no TypeError inside it, no '' read as '.'
        assert str(raised.value).startswith(f"{name}: {says}"), str(raised.value)


def test_the_recorded_text_as_a_str_says_to_pass_bytes() -> None:
    text = BASIC.read_text()
    with pytest.raises(ConfigError) as raised:
        replay_message(text)
    assert str(raised.value) == (
        f"replay_message: the source is a str of {len(text)} characters with line breaks, the "
        "stream itself rather than a file's path: pass it as bytes (text.encode())"
    )
    assert replay_message(text.encode()) == replay_message(BASIC)


def test_replay_message_keep_thinking_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match=r"keep_thinking=\.\.\.\) must be True or False"):
        replay_message(b"data: {}\n\n", keep_thinking="no")  # pyright: ignore[reportArgumentType]


def test_in_stream_error_after_events() -> None:
    blocks = _blocks(BASIC.read_bytes())
    error = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}'
    )
    body = b"\n\n".join([*blocks[:3], error, *blocks[3:]]) + b"\n\n"
    recorder = Recorder().subscribe(replay(body))
    assert recorder.events == decode_whole(b"\n\n".join(blocks[:3]) + b"\n\n", "anthropic")
    assert isinstance(recorder.error, OverloadedError)
    with pytest.raises(OverloadedError) as info:
        replay_message(body)
    error_line = body.splitlines().index(error.splitlines()[1]) + 1
    assert info.value.__notes__ == [f"line {error_line}"]


def test_fold_errors_name_the_line_of_the_event() -> None:
    body = (FIXTURES / "anthropic" / "tool_use_response.sse").read_bytes()
    corrupted = body.replace(b'"partial_json":"{', b'"partial_json":"{{', 1)
    line = (
        corrupted.splitlines().index(
            next(ln for ln in corrupted.splitlines() if b'"content_block_stop","index":1' in ln)
        )
        + 1
    )
    with pytest.raises(InvalidToolInputError) as info:
        replay_message(corrupted)
    assert info.value.where == f"line {line}"  # the content_block_stop that closed the lane
    assert info.value.raw.startswith("{{")
    # the Observable reports the same error class through the fold
    with pytest.raises(InvalidToolInputError):
        fold_via_rx(replay(corrupted))


def test_bad_bytes_are_protocol_errors_with_a_line() -> None:
    body = BASIC.read_bytes()
    lines = body.split(b"\n")
    cases = {
        "bad utf-8": b"\n".join([*lines[:4], b"data: \xff\xfe", *lines[4:]]),
        "bad json": b"\n".join([*lines[:4], b"data: {nope", *lines[4:]]),
    }
    for name, corrupted in cases.items():
        with pytest.raises(StreamProtocolError, match=r"\(line \d+\)") as info:
            replay_message(corrupted, "anthropic")
        assert not isinstance(info.value, TruncatedStreamError), name
        recorder = Recorder().subscribe(replay(corrupted, "anthropic"))
        assert type(recorder.error) is type(info.value), name


def test_garbage_cannot_be_sniffed() -> None:
    with pytest.raises(StreamProtocolError, match="cannot tell the stream format"):
        replay_message(b"hello, this is not a stream\n")


def test_every_failure_is_a_typed_error() -> None:
    """A sweep over prefixes of a real stream: any outcome is a message or an RxturnError."""
    body = (FIXTURES / "openai" / "multiple_tool_calls.sse").read_bytes()
    for cut in range(0, len(body), 97):
        with contextlib.suppress(RxturnError):
            replay_message(body[:cut])
