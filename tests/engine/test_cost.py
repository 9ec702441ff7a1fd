"""Cost: every attempt priced with genai-prices, compared with genai-prices' own figure.

The oracle is ``genai_prices`` itself: for each case the expected figure is what
``genai_prices.calc_price`` (or ``extract_usage(...).calc_price``, straight from the wire's JSON)
says for the same usage, model, provider and time.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import genai_prices
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxturn import AnthropicClient, Cost, OpenAIClient, StreamHandler, TurnEngine, replay_message
from rxturn.cost import Pricer, enable_price_updates, pricer_for, total_cost
from rxturn.engine.records.audit import AttemptRecord
from rxturn.messages import Usage, sum_usage
from rxturn.resilience.policies import RetryPolicy
from rxturn.testing import FakeProvider
from rxturn.wire._usage import openai_chat_usage

pytestmark = pytest.mark.timeout(60)

WHEN = datetime(2026, 6, 1, tzinfo=UTC)
FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01, jitter=0.0)


def _oracle(usage: dict[str, int], model: str, provider_id: str) -> Decimal:
    return genai_prices.calc_price(
        genai_prices.Usage(**usage), model, provider_id=provider_id, genai_request_timestamp=WHEN
    ).total_price


def test_a_priced_attempt_is_genai_prices_own_figure() -> None:
    pricer = Pricer("anthropic", "http://127.0.0.1:9")  # a loopback URL: found by provider id
    usage = Usage(
        input_tokens=12_000,
        output_tokens=800,
        cache_read_tokens=9_000,
        cache_write_tokens=2_000,
        cache_write_5m_tokens=500,
        cache_write_1h_tokens=1_500,
    )
    expected = _oracle(
        {
            "input_tokens": 12_000,
            "output_tokens": 800,
            "cache_read_tokens": 9_000,
            "cache_write_tokens": 2_000,
            "cache_write_5m_tokens": 500,
            "cache_write_1h_tokens": 1_500,
        },
        "claude-sonnet-4-5",
        "anthropic",
    )
    first = pricer.price("claude-sonnet-4-5", usage, WHEN)
    again = pricer.price("claude-sonnet-4-5", usage, WHEN)  # from the rates of the first
    assert first == again == expected
    assert expected > 0


@settings(max_examples=60, deadline=None)
@given(
    uncached=st.integers(0, 400_000),
    reads=st.integers(0, 100_000),
    writes=st.integers(0, 50_000),
    output=st.integers(0, 50_000),
    reasoning=st.integers(0, 50_000),
)
def test_any_usage_prices_as_genai_prices_says(
    uncached: int, reads: int, writes: int, output: int, reasoning: int
) -> None:
    """Below a tier, past it (Sonnet's 200k input tier), with every count: rxturn's price of an
    attempt equals genai-prices' for the same usage, model and time, the first time and after."""
    reasoning = min(reasoning, output)
    counts = {
        "input_tokens": uncached + reads + writes,
        "output_tokens": output,
        "cache_read_tokens": reads,
        "cache_write_tokens": writes,
        "output_reasoning_tokens": reasoning,
    }
    usage = Usage(
        input_tokens=counts["input_tokens"],
        output_tokens=output,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        output_reasoning_tokens=reasoning,
    )
    pricer = _SHARED
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5"):
        assert pricer.price(model, usage, WHEN) == _oracle(counts, model, "anthropic")


_SHARED = Pricer("anthropic")


def test_the_base_url_finds_the_provider_first() -> None:
    """A base URL genai-prices knows wins over the wire's id: OpenRouter's prices, not OpenAI's."""
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    counts = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    by_url = Pricer("openai", "https://openrouter.ai/api/v1").price("openai/gpt-4o", usage, WHEN)
    expected = genai_prices.calc_price(
        genai_prices.Usage(**counts),
        "openai/gpt-4o",
        provider_api_url="https://openrouter.ai/api/v1",
        genai_request_timestamp=WHEN,
    ).total_price
    assert by_url == expected
    assert Pricer("openai").price("gpt-4o", usage, WHEN) == _oracle(counts, "gpt-4o", "openai")


def test_the_providers_own_cost_wins() -> None:
    usage = Usage(input_tokens=78, output_tokens=37, provider_cost=0.0000113)
    assert Pricer("openai").price("gpt-4o", usage, WHEN) == Decimal("0.0000113")


@pytest.mark.parametrize(
    ("provider", "model", "usage"),
    [
        ("anthropic", "claude-sonnet-4-5", None),  # no usage
        ("anthropic", "no-such-model-xyz", Usage(input_tokens=5, output_tokens=1)),
        ("ollama", "llama3.2", Usage(input_tokens=5, output_tokens=1)),
        # counts that do not add up: genai-prices refuses them
        ("anthropic", "claude-sonnet-4-5", Usage(input_tokens=5, cache_read_tokens=50)),
    ],
    ids=["no-usage", "unknown-model", "ollama", "inconsistent"],
)
def test_what_cannot_be_priced_is_unpriced_not_a_crash(
    provider: str, model: str, usage: Usage | None
) -> None:
    pricer = Pricer(provider)
    assert pricer.price(model, usage, WHEN) is None
    assert pricer.price(model, usage, WHEN) is None  # and stays so


def test_a_turns_cost_sums_its_attempts_and_counts_the_unpriced() -> None:
    records = [
        AttemptRecord(model="m", kind="stream", outcome="OverloadedError", cost=None),
        AttemptRecord(model="m", kind="stream", outcome="ReadError", cost=Decimal("0.25")),
        AttemptRecord(model="m", kind="stream", outcome="served", cost=Decimal("0.5")),
    ]
    assert total_cost(r.cost for r in records) == Cost(total=Decimal("0.75"), unpriced_attempts=1)
    assert total_cost(r.cost for r in records[:1]) == Cost(total=Decimal(0), unpriced_attempts=1)
    assert Cost(total=Decimal(1)) + Cost(total=Decimal(2), unpriced_attempts=3) == Cost(
        total=Decimal(3), unpriced_attempts=3
    )


async def test_a_turn_prices_every_attempt_and_the_run_sums_its_turns() -> None:
    """A 529 (no usage: unpriced), a dropped stream (its message_start usage: billed and
    priced), then the reply; a second turn; each attempt's cost is genai-prices' figure for
    its usage at the time it was priced, and the run's cost their sum."""
    script = {
        "models": {
            "*": [
                {"status": 529, "retry_after": 0.001},
                {
                    "text": "a reply cut off",
                    "chunk_chars": 3,
                    "drop_after_events": 4,
                    "usage": {"input_tokens": 3000, "output_tokens": 50},
                },
                {"text": "Hello!", "usage": {"input_tokens": 3000, "output_tokens": 400}},
            ]
        }
    }
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, handler=StreamHandler(retry=FAST))
        first = await engine.run("hi")
        second = await engine.run("again")
    log = first.turns[0].attempt_log
    assert [a.outcome for a in log] == ["OverloadedError", "ReadError", "served"]
    assert log[0].usage is None and log[0].cost is None
    for record in log[1:]:
        assert record.usage is not None
        counts = {
            "input_tokens": record.usage.input_tokens,
            "output_tokens": record.usage.output_tokens,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        }
        assert (
            record.cost
            == genai_prices.calc_price(
                genai_prices.Usage(**counts), "claude-sonnet-4-5", provider_id="anthropic"
            ).total_price
        )
    assert log[1].cost is not None and log[2].cost is not None
    cost = first.turns[0].cost
    assert cost == Cost(total=log[1].cost + log[2].cost, unpriced_attempts=1)
    assert first.cost == cost
    assert engine.session.runs[0].turns[0].cost == cost  # the audit keeps it
    assert second.cost is not None and second.cost.unpriced_attempts == 0
    assert second.cost.total == second.turns[0].attempt_log[0].cost


async def test_the_price_data_loads_in_a_worker_thread_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The price data (about half a second to load) is loaded for the first turns of a process
    off the event loop's thread, once however many engines and turns wait for it, and prices as
    genai-prices does (the process's load forgotten for this test, the load spied on)."""
    from rxturn import cost as cost_module

    threads: list[str] = []
    load = getattr(cost_module, "_load_snapshot", None)

    def spy() -> None:
        threads.append(threading.current_thread().name)
        if load is not None:
            load()

    monkeypatch.setattr(cost_module, "_prices_loaded", False, raising=False)
    monkeypatch.setattr(cost_module, "_prices_prefetched", False, raising=False)
    monkeypatch.setattr(cost_module, "_load_snapshot", spy, raising=False)
    usage = {"input_tokens": 1200, "output_tokens": 30}
    script = {"models": {"*": [{"text": "ok", "usage": usage}]}}
    # two engines, each on a server of its own: a Pricer each (pricer_for keeps one per URL)
    async with (
        FakeProvider(script) as one,
        FakeProvider(script) as two,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=one.base_url) as first,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=two.base_url) as second,
    ):
        engines = [TurnEngine(first), TurnEngine(second)]
        results = await asyncio.gather(*(engine.run("hi") for engine in engines))
    assert threads == [threads[0]] and threads[0] != threading.current_thread().name, threads
    expected = genai_prices.calc_price(
        genai_prices.Usage(**usage, cache_read_tokens=0, cache_write_tokens=0),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    ).total_price
    assert [result.cost for result in results] == [Cost(total=expected)] * 2
    Pricer("anthropic").price("claude-sonnet-4-5", Usage(input_tokens=1, output_tokens=1))
    assert len(threads) == 1  # loaded: a later price loads nothing again


async def test_an_all_unpriced_turn_costs_zero_with_every_attempt_counted() -> None:
    async with (
        FakeProvider({"models": {"*": [{"text": "ok", "usage": None}]}}) as fake,
        OpenAIClient("gpt-4o", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        result = await TurnEngine(client).run("hi")
    assert result.turns[0].cost == Cost(total=Decimal(0), unpriced_attempts=1)


def test_openrouter_cost_from_the_recorded_stream_is_the_cost() -> None:
    """A recorded OpenRouter stream reports ``usage.cost``: that is the attempt's cost."""
    from recorded import RESPONSES_FIXTURES

    path = next(p for p in RESPONSES_FIXTURES if p.name == "openrouter_raw_reasoning.sse")
    usage = replay_message(path).usage
    raw = json.loads(
        next(
            line[5:]
            for line in path.read_bytes().splitlines()
            if b'"response.completed"' in line and line.startswith(b"data:")
        )
    )["response"]["usage"]
    assert Pricer("openai", "https://openrouter.ai/api/v1").price("any", usage) == Decimal(
        repr(raw["cost"])
    )


def test_recorded_usage_prices_as_genai_prices_extracts_it() -> None:
    """The recorded Anthropic stream's final usage object, as genai-prices extracts it from the
    wire JSON itself, prices the same as rxturn's folded usage."""
    from recorded import ANTHROPIC_FIXTURES

    for path in ANTHROPIC_FIXTURES:
        message = replay_message(path)
        start = delta = None
        for line in path.read_bytes().splitlines():
            if line.startswith(b"data:"):
                event: dict[str, Any] = json.loads(line[5:])
                if event["type"] == "message_start":
                    start = event["message"]["usage"]
                elif event["type"] == "message_delta":
                    delta = event["usage"]
        assert start is not None and delta is not None
        folded = {**start, **{k: v for k, v in delta.items() if v is not None}}
        extracted = genai_prices.extract_usage(
            {"model": "claude-sonnet-4-5", "usage": folded}, provider_id="anthropic"
        )
        expected = extracted.calc_price(genai_request_timestamp=WHEN).total_price
        assert Pricer("anthropic").price("claude-sonnet-4-5", message.usage, WHEN) == expected


@pytest.mark.slow  # a fresh interpreter running a turn (1.8 s)
def test_import_rxturn_does_not_load_genai_prices_and_without_it_costs_are_none() -> None:
    code = (
        "import sys\n"
        "import rxturn\n"
        "import rxturn.batch\n"
        "assert 'genai_prices' not in sys.modules\n"
        "sys.modules['genai_prices'] = None  # not installed\n"
        "import asyncio\n"
        "from rxturn import AnthropicClient, TurnEngine\n"
        "from rxturn.testing import FakeProvider\n"
        "async def main():\n"
        "    async with FakeProvider({'models': {'*': [{'text': 'ok'}]}}) as fake, "
        "AnthropicClient('claude-sonnet-4-5', api_key='k', base_url=fake.base_url) as c:\n"
        "        r = await TurnEngine(c).run('hi')\n"
        "    assert r.cost is None and r.turns[0].cost is None, r.cost\n"
        "    assert r.turns[0].attempt_log[0].cost is None\n"
        "    print('ok')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"total": 1.5}, "Cost.total"),
        ({"total": "0.1"}, "Cost.total"),
        ({"total": None}, "Cost.total"),
        ({"total": Decimal("NaN")}, "Cost.total"),
        ({"total": Decimal("Infinity")}, "Cost.total"),
        ({"total": Decimal(1), "unpriced_attempts": "2"}, "Cost.unpriced_attempts"),
        ({"total": Decimal(1), "unpriced_attempts": -1}, "Cost.unpriced_attempts"),
        ({"total": Decimal(1), "unpriced_attempts": True}, "Cost.unpriced_attempts"),
        ({"total": Decimal(1), "currency": 5}, "Cost.currency"),
        ({"total": Decimal(1), "currency": ""}, "Cost.currency"),
    ],
)
def test_a_cost_with_a_wrong_field_is_a_config_error(fields: dict[str, Any], named: str) -> None:
    # before, Cost(total=1.5) was built and failed later (describe_cost: AttributeError
    # 'float' object has no attribute 'normalize'; a sum with a str count: TypeError)
    from rxturn.errors import ConfigError

    with pytest.raises(ConfigError, match=named):
        Cost(**fields)


def test_costs_in_two_currencies_do_not_add() -> None:
    from rxturn.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot add a cost in EUR to one in USD"):
        _ = Cost(total=Decimal(1)) + Cost(total=Decimal(1), currency="EUR")


@pytest.mark.parametrize("reported", [float("nan"), float("inf"), -1.0])
def test_a_provider_cost_that_is_no_price_is_not_used(reported: float) -> None:
    # a Usage built by hand (the wires already drop these): a NaN became Decimal('NaN'),
    # a total no sum survives; now the usage is priced from its counts
    usage = Usage(input_tokens=1_000, output_tokens=100, provider_cost=reported)
    expected = _oracle({"input_tokens": 1_000, "output_tokens": 100}, "gpt-4o", "openai")
    assert Pricer("openai").price("gpt-4o", usage, WHEN) == expected


def test_a_provider_cost_of_minus_zero_is_zero() -> None:
    usage = Usage(input_tokens=1, output_tokens=1, provider_cost=-0.0)
    assert str(Pricer("openai").price("gpt-4o", usage, WHEN)) == "0.0"


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (lambda: Pricer(5), "provider_id"),  # pyright: ignore[reportArgumentType]
        (lambda: Pricer(None), "provider_id"),  # pyright: ignore[reportArgumentType]
        (lambda: Pricer(""), "provider_id"),
        (lambda: Pricer("openai", 5), "base_url"),  # pyright: ignore[reportArgumentType]
        (lambda: Pricer("openai").price("gpt-4o", "usage"), "usage"),  # pyright: ignore[reportArgumentType]
        (lambda: Pricer("openai").price(None, Usage(input_tokens=1)), "model"),  # pyright: ignore[reportArgumentType]
        (lambda: Pricer("openai").price("gpt-4o", Usage(input_tokens=1), "2026-01-01"), "when"),  # pyright: ignore[reportArgumentType]
        # before: TypeError (unhashable type: 'list') from pricer_for's cache
        (lambda: pricer_for(["openai"]), "provider_id"),  # pyright: ignore[reportArgumentType]
        (lambda: pricer_for("openai", {"url": "x"}), "base_url"),  # pyright: ignore[reportArgumentType]
        (lambda: pricer_for(5), "provider_id"),  # pyright: ignore[reportArgumentType]
        # before: each started genai-prices' updater thread, fetching without pause (0, -1,
        # NaN) or with an interval it could not use (None, "5")
        (lambda: enable_price_updates(0), "update_interval must be > 0 seconds"),
        (lambda: enable_price_updates(-1), "update_interval must be > 0 seconds"),
        (lambda: enable_price_updates(float("nan")), "update_interval must be a number"),
        (lambda: enable_price_updates(None), "update_interval must be a number"),  # pyright: ignore[reportArgumentType]
        (lambda: enable_price_updates("5"), "update_interval must be a number"),  # pyright: ignore[reportArgumentType]
        # before: TypeError (unsupported operand type(s) for +=: 'decimal.Decimal' and 'float')
        (
            lambda: total_cost([Decimal(1), 1.5]),  # pyright: ignore[reportArgumentType]
            r"costs=\.\.\.\) holds float 1\.5, where a Decimal",
        ),
        (lambda: total_cost(None), r"costs=\.\.\.\) must be an iterable"),  # pyright: ignore[reportArgumentType]
    ],
    ids=[
        "id int",
        "id None",
        "id empty",
        "url int",
        "usage str",
        "model None",
        "when str",
        "shared id list",
        "shared url dict",
        "shared id int",
        "updates every 0 s",
        "updates every -1 s",
        "updates every nan s",
        "updates every None",
        "updates every '5'",
        "total of a float",
        "total of None",
    ],
)
def test_a_pricer_given_a_wrong_argument_is_a_config_error(build: Any, named: str) -> None:
    # before: Pricer(5) left every attempt unpriced without a word, Pricer(None) priced by
    # genai-prices' guess, price(model, "usage") raised AttributeError
    from rxturn.errors import ConfigError

    with pytest.raises(ConfigError, match=named):
        build()


def test_a_price_that_changes_with_the_hour_is_not_reused_across_hours() -> None:
    # DeepSeek's chat model (genai-prices 0.2.5): per million tokens, input $0.27 and output
    # $1.10 from 00:30 to 16:30 UTC, $0.135 and $0.55 the rest of the day. 1000 in, 100 out:
    # 270 + 110 = 380 millionths of a dollar by day, 135 + 55 = 190 off-peak. The rates of the
    # first price were kept for the whole day: the evening attempt cost the morning's price.
    pricer = Pricer("deepseek")
    usage = Usage(input_tokens=1000, output_tokens=100)
    morning = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
    evening = datetime(2026, 12, 6, 17, 0, tzinfo=UTC)
    assert pricer.price("deepseek-chat", usage, morning) == Decimal("0.000380")
    assert pricer.price("deepseek-chat", usage, evening) == Decimal("0.000190")
    assert pricer.price("deepseek-chat", usage, morning) == Decimal("0.000380")


def test_prices_are_keyed_by_the_utc_day_of_an_aware_time() -> None:
    # avian's deepseek/deepseek-v4-flash (genai-prices 0.2.5): input $0.0805 per million
    # until 2026-10-18 (UTC), $0.14 from then. 02:00 on the 18th at UTC+5 is 21:00 UTC on the
    # 17th (the old price); its rates were kept under the 18th, the local date, and priced
    # 10:00 UTC on the 18th at the old price too.
    pricer = Pricer("avian")
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    east = timezone(timedelta(hours=5))
    before = datetime(2026, 10, 18, 2, 0, tzinfo=east)
    after = datetime(2026, 10, 18, 10, 0, tzinfo=UTC)
    assert pricer.price("deepseek/deepseek-v4-flash", usage, before) == Decimal("0.0805")
    assert pricer.price("deepseek/deepseek-v4-flash", usage, after) == Decimal("0.14")


def test_a_deepseek_reply_is_priced_with_its_cache_hits() -> None:
    # 1000 in, 800 of them cache hits, 100 out, at DeepSeek's day rates (per million: input
    # $0.27, cache hit $0.07, output $1.10): 200 * 0.27 + 800 * 0.07 + 100 * 1.10 = 54 + 56 +
    # 110 = 220 millionths of a dollar (the hits were a detail: priced as 380, nothing cached)
    usage = openai_chat_usage(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 100,
            "total_tokens": 1100,
            "prompt_cache_hit_tokens": 800,
            "prompt_cache_miss_tokens": 200,
        }
    )
    pricer = Pricer("openai", "https://api.deepseek.com")  # found by its base URL
    morning = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
    assert pricer.price("deepseek-chat", usage, morning) == Decimal("0.000220")


def test_provider_costs_add_up_as_the_decimals_they_were_sent_as() -> None:
    # OpenRouter's usage.cost of two attempts, $0.1 and $0.2: the turn's cost is $0.3, and
    # the billed usage said 0.30000000000000004 (float addition) beside it
    usages = [Usage(input_tokens=1, output_tokens=1, provider_cost=c) for c in (0.1, 0.2)]
    billed = sum_usage(usages)
    assert billed is not None and billed.provider_cost == 0.3
    pricer = Pricer("openai")
    cost = total_cost([pricer.price("gpt-4o", usage) for usage in usages])
    assert cost is not None and cost.total == Decimal("0.3")
    assert str(billed.provider_cost) == str(cost.total)


def test_xais_own_cost_is_the_attempts_cost() -> None:
    # 37756000 ticks of 10**-10 USD (xAI's cost-tracking guide): $0.0037756, tools included,
    # whatever genai-prices would say for the tokens
    usage = openai_chat_usage(
        {"prompt_tokens": 199, "completion_tokens": 1, "cost_in_usd_ticks": 37756000}
    )
    pricer = Pricer("openai", "https://api.x.ai/v1")
    assert pricer.price("grok-4", usage) == Decimal("0.0037756")


async def test_a_hedge_on_another_provider_is_priced_with_that_providers_prices() -> None:
    """The turn's client speaks to Anthropic, its hedge's to OpenAI: each attempt is priced by
    the provider it went to (before: the hedge's attempts went to the Anthropic prices, found
    no gpt-4o there and were counted unpriced)."""
    from reactivex.testing import TestScheduler

    from rxturn import HedgePolicy, HedgeTarget, Message, RequestOptions
    from rxturn.errors import ReadError
    from rxturn.events import Delta, MessageDelta, MessageStart, PartStart
    from rxturn.resilience.policies import TimeoutPolicy
    from rxturn.testing.virtual import (
        ScriptedClient,
        on_error,
        on_next,
        reply,
        run_virtual,
        timeline,
    )

    scheduler = TestScheduler()
    slow = [
        on_next(0.01, MessageStart()),
        on_next(0.01, MessageDelta(None, Usage(input_tokens=4000, output_tokens=1))),
    ]  # (then silence)
    dropped = [
        on_next(0.01, MessageStart()),
        on_next(0.02, PartStart(0)),
        on_next(0.02, Delta(0, "half")),
        on_next(0.03, MessageDelta(None, Usage(input_tokens=3000, output_tokens=20))),
        on_error(0.04, ReadError("connection dropped")),
    ]
    whole = timeline(reply("whole", usage=Usage(input_tokens=3000, output_tokens=300)))
    anthropic = ScriptedClient(scheduler, models={"claude-sonnet-4-5": [slow]})
    openai = ScriptedClient(scheduler, models={"gpt-4o": [dropped, whole]})
    anthropic.provider = "anthropic"  # pyright: ignore[reportAttributeAccessIssue]
    openai.provider = "openai"  # pyright: ignore[reportAttributeAccessIssue]
    engine = TurnEngine(
        anthropic,
        handler=StreamHandler(
            retry=RetryPolicy(max_retries=1, base_delay=1.0, jitter=0.0),
            timeouts=TimeoutPolicy(first_event=60.0, per_event=60.0, total=100.0, rescue=False),
        ),
        hedge=HedgePolicy((HedgeTarget("gpt-4o", client=openai),), delay=2.0),
        request_options=RequestOptions(model="claude-sonnet-4-5"),
        scheduler=scheduler,
    )
    engine.history.append(Message.user("hi"))
    result = await run_virtual(scheduler, engine.turn())
    log = result.attempt_log
    assert [(a.model, a.outcome) for a in log] == [
        ("claude-sonnet-4-5", "hedge_lost"),
        ("gpt-4o", "ReadError"),
        ("gpt-4o", "served"),  # the retry: on the winner's client, priced there too
    ]
    for record, provider in zip(log, ("anthropic", "openai", "openai"), strict=True):
        assert record.usage is not None
        counts = {"input_tokens": record.usage.input_tokens}
        counts["output_tokens"] = record.usage.output_tokens
        expected = genai_prices.calc_price(
            genai_prices.Usage(**counts), record.model, provider_id=provider
        ).total_price
        assert record.cost == expected
    assert result.cost is not None and result.cost.unpriced_attempts == 0
