"""Property: no character of a race's loser ever reaches the text streamer, the observers,
``engine.events`` or the message — whatever the timings and failures of the racers."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.testing import TestScheduler

from rxturn import HedgePolicy, HedgeTarget, StreamHandler, TurnEngine
from rxturn.engine.observation.observers import Observer
from rxturn.errors import AuthenticationError, ReadError, ServerError
from rxturn.events import Delta, MessageDelta, MessageStart, MessageStop, PartStart, PartStop
from rxturn.messages import Message, Usage
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing.virtual import (
    Script,
    ScriptedClient,
    leftovers,
    on_completed,
    on_error,
    on_next,
)

#: Each racer speaks its own alphabet, so a character tells whose it is.
ALPHABET = {"scripted": "abcdefghij", "backup": "KLMNOPQRST"}

FAULTS = st.sampled_from([None, "before", "after", "fatal"])


def _racer(model: str, first: float, words: list[str], fault: str | None) -> Script:
    events: Script = [on_next(0.01, MessageStart(id=f"msg_{model}", model=model))]
    if fault in ("before", "fatal"):
        error = AuthenticationError("HTTP 401", status_code=401) if fault == "fatal" else None
        events.append(on_error(first, error or ServerError("HTTP 500", status_code=500)))
        return events
    t = first
    events.append(on_next(t, PartStart(0)))
    for word in words:
        events.append(on_next(t, Delta(0, word)))
        t = round(t + 0.05, 6)
    if fault == "after":
        events.append(on_error(t, ReadError("dropped")))
        return events
    events += [
        on_next(t, PartStop(0)),
        on_next(t, MessageDelta("end_turn", Usage(input_tokens=3, output_tokens=len(words)))),
        on_next(t, MessageStop()),
        on_completed(round(t + 0.01, 6)),
    ]
    return events


def _words(model: str) -> st.SearchStrategy[list[str]]:
    return st.lists(st.text(ALPHABET[model], min_size=1, max_size=4), min_size=1, max_size=4)


class Deltas(Observer):
    def __init__(self) -> None:
        self.text: list[str] = []

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.text.append(delta)


@settings(max_examples=60, deadline=None)
@given(
    primary_first=st.floats(0.05, 8.0),
    backup_first=st.floats(0.05, 8.0),
    delay=st.floats(0.1, 4.0),
    primary_words=_words("scripted"),
    backup_words=_words("backup"),
    primary_fault=FAULTS,
    backup_fault=FAULTS,
)
def test_no_character_of_a_loser_is_ever_shown(
    primary_first: float,
    backup_first: float,
    delay: float,
    primary_words: list[str],
    backup_words: list[str],
    primary_fault: str | None,
    backup_fault: str | None,
) -> None:
    primary_first, backup_first = round(primary_first, 3), round(backup_first, 3)
    asyncio.run(
        _scenario(
            round(delay, 3),
            _racer("scripted", primary_first, primary_words, primary_fault),
            _racer("backup", backup_first, backup_words, backup_fault),
        )
    )


async def _scenario(delay: float, primary: Script, backup: Script) -> None:
    from rxturn.testing.virtual import run_virtual

    scheduler = TestScheduler()
    retried = [on_next(0.01, MessageStart()), on_completed(0.02)]  # retries: never content
    client = ScriptedClient(
        scheduler, models={"scripted": [primary, retried], "backup": [backup, retried]}
    )
    observer = Deltas()
    streamed: list[str] = []
    events: list[Any] = []
    engine = TurnEngine(
        client,
        handler=StreamHandler(
            retry=RetryPolicy(max_retries=1, base_delay=0.5, jitter=0.0),
            timeouts=TimeoutPolicy(first_event=None, per_event=None, total=60.0, rescue=False),
        ),
        hedge=HedgePolicy((HedgeTarget("backup"),), delay=delay),
        observers=[observer],
        text_streamer=streamed.append,
        scheduler=scheduler,
    )
    engine.events.subscribe(events.append)
    engine.history.append(Message.user("go"))
    message_text = ""
    try:
        result = await run_virtual(scheduler, engine.turn())
        message_text = result.message.text
    except Exception as error:  # a failed turn shows what it showed: checked all the same
        assert isinstance(error, Exception)
    log = engine.session.runs[-1].turns[-1].attempt_log
    losers = {record.model for record in log if record.outcome == "hedge_lost"}
    shown = {
        "streamer": "".join(streamed),
        "observers": "".join(observer.text),
        "events": "".join(e.text for e in events if isinstance(e, Delta)),
        "message": message_text,
    }
    for loser in losers:
        for where, text in shown.items():
            leaked = set(text) & set(ALPHABET[loser])
            assert not leaked, f"{loser}'s {sorted(leaked)} reached the {where}"
    assert leftovers(scheduler) == []
