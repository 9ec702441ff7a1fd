"""Every public constructor refuses a wrong type or value with a ConfigError naming the
argument — never an AttributeError or TypeError from deep inside, later."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest
from unquotable import UNQUOTABLE, UNQUOTABLE_IDS

from rxturn import (
    AnthropicClient,
    Calibration,
    ConfigError,
    ContextWindow,
    FallbackManager,
    FallbackPolicy,
    HedgePolicy,
    HedgeTarget,
    LimiterPolicy,
    LoggingObserver,
    Message,
    Observer,
    ObserverSet,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    RateLimiter,
    RateLimitPolicy,
    RecordingObserver,
    RequestOptions,
    RetryPolicy,
    StreamHandler,
    TiktokenCounter,
    TimeoutPolicy,
    Tool,
    ToolRegistry,
    TurnEngine,
)

URL = "http://127.0.0.1:9"
CLIENT = AnthropicClient("m", api_key="k", base_url=URL)


class NotAnything:
    """An object of no type any constructor takes."""


def engine(**kwargs: Any) -> TurnEngine:
    return TurnEngine(CLIENT, **kwargs)


# (constructor, argument, bad value, text the message must contain)
CASES: list[tuple[str, Callable[..., object], str, object]] = [
    # TurnEngine
    ("TurnEngine", lambda v: TurnEngine(v), "client", "claude"),
    ("TurnEngine", lambda v: TurnEngine(v), "client", None),
    ("TurnEngine", lambda v: engine(hedge=v), "hedge", "claude-haiku-4-5"),
    # a hedge target's client is used in a race only: checked when the engine is built
    ("TurnEngine", lambda v: engine(hedge=HedgePolicy((HedgeTarget(client=v),))), "client", "gpt"),
    ("TurnEngine", lambda v: engine(hedge=HedgePolicy((HedgeTarget(client=v),))), "client", 3),
    (
        "TurnEngine",
        lambda v: engine(hedge=HedgePolicy((HedgeTarget("b", client=v),))),
        "client",
        AnthropicClient,
    ),
    ("TurnEngine", lambda v: engine(hedge=HedgePolicy((HedgeTarget(client=v),))), "client", []),
    # HedgeTarget, HedgePolicy
    ("HedgeTarget", lambda v: HedgeTarget(v), "model", 3),
    ("HedgeTarget", lambda v: HedgeTarget(v), "model", ""),
    ("HedgeTarget", lambda v: HedgeTarget(client=v), "client", None),
    ("HedgeTarget", lambda v: HedgeTarget("b", same_quota=v), "same_quota", 1),
    ("HedgePolicy", lambda v: HedgePolicy(v), "targets", ["b"]),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), delay=v), "delay", float("nan")),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), delay=v), "delay", True),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), quantile=v), "quantile", 1.0),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), min_delay=v), "min_delay", -1),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), max_delay=v), "max_delay", "10"),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), min_samples=v), "min_samples", 0),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), max_hedges=v), "max_hedges", 1.0),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), budget_ratio=v), "budget_ratio", 2),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), budget_min=v), "budget_min", -1),
    ("HedgePolicy", lambda v: HedgePolicy((HedgeTarget("b"),), window=v), "window", 10**30),
    ("TurnEngine", lambda v: engine(system=v), "system", 3),
    ("TurnEngine", lambda v: engine(tools=v), "tools", 3),
    ("TurnEngine", lambda v: engine(tools=v), "tools", [3]),
    ("TurnEngine", lambda v: engine(handler=v), "handler", StreamHandler),
    ("TurnEngine", lambda v: engine(handler=v), "handler", "default"),
    ("TurnEngine", lambda v: engine(fallback=v), "fallback", ["backup"]),
    ("TurnEngine", lambda v: engine(observers=v), "observers", LoggingObserver()),
    ("TurnEngine", lambda v: engine(observers=v), "observer", [LoggingObserver]),
    ("TurnEngine", lambda v: engine(observers=v), "observer", [NotAnything()]),
    ("TurnEngine", lambda v: engine(text_streamer=v), "text_streamer", "print"),
    ("TurnEngine", lambda v: engine(mode=v), "mode", "stream"),
    ("TurnEngine", lambda v: engine(request_options=v), "request_options", {"model": "x"}),
    ("TurnEngine", lambda v: engine(history=v), "history", "hello"),
    ("TurnEngine", lambda v: engine(history=v), "history", [{"role": "user"}]),
    ("TurnEngine", lambda v: engine(max_turns=v), "max_turns", 0),
    ("TurnEngine", lambda v: engine(max_turns=v), "max_turns", "10"),
    ("TurnEngine", lambda v: engine(counter=v), "counter", "tiktoken"),
    ("TurnEngine", lambda v: engine(context_window=v), "context_window", 100_000),
    ("TurnEngine", lambda v: engine(compactor=v), "compactor", "truncate"),
    ("TurnEngine", lambda v: engine(contributors=v), "contributors", [NotAnything()]),
    ("TurnEngine", lambda v: engine(memory=v), "memory", ["fact"]),
    ("TurnEngine", lambda v: engine(memory_top_k=v), "memory_top_k", -1),
    ("TurnEngine", lambda v: engine(calibration=v), "calibration", True),
    ("TurnEngine", lambda v: engine(scheduler=v), "scheduler", "asyncio"),
    ("TurnEngine", lambda v: engine(failover=v), "failover", "yes"),
    ("TurnEngine", lambda v: engine(keep_thinking=v), "keep_thinking", 1),
    # StreamHandler and its policies
    ("StreamHandler", lambda v: StreamHandler(timeouts=v), "timeouts", 30),
    ("StreamHandler", lambda v: StreamHandler(retry=v), "retry", 3),
    ("StreamHandler", lambda v: StreamHandler(rate_limit=v), "rate_limit", True),
    ("StreamHandler", lambda v: StreamHandler(limiter=v), "limiter", 60),
    ("StreamHandler", lambda v: StreamHandler(rng=v), "rng", 42),
    ("StreamHandler", lambda v: StreamHandler(scheduler=v), "scheduler", "asyncio"),
    ("StreamHandler", lambda v: StreamHandler(on_wait=v), "on_wait", "print"),
    ("TimeoutPolicy", lambda v: StreamHandler(timeouts=TimeoutPolicy(total=v)), "total", -1),
    (
        "TimeoutPolicy",
        lambda v: StreamHandler(timeouts=TimeoutPolicy(first_event=v)),
        "first_event",
        "5",
    ),
    ("TimeoutPolicy", lambda v: StreamHandler(timeouts=TimeoutPolicy(rescue=v)), "rescue", "no"),
    ("RetryPolicy", lambda v: StreamHandler(retry=RetryPolicy(max_retries=v)), "max_retries", -1),
    ("RetryPolicy", lambda v: StreamHandler(retry=RetryPolicy(base_delay=v)), "base_delay", "1"),
    (
        "RateLimitPolicy",
        lambda v: StreamHandler(rate_limit=RateLimitPolicy(max_delay=v)),
        "max_delay",
        -5,
    ),
    (
        "LimiterPolicy",
        lambda v: RateLimiter(LimiterPolicy(requests_per_minute=v)),
        "requests_per_minute",
        -1,
    ),
    ("RateLimiter", lambda v: RateLimiter(v), "policy", 60),
    # the breaker
    ("FallbackManager", lambda v: FallbackManager(v, ["b"]), "primary", 3),
    ("FallbackManager", lambda v: FallbackManager("a", v), "chain", "backup"),
    ("FallbackManager", lambda v: FallbackManager("a", v), "chain", 3),
    ("FallbackManager", lambda v: FallbackManager("a", v), "chain", {"b": 1}),
    ("FallbackManager", lambda v: FallbackManager("a", v), "fallback model", [3]),
    ("FallbackManager", lambda v: FallbackManager("a", ["b"], policy=v), "policy", 3),
    ("FallbackManager", lambda v: FallbackManager("a", ["b"], clock=v), "clock", 0.0),
    (
        "FallbackPolicy",
        lambda v: FallbackManager("a", ["b"], policy=FallbackPolicy(trip_threshold=v)),
        "trip_threshold",
        "3",
    ),
    # clients
    ("AnthropicClient", lambda v: AnthropicClient(v), "model", 3),
    ("AnthropicClient", lambda v: AnthropicClient("m", base_url=v), "base_url", 3),
    ("AnthropicClient", lambda v: AnthropicClient("m", max_tokens=v), "max_tokens", 0),
    ("AnthropicClient", lambda v: AnthropicClient("m", extra_headers=v), "extra_headers", "x: y"),
    ("AnthropicClient", lambda v: AnthropicClient("m", transport=v), "transport", "aiohttp"),
    ("AnthropicClient", lambda v: AnthropicClient("m", connect_timeout=v), "connect_timeout", -1),
    ("AnthropicClient", lambda v: AnthropicClient("m", read_timeout=v), "read_timeout", "60"),
    ("OpenAIClient", lambda v: OpenAIClient("m", stream_usage=v), "stream_usage", "yes"),
    ("OpenAIClient", lambda v: OpenAIClient("m", max_tokens=v), "max_tokens", -3),
    ("OpenAIResponsesClient", lambda v: OpenAIResponsesClient(v), "model", ""),
    ("OllamaClient", lambda v: OllamaClient("m", max_tokens=v), "max_tokens", 2.5),
    # observers
    ("ObserverSet", lambda v: ObserverSet(v), "observers", 3),
    ("ObserverSet", lambda v: ObserverSet(v), "observers", [None]),
    ("LoggingObserver", lambda v: LoggingObserver(v), "logger", "rxturn"),
    ("LoggingObserver", lambda v: LoggingObserver(level=v), "level", "INFO"),
    ("LoggingObserver", lambda v: LoggingObserver(delta_level=v), "delta_level", None),
    ("LoggingObserver", lambda v: LoggingObserver(requests=v), "requests", 1),
    ("RecordingObserver", lambda v: RecordingObserver(requests=v), "requests", "all"),
    # tools, counting, context
    ("Tool", lambda v: Tool(v), "function", "len"),
    ("Tool", lambda v: Tool(len, name=v), "name", 3),
    ("Tool", lambda v: Tool(len, name=v), "name", "two words"),
    ("Tool", lambda v: Tool(len, description=v), "description", ["doc"]),
    ("Tool", lambda v: Tool(len, input_schema=v), "input_schema", "{}"),
    ("Tool", lambda v: Tool(len, timeout=v), "timeout", 0),
    ("ToolRegistry", lambda v: ToolRegistry(v), "tools", len),
    ("ToolRegistry", lambda v: ToolRegistry(v), "tools", [3]),
    ("TiktokenCounter", lambda v: TiktokenCounter(v), "encoding", 3),
    ("TiktokenCounter", lambda v: TiktokenCounter(cache_size=v), "cache_size", -1),
    ("Calibration", lambda v: Calibration(enabled=v), "enabled", "on"),
    ("Calibration", lambda v: Calibration(window=v), "window", 0),
    ("ContextWindow", lambda v: ContextWindow(max_tokens=v), "max_tokens", "100k"),
    ("ContextWindow", lambda v: ContextWindow(max_tokens=1000, compact_at=v), "compact_at", 2.0),
]


@pytest.mark.parametrize(
    ("constructor", "make", "argument", "bad"),
    CASES,
    ids=[f"{c}-{a}-{type(b).__name__}" for c, _, a, b in CASES],
)
def test_a_wrong_argument_is_a_config_error_naming_it(
    constructor: str, make: Callable[[object], object], argument: str, bad: object
) -> None:
    with pytest.raises(ConfigError) as caught:
        make(bad)
    message = str(caught.value)
    assert argument in message, f"{constructor}: the message does not name {argument!r}"
    assert "\n" not in message


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize(
    ("constructor", "make", "argument"),
    [case[:3] for case in CASES],
    ids=[f"{c}-{a}" for c, _, a, _ in CASES],
)
def test_a_value_repr_cannot_print_is_still_a_one_line_config_error(
    constructor: str, make: Callable[[object], object], argument: str, bad: object
) -> None:
    # before: ValueError ("Exceeds the limit (4300 digits) for integer string conversion") or
    # the object's own repr error, raised while the ConfigError's message was being written
    try:
        make(bad)
    except ConfigError as error:
        message = str(error)
        assert "\n" not in message and len(message) < 400, (constructor, argument)


async def _async_streamer(text: str) -> None:
    return None


async def _async_generator(text: str) -> AsyncIterator[str]:
    yield text


class _AsyncCall:
    async def __call__(self, text: str) -> None:
        return None


class _AsyncObserver(Observer):
    async def on_text_delta(self, *, turn: int, delta: str) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        return None


def _assign_streamer(value: object) -> None:
    engine().text_streamer = value  # pyright: ignore[reportAttributeAccessIssue]


# (where the message says the callback is, the call taking an async one)
ASYNC_CALLBACKS: list[tuple[str, Callable[..., object]]] = [
    ("TurnEngine(text_streamer=...)", lambda v: engine(text_streamer=v)),
    ("engine.text_streamer = ...", _assign_streamer),
    ("StreamHandler(on_wait=...)", lambda v: StreamHandler(on_wait=v)),
    ("FallbackManager(clock=...)", lambda v: FallbackManager("a", ["b"], clock=v)),
]


@pytest.mark.parametrize(
    "callback",
    [_async_streamer, _async_generator, _AsyncCall(), functools.partial(_async_streamer)],
    ids=["async-def", "async-generator", "async-call-object", "partial"],
)
@pytest.mark.parametrize(("where", "make"), ASYNC_CALLBACKS, ids=[w for w, _ in ASYNC_CALLBACKS])
def test_an_async_callback_called_synchronously_is_refused(
    where: str, make: Callable[[object], object], callback: object
) -> None:
    # before: accepted, then each call made a coroutine nobody awaited ("never awaited"
    # RuntimeWarning) and the callback never ran
    with pytest.raises(ConfigError, match=r"is called synchronously, never awaited") as caught:
        make(callback)
    assert str(caught.value).startswith(where)


def test_an_async_observer_callback_is_refused_where_the_observer_is_given() -> None:
    with pytest.raises(ConfigError, match=r"^observer _AsyncObserver\.on_text_delta is called "):
        engine(observers=[_AsyncObserver()])
    with pytest.raises(ConfigError, match=r"^observer _AsyncObserver\.on_text_delta is called "):
        engine().add_observer(_AsyncObserver())


def test_a_generator_function_is_no_tool_but_an_async_def_is() -> None:
    # before: accepted, and the model got the generator object's repr as the tool's result
    def numbers(n: int) -> Iterator[int]:
        yield n

    for function in (numbers, _async_generator):
        with pytest.raises(ConfigError, match=r"^Tool\(function=\.\.\.\) must return its result"):
            Tool(function)
    assert Tool(_async_streamer).name == "_async_streamer"


def test_the_cases_cover_every_public_constructor_argument() -> None:
    """Each argument of these constructors has at least one wrong value tried above."""
    import inspect

    covered = {(c, a) for c, _, a, _ in CASES}
    for cls in (
        TurnEngine,
        StreamHandler,
        FallbackManager,
        ObserverSet,
        LoggingObserver,
        Tool,
        HedgeTarget,
        HedgePolicy,
    ):
        for name, parameter in inspect.signature(cls).parameters.items():
            if parameter.kind is parameter.VAR_KEYWORD or name == "self":
                continue
            alias = "observer" if (cls.__name__, name) == ("TurnEngine", "observers") else name
            assert (cls.__name__, name) in covered or (cls.__name__, alias) in covered, (
                f"{cls.__name__}({name}=...) has no wrong value tried"
            )


@pytest.mark.parametrize("chain", [[], ()])
def test_failover_without_a_chain_is_refused(chain: list[str]) -> None:
    with pytest.raises(ConfigError, match=r"failover=True\) needs a fallback chain"):
        engine(failover=True)
    with pytest.raises(ConfigError, match=r"failover=True\) needs a fallback chain"):
        engine(failover=True, fallback=FallbackManager("m", chain))
    engine(failover=True, fallback=FallbackManager("m", ["backup"]))  # one backup: fine


def test_a_chain_with_no_other_model_is_no_fallback() -> None:
    # before, each was accepted: the breaker "failed over" to the model that had just failed
    # (FallbackManager("m", ["m"]) with failover=True re-ran the same 404 and gave up)
    with pytest.raises(ConfigError, match=r"chain=\.\.\.\): 'm' is the primary model"):
        FallbackManager("m", ["m"])
    with pytest.raises(ConfigError, match=r"chain=\.\.\.\): 'b' is listed twice"):
        FallbackManager("m", ["b", "c", "b"])
    # no primary: the engine serves the client's model, which is no backup of itself
    assert CLIENT.model == "m"
    with pytest.raises(ConfigError, match=r"failover=True\) needs a fallback chain"):
        engine(failover=True, fallback=FallbackManager(None, ["m"]))
    engine(failover=True, fallback=FallbackManager(None, ["backup"]))


def test_a_primary_that_disagrees_with_the_options_model_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"primary 'a' and request_options\.model 'b' disagree"):
        engine(fallback=FallbackManager("a", ["c"]), request_options=RequestOptions(model="b"))
    # the documented rule: a primary is the engine's model while the breaker is closed
    served = engine(fallback=FallbackManager("a", ["c"]))
    assert served.served_model() == "a" and CLIENT.model == "m"
    same = engine(fallback=FallbackManager("b", ["c"]), request_options=RequestOptions(model="b"))
    assert same.served_model() == "b"


def test_a_wrong_observer_added_later_is_refused_too() -> None:
    target = engine()
    with pytest.raises(ConfigError, match="observer"):
        target.add_observer(RecordingObserver)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigError, match="observer"):
        target.add_observer(None)  # pyright: ignore[reportArgumentType]


def test_good_arguments_still_build() -> None:
    engine(
        system="s",
        tools=[len],
        handler=StreamHandler(rng=random.Random(1)),
        observers=[LoggingObserver(), RecordingObserver()],
        history=[Message.user("hi")],
        calibration=Calibration(enabled=True),
        keep_thinking=None,
    )


def test_iterators_given_for_tools_observers_and_contributors_are_kept_whole() -> None:
    """The argument check reads each iterable once: what it read is what the engine holds
    (an iterator is not left used up for the engine)."""

    def lookup(query: str) -> str:
        """Look a query up."""
        return query

    class Contributor:
        def contribute(self, *, turn: int, history: Sequence[Message]) -> list[Message]:
            return []

    recorder = RecordingObserver()
    contributor = Contributor()
    built = engine(
        tools=(tool for tool in [lookup]),
        observers=iter([recorder]),
        contributors=(item for item in [contributor]),
    )
    assert "lookup" in built.tools and len(built.tools) == 1
    assert list(built.observers) == [recorder]
    assert built.contributors == [contributor]
