"""The turn engine: one model call, from "call the LLM" to "here is the reply".

:meth:`TurnEngine.turn` runs one turn in this order (docs/behaviour.md §4.1):

1. breaker housekeeping (maybe start a recovery probe; :class:`FallbackExhausted` before any
   turn event when every backup has failed);
2. transients — context contributors, then at most one memory message, then the caller's
   own — placed *before* the conversation and never persisted;
3. the context estimate, and a deferred turn (no turn events) when compaction is due — or,
   when nothing before the request needs the estimate (no context window, no ``on_request``
   observer) and the tokenizer is still loading, the estimate after the request, so that no
   first-use cost sits between a process's first turn and its first request;
4. the routed model as a per-request override (the shared client is never mutated) and
   ``on_model_switched`` whenever the serving model changes;
5. ``on_turn_start``, then the call on one of two paths:

   - **streaming** (default): one subscription to the handler's batched stream
     (:meth:`StreamHandler.stream_turn_batches`, one item per network chunk), multicast to
     the routing (the ``text_streamer``, then the observers, then ``engine.events``, event by
     event), to the user's ``engine.turn_streams`` subscriptions, and to ``scan(fold_batch)``
     → ``last``, which builds the message. ``AttemptReset`` wipes the fold, a ``Fallback``
     replaces it wholesale. With ``failover=True`` a leg that fails definitively continues,
     in the same stream, on the next model of the chain (docs/engine.md);
   - **non-streaming**: exactly one ``create`` raced against the cancel signal (checked first)
     and the turn timeout (none configured = an arm that never fires);

6. the outcome is recorded in a fixed order (:mod:`rxturn.engine.turn._outcome`,
   docs/behaviour.md §4.2);
7. the reply joins the history and the audit trail (with every attempt and what was billed;
   a failed turn is recorded too); ``on_response`` and ``on_turn_end``.

:meth:`TurnEngine.run` is the agent loop around it: turns continue while the stop reason is
``tool_call``, running registered tools between them.

The engine holds the attributes users set and read, and one collaborator per concern, made
once per engine: :class:`~rxturn.engine.turn._setup.TurnSetup` (steps 1 to 4),
:class:`~rxturn.engine.turn._calls.TurnCalls` (the turn: steps 5 to 7) and
:class:`~rxturn.engine.agent._loop.AgentLoop` (``run()`` and the tool phase). Each reads the
engine through a ``Protocol`` of the attributes it needs.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, cast

import msgspec
from reactivex import abc
from reactivex.subject import Subject

from .._arguments import check_bool, check_callable, check_instance, check_items, described, shown
from .._validate import positive
from ..clients._base import ModelClient
from ..clients._http import HttpClient
from ..clients._request import check_options
from ..cost import Pricer, cost_available, prefetch_prices
from ..errors import ConfigError
from ..events import HandlerEvent
from ..messages import (
    Message,
    Request,
    RequestOptions,
    ToolSchema,
    as_messages,
)
from ..operators._scheduling import check_scheduler
from ..resilience.cancel import CancelToken
from ..resilience.fallback import FallbackManager
from ..resilience.hedge import HedgePolicy
from .agent._loop import AgentLoop
from .agent.tools import Tool, ToolFunction, ToolRegistry
from .context.tokens import (
    ContextEstimate,
    TiktokenCounter,
    TokenCounter,
    media_rule_of,
    prefetch_counter,
)
from .context.window import (
    DEFAULT_COMPACTOR,
    Calibration,
    Compactor,
    ContextContributor,
    ContextWindow,
    MemoryProvider,
)
from .failover._legs import TurnLegs
from .fanout._run_stream import DEFAULT_MAX_BUFFERED, RunStream
from .fanout._subject import EventSubject
from .fanout._turn_stream import TurnStream
from .handler._handler import StreamHandler
from .observation._callbacks import checked_observer
from .observation.observers import Observer, ObserverSet
from .records._results import (
    RunResult,
    Session,
    TextStreamer,
    TurnMode,
    TurnResult,
    checked_prompt,
    checked_transients,
)
from .turn._calls import TurnCalls, client_pricer
from .turn._setup import TurnSetup

__all__ = ["RunResult", "Session", "TurnEngine", "TurnMode", "TurnResult"]


class TurnEngine:
    """Runs LLM turns against a client, with resilience and bookkeeping (docs/behaviour.md §4).

    Args:
        client: the provider client (Anthropic, OpenAI-compatible, Ollama, or your own).
        system: the system prompt, sent alongside (never inside) the messages.
        tools: Python callables or :class:`~rxturn.engine.agent.tools.Tool` objects the model
            may call.
        handler: the stream handler; ``None`` means passthrough (one attempt, no deadlines).
        fallback: a :class:`~rxturn.resilience.fallback.FallbackManager` routing between models.
        observers: callbacks, called in registration order, each isolated.
        text_streamer: called with each text fragment, before the observers (failed attempts'
            too: ``on_attempt_reset`` retracts them; a rescued reply is no fragment, it comes
            whole in ``engine.events`` and ``on_response``).
        mode: ``"streaming"`` (default) or ``"non_streaming"``.
        request_options: tool constraint, response format, model, max tokens…
        max_turns: bound of the agent loop in :meth:`run`.
        counter: counts tokens for the context estimate (default: tiktoken, offline cl100k).
        context_window: when set, a turn whose estimate passes its threshold is deferred
            and the conversation compacted first.
        compactor: how to compact (default:
            :class:`~rxturn.engine.context.window.TruncatingCompactor`).
        contributors: per-turn transient messages, in registration order.
        memory: a memory provider whose top ``memory_top_k`` entries become one message.
        calibration: records estimate vs. reported input tokens per model.
        scheduler: where time comes from (default: asyncio on the running loop): the
            handler's ladders and deadlines, the durations in observer events, the times in
            the attempt log, and the cooldown of a ``fallback`` manager given no clock of its
            own, all run on it (a ``TestScheduler`` puts a whole session on virtual time).
            One that cannot time a turn on its event loop (the immediate or current-thread
            scheduler, one firing on other threads) is a ``ConfigError`` here.
        failover: same-turn failover (off by default): a turn whose model fails definitively
            continues on the next healthy model of ``fallback``'s chain, after an
            ``AttemptReset``, within what is left of the turn's deadline (docs/engine.md).
        hedge: a hedged first token (off by default): when a streaming turn's first attempt
            has produced no content within the policy's delay, a hedge request goes to one of
            its targets and the first to produce content serves the turn (docs/engine.md).
            Streaming mode only (never the rescue).
        keep_thinking: keep the replies' thinking in the history and send it back (written
            into ``request_options.keep_thinking``); ``None`` (default) keeps it exactly when
            the request enables thinking (:func:`rxturn.clients.keeps_thinking`).

    Attributes:
        events: every turn's handler events (provider events, ``AttemptReset``, ``Fallback``)
            one by one as a hot Observable, for composing into your own Rx pipelines and live
            displays.
        turn_streams: a hot Observable emitting one :class:`TurnStream` per streaming turn,
            just before the turn starts: subscribe to its ``batches`` or ``events`` to put a
            pipeline of your own on that turn's shared handler stream (docs/engine.md).
        last_estimate: the context estimate of the most recent turn.
    """

    def __init__(
        self,
        client: ModelClient,
        *,
        system: str | None = None,
        tools: Iterable[Tool | ToolFunction] = (),
        handler: StreamHandler | None = None,
        fallback: FallbackManager | None = None,
        observers: Iterable[Observer] = (),
        text_streamer: TextStreamer | None = None,
        mode: TurnMode = "streaming",
        request_options: RequestOptions | None = None,
        history: Iterable[Message] = (),
        max_turns: int = 10,
        counter: TokenCounter | None = None,
        context_window: ContextWindow | None = None,
        compactor: Compactor | None = None,
        contributors: Iterable[ContextContributor] = (),
        memory: MemoryProvider | None = None,
        memory_top_k: int = 3,
        calibration: Calibration | None = None,
        scheduler: abc.SchedulerBase | None = None,
        failover: bool = False,
        keep_thinking: bool | None = None,
        hedge: HedgePolicy | None = None,
    ) -> None:
        # the iterables as checked tuples: a generator is read once, by the check
        checked_tools, checked_observers, checked_contributors = _check_arguments(locals())
        if mode not in ("streaming", "non_streaming"):
            raise ConfigError(f"mode must be 'streaming' or 'non_streaming', got {shown(mode)}")
        if not positive(max_turns, integer=True):
            raise ConfigError(f"max_turns must be at least 1, got {shown(max_turns)}")
        self.client = client
        self.system = system
        # the tools, contributors and calibration are made when first used: most conversations
        # have none of the first two, and calibration records only once a turn has its reply
        self._tools = (
            ToolRegistry(cast("tuple[Tool | ToolFunction, ...]", checked_tools))
            if checked_tools
            else None
        )
        self.handler = handler
        self.fallback = fallback
        self.observers = ObserverSet()
        for observer in checked_observers:
            self.observers.add(cast(Observer, observer))
        self.text_streamer = text_streamer
        self.mode: TurnMode = mode
        self.request_options = request_options or RequestOptions()
        if keep_thinking is not None:
            self.request_options = msgspec.structs.replace(
                self.request_options, keep_thinking=keep_thinking
            )
        self.max_turns = max_turns
        self.scheduler = scheduler
        self.counter: TokenCounter = (
            counter
            if counter is not None
            else TiktokenCounter(media_rule=media_rule_of(str(getattr(client, "wire_format", ""))))
        )
        prefetch_counter(self.counter)  # first-use costs load now, off the first turn's path
        prefetch_transport(client)
        self.context_window = context_window
        self.compactor: Compactor = compactor if compactor is not None else DEFAULT_COMPACTOR
        self._contributors = (
            cast("list[ContextContributor]", list(checked_contributors))
            if checked_contributors
            else None
        )
        self.memory = memory
        if not positive(memory_top_k, integer=True, allow_zero=True):
            raise ConfigError(f"memory_top_k must be an int >= 0, got {shown(memory_top_k)}")
        self.memory_top_k = memory_top_k
        self._calibration = calibration
        # the rxturn[cost] extra prices every attempt; its data starts loading here in a
        # background thread, and the first turn awaits it off the loop
        pricer: Pricer | None = None
        if cost_available():
            pricer = client_pricer(client)
            prefetch_prices()
        self.last_estimate: ContextEstimate | None = None
        self.failover = bool(failover)
        _check_hedge(hedge, mode)
        self.hedge = hedge
        self.session = Session(history)
        self.cancel_token = CancelToken()
        # one collaborator per concern, made once per engine: each reads the engine's public
        # attributes when it runs, so reassigning one (``engine.system = ...``) takes effect.
        # They see the engine through a weak proxy: a strong reference back would make every
        # engine a reference cycle, freed (with its history and audit trail) only by the
        # cyclic collector — under many short-lived engines, full collections that stall the
        # loop. They only run while the engine is alive: from its own methods, or from a
        # stream, which holds the engine. A weak reference beside the proxy lets a turn (and a
        # run) resolve the engine once and read it directly while it runs (a proxy's
        # indirection costs on every attribute read, and a turn reads some fifty).
        host = cast("TurnEngine", weakref.proxy(self))
        live = weakref.ref(self)
        self._setup = TurnSetup(host, live)
        self._calls = TurnCalls(host, self._setup, pricer, live)
        self._loop = AgentLoop(host, self._calls, live)
        if fallback is not None and scheduler is not None:
            fallback.adopt_clock(self._now())
        if hedge is not None:
            _check_hedge_can_act(hedge, client, self.served_model())

    @property
    def events(self) -> Subject[HandlerEvent]:
        """Every turn's handler events, one by one, as the engine folds them (a hot Subject:
        subscribe before the turn; docs/engine.md)."""
        calls = self._calls
        if calls.events is None:
            calls.events = EventSubject("engine.events")
        return calls.events

    @property
    def turn_streams(self) -> Subject[TurnStream]:
        """One :class:`TurnStream` per streaming turn, just before it starts (a hot Subject)."""
        calls = self._calls
        if calls.turn_streams is None:
            calls.turn_streams = EventSubject("engine.turn_streams")
        return calls.turn_streams

    @property
    def tools(self) -> ToolRegistry:
        """The tools the model may call (``engine.tools.register(fn)`` adds one)."""
        tools = self._tools
        if tools is None:
            tools = self._tools = ToolRegistry()
        return tools

    @tools.setter
    def tools(self, tools: ToolRegistry) -> None:
        self._tools = tools

    @property
    def contributors(self) -> list[ContextContributor]:
        """The context contributors, asked for transient messages each turn, in order."""
        contributors = self._contributors
        if contributors is None:
            contributors = self._contributors = []
        return contributors

    @contributors.setter
    def contributors(self, contributors: list[ContextContributor]) -> None:
        self._contributors = contributors

    @property
    def calibration(self) -> Calibration:
        """Estimate vs. reported input tokens per model (scales estimates when enabled)."""
        calibration = self._calibration
        if calibration is None:
            calibration = self._calibration = Calibration()
        return calibration

    @calibration.setter
    def calibration(self, calibration: Calibration) -> None:
        self._calibration = calibration

    def tool_schemas(self) -> tuple[ToolSchema, ...] | None:
        """The schemas of the registered tools, as each request sends them (``None``: no tools)."""
        tools = self._tools
        return tools.schemas() if tools is not None else None

    def has_contributors(self) -> bool:
        """Whether any context contributor is registered."""
        return bool(self._contributors)

    def calibrated(self, estimate: int) -> int:
        """``estimate`` scaled for the model the next request goes to, when calibration is
        enabled (else as it is)."""
        calibration = self._calibration
        if calibration is None or not calibration.enabled:
            return estimate
        return calibration.scale(self.served_model(), estimate)

    def __setattr__(self, name: str, value: object) -> None:
        # Once the engine is built, an assignment of a constructor's argument is checked as
        # the constructor checks it: a wrong value is a ConfigError at the line that made it,
        # not an AttributeError from deep inside the next turn.
        check = _ASSIGNED.get(name)
        if check is not None and "_loop" in self.__dict__:
            value = check(self, value)
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return (
            f"TurnEngine(client={self.client!r}, mode={self.mode!r}, "
            f"tools={len(self._tools or ())}, observers={len(self.observers)})"
        )

    # ----------------------------------------------------------------------------- public API

    @property
    def history(self) -> list[Message]:
        """The conversation: a list that checks (and converts) every message put into it."""
        return self.session.history

    @history.setter
    def history(self, messages: Iterable[Message]) -> None:
        # ``engine.history = [...]`` and ``engine.history += [...]``: the same list, refilled
        self.session.history[:] = as_messages(messages, "engine.history")

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the running turn: it fails with :class:`Cancelled`; the breaker is untouched."""
        self.cancel_token.cancel(reason)

    def add_observer(self, observer: Observer) -> None:
        self.observers.add(observer)

    def switch_model(self, name: str) -> None:
        """Serve ``name`` from now on: it becomes the primary and the breaker starts closed.

        Fires ``on_model_switched`` when the serving model changes. Blank names, and a model
        of the fallback chain (a backup cannot be the primary), are rejected before anything
        changes.
        """
        # callers may be untyped
        model = name.strip() if isinstance(name, str) else ""  # pyright: ignore[reportUnnecessaryIsInstance]
        if not model:
            raise ConfigError(f"switch_model needs a model name, got {shown(name)}")
        previous = self.served_model()
        if self.fallback is not None:
            self.fallback.set_primary(model)  # (first: it refuses a backup)
            self.fallback.reset()
        self.request_options = msgspec.structs.replace(self.request_options, model=model)
        if previous != model:
            self.observers.emit("on_model_switched", from_model=previous, to_model=model)
        self._setup.last_served = model

    def stream(
        self, prompt: str | Message, *, max_buffered: int = DEFAULT_MAX_BUFFERED
    ) -> RunStream:
        """:meth:`run` on ``prompt``, consumed with ``async for`` (docs/engine.md).

        ``async with engine.stream(prompt) as s: async for event in s`` yields every handler
        event of the run's turns (``AttemptReset`` and ``Fallback`` included); ``s.text_stream``
        yields the text, announcing withdrawn text with the event that withdraws it;
        ``s.result`` is the :class:`RunResult` once done. Leaving the block early cancels the
        run. At most ``max_buffered`` events wait for the consumer (beyond: the run is
        cancelled). A non-streaming engine has no handler events: the iteration just ends
        with the run.

        Raises:
            ConfigError: ``prompt`` is neither a string nor a :class:`Message`; (on entering
                the block) a ``run()``, ``turn()`` or ``stream()`` of this engine is in flight.
        """
        checked = checked_prompt(prompt, "stream")

        loop = self._loop

        def release() -> None:
            loop.busy = None

        return RunStream(
            prompt=checked,
            events=self.events,
            turns=self.turn_streams,
            run=self._run_checked,  # (a method of the engine: the stream keeps it alive)
            claim=functools.partial(loop.claim, "stream"),
            release=release,
            cancel=self.cancel,
            reset=self.cancel_token.reset,
            max_buffered=max_buffered,
        )

    def served_model(self) -> str:
        """The model the next request goes to: routed backup, options override, or client's."""
        return self._setup.served_model()

    def _run_checked(self, prompt: str | Message) -> Coroutine[Any, Any, RunResult]:
        return self._loop.run_checked(prompt)

    def build_request(self, transient: Sequence[Message] = ()) -> Request:
        """Transients first, then the conversation; system prompt and tools ride alongside."""
        return self._setup.build_request(transient)

    def routed_options(self) -> RequestOptions:
        """The request options with the breaker's routed model as a per-request override."""
        return self._setup.routed_options()

    async def run(self, prompt: str | Message) -> RunResult:
        """The agent loop: add ``prompt``, then run turns while the model calls tools.

        A failed or cancelled run discards the messages it added to the history; its served
        turns stay in the audit trail. The cancel signal is re-armed when the run ends.

        Raises:
            ConfigError: ``prompt`` is neither a string nor a :class:`Message`; a ``run()`` or
                ``turn()`` of this engine is in flight (one engine is one conversation).
        """
        return await self._loop.run(prompt)

    async def turn(self, transient: Sequence[Message] = ()) -> TurnResult:
        """Run one LLM turn over the current history (plus ``transient`` extras).

        The reply is appended to the history and the audit trail. Raises the turn's typed
        error on failure (the history is left unchanged).

        Raises:
            ConfigError: ``transient`` is not a sequence of :class:`Message` (a prompt string is
                the usual mistake: :meth:`run` takes one); a ``run()`` or ``turn()`` of this
                engine is in flight (one engine is one conversation).
        """
        transient = checked_transients(transient)
        loop = self._loop
        loop.claim("turn")
        try:
            return await loop.turn(transient)
        finally:
            loop.busy = None
            self.cancel_token.reset()

    # ----------------------------------------------------------------------------- one turn

    async def summarize(self, messages: Sequence[Message]) -> str:
        """Condense ``messages`` with this engine's client (for a summarising compactor).

        One request outside the conversation: no turn events, no history, no audit record; a
        plain-text request (the engine's response format and tool choice are left out).
        """
        checked = as_messages(messages, "summarize(messages=...)")
        transcript = "\n".join(f"{m.role}: {m.text}" for m in checked if m.text)
        request = Request(
            messages=(
                Message.user(
                    "Summarise this conversation so it can replace it; keep every fact, "
                    "decision and open question.\n\n" + transcript
                ),
            ),
        )
        options = self.routed_options()
        if options.response_format is not None or options.tool_choice is not None:
            options = msgspec.structs.replace(options, response_format=None, tool_choice=None)
        legs = TurnLegs(-1, options.model or self.client.model, self._now())
        calls = self._calls
        if self.mode == "streaming":
            message = await calls.stream_turn(legs, request, options, quiet=True)
        else:
            message = await calls.create_turn(legs, request, options, quiet=True)
        return message.text

    def _now(self) -> Callable[[], float]:
        """The engine's clock: its scheduler's (asyncio's loop time by default)."""
        return self._calls.now()


_INSTANCE_TYPES: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("client", ModelClient, "a model client (AnthropicClient, OpenAIClient, ...)"),
    ("system", str, "a str"),
    ("handler", StreamHandler, "a StreamHandler"),
    ("fallback", FallbackManager, "a FallbackManager"),
    ("request_options", RequestOptions, "a RequestOptions"),
    ("counter", TokenCounter, "a TokenCounter (count_messages, count_text)"),
    ("context_window", ContextWindow, "a ContextWindow"),
    ("compactor", Compactor, "a Compactor (an async compact method)"),
    ("memory", MemoryProvider, "a MemoryProvider"),
    ("calibration", Calibration, "a Calibration"),
    ("scheduler", abc.SchedulerBase, "a reactivex scheduler"),
)
#: (argument, expected type, where, what, optional): the messages' parts made once, not per engine
_INSTANCES = tuple(
    (name, expected, f"TurnEngine({name}=...)", what, name != "client")
    for name, expected, what in _INSTANCE_TYPES
)


def _check_hedge(hedge: object, mode: object) -> None:
    """``TurnEngine(hedge=...)``: a policy (or ``None``) whose target clients are clients, in a
    mode where it can act."""
    if hedge is None:
        return
    if not isinstance(hedge, HedgePolicy):
        raise ConfigError(f"hedge must be a HedgePolicy or None, got {shown(hedge)}")
    for target in hedge.targets:  # a target's client is used in a race only: check now
        check_instance(
            target.client,
            ModelClient,
            "TurnEngine(hedge=...): HedgeTarget(client=...)",
            "a model client (AnthropicClient, OpenAIClient, ...)",
            optional=True,
        )
    if mode != "streaming":
        raise ConfigError(
            "hedge=HedgePolicy(...) races streams for their first content: it cannot act "
            "in non_streaming mode (drop hedge= or use mode='streaming')"
        )


def _check_hedge_can_act(hedge: HedgePolicy, client: object, served: str) -> None:
    """A policy whose every target is the primary's own request (its client and model) could
    never send a hedge (the race counts that request tried): refused, not ignored."""
    own = (id(client), served)
    if all(target.key(served, client) == own for target in hedge.targets):
        raise ConfigError(
            f"TurnEngine(hedge=...): every target is the primary's own request (model "
            f"{shown(served, 100)} on the engine's client), so no hedge could ever be sent: name "
            "another "
            "model, or another client"
        )


def _check_arguments(
    arguments: dict[str, object],
) -> tuple[tuple[object, ...], tuple[object, ...], tuple[object, ...]]:
    """Every argument of :class:`TurnEngine` of the right type, and the options that could
    not act refused; a ConfigError names the argument (``TurnEngine(<name>=...)``).

    Returns the ``tools``, ``observers`` and ``contributors`` as the tuples that were checked
    (an iterator given for one of them is used up by the check).
    """
    for name, expected, where, what, optional in _INSTANCES:
        value = arguments[name]
        if value is not None or not optional:  # (most are left unset)
            check_instance(value, expected, where, what, optional=optional)
    _check_text_streamer(arguments["text_streamer"], "TurnEngine(text_streamer=...)")
    _check_scheduler(arguments["scheduler"], "TurnEngine(scheduler=...)")
    check_bool(arguments["failover"], "TurnEngine(failover=...)")
    check_bool(arguments["keep_thinking"], "TurnEngine(keep_thinking=...)", optional=True)
    # the history is checked (and SDK-style dicts converted) by the session's MessageList
    contributors = check_items(
        arguments["contributors"],
        "TurnEngine(contributors=...)",
        "ContextContributor",
        lambda item, where: check_instance(item, ContextContributor, where, "a ContextContributor"),
    )
    tools = check_items(arguments["tools"], "TurnEngine(tools=...)", "Tool or function")
    observers = check_items(arguments["observers"], "TurnEngine(observers=...)", "Observer")
    options = arguments["request_options"]
    if options is not None:
        check_options(options)
    fallback = cast("FallbackManager | None", arguments["fallback"])
    own = cast("RequestOptions | None", options)
    asked = own.model if own is not None else None
    primary = fallback.primary if fallback is not None else None
    served = primary or asked or getattr(arguments["client"], "model", None)
    if arguments["failover"] and (
        fallback is None or not [name for name in fallback.fallback_models() if name != served]
    ):
        # (a chain holding only the model the engine serves has nothing to fail over to)
        raise ConfigError(
            "TurnEngine(failover=True) needs a fallback chain to fail over to: pass "
            "fallback=FallbackManager(primary, [backup, ...]) with at least one backup "
            "other than the model the engine serves"
        )
    # FallbackManager refuses a backup that is its primary; with no primary the engine's model
    # is the primary, so a chain naming it would trip onto the model that just failed.
    if fallback is not None and primary is None and served in fallback.fallback_models():
        raise ConfigError(
            f"TurnEngine(fallback=...): the chain lists {shown(served, 100)}, the model the "
            "engine serves (FallbackManager(None, ...) keeps the client's model as the "
            "primary): a backup must be another model; take it out of the chain"
        )
    # The primary is the engine's model while the breaker is closed (it overrides the client's,
    # by design); two explicit choices that disagree are refused.
    if primary is not None and asked is not None and asked != primary:
        raise ConfigError(
            f"TurnEngine(fallback=...): the breaker's primary {shown(primary, 100)} and "
            f"request_options.model {shown(asked, 100)} disagree: the primary is the model the "
            "engine serves while the breaker is closed; name the same model in both, or "
            "leave one of them unset"
        )
    return tools, observers, contributors


def prefetch_transport(client: object) -> None:
    """Import the default transport of an HTTP client in a background thread, once per process,
    so the first request does not stop to import aiohttp."""
    global _transport_prefetched
    if _transport_prefetched or not isinstance(client, HttpClient):
        return
    _transport_prefetched = True
    threading.Thread(
        target=importlib.import_module,
        args=("rxturn.transport.aiohttp",),
        name="rxturn-import-transport",
        daemon=True,
    ).start()


_transport_prefetched = "rxturn.transport.aiohttp" in sys.modules


# -- assignments after construction (TurnEngine.__setattr__) ---------------------------------


def _instance(
    name: str, expected: type | tuple[type, ...], what: str, *, optional: bool = True
) -> Callable[[TurnEngine, object], object]:
    """The check of an assigned instance, in the constructor's words (``engine.<name> = ...``)."""
    where = f"engine.{name} = ..."

    def check(engine: TurnEngine, value: object) -> object:
        check_instance(value, expected, where, what, optional=optional)
        return value

    return check


def _assign_options(engine: TurnEngine, value: object) -> object:
    if value is None:
        return RequestOptions()  # as the constructor's default
    if not isinstance(value, RequestOptions):
        raise ConfigError(
            f"engine.request_options = ... must be a RequestOptions or None, got {described(value)}"
        )
    return check_options(value)


def _assign_mode(engine: TurnEngine, value: object) -> object:
    if value not in ("streaming", "non_streaming"):
        raise ConfigError(
            f"engine.mode = ... must be 'streaming' or 'non_streaming', got {shown(value, 100)}"
        )
    _check_hedge(engine.hedge, value)
    return value


def _assign_max_turns(engine: TurnEngine, value: object) -> object:
    if not positive(value, integer=True):
        raise ConfigError(f"engine.max_turns = ... must be an int >= 1, got {shown(value, 100)}")
    return value


def _assign_memory_top_k(engine: TurnEngine, value: object) -> object:
    if not positive(value, integer=True, allow_zero=True):
        raise ConfigError(f"engine.memory_top_k = ... must be an int >= 0, got {shown(value)}")
    return value


def _assign_observers(engine: TurnEngine, value: object) -> object:
    # an ObserverSet as it is (it may be shared); observers as the constructor takes them
    if isinstance(value, ObserverSet):
        return value
    where = "engine.observers = ..."
    items = check_items(value, where, "Observer (or an ObserverSet)")
    observers = ObserverSet()
    for index, observer in enumerate(items):
        observers.add(checked_observer(observer, f"{where}[{index}]"))
    return observers


def _assign_text_streamer(engine: TurnEngine, value: object) -> object:
    _check_text_streamer(value, "engine.text_streamer = ...")
    return value


def _check_scheduler(value: object, where: str) -> None:
    """A scheduler that can time a turn (checked as a type first): a turn is a coroutine, so
    its stream runs on an event loop, and a scheduler that sleeps on the loop's thread or fires
    on other threads never fits (an asyncio one is judged when a turn starts)."""
    if isinstance(value, abc.SchedulerBase):
        check_scheduler(value, where=where, on_loop=True)


def _assign_scheduler(engine: TurnEngine, value: object) -> object:
    _SCHEDULER_TYPE(engine, value)
    _check_scheduler(value, "engine.scheduler = ...")
    return value


def _check_text_streamer(value: object, where: str) -> None:
    """A callable or ``None``; not an async one, whose coroutine would never run (it is
    called synchronously with each fragment)."""
    check_callable(value, where, "a callable", optional=True)


def _assign_failover(engine: TurnEngine, value: object) -> object:
    check_bool(value, "engine.failover = ...")
    return value


def _assign_hedge(engine: TurnEngine, value: object) -> object:
    if value is not None and not isinstance(value, HedgePolicy):
        raise ConfigError(
            f"engine.hedge = ... must be a HedgePolicy or None, got {shown(value, 100)}"
        )
    _check_hedge(value, engine.mode)
    if value is not None:
        _check_hedge_can_act(value, engine.client, engine.served_model())
    return value


_SCHEDULER_TYPE = _instance("scheduler", abc.SchedulerBase, "a reactivex scheduler")

_ASSIGNED: dict[str, Callable[[TurnEngine, object], object]] = {
    **{
        name: _instance(name, expected, what, optional=name != "client")
        for name, expected, what in _INSTANCE_TYPES
        if name != "request_options"
    },
    "request_options": _assign_options,
    "mode": _assign_mode,
    "max_turns": _assign_max_turns,
    "memory_top_k": _assign_memory_top_k,
    "text_streamer": _assign_text_streamer,
    "observers": _assign_observers,
    "scheduler": _assign_scheduler,
    "failover": _assign_failover,
    "hedge": _assign_hedge,
    "tools": _instance(
        "tools", ToolRegistry, "a ToolRegistry (ToolRegistry([...]))", optional=False
    ),
}
