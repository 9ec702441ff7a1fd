"""An Anthropic attempt failing after ``message_start`` was billed its input: the audit says so.

Anthropic reports the input tokens in ``message_start`` and the cumulative output tokens in
``message_delta``. An attempt cut between the two (a dropped connection, a stall, an error event)
was billed for its input all the same, so its attempt record must carry that usage and the turn's
``billed_usage`` must count it. Real HTTP: the fake provider on 127.0.0.1, the real client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pytest

from rxturn import StreamHandler, TurnEngine
from rxturn.errors import StreamTimeoutError
from rxturn.messages import Message, Usage
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy

pytestmark = pytest.mark.timeout(30)

FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01, jitter=0.0)


class CacheCounts(TypedDict):
    cache_read_tokens: int
    cache_write_tokens: int


# the fake Anthropic wire reports its cache counts as zero, as the real API does
ZERO_CACHE: CacheCounts = {"cache_read_tokens": 0, "cache_write_tokens": 0}
KEPT = Usage(input_tokens=42, output_tokens=3, **ZERO_CACHE)


def scenario(fault: dict[str, Any]) -> dict[str, Any]:
    """First request: a reply reporting 42 input tokens that fails by ``fault``; then a whole
    reply that reports :data:`KEPT`."""
    failing = {
        "text": "a reply that breaks off halfway",
        "chunk_chars": 4,
        "usage": {"input_tokens": 42, "output_tokens": 9},
        **fault,
    }
    return {
        "models": {
            "*": [failing, {"text": "whole", "usage": {"input_tokens": 42, "output_tokens": 3}}]
        }
    }


# message_start reports output_tokens min(9, 1) = 1 in the fake, as the API usually does
FAILED = Usage(input_tokens=42, output_tokens=1, **ZERO_CACHE)


@pytest.mark.parametrize(
    ("fault", "timeouts"),
    [
        ({"drop_after_events": 4}, TimeoutPolicy(rescue=False)),
        ({"error_event_after_events": 3, "error_type": "api_error"}, TimeoutPolicy(rescue=False)),
        (
            {"stall_after_events": 3},
            TimeoutPolicy(per_event=0.2, max_consecutive_timeouts=1, rescue=False),
        ),
    ],
    ids=["dropped", "error-event", "stalled"],
)
async def test_a_failed_attempt_keeps_message_start_usage(
    served: Callable[..., Any], fault: dict[str, Any], timeouts: TimeoutPolicy
) -> None:
    async with served(scenario(fault)) as (_, client):
        engine = TurnEngine(client, handler=StreamHandler(retry=FAST_RETRY, timeouts=timeouts))
        engine.history.append(Message.user("say something"))
        result = await engine.turn()

    assert result.text == "whole"
    assert result.usage == KEPT  # the served reply's usage, as the provider reported it
    failed, kept = result.attempt_log
    assert failed.outcome != "served" and failed.usage == FAILED
    if "stall_after_events" in fault:
        assert failed.outcome == StreamTimeoutError.__name__
    assert (kept.outcome, kept.usage) == ("served", KEPT)
    assert result.billed_usage == Usage(input_tokens=84, output_tokens=4, **ZERO_CACHE)
    (record,) = engine.session.runs[0].turns
    assert record.billed_usage == Usage(input_tokens=84, output_tokens=4, **ZERO_CACHE)
    assert record.discarded_usage == FAILED
    assert (record.input_tokens, record.output_tokens) == (42, 3)  # the reply's own


async def test_a_served_reply_keeps_its_final_usage_and_message(served: Callable[..., Any]) -> None:
    """The early usage report changes nothing about a reply that completes: the last
    ``message_delta`` has the final say."""
    plain = {
        "models": {"*": [{"text": "whole", "usage": {"input_tokens": 42, "output_tokens": 3}}]}
    }
    async with served(plain) as (_, client):
        engine = TurnEngine(client)
        engine.history.append(Message.user("hi"))
        result = await engine.turn()
    assert result.usage == KEPT
    (attempt,) = result.attempt_log
    assert (attempt.outcome, attempt.usage) == ("served", KEPT)
    assert result.billed_usage == KEPT
    assert engine.history[-1].usage == KEPT
