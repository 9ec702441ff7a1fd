"""``engine.run()``'s result carries the run's totals: usage, billed usage, the attempt log of
every turn in order, and the model that served last."""

from __future__ import annotations

from rxturn import AnthropicClient, RetryPolicy, StreamHandler, TurnEngine, Usage
from rxturn.testing import FakeProvider

SCENARIO = {
    "models": {
        "*": [
            {"status": 500},
            {
                "tool_calls": [{"id": "t1", "name": "clock", "input": {}}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
            {"text": "It is noon.", "usage": {"input_tokens": 20, "output_tokens": 7}},
        ]
    }
}


def clock() -> str:
    return "12:00"


async def test_run_result_sums_its_turns() -> None:
    async with (
        FakeProvider(SCENARIO) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        handler = StreamHandler(retry=RetryPolicy(max_retries=2, base_delay=0.001, jitter=0))
        engine = TurnEngine(client, tools=[clock], handler=handler)
        result = await engine.run("What time is it?")
    assert result.text == "It is noon."
    assert len(result.turns) == 2
    # the Anthropic wire reports its cache counts too (zero here: no breakpoints were sent)
    summed = Usage(input_tokens=30, output_tokens=12, cache_read_tokens=0, cache_write_tokens=0)
    assert result.usage == summed
    assert result.billed_usage == summed
    assert [(a.model, a.outcome) for a in result.attempt_log] == [
        ("claude-x", "ServerError"),
        ("claude-x", "served"),
        ("claude-x", "served"),
    ]
    assert result.model == "claude-x"
    audit = engine.session.runs[0].turns
    assert result.attempt_log == (*audit[0].attempt_log, *audit[1].attempt_log)
