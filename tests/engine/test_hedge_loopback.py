"""The hedged first token over real HTTP: the fake provider on 127.0.0.1, rxturn's own clients.

The loser's connection is closed before the winner's first text reaches anybody (the client
side: the loser's attempt ends before the first text delta; the server side: the fake records
the loser ``disconnected`` while the winner is still streaming), and both are billed.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from rxturn import (
    AnthropicClient,
    HedgePolicy,
    HedgeTarget,
    OpenAIClient,
    StreamHandler,
    TurnEngine,
)
from rxturn.engine.observation.observers import Observer
from rxturn.messages import Usage
from rxturn.testing import FakeProvider


class CacheCounts(TypedDict):
    cache_read_tokens: int
    cache_write_tokens: int


SCENARIO = {
    "models": {
        # the primary's headers and message_start come at once, its first text never in time
        "primary": [
            {
                "text": "the primary speaks",
                "first_content_delay_ms": 60_000,
                "usage": {"input_tokens": 40, "output_tokens": 9},
            }
        ],
        # the backup answers at once, then streams on for a while (4 chars every 30 ms)
        "backup": [
            {
                "text": "the backup answers",
                "chunk_chars": 4,
                "delay_ms": 30,
                "usage": {"input_tokens": 12, "output_tokens": 5},
            }
        ],
    }
}


class Sequence(Observer):
    """What the observers saw, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_attempt_end(self, **kwargs: Any) -> None:
        record = kwargs["record"]
        self.seen.append(("attempt_end", (record.model, record.outcome)))

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.seen.append(("text", delta))


async def _settled(fake: FakeProvider) -> None:
    for _ in range(200):  # the server notices a closed connection on its next loop turns
        if all(record.end is not None for record in fake.records):
            return
        await asyncio.sleep(0.01)


async def test_anthropic_loser_is_closed_before_the_winner_shows_and_both_are_billed() -> None:
    observer = Sequence()
    shown: list[str] = []
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            handler=StreamHandler(),
            hedge=HedgePolicy((HedgeTarget("backup"),), delay=0.2),
            observers=[observer],
            text_streamer=shown.append,
        )
        run = await engine.run("Who answers first?")
        await _settled(fake)
        records = {record.model: record for record in fake.records}

    (result,) = run.turns
    assert result.message.text == "the backup answers" and result.model == "backup"
    assert "".join(shown) == "the backup answers"
    # client side: the loser's attempt ended (its response closed) before the first text
    first_text = next(i for i, (kind, _) in enumerate(observer.seen) if kind == "text")
    assert ("attempt_end", ("primary", "hedge_lost")) in observer.seen[:first_text]
    # server side: the primary was disconnected by the client while the backup still streamed
    primary, backup = records["primary"], records["backup"]
    assert primary.end == "disconnected" and backup.end == "completed"
    assert primary.ended is not None and backup.ended is not None
    assert primary.ended < backup.ended
    assert backup.arrived >= primary.arrived
    # billing: Anthropic reports the input in message_start (output 1 until message_delta)
    log = result.attempt_log
    assert [(a.model, a.outcome) for a in log] == [("primary", "hedge_lost"), ("backup", "served")]
    # Anthropic reports its cache counts with the input (zero: no breakpoints were sent)
    zero_cache: CacheCounts = {"cache_read_tokens": 0, "cache_write_tokens": 0}
    assert log[0].usage == Usage(input_tokens=40, output_tokens=1, **zero_cache)
    assert result.billed_usage == Usage(input_tokens=40 + 12, output_tokens=1 + 5, **zero_cache)
    assert result.usage == Usage(input_tokens=12, output_tokens=5, **zero_cache)


async def test_openai_loser_reports_nothing_so_its_estimate_stays_out_of_the_bill() -> None:
    async with (
        FakeProvider(SCENARIO) as fake,
        OpenAIClient("primary", api_key="offline", base_url=fake.openai_base_url) as client,
    ):
        engine = TurnEngine(
            client,
            handler=StreamHandler(),
            hedge=HedgePolicy((HedgeTarget("backup"),), delay=0.2),
        )
        run = await engine.run("Who answers first?")
        await _settled(fake)
        ends = {record.model: record.end for record in fake.records}

    (result,) = run.turns
    assert result.message.text == "the backup answers"
    assert ends == {"primary": "disconnected", "backup": "completed"}
    loser = result.attempt_log[0]
    assert loser.outcome == "hedge_lost" and loser.usage is None
    assert engine.last_estimate is not None
    assert loser.estimated_usage == Usage(input_tokens=engine.last_estimate.total, output_tokens=0)
    assert result.billed_usage == Usage(input_tokens=12, output_tokens=5)


async def test_a_fast_primary_never_sends_the_hedge() -> None:
    scenario = {"models": {"primary": [{"text": "quick"}], "backup": [{"text": "unused"}]}}
    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, handler=StreamHandler(), hedge=HedgePolicy((HedgeTarget("backup"),), delay=5)
        )
        result = await engine.run("hi")
    assert result.text == "quick"
    assert [body["model"] for body in fake.requests] == ["primary"]


async def test_a_part_a_hedge_targets_wire_cannot_take_is_refused_before_anything_is_sent() -> None:
    # before: the primary went out, the hedge's own ConfigError (Ollama takes no PDF) then
    # ended the race, and the turn failed with the primary answering, recorded 'hedge_lost'
    from rxturn import DocumentPart, OllamaClient
    from rxturn.errors import ConfigError
    from rxturn.messages import Message

    report = DocumentPart.from_bytes(b"%PDF-1.4 a report", "application/pdf")
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as primary,
        OllamaClient("backup", base_url=fake.base_url) as backup,
    ):
        policy = HedgePolicy([HedgeTarget("backup", client=backup)], delay=0.05)
        engine = TurnEngine(primary, handler=StreamHandler.default(), hedge=policy)
        try:
            await engine.run(Message.user("summarise", report))
        except ConfigError as error:
            assert "Ollama's /api/chat cannot take DocumentPart" in str(error)
        else:
            raise AssertionError("the turn was not refused")
        assert fake.requests == []
        assert list(engine.history) == []


async def test_an_option_a_hedge_targets_wire_cannot_take_is_refused_before_anything_is_sent() -> (
    None
):
    """Stop sequences are fine on Anthropic, and the Responses API has none: a configuration
    error ends a race on either side, and a hedge's is found when the turn starts, so the
    turn is refused with nothing sent rather than cut short once the primary was answering."""
    from rxturn import OpenAIResponsesClient, RequestOptions
    from rxturn.errors import ConfigError

    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("primary", api_key="offline", base_url=fake.base_url) as client,
        OpenAIResponsesClient("other", api_key="offline", base_url=fake.openai_base_url) as other,
    ):
        engine = TurnEngine(
            client,
            handler=StreamHandler(),
            request_options=RequestOptions(stop_sequences=("END",)),
            hedge=HedgePolicy((HedgeTarget("other", client=other),), delay=0.05),
        )
        try:
            await asyncio.wait_for(engine.run("hi"), 10)
        except ConfigError as error:
            assert "stop" in str(error)
        else:
            raise AssertionError("the turn was not refused")
        assert fake.requests == []
        assert list(engine.history) == []
