"""Edges of docs/behaviour.md §2 found by probing the public API from the outside: each case
failed (a traceback, a wrong value) before the fix it comes with."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxturn import (
    Cancelled,
    ConfigError,
    ContextWindow,
    HedgePolicy,
    HedgeTarget,
    LimiterPolicy,
    Message,
    RateLimiter,
    RateLimitError,
    RateLimitPolicy,
    RecordingObserver,
    RescueFailed,
    RetryPolicy,
    ServerError,
    StreamHandler,
    TimeoutPolicy,
    TokenCounter,
    Tool,
    TurnEngine,
)
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.testing.virtual import ScriptedClient, reply, run_virtual, timeline

# -- waits too long for any scheduler ------------------------------------------------------------

# Every one of these values becomes a timer. 10**12 s is past the year 9999, where the
# virtual-time scheduler's datetime ends (it raised OverflowError from inside the ladder); a
# value of 31 years or more is refused when the handler is built, naming the field.
TOO_LONG: list[tuple[Callable[[], object], str]] = [
    (lambda: StreamHandler(timeouts=TimeoutPolicy(first_event=1e12, total=None)), "first_event"),
    (lambda: StreamHandler(timeouts=TimeoutPolicy(per_event=1e300)), "per_event"),
    (lambda: StreamHandler(timeouts=TimeoutPolicy(total=10**12)), "total"),
    (lambda: StreamHandler(retry=RetryPolicy(max_delay=1e300)), "max_delay"),
    (
        lambda: StreamHandler(rate_limit=RateLimitPolicy(default_delay=2e9, max_delay=2e9)),
        "default_delay",
    ),
    (lambda: StreamHandler(rate_limit=RateLimitPolicy(max_delay=1e15)), "max_delay"),
    (lambda: RateLimiter(LimiterPolicy(requests_per_minute=1, max_wait=1e12)), "max_wait"),
    (lambda: HedgePolicy(targets=(HedgeTarget(model="backup"),), delay=1e12), "delay"),
]


@pytest.mark.parametrize(("build", "field"), TOO_LONG)
def test_a_wait_longer_than_31_years_is_refused_naming_its_field(
    build: Callable[[], object], field: str
) -> None:
    with pytest.raises(ConfigError, match=rf"{field}:? must be at most 1e\+09 seconds") as caught:
        build()
    assert "\n" not in str(caught.value)


def test_a_disabled_timeout_is_suggested_instead_of_a_huge_one() -> None:
    with pytest.raises(ConfigError, match=r"got 1e\+300 \(use None to disable it\)"):
        TimeoutPolicy(per_event=1e300).validate()


def test_sanitizing_gives_a_huge_timeout_its_default() -> None:
    fixed = TimeoutPolicy(first_event=1e12, per_event=10.0, total=1e300).sanitized()
    assert (fixed.first_event, fixed.per_event, fixed.total) == (120.0, 10.0, 300.0)


async def test_the_longest_accepted_wait_runs_on_virtual_time(clean: TestScheduler) -> None:
    # A 429 without a hint waits default_delay, a second short of 10**9 s (the largest value
    # accepted, here the cap), then the second attempt serves. The first attempt's error comes
    # at 0.01 s.
    client = ScriptedClient(
        clean, [timeline([], end=RateLimitError("HTTP 429: slow down")), timeline(reply("ok"))]
    )
    handler = StreamHandler(
        timeouts=TimeoutPolicy(total=None),
        rate_limit=RateLimitPolicy(default_delay=1e9 - 1, max_delay=1e9),
    )
    engine = TurnEngine(client, handler=handler, scheduler=clean)

    result = await run_virtual(clean, engine.run("hi"), limit=1e9)

    assert result.text == "ok"
    assert client.spans[1][0] == pytest.approx(0.01 + 1e9 - 1)


# -- a cancel while the turn awaits user code before its request ---------------------------------


class _HangingMemory:
    def retrieve(self, query: str, top_k: int) -> asyncio.Future[list[str]]:
        return asyncio.get_running_loop().create_future()


class _HangingContributor:
    def contribute(self, *, turn: int, history: Sequence[Message]) -> asyncio.Future[list[Message]]:
        return asyncio.get_running_loop().create_future()


class _HangingCompactor:
    async def compact(
        self, history: Sequence[Message], *, budget: int, counter: TokenCounter
    ) -> list[Message]:
        await asyncio.get_running_loop().create_future()
        raise AssertionError("never resolved")


SETUP_PHASES: dict[str, dict[str, Any]] = {
    "memory": {"memory": _HangingMemory()},
    "contributor": {"contributors": [_HangingContributor()]},
    "compactor": {
        "compactor": _HangingCompactor(),
        "context_window": ContextWindow(max_tokens=50),
        "history": [Message.user("word " * 100), Message.assistant("ok")],
    },
}


@pytest.mark.parametrize("phase", list(SETUP_PHASES))
async def test_a_cancel_while_the_turn_awaits_user_code_ends_it_at_once(
    clean: TestScheduler, phase: str
) -> None:
    # The memory provider, a context contributor or the compactor never answers; the cancel at
    # 1 s ends the run with Cancelled before any turn event and before any request (before,
    # the run waited on that code for ever, cancel or not). The next run works.
    client = ScriptedClient(clean, [timeline(reply("ok"))])
    recorder = RecordingObserver()
    engine = TurnEngine(client, scheduler=clean, observers=[recorder], **SETUP_PHASES[phase])
    history = list(engine.history)
    clean.schedule_absolute(1.0, lambda *_: engine.cancel())

    with pytest.raises(Cancelled):
        await run_virtual(clean, engine.run("hi"), limit=10.0)

    assert clean.clock == pytest.approx(1.0)
    assert client.stream_calls == []
    assert [name for name, _ in recorder.calls] == ["on_run_start", "on_run_end"]
    assert engine.history == history


# -- the rescue's error quotes a client's own exception on one line, without a key --------------

_KEY = "sk-ant-api03-" + "Q" * 40


async def test_a_failed_rescue_quotes_a_clients_exception_on_one_line_without_its_key(
    clean: TestScheduler,
) -> None:
    # The stream fails (no retries), the rescue's create() of a client of your own raises an
    # exception whose text spans lines and holds a key. Before, RescueFailed's message carried
    # both verbatim.
    client = ScriptedClient(
        clean,
        [timeline([], end=ServerError("HTTP 500: down"))],
        create=[RuntimeError(f"rescue broke\n  at line 2 with {_KEY}")],
    )
    engine = TurnEngine(
        client, handler=StreamHandler(retry=RetryPolicy(max_retries=0)), scheduler=clean
    )

    with pytest.raises(RescueFailed) as caught:
        await run_virtual(clean, engine.run("hi"))

    for text in (str(caught.value), repr(caught.value)):
        assert "\n" not in text
        assert _KEY not in text and "QQQQQQ" not in text
    assert "rescue broke at line 2 with" in str(caught.value)
    assert isinstance(caught.value.rescue_error, RuntimeError)  # the original is kept as is


def test_a_rescue_failed_built_by_hand_is_one_line_without_a_key() -> None:
    error = RescueFailed(ValueError(f"stream\r\nfailed {_KEY}"), ConnectionError("refused\n"))
    assert str(error) == (
        "streaming failed (stream failed [redacted]); "
        "the non-streaming rescue request failed too: refused"
    )


# -- a tool's timeout with no bound --------------------------------------------------------------


@pytest.mark.parametrize("timeout", [math.inf, 1e300, 10**400], ids=["inf", "1e300", "10**400"])
async def test_a_tool_timeout_with_no_bound_lets_the_tool_finish(
    clean: TestScheduler, timeout: float
) -> None:
    # A tool's timeout may be infinite (or past any float: the same): no bound. Before, the
    # race armed a timer that long, and the virtual-time scheduler raised OverflowError.
    async def lookup(x: int) -> str:
        """Look x up."""
        return f"found {x}"

    call = [
        MessageStart(id="m1", model="scripted"),
        PartStart(0, "tool_call", "call_1", "lookup"),
        Delta(0, '{"x": 7}', "tool_json"),
        PartStop(0),
        MessageDelta("tool_call", None),
        MessageStop(),
    ]
    client = ScriptedClient(clean, [timeline(call), timeline(reply("done"))])
    engine = TurnEngine(client, scheduler=clean, tools=[Tool(lookup, timeout=timeout)])

    result = await run_virtual(clean, engine.run("hi"))

    assert result.text == "done"
    (result_part,) = client.stream_calls[1][0].messages[-1].tool_results
    assert (result_part.content, result_part.is_error) == ("found 7", False)


# -- a context window past any float ---------------------------------------------------------------


def test_a_context_window_past_any_float_is_refused_when_built() -> None:
    # Before, ContextWindow(max_tokens=10**400) was accepted and its threshold (a float
    # product), read before every call, raised OverflowError.
    with pytest.raises(
        ConfigError, match=r"^ContextWindow.max_tokens must be an int > 0, got an int too large"
    ):
        ContextWindow(max_tokens=10**400)
    assert ContextWindow(max_tokens=10**300).threshold == pytest.approx(8e299)
