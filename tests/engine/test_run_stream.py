"""``async with engine.stream(prompt) as s``: a run consumed with ``async for``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    Cancelled,
    ConfigError,
    FallbackManager,
    OpenAIClient,
    RateLimitPolicy,
    RetryPolicy,
    StreamHandler,
    TimeoutPolicy,
    TurnEngine,
)
from rxturn.errors import BadRequestError
from rxturn.events import AttemptReset, Delta, Fallback, MessageStop
from rxturn.testing import FakeProvider

FAST = StreamHandler(
    timeouts=TimeoutPolicy(first_event=2.0, per_event=0.5, total=10.0),
    retry=RetryPolicy(base_delay=0.01, max_delay=0.05, jitter=0.0),
    rate_limit=RateLimitPolicy(default_delay=0.01, max_delay=1.0),
)
DROP = {"text": "Broken attempt text", "chunk_chars": 4, "drop_after_events": 5}
OK = {"text": "Hello from the fake", "chunk_chars": 4}
#: three dropped streams with text, then a fourth: the retries are spent, the rescue answers
RESCUED = {"models": {"*": [DROP, DROP, DROP, DROP, OK]}}
SLOW = {"models": {"*": [{"text": "x" * 400, "chunk_chars": 2, "delay_ms": 20}, OK]}}
WAIT = 10.0


async def _settled(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks that are not in ``before`` once the loop has had a bounded time to settle."""
    extra: set[asyncio.Task[Any]] = set()
    for _ in range(200):
        extra = {t for t in asyncio.all_tasks() if t not in before and not t.done()}
        extra.discard(asyncio.current_task())
        if not extra:
            return extra
        await asyncio.sleep(0.01)
    return extra


async def test_events_include_resets_and_the_rescue() -> None:
    async with (
        FakeProvider(RESCUED) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST)
        events: list[Any] = []
        async with engine.stream("hi") as s:
            async for event in s:
                events.append(event)
        assert [e.attempt for e in events if isinstance(e, AttemptReset)] == [2, 3, 4]
        assert isinstance(events[-1], Fallback)
        assert any(isinstance(e, Delta) for e in events)
        assert s.result.text == "Hello from the fake"
        assert engine.history[-1].text == "Hello from the fake"


async def test_text_stream_announces_withdrawn_text() -> None:
    async with (
        FakeProvider(RESCUED) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST)
        pieces: list[Any] = []
        async with engine.stream("hi") as s:
            async for piece in s.text_stream:
                pieces.append(piece)
    markers = [type(p) for p in pieces if not isinstance(p, str)]
    assert markers == [AttemptReset, AttemptReset, AttemptReset, Fallback]
    # each attempt's text ran from its start, and what follows the last marker is the reply
    last = max(i for i, p in enumerate(pieces) if not isinstance(p, str))
    assert "".join(pieces[last + 1 :]) == "Hello from the fake" == s.result.text
    first = next(i for i, p in enumerate(pieces) if not isinstance(p, str))
    assert "".join(pieces[:first]) == "Broken a"  # two deltas, then the drop


async def test_text_stream_of_a_clean_run_is_the_reply() -> None:
    async with (
        FakeProvider({"models": {"*": [OK]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        async with engine.stream("hi") as s:
            pieces = [piece async for piece in s.text_stream]
    assert pieces == ["Hell", "o fr", "om t", "he f", "ake"]
    assert s.result.text == "Hello from the fake"


@pytest.mark.parametrize("leave", ["break", "raise"])
async def test_leaving_the_block_early_cancels_the_run_and_leaks_nothing(leave: str) -> None:
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST)
        before = set(asyncio.all_tasks())
        seen: list[Any] = []

        async def consume() -> None:
            async with engine.stream("hi") as s:
                async for event in s:
                    seen.append(event)
                    if isinstance(event, Delta):
                        if leave == "break":
                            break
                        raise ValueError("consumer failed")
            assert s.done
            with pytest.raises(Cancelled):  # documented: the left run's result is its cancel
                _ = s.result

        if leave == "raise":
            with pytest.raises(ValueError, match="consumer failed"):
                await asyncio.wait_for(consume(), WAIT)
        else:
            await asyncio.wait_for(consume(), WAIT)
        assert not any(isinstance(e, MessageStop) for e in seen), "the run was still streaming"
        assert await _settled(before) == set()
        for _ in range(200):  # the request's connection is closed
            if fake.disconnects:
                break
            await asyncio.sleep(0.01)
        assert fake.disconnects == 1
        assert engine.history == [], "a cancelled run adds nothing to the history"
        assert engine.session.runs[-1].turns[-1].error == "Cancelled"
        # the engine takes the next call
        assert (await asyncio.wait_for(engine.run("again"), WAIT)).text == "Hello from the fake"


async def test_a_cancel_as_the_block_is_left_before_the_run_began_frees_the_engine() -> None:
    # The block is left before the run's task ran its first step, and the block's own task is
    # cancelled while its exit waits for the run: the run's task was cancelled before it began,
    # so its `finally` never freed the engine, which refused every later call ("while a
    # stream() is in flight") with its cancel signal still set.
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST)
        before = set(asyncio.all_tasks())

        async def leave_at_once() -> None:
            async with engine.stream("hi"):
                current = asyncio.current_task()
                assert current is not None
                current.cancel()  # delivered at the exit's first wait

        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(leave_at_once(), WAIT)
        assert await _settled(before) == set()
        assert fake.requests == [] and engine.history == []
        assert (await asyncio.wait_for(engine.run("again"), WAIT)).text == "x" * 400


async def test_one_conversation_holds_for_streams_too() -> None:
    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST)
        async with engine.stream("hi") as s:
            with pytest.raises(ConfigError, match=r"run\(\) while a stream\(\) is in flight"):
                await engine.run("again")
            with pytest.raises(ConfigError, match=r"stream\(\) while a stream\(\) is in flight"):
                async with engine.stream("again"):
                    pass
            with pytest.raises(ConfigError, match="once the run has ended"):
                _ = s.result
            async for _ in s:
                break
        assert len(fake.requests) == 1
        running = asyncio.create_task(engine.run("a run"))
        await asyncio.sleep(0)
        with pytest.raises(ConfigError, match=r"stream\(\) while a run\(\) is in flight"):
            async with engine.stream("during a run"):
                pass
        engine.cancel()
        with pytest.raises(Cancelled):
            await asyncio.wait_for(running, WAIT)


async def test_a_consumer_that_falls_behind_the_bound_cancels_the_run() -> None:
    async with (
        FakeProvider({"models": {"*": [{"text": "x" * 200, "chunk_chars": 2}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        got: list[Any] = []
        with pytest.raises(Cancelled, match="fell 5 events behind"):
            async with engine.stream("hi", max_buffered=5) as s:
                for _ in range(500):  # not iterating: the buffer fills
                    if s.done:
                        break
                    await asyncio.sleep(0.01)
                async for event in s:
                    got.append(event)
        assert len(got) == 5
        assert engine.history == []


async def test_a_failed_run_raises_from_the_iteration() -> None:
    async with (
        FakeProvider({"models": {"*": [{"status": 400}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        stream = engine.stream("hi")
        with pytest.raises(Exception, match="400"):
            async with stream as s:
                async for _ in s:
                    pass
        with pytest.raises(Exception, match="400"):
            _ = stream.result
        with pytest.raises(Exception, match="400"):  # never iterated: the exit raises it
            async with engine.stream("hi") as s:
                await asyncio.wait_for(_until_done(s), WAIT)


async def _until_done(s: Any) -> None:
    while not s.done:
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("bad", [None, 3, ["hi"], b"hi"])
def test_a_bad_prompt_is_refused_at_the_call(bad: Any) -> None:
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match=r"stream\(prompt\) takes a str or a Message"):
        engine.stream(bad)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_max_buffered_must_be_a_positive_int(bad: Any) -> None:
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match="max_buffered"):
        engine.stream("hi", max_buffered=bad)


async def test_a_failover_reset_is_an_event_and_withdraws_nothing_unshown() -> None:
    scenario = {"models": {"primary": [{"status": 404}], "backup": [OK]}}
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
    ):

        def build() -> TurnEngine:
            return TurnEngine(
                client, fallback=FallbackManager("primary", ["backup"]), failover=True
            )

        async with build().stream("hi") as s:
            events = [event async for event in s]
        (reset,) = [e for e in events if isinstance(e, AttemptReset)]
        assert "failover to backup" in reset.reason
        assert s.result.model == "backup"
        async with build().stream("hi") as s:
            pieces = [piece async for piece in s.text_stream]
        assert pieces == ["Hell", "o fr", "om t", "he f", "ake"]  # the 404 showed no text


async def _drain(iterator: Any) -> list[Any]:
    return [item async for item in iterator]


async def test_a_stream_read_to_its_end_ends_at_once_when_read_again() -> None:
    async with (
        FakeProvider({"models": {"*": [OK]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        async with engine.stream("hi") as s:
            first = await asyncio.wait_for(_drain(s), WAIT)
            again = await asyncio.wait_for(_drain(s), WAIT)  # hung for ever before
            text = await asyncio.wait_for(_drain(s.text_stream), WAIT)
        assert any(isinstance(e, MessageStop) for e in first)
        assert (again, text) == ([], [])
        assert s.result.text == "Hello from the fake"


async def test_a_failed_stream_read_again_raises_its_error_again() -> None:
    async with (
        FakeProvider({"models": {"*": [{"status": 400}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        raised: list[BaseException] = []
        async with engine.stream("hi") as s:  # its exit does not raise what the loop raised
            for _ in range(2):
                try:
                    await asyncio.wait_for(_drain(s), WAIT)
                except BadRequestError as error:
                    raised.append(error)
        assert len(raised) == 2 and raised[0] is raised[1]


async def test_a_stream_read_after_its_block_is_a_config_error() -> None:
    async with (
        FakeProvider({"models": {"*": [OK]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        async with engine.stream("hi") as s:
            await asyncio.wait_for(_until_done(s), WAIT)
        for iterator in (s, s.text_stream):
            with pytest.raises(ConfigError, match="inside `async with engine"):
                await asyncio.wait_for(_drain(iterator), WAIT)  # hung for ever before


async def test_two_consumers_at_once_is_a_config_error_not_a_hang() -> None:
    async with (
        FakeProvider(
            {"models": {"*": [{"text": "x" * 20, "chunk_chars": 2, "delay_ms": 20}]}}
        ) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        async with engine.stream("hi") as s:
            events = asyncio.ensure_future(_drain(s))
            await asyncio.sleep(0)  # the first consumer waits for an event
            with pytest.raises(ConfigError, match="one consumer"):
                await asyncio.wait_for(_drain(s.text_stream), WAIT)
            got = await asyncio.wait_for(events, WAIT)  # the first one still reads every event
        assert "".join(e.text for e in got if isinstance(e, Delta)) == "x" * 20


async def test_an_async_text_streamer_is_refused_where_it_is_given() -> None:
    # before, it was taken: each fragment made a coroutine nobody awaited, so the streamer
    # never ran (a "never awaited" RuntimeWarning per fragment instead)
    async def shows(text: str) -> None:
        raise AssertionError("never called")

    async with (
        FakeProvider(SLOW) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        with pytest.raises(
            ConfigError,
            match=r"TurnEngine\(text_streamer=...\) is called synchronously, never awaited",
        ):
            TurnEngine(client, text_streamer=shows)
        engine = TurnEngine(client)
        with pytest.raises(
            ConfigError, match=r"engine\.text_streamer = ... is called synchronously, never awaited"
        ):
            engine.text_streamer = shows
        assert engine.text_streamer is None and fake.requests == []


def _weather(city: str) -> str:
    """The weather in ``city``."""
    return f"sunny in {city}"


#: turn 1 says something and calls a tool; turn 2's first attempt fails before any event
TOOL_THEN_RETRY = {
    "models": {
        "*": [
            {
                "text": "Let me check.",
                "tool_calls": [{"id": "c1", "name": "_weather", "input": {"city": "Porto"}}],
            },
            {"status": 500},
            {"text": "It is sunny", "chunk_chars": 4},
        ]
    }
}


async def test_a_reset_in_a_later_turn_withdraws_nothing_of_an_earlier_turn() -> None:
    async with (
        FakeProvider(TOOL_THEN_RETRY) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=FAST, tools=[_weather])
        pieces: list[Any] = []
        events: list[Any] = []
        async with engine.stream("weather?") as s:
            async for piece in s.text_stream:
                pieces.append(piece)
        async with engine.stream("again?") as s2:
            async for event in s2:
                events.append(event)
    # turn 1's text was served (it is in the history); turn 2's failed attempt showed none
    assert pieces and all(isinstance(p, str) for p in pieces)
    assert "".join(pieces) == "Let me check.It is sunny"
    assert s.result.text == "It is sunny"
    assert not any(e is None or type(e) is object for e in events)  # no marker leaks out


async def test_an_openai_refusal_is_no_text_of_the_text_stream() -> None:
    # documented: a refusal's text is no reply text (docs/engine.md, docs/behaviour.md §4.1)
    script = {"models": {"*": [{"text": "I can't help with that", "stop_reason": "refusal"}]}}
    async with (
        FakeProvider(script) as fake,
        OpenAIClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        shown: list[str] = []
        engine = TurnEngine(client, text_streamer=shown.append)
        async with engine.stream("hi") as s:
            pieces = [piece async for piece in s.text_stream]
    assert (pieces, shown) == ([], [])
    assert s.result.message.stop_reason == "refusal"
    assert [type(p).__name__ for p in s.result.message.content] == ["RefusalPart"]
