"""The contenders: every way of turning one provider stream into one reply that the suite times.

Each contender is an ``async (Case) -> Folded`` function plus a little metadata. All of them
fold the same stream (:class:`~_streams.Case`) into the same reply, and the harness checks that
(text, input tokens, output tokens) equal the scenario's — so no contender can win by skipping
work.

- ``limit`` (memory): LIMIT (:mod:`_limit`), split + msgspec decode + list fold. The floor.
- ``replay`` (memory): ``rxturn.replay_batches(bytes)`` → ``scan(fold_batch)`` → ``last`` →
  ``message()``: the replay pipeline, one Rx item per 64 KiB of input (judged against 1.3x).
- ``replay_events`` (memory): ``rxturn.replay(bytes)`` → ``scan(fold)`` → ``last``: the same
  pipeline with one Rx item per event.
- ``replay_message`` (memory): ``rxturn.replay_message(bytes)``, the CLI's path (fed line by
  line so that errors can name their line).
- ``limit_http`` (loopback): LIMIT's fold fed by a bare aiohttp request: the transport floor.
- ``decode_fold_http`` (loopback): rxturn's own decoder and per-event fold, with the
  text-streamer and observer calls, in a plain loop over a bare aiohttp request, no Observable:
  the floor of a per-event design (the batched turn now costs less).
- ``client_stream`` (loopback): ``client.stream()`` → ``scan(fold)`` → ``last``; no engine, one
  Rx item per event.
- ``client_batches`` (loopback): ``client.stream_batches()`` → ``scan(fold_batch)`` → ``last``.
- ``turn_passthrough`` (loopback): ``TurnEngine`` with the passthrough handler, a text
  streamer and an observer.
- ``turn`` (loopback): ``TurnEngine`` with ``StreamHandler.default()`` (retry and rate-limit
  ladders; first-event, per-event and total deadlines armed), a ``text_streamer``, one observer
  and the accumulator: the full turn.
- ``sdk`` (loopback): the official SDK, ``anthropic`` ``messages.stream`` →
  ``get_final_message()`` or ``openai`` ``chat.completions.stream`` → ``get_final_completion()``
  (with ``include_usage``, as rxturn asks).

"loopback" contenders talk HTTP to the fake provider in a child process (:mod:`_servers`); each
keeps one client (one connection pool) for the whole run, as an application would, and a new
``TurnEngine`` per turn (sharing the client and the token counter) so that every turn starts
from the same one-message history.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import aiohttp
from _limit import LimitAnthropic, LimitOpenAI, limit_anthropic, limit_openai
from _streams import Case, endpoint, request_body

from rxturn.engine.observation.observers import Observer

__all__ = [
    "PROMPT",
    "Contender",
    "DeltaCounter",
    "Env",
    "EventCounter",
    "Folded",
    "TextSink",
    "anthropic_sdk",
    "build_contenders",
    "client_for",
    "counter_for",
    "openai_sdk",
]

#: (text, input tokens, output tokens): what every contender must reproduce.
Folded = tuple[str, int, int]
Role = Literal["floor", "target", "info", "sdk"]

PROMPT: Final = "Write a long reply."


@dataclass
class Contender:
    """A way to fold a stream, and how the report treats it."""

    name: str
    role: Role
    where: Literal["memory", "loopback"]
    formats: tuple[str, ...]
    run: Callable[[Case], Awaitable[Folded]]
    description: str = ""


@dataclass
class Env:
    """Long-lived clients shared by the runs (created once, closed by :meth:`aclose`)."""

    base_url: str
    session: aiohttp.ClientSession | None = None
    clients: dict[str, Any] = field(default_factory=dict[str, Any])
    sdks: dict[str, Any] = field(default_factory=dict[str, Any])
    counter: Any = None

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()
        for sdk in self.sdks.values():
            await sdk.close()
        if self.session is not None:
            await self.session.close()


def _folded(message: Any) -> Folded:
    usage = message.usage
    return (message.text, usage.input_tokens if usage else 0, usage.output_tokens if usage else 0)


# ------------------------------------------------------------------------------ in memory


async def _limit(case: Case) -> Folded:
    fold = limit_anthropic if case.format == "anthropic" else limit_openai
    return _folded(fold(case.body))


async def _replay(case: Case) -> Folded:
    from reactivex import operators as ops

    from rxturn import replay_batches
    from rxturn.fold import INITIAL_STATE, fold_batch

    box: list[Any] = []
    errors: list[Exception] = []
    # Subscribed without a scheduler, replay emits synchronously on this thread (``.run()``
    # would hop to a new thread).
    replay_batches(case.body, case.format).pipe(
        ops.scan(fold_batch, INITIAL_STATE), ops.last()
    ).subscribe(on_next=box.append, on_error=errors.append)
    if errors:
        raise errors[0]
    return _folded(box[0].message())


async def _replay_events(case: Case) -> Folded:
    from reactivex import operators as ops

    from rxturn import replay
    from rxturn.fold import INITIAL_STATE, fold

    box: list[Any] = []
    errors: list[Exception] = []
    replay(case.body, case.format).pipe(ops.scan(fold, INITIAL_STATE), ops.last()).subscribe(
        on_next=box.append, on_error=errors.append
    )
    if errors:
        raise errors[0]
    return _folded(box[0].message())


async def _replay_message(case: Case) -> Folded:
    from rxturn import replay_message

    return _folded(replay_message(case.body, case.format))


# ------------------------------------------------------------------------------ loopback


def _env_contenders(env: Env) -> list[Contender]:
    from rxturn.messages import Message, Request, RequestOptions

    request = Request(messages=(Message.user(PROMPT),))

    async def limit_http(case: Case) -> Folded:
        if env.session is None:
            env.session = aiohttp.ClientSession()
        folder = LimitAnthropic() if case.format == "anthropic" else LimitOpenAI()
        feed = folder.feed
        url = endpoint(case.format, env.base_url)
        async with env.session.post(url, json=request_body(case.format, case.model)) as response:
            response.raise_for_status()
            async for chunk in response.content.iter_any():
                feed(chunk)
        return _folded(folder.message())

    async def decode_fold_http(case: Case) -> Folded:
        from rxturn.engine.observation.observers import ObserverSet
        from rxturn.events import Delta
        from rxturn.fold import INITIAL_STATE, fold
        from rxturn.wire import decoder_for

        if env.session is None:
            env.session = aiohttp.ClientSession()
        decoder = decoder_for(case.format)
        sink = TextSink()
        observers = ObserverSet([DeltaCounter()])
        state = INITIAL_STATE
        url = endpoint(case.format, env.base_url)
        async with env.session.post(url, json=request_body(case.format, case.model)) as response:
            response.raise_for_status()
            async for chunk in response.content.iter_any():
                for event in decoder.feed(chunk):
                    if type(event) is Delta and event.kind == "text":
                        sink(event.text)
                        observers.text_delta(0, event.text)
                    state = fold(state, event)
        for event in decoder.close():
            state = fold(state, event)
        return _folded(state.message())

    def client_fold(batched: bool) -> Callable[[Case], Awaitable[Folded]]:
        async def run(case: Case) -> Folded:
            import asyncio

            from reactivex import operators as ops

            from rxturn.fold import INITIAL_STATE, fold, fold_batch

            client = client_for(env, case.format)
            options = RequestOptions(model=case.model)
            source = (
                client.stream_batches(request, options).pipe(ops.scan(fold_batch, INITIAL_STATE))
                if batched
                else client.stream(request, options).pipe(ops.scan(fold, INITIAL_STATE))
            )
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            source.pipe(ops.last()).subscribe(
                on_next=lambda state: done.done() or done.set_result(state),
                on_error=lambda exc: done.done() or done.set_exception(exc),
            )
            state = await done
            return _folded(state.message())

        return run

    def engine_turn(handler_name: str) -> Callable[[Case], Awaitable[Folded]]:
        async def turn(case: Case) -> Folded:
            from rxturn.engine import TurnEngine
            from rxturn.engine.handler import StreamHandler

            handler = (
                StreamHandler.default()
                if handler_name == "default"
                else StreamHandler.passthrough()
            )
            sink = TextSink()
            watcher = DeltaCounter()
            engine = TurnEngine(
                client_for(env, case.format),
                handler=handler,
                text_streamer=sink,
                observers=[watcher],
                request_options=RequestOptions(model=case.model, max_tokens=1024),
                counter=counter_for(env),
            )
            result = await engine.run(PROMPT)
            folded = _folded(result.message)
            if sink.chars != len(folded[0]) or watcher.chars != sink.chars:
                raise AssertionError(
                    f"text streamer saw {sink.chars} chars, observer {watcher.chars}, "
                    f"message has {len(folded[0])}"
                )
            return folded

        return turn

    async def sdk(case: Case) -> Folded:
        if case.format == "anthropic":
            client = anthropic_sdk(env)
            async with client.messages.stream(
                model=case.model,
                max_tokens=1024,
                messages=[{"role": "user", "content": PROMPT}],
            ) as stream:
                message = await stream.get_final_message()
            text = "".join(block.text for block in message.content if block.type == "text")
            return (text, message.usage.input_tokens, message.usage.output_tokens)
        client = openai_sdk(env)
        async with client.chat.completions.stream(
            model=case.model,
            messages=[{"role": "user", "content": PROMPT}],
            stream_options={"include_usage": True},
        ) as stream:
            completion = await stream.get_final_completion()
        usage = completion.usage
        return (
            completion.choices[0].message.content or "",
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )

    both = ("anthropic", "openai")
    return [
        Contender(
            "limit_http",
            "info",
            "loopback",
            both,
            limit_http,
            "LIMIT fed by a bare aiohttp request (transport floor)",
        ),
        Contender(
            "decode_fold_http",
            "info",
            "loopback",
            both,
            decode_fold_http,
            "rxturn decoder + fold + streamer/observer routing in a plain loop over aiohttp",
        ),
        Contender(
            "client_stream",
            "info",
            "loopback",
            both,
            client_fold(batched=False),
            "rxturn client.stream() + scan(fold), no engine",
        ),
        Contender(
            "client_batches",
            "info",
            "loopback",
            both,
            client_fold(batched=True),
            "rxturn client.stream_batches() + scan(fold_batch), no engine",
        ),
        Contender(
            "turn_passthrough",
            "info",
            "loopback",
            both,
            engine_turn("passthrough"),
            "TurnEngine, passthrough handler, streamer + observer",
        ),
        Contender(
            "turn",
            "target",
            "loopback",
            both,
            engine_turn("default"),
            "TurnEngine, default resilient handler (3 deadlines), streamer + observer",
        ),
        Contender(
            "sdk",
            "sdk",
            "loopback",
            both,
            sdk,
            "official SDK: anthropic messages.stream / openai chat.completions.stream",
        ),
    ]


def build_contenders(env: Env) -> list[Contender]:
    """Every contender, in report order (LIMIT first)."""
    both = ("anthropic", "openai")
    return [
        Contender(
            "limit",
            "floor",
            "memory",
            both,
            _limit,
            "split + msgspec tagged-union decode + list fold (the floor)",
        ),
        Contender(
            "replay",
            "target",
            "memory",
            both,
            _replay,
            "rxturn.replay_batches() + scan(fold_batch) + last",
        ),
        Contender(
            "replay_events",
            "info",
            "memory",
            both,
            _replay_events,
            "rxturn.replay() + scan(fold) + last (one Rx item per event)",
        ),
        Contender(
            "replay_message",
            "info",
            "memory",
            both,
            _replay_message,
            "rxturn.replay_message() (64 KiB chunks; line by line only to locate an error)",
        ),
        *_env_contenders(env),
    ]


# ------------------------------------------------------------------------------ helpers


class TextSink:
    """A ``text_streamer`` that does what a UI's cheapest write does: count what it is given."""

    __slots__ = ("chars",)

    def __init__(self) -> None:
        self.chars = 0

    def __call__(self, text: str) -> None:
        self.chars += len(text)


class EventCounter:
    """An ``engine.events`` subscriber's ``on_next``: counts the handler events it is given."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events = 0

    def __call__(self, event: object) -> None:
        self.events += 1


class DeltaCounter(Observer):
    """One observer that overrides ``on_text_delta`` (so the fan-out really calls it)."""

    def __init__(self) -> None:
        self.chars = 0

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        self.chars += len(delta)


def client_for(env: Env, fmt: str) -> Any:
    client = env.clients.get(fmt)
    if client is None:
        if fmt == "anthropic":
            from rxturn.clients import AnthropicClient

            client = AnthropicClient("bench", api_key="k", base_url=env.base_url)
        else:
            from rxturn.clients import OpenAIClient

            client = OpenAIClient("bench", api_key="k", base_url=env.base_url + "/v1")
        env.clients[fmt] = client
    return client


def counter_for(env: Env) -> Any:
    if env.counter is None:
        from rxturn.engine.context.tokens import TiktokenCounter

        env.counter = TiktokenCounter()
    return env.counter


def anthropic_sdk(env: Env) -> Any:
    if "anthropic" not in env.sdks:
        import anthropic

        env.sdks["anthropic"] = anthropic.AsyncAnthropic(
            api_key="k", base_url=env.base_url, max_retries=0
        )
    return env.sdks["anthropic"]


def openai_sdk(env: Env) -> Any:
    if "openai" not in env.sdks:
        import openai

        env.sdks["openai"] = openai.AsyncOpenAI(
            api_key="k", base_url=env.base_url + "/v1", max_retries=0
        )
    return env.sdks["openai"]
