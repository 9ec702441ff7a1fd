"""The fault matrix: every fault x wire format x path x handler, each cell's outcome predicted.

A cell runs one :meth:`TurnEngine.run` against a loopback server whose first reply is the fault
and whose next reply is healthy (``once`` matrix), or whose first four replies are the fault
(``persistent`` table, resilient streaming only: it reaches the rescue and the rate-limit
escalation). Expected outcomes come from docs/behaviour.md §2 (transport ladder of
3 retries; rate-limit ladder retrying hits 1-3 and escalating hit 4; first-event fast-fail after
2 timeouts; rescue after a spent budget or a total timeout, with a fresh first-event budget once
the deadline passed; the non-streaming path makes exactly one attempt raced against the turn's
total timeout; passthrough is one attempt without deadlines), from the fake provider's scenario
semantics (docs/fake-provider.md) and from the wire formats — never from running the engine.

Every cell is checked the same way (:func:`check_cell`):

- the outcome: the reply's text, stop reason and usage, or the exact error class;
- attempts (``AttemptReset`` count + 1), requests the server received, rescue;
- the observer log: the text deltas of attempt *k* are exactly the text the server sent in reply *k*
  (a failed attempt's partial text included: nothing sent before a failure is lost), the
  ``text_streamer`` saw the same chunks, the folded message holds the served text once (no text of a
  failed attempt leaks in, none is duplicated), thinking never enters the message;
- the audit trail: one ``Turn`` for a served turn (input, output, attempts, rescued, tokens),
  and for a failed one a ``Turn`` with its error's class name and no output;
  ``on_stream_success`` / ``on_stream_failure`` and ``on_turn_end``.

The cells run concurrently (bounded) on one event loop in a module fixture, each inside its own
``wait_for``; each cell is then reported by its own test id:
``test_cell[<fault>-<format>-<path>-<handler>]``. Short policies keep it fast: first event
0.3 s, per event 0.3 s, total 2 s, retry base delay 1 ms, rate-limit default delay 10 ms.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import jiter
import pytest

from rxturn.engine import RunResult, TurnEngine
from rxturn.engine.context.tokens import TiktokenCounter
from rxturn.engine.handler import StreamHandler
from rxturn.engine.observation.observers import RecordingObserver
from rxturn.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidToolInputError,
    NotFoundError,
    OverloadedError,
    ProviderStreamError,
    RateLimitError,
    RateLimitEscalation,
    ReadError,
    RescueFailed,
    RxturnError,
    ServerError,
    StreamProtocolError,
    StreamTimeoutError,
    TruncatedStreamError,
)
from rxturn.messages import Message, StopReason, ToolCallPart
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing import FakeProvider, assert_no_secret

from .conftest import (
    FORMAT_NAMES,
    TEST_KEY,
    ScriptedEntry,
    ScriptedProvider,
    ToolScript,
    make_client,
    wire_reply,
    wire_stream,
)

PROMPT = "What is the weather in Paris?"
OK_TEXT = "The quick brown fox jumps over the lazy dog."
OK_THINKING = "Let me think about it."
FAULT_TEXT = "one two three four five six seven"
CHUNK = 4
USAGE = {"input_tokens": 11, "output_tokens": 7}
AFTER = 6  # events a mid-stream fault lets through

#: Events each wire format sends before the first text delta of a text-only reply (the fake
#: provider's wire shapes, rxturn/testing/_emit.py): Anthropic ``message_start``,
#: ``content_block_start``, ``ping``; OpenAI the role chunk; Ollama nothing (every line carries
#: content).
PREAMBLE = {"anthropic": 3, "openai": 1, "ollama": 0}

RESILIENT_TIMEOUTS = TimeoutPolicy(first_event=0.3, per_event=0.3, total=2.0)
STALL_SECONDS = 3.0  # longer than the total deadline: only a deadline ends it early
CELL_DEADLINE = 20.0  # wait_for safety net around every cell


def resilient() -> StreamHandler:
    """The reference defaults with every time scaled down (rescue on, 10 consecutive timeouts)."""
    return StreamHandler(
        timeouts=RESILIENT_TIMEOUTS,
        retry=RetryPolicy(base_delay=0.001, max_delay=0.01),
        rate_limit=RateLimitPolicy(default_delay=0.01, max_delay=1.0),
        rng=random.Random(20240611),
    )


def pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def sent_before(fmt: str, after: int) -> str:
    """The text a reply of FAULT_TEXT carries in its first ``after`` events."""
    return "".join(pieces(FAULT_TEXT)[: max(0, after - PREAMBLE[fmt])])


# ------------------------------------------------------------------------------ the replies

OPEN_TOOL = ('{"city": "Paris", ', '"days": [1, 2')
BAD_TOOL = ('{"city": ', '"Par')


@dataclass(frozen=True)
class Script:
    """One scripted reply: a fake-provider entry, or exact bytes per format (scripted server).

    ``sent`` is the text its streamed form carries before its fault (all of it if none);
    ``text`` what the served reply says.
    """

    fake: dict[str, Any] | None = None
    scripted: Callable[[str], ScriptedEntry] | None = None
    text: str = FAULT_TEXT
    sent: Callable[[str], str] = lambda fmt: FAULT_TEXT


def fake(entry: dict[str, Any], *, cut: bool = True) -> Script:
    """A fake-provider fault: an HTTP error (no body streamed), or FAULT_TEXT streamed in
    ``CHUNK``-character deltas with the fault keys applied (``cut``: after ``AFTER`` events)."""
    if "status" in entry:
        return Script(fake=dict(entry), text="", sent=lambda fmt: "")
    body = {"text": FAULT_TEXT, "chunk_chars": CHUNK, "usage": USAGE, **entry}
    if not cut:
        return Script(fake=body)
    return Script(fake=body, sent=lambda fmt: sent_before(fmt, AFTER))


OK = Script(
    fake={"text": OK_TEXT, "thinking": OK_THINKING, "chunk_chars": CHUNK, "usage": USAGE},
    scripted=lambda fmt: ScriptedEntry(
        stream=wire_stream(fmt, text=pieces(OK_TEXT)), reply=wire_reply(fmt, text=OK_TEXT)
    ),
    text=OK_TEXT,
    sent=lambda fmt: OK_TEXT,
)


def _truncated(fmt: str) -> ScriptedEntry:
    reply = wire_reply(fmt, text=FAULT_TEXT)
    return ScriptedEntry(
        stream=wire_stream(fmt, text=pieces(FAULT_TEXT), complete=False),
        reply=reply[: len(reply) // 2],
    )


def _unclosed_tool(fmt: str) -> ScriptedEntry:
    stream = wire_stream(
        fmt, text=pieces(FAULT_TEXT), tool=ToolScript(fragments=BAD_TOOL), stop="tool_call"
    )
    return ScriptedEntry(
        stream=stream,
        reply=wire_reply(
            fmt,
            text=FAULT_TEXT,
            tool=("call_1", "get_weather", "".join(BAD_TOOL)),
            stop="tool_call",
        ),
    )


def _open_tool_at_max_tokens(fmt: str) -> ScriptedEntry:
    # Ollama sends tool calls whole, so its max_tokens reply is text only.
    tool = None if fmt == "ollama" else ToolScript(fragments=OPEN_TOOL, closed=False)
    stream = wire_stream(fmt, text=pieces(FAULT_TEXT), tool=tool, stop="max_tokens")
    full = None if fmt == "ollama" else ("call_1", "get_weather", "".join(OPEN_TOOL) + "]}")
    return ScriptedEntry(
        stream=stream, reply=wire_reply(fmt, text=FAULT_TEXT, tool=full, stop="max_tokens")
    )


CONTEXT_OVERFLOW = (
    "This model's maximum context length is 128000 tokens. However, your "
    "messages resulted in 130218 tokens. Please reduce the length of the messages."
)

FAULTS: dict[str, Script] = {
    "no_fault": fake({}, cut=False),
    "rate_limit_429": fake({"status": 429}),
    "rate_limit_429_retry_after": fake({"status": 429, "retry_after": 0.2}),
    "overloaded_529": fake({"status": 529}),
    "overloaded_529_retry_after": fake({"status": 529, "retry_after": 0.2}),
    "server_error_500": fake({"status": 500}),
    "bad_gateway_502": fake({"status": 502}),
    "unauthorized_401": fake({"status": 401}),
    "not_found_404": fake({"status": 404}),
    "context_overflow_400": fake({"status": 400, "error_message": CONTEXT_OVERFLOW}),
    "drop_mid_stream": fake({"drop_after_events": AFTER}),
    "stall_mid_stream": fake({"stall_after_events": AFTER, "stall_seconds": STALL_SECONDS}),
    "stall_before_first_event": Script(
        fake={
            "text": FAULT_TEXT,
            "chunk_chars": CHUNK,
            "usage": USAGE,
            "stall_after_events": 0,
            "stall_seconds": STALL_SECONDS,
        },
        sent=lambda fmt: "",
    ),
    "malformed_json": fake({"malformed_after_events": AFTER}),
    "error_event": fake({"error_event_after_events": AFTER, "error_type": "api_error"}),
    "truncated_clean_eof": Script(scripted=_truncated),
    "tool_json_unclosed": Script(scripted=_unclosed_tool),
    "open_tool_at_max_tokens": Script(scripted=_open_tool_at_max_tokens),
}


# ------------------------------------------------------------------------------ expectations


@dataclass(frozen=True)
class Reply:
    """The turn is served. ``by``: which reply's text ("ok" = the healthy one, "fault" = the
    faulty reply itself, served because nothing cut it short)."""

    attempts: int = 1
    rescued: bool = False
    by: Literal["ok", "fault"] = "ok"
    stop: StopReason = StopReason.END_TURN
    min_elapsed: float = 0.0


@dataclass(frozen=True)
class Fails:
    """The turn fails with exactly ``error`` after ``attempts`` streaming attempts."""

    error: type[RxturnError]
    attempts: int = 1
    rescue_tried: bool = False
    min_elapsed: float = 0.0


Expect = Reply | Fails
PerFormat = dict[str, Expect]


@dataclass(frozen=True)
class Row:
    """One fault's four predictions: ``(passthrough, resilient)`` on each path."""

    fault: str
    stream: tuple[Expect | PerFormat, Expect | PerFormat]
    create: tuple[Expect | PerFormat, Expect | PerFormat]


MAX_TOKENS = Reply(by="fault", stop=StopReason.MAX_TOKENS)
UNCLOSED_CREATE: PerFormat = {
    "anthropic": Fails(StreamProtocolError),
    "openai": Fails(InvalidToolInputError),
    "ollama": Fails(InvalidToolInputError),
}

# fmt: off
MATRIX: list[Row] = [
    # Row(fault, stream=(passthrough, resilient), create=(passthrough, resilient))
    Row("no_fault",
        stream=(Reply(by="fault"),                 Reply(by="fault")),
        create=(Reply(by="fault"),                 Reply(by="fault"))),
    Row("rate_limit_429",
        stream=(Fails(RateLimitError),             Reply(attempts=2)),
        create=(Fails(RateLimitError),             Fails(RateLimitError))),
    Row("rate_limit_429_retry_after",
        stream=(Fails(RateLimitError),             Reply(attempts=2, min_elapsed=0.2)),
        create=(Fails(RateLimitError),             Fails(RateLimitError))),
    Row("overloaded_529",
        stream=(Fails(OverloadedError),            Reply(attempts=2)),
        create=(Fails(OverloadedError),            Fails(OverloadedError))),
    Row("overloaded_529_retry_after",
        stream=(Fails(OverloadedError),            Reply(attempts=2, min_elapsed=0.2)),
        create=(Fails(OverloadedError),            Fails(OverloadedError))),
    Row("server_error_500",
        stream=(Fails(ServerError),                Reply(attempts=2)),
        create=(Fails(ServerError),                Fails(ServerError))),
    Row("bad_gateway_502",
        stream=(Fails(ServerError),                Reply(attempts=2)),
        create=(Fails(ServerError),                Fails(ServerError))),
    Row("unauthorized_401",
        stream=(Fails(AuthenticationError),        Fails(AuthenticationError)),
        create=(Fails(AuthenticationError),        Fails(AuthenticationError))),
    Row("not_found_404",
        stream=(Fails(NotFoundError),              Fails(NotFoundError)),
        create=(Fails(NotFoundError),              Fails(NotFoundError))),
    Row("context_overflow_400",
        stream=(Fails(ContextOverflowError),       Fails(ContextOverflowError)),
        create=(Fails(ContextOverflowError),       Fails(ContextOverflowError))),
    Row("drop_mid_stream",
        stream=(Fails(ReadError),                  Reply(attempts=2)),
        create=(Fails(ReadError),                  Fails(ReadError))),
    Row("stall_mid_stream",
        stream=(Reply(by="fault"),                 Reply(rescued=True, min_elapsed=2.0)),
        create=(Reply(by="fault"),                 Fails(StreamTimeoutError, min_elapsed=2.0))),
    Row("stall_before_first_event",
        stream=(Reply(by="fault"),                 Reply(attempts=2, min_elapsed=0.6)),
        create=(Reply(by="fault"),                 Fails(StreamTimeoutError, min_elapsed=2.0))),
    Row("malformed_json",
        stream=(Fails(StreamProtocolError),        Reply(attempts=2)),
        create=(Fails(StreamProtocolError),        Fails(StreamProtocolError))),
    Row("error_event",
        stream=(Fails(ProviderStreamError),        Reply(attempts=2)),
        create=(Reply(by="fault"),                 Reply(by="fault"))),
    Row("truncated_clean_eof",
        stream=(Fails(TruncatedStreamError),       Reply(attempts=2)),
        create=(Fails(StreamProtocolError),        Fails(StreamProtocolError))),
    Row("tool_json_unclosed",
        stream=(Fails(InvalidToolInputError),      Reply(attempts=2)),
        create=(UNCLOSED_CREATE,                   UNCLOSED_CREATE)),
    Row("open_tool_at_max_tokens",
        stream=(MAX_TOKENS,                        MAX_TOKENS),
        create=(MAX_TOKENS,                        MAX_TOKENS)),
]

#: The fault four times, then a healthy reply — streaming with the resilient handler only.
PERSISTENT: dict[str, Expect] = {
    "rate_limit_429":             Fails(RateLimitEscalation, attempts=4),
    "rate_limit_429_retry_after": Fails(RateLimitEscalation, attempts=4, min_elapsed=0.6),
    "overloaded_529":             Fails(RateLimitEscalation, attempts=4),
    "overloaded_529_retry_after": Fails(RateLimitEscalation, attempts=4, min_elapsed=0.6),
    "server_error_500":           Reply(attempts=4, rescued=True),
    "bad_gateway_502":            Reply(attempts=4, rescued=True),
    "drop_mid_stream":            Reply(attempts=4, rescued=True),
    "malformed_json":             Reply(attempts=4, rescued=True),
    "error_event":                Reply(attempts=4, rescued=True),
    "truncated_clean_eof":        Reply(attempts=4, rescued=True),
    "tool_json_unclosed":         Reply(attempts=4, rescued=True),
    "stall_mid_stream":           Fails(RescueFailed, rescue_tried=True, min_elapsed=2.0),
    "unauthorized_401":           Fails(AuthenticationError),
}
# fmt: on


@dataclass(frozen=True)
class Cell:
    fault: str
    fmt: str
    path: Literal["streaming", "non_streaming"]
    handler: Literal["passthrough", "resilient"]
    persistent: bool
    expect: Expect

    @property
    def id(self) -> str:
        kind = "persistent-" if self.persistent else ""
        return f"{kind}{self.fault}-{self.fmt}-{self.path}-{self.handler}"

    @property
    def script(self) -> Script:
        return FAULTS[self.fault]

    def replies(self) -> list[Script]:
        return [self.script] * (4 if self.persistent else 1) + [OK]


def _pick(value: Expect | PerFormat, fmt: str) -> Expect:
    return value[fmt] if isinstance(value, dict) else value


def _cells() -> Iterator[Cell]:
    for row in MATRIX:
        for fmt in FORMAT_NAMES:
            yield Cell(row.fault, fmt, "streaming", "passthrough", False, _pick(row.stream[0], fmt))
            yield Cell(row.fault, fmt, "streaming", "resilient", False, _pick(row.stream[1], fmt))
            yield Cell(
                row.fault, fmt, "non_streaming", "passthrough", False, _pick(row.create[0], fmt)
            )
            yield Cell(
                row.fault, fmt, "non_streaming", "resilient", False, _pick(row.create[1], fmt)
            )
    for fault, expect in PERSISTENT.items():
        for fmt in FORMAT_NAMES:
            yield Cell(fault, fmt, "streaming", "resilient", True, expect)


CELLS = list(_cells())
assert len({cell.id for cell in CELLS}) == len(CELLS)
assert set(FAULTS) == {row.fault for row in MATRIX}


def test_the_matrix_covers_every_fault_format_path_and_handler() -> None:
    # a healthy control row and 17 faults x 3 formats x 2 paths x 2 handlers, plus the
    # persistent table
    assert len([c for c in CELLS if not c.persistent]) == len(FAULTS) * 3 * 2 * 2 == 216
    fake_keys = {key for script in FAULTS.values() if script.fake for key in script.fake}
    for key in (
        "status",
        "retry_after",
        "error_type",
        "error_message",
        "drop_after_events",
        "stall_after_events",
        "stall_seconds",
        "malformed_after_events",
        "error_event_after_events",
    ):
        assert key in fake_keys, f"fault key {key} is never exercised"


# ------------------------------------------------------------------------------ running cells


@dataclass
class CellRun:
    result: RunResult | None = None
    error: RxturnError | None = None
    crash: str | None = None  # anything else: a non-typed exception or a hang
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)
    requests: int = 0
    turns: list[Any] = field(default_factory=list)
    history: int = 0
    elapsed: float = 0.0  # from on_turn_start to on_turn_end


class TimedRecorder(RecordingObserver):
    """Also notes when the turn started and ended (the deadline and back-off lower bounds)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = self.ended = 0.0

    def on_turn_start(self, **kwargs: Any) -> None:
        self.started = time.monotonic()
        super().on_turn_start(**kwargs)

    def on_turn_end(self, **kwargs: Any) -> None:
        self.ended = time.monotonic()
        super().on_turn_end(**kwargs)


async def run_cell(cell: Cell) -> CellRun:
    run = CellRun()
    replies = cell.replies()
    server: Any
    if all(reply.fake is not None for reply in replies):
        server = FakeProvider({"models": {"*": [reply.fake for reply in replies]}})
    else:
        server = ScriptedProvider(
            [reply.scripted(cell.fmt) for reply in replies if reply.scripted is not None]
        )
    handler = StreamHandler.passthrough() if cell.handler == "passthrough" else resilient()
    async with server, make_client(cell.fmt, server) as client:
        recorder = TimedRecorder()
        engine = TurnEngine(
            client,
            handler=handler,
            mode=cell.path,
            observers=[recorder],
            text_streamer=run.streamed.append,
        )
        try:
            run.result = await asyncio.wait_for(engine.run(PROMPT), CELL_DEADLINE)
        except RxturnError as exc:
            run.error = exc
        except TimeoutError:
            run.crash = f"no outcome within {CELL_DEADLINE}s (hang)"
        except Exception:
            run.crash = traceback.format_exc()
        run.elapsed = recorder.ended - recorder.started
        run.calls = recorder.calls
        run.requests = len(server.requests)
        run.turns = list(engine.session.runs[-1].turns) if engine.session.runs else []
        run.history = len(engine.history)
    return run


@pytest.fixture(scope="module")
def matrix(request: pytest.FixtureRequest) -> dict[str, CellRun]:
    """Run every selected cell concurrently (at most 24 at once) on one event loop."""
    wanted = {
        item.callspec.params["cell"].id  # pyright: ignore[reportAttributeAccessIssue]
        for item in request.session.items
        if getattr(item, "module", None) is request.module
        and hasattr(item, "callspec")
        and "cell" in item.callspec.params  # pyright: ignore[reportAttributeAccessIssue]
    }
    # the longest cells (those that wait out a deadline or a Retry-After) start first, so
    # that the others run beside them
    selected = sorted(
        (cell for cell in CELLS if cell.id in wanted), key=lambda cell: -cell.expect.min_elapsed
    )
    # Load the token tables now: their one-off 0.2 s of CPU must not land inside a cell's 0.3 s
    # first-event window.
    TiktokenCounter().count_messages([Message.user(PROMPT)])

    async def run_all() -> dict[str, CellRun]:
        gate = asyncio.Semaphore(24)

        async def one(cell: Cell) -> tuple[str, CellRun]:
            async with gate:
                try:
                    return cell.id, await run_cell(cell)
                except Exception:
                    return cell.id, CellRun(crash=traceback.format_exc())

        return dict(await asyncio.gather(*(one(cell) for cell in selected)))

    return asyncio.run(run_all())


# ------------------------------------------------------------------------------ checking


def _segments(calls: list[tuple[str, dict[str, Any]]], name: str) -> list[str]:
    """Deltas of callback ``name`` joined per attempt (split at every ``on_attempt_reset``)."""
    segments = [""]
    for called, kwargs in calls:
        if called == "on_attempt_reset":
            segments.append("")
        elif called == name:
            segments[-1] += kwargs["delta"]
    return segments


def check_cell(cell: Cell, run: CellRun, model: str = "primary") -> None:
    """Assert everything a cell promises (see the module docstring); ``model`` is the client's."""
    expect = cell.expect
    assert run.crash is None, f"not a typed outcome:\n{run.crash}"
    # no error object and no observer record holds the key the client sent, anywhere in its graph
    assert_no_secret(run.error, TEST_KEY, name="error")
    assert_no_secret(run.calls, TEST_KEY, name="observer calls")
    names = [name for name, _ in run.calls]
    streaming = cell.path == "streaming"
    attempts = expect.attempts
    rescued = isinstance(expect, Reply) and expect.rescued
    rescue_tried = rescued or (isinstance(expect, Fails) and expect.rescue_tried)

    # outcome
    if isinstance(expect, Fails):
        assert run.result is None, f"expected {expect.error.__name__}, got a reply: {run.result}"
        assert type(run.error) is expect.error, f"expected {expect.error.__name__}: {run.error!r}"
        assert str(run.error), "an error without a message"
        if streaming and cell.handler == "resilient" and hasattr(run.error, "attempts"):
            assert run.error.attempts == attempts  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
        if expect.error is RescueFailed:
            assert isinstance(run.error.stream_error, StreamTimeoutError)  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
            assert run.error.stream_error.kind == "total"  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]
    else:
        assert run.error is None, f"expected a reply, got {run.error!r}"
        assert run.result is not None
    assert run.elapsed >= expect.min_elapsed - 0.01, f"finished after {run.elapsed:.3f}s"

    # attempts, requests, resets
    resets = names.count("on_attempt_reset")
    assert resets == (attempts - 1 if streaming else 0), f"{resets} attempt resets"
    assert run.requests == (attempts if streaming else 1) + (1 if rescue_tried else 0), (
        f"{run.requests} requests reached the server"
    )

    # every delta a provider sent reached the observers, attempt by attempt
    replies = cell.replies()
    texts = _segments(run.calls, "on_text_delta")
    if streaming:
        served_attempt = isinstance(expect, Reply) and not rescued
        sent = [replies[min(k, len(replies) - 1)].sent(cell.fmt) for k in range(attempts)]
        if served_attempt:
            sent[-1] = replies[min(attempts - 1, len(replies) - 1)].text
        assert texts == sent, "observers did not see exactly the text the server sent"
    else:
        assert texts == [""], "the non-streaming path produced deltas"
    assert "".join(run.streamed) == "".join(texts), "text_streamer and observers disagree"
    assert run.streamed == [k["delta"] for n, k in run.calls if n == "on_text_delta"]

    # run and turn events
    assert names[0] == "on_run_start" and names[-1] == "on_run_end"
    assert names.count("on_turn_start") == 1 and names.count("on_turn_end") == 1
    turn_end = next(k for n, k in run.calls if n == "on_turn_end")
    if isinstance(expect, Fails):
        failures = [k for n, k in run.calls if n == "on_stream_failure"]
        assert len(failures) == 1 and failures[0]["error"] is run.error
        assert "on_stream_success" not in names and "on_response" not in names
        assert turn_end["success"] is False and turn_end["error"] == str(run.error)
        # a failed turn is audited too, with its error's class name and no output
        assert [(t.error, t.output) for t in run.turns] == [(type(run.error).__name__, "")]
        assert run.history == 0, "a failed run left messages in the history"
        return

    # the served reply, folded once
    assert run.result is not None
    turn = run.result.turns[-1]
    message = turn.message
    served = OK if expect.by == "ok" else cell.script
    assert message.text == served.text, "the folded text is not the served reply's"
    assert turn.stop_reason is expect.stop
    assert turn.attempts == attempts and turn.rescued is rescued
    assert message.usage is not None
    assert (message.usage.input_tokens, message.usage.output_tokens) == tuple(USAGE.values())
    tools = message.tool_calls
    if cell.fault == "open_tool_at_max_tokens" and cell.fmt != "ollama":
        raw = "".join(OPEN_TOOL)
        want = (
            jiter.from_json(raw.encode(), partial_mode=True)
            if streaming
            else (jiter.from_json((raw + "]}").encode()))
        )
        assert tools == [
            ToolCallPart("call_scripted_1" if streaming else "call_1", "get_weather", want)
        ]
    else:
        assert tools == []
    if streaming and not rescued and served is OK and cell.script.fake is not None:
        thinking = _segments(run.calls, "on_thinking_delta")[-1]
        assert thinking == OK_THINKING, "thinking deltas did not reach the observers"
    assert OK_THINKING not in message.text
    assert names.count("on_stream_success") == 1 and "on_stream_failure" not in names
    success = next(k for n, k in run.calls if n == "on_stream_success")
    assert success["model"] == model
    assert (
        names.index("on_stream_success") < names.index("on_response") < names.index("on_turn_end")
    )
    assert turn_end["success"] is True
    # the audit record
    assert len(run.turns) == 1
    record = run.turns[0]
    assert (record.input, record.output) == (PROMPT, served.text)
    assert (record.attempts, record.rescued, record.model) == (attempts, rescued, model)
    assert (record.input_tokens, record.output_tokens) == (11, 7)
    assert record.tool_calls == tuple(tools)


#: The stall cells wait out real deadlines (two seconds and more each): the inner loop keeps one
#: per stall row, the rest run with the slow tests.
STALL_CELLS_KEPT = {
    "stall_mid_stream-anthropic-streaming-resilient",
    "stall_before_first_event-openai-streaming-resilient",
    "persistent-stall_mid_stream-ollama-streaming-resilient",
}


def _param(cell: Cell) -> Any:
    slow = cell.fault.startswith("stall_") and cell.id not in STALL_CELLS_KEPT
    return pytest.param(cell, id=cell.id, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("cell", [_param(cell) for cell in CELLS])
def test_cell(cell: Cell, matrix: dict[str, CellRun]) -> None:
    check_cell(cell, matrix[cell.id])
