"""Turn setup: what one turn sends, before anything is sent.

:class:`TurnSetup` is the collaborator of :class:`~rxturn.engine.TurnEngine` (one per engine)
that prepares a turn: the request (transients first, then the conversation; the system prompt
and tools alongside),
the breaker's routed model as a per-request override, the turn's input for ``on_turn_start``
and the audit, the transients (contributors, then memory, then the caller's own), the context
estimate, and the compaction of a deferred turn (docs/behaviour.md §4.1, §4.5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import msgspec

from ...clients._base import ModelClient
from ...messages import Message, Request, RequestOptions, ToolResultPart, ToolSchema, content_text
from ...resilience.fallback import FallbackManager
from ..context.tokens import ContextEstimate, OverheadCache, TokenCounter, context_estimate
from ..context.window import (
    Compactor,
    ContextContributor,
    ContextWindow,
    MemoryProvider,
    gather_transients,
    memory_query,
)
from ..observation.observers import ObserverSet
from ..records._results import Session

__all__ = ["SetupHost", "TurnSetup", "resolve_host"]


#: The tool choices that force no tool call (``None``: the provider's default, ``auto``).
_UNFORCED = frozenset({None, "auto", "none"})


class SetupHost(Protocol):
    """What turn setup reads (and, for ``last_estimate``, writes) on its engine."""

    client: ModelClient
    system: str | None
    fallback: FallbackManager | None
    observers: ObserverSet
    request_options: RequestOptions
    session: Session
    counter: TokenCounter
    context_window: ContextWindow | None
    compactor: Compactor

    @property
    def contributors(self) -> list[ContextContributor]: ...

    memory: MemoryProvider | None
    memory_top_k: int
    last_estimate: ContextEstimate | None

    def tool_schemas(self) -> tuple[ToolSchema, ...] | None: ...
    def has_contributors(self) -> bool: ...
    def calibrated(self, estimate: int) -> int: ...


_Host = TypeVar("_Host")


def resolve_host(live: Callable[[], _Host | None] | None, host: _Host) -> _Host:
    """The engine itself for the length of one call: ``host`` is a weak proxy (no reference
    cycle through the engine), whose indirection costs on every attribute it reads; ``live``
    (a weak reference to the same engine) resolves it once, to a local that the call drops
    when it returns. An engine already gone gives ``host``, whose next read says so."""
    if live is not None:
        engine = live()
        if engine is not None:
            return engine
    return host


class TurnSetup:
    """Request building, routing, transients, the context estimate and compaction.

    A method's ``host`` is the engine when its caller has resolved it already (a turn does, once:
    :meth:`~rxturn.engine.turn._calls.TurnCalls.live_host`); without it the method resolves it.

    Attributes:
        last_served: the model the previous request went to (``on_model_switched`` fires when
            the next one differs).
    """

    __slots__ = ("_live", "host", "last_served", "overhead")

    def __init__(self, host: SetupHost, live: Callable[[], SetupHost | None] | None = None) -> None:
        self.host = host
        self._live = live
        self.last_served: str | None = None
        self.overhead: OverheadCache | None = None  # made by the first estimate

    def live_host(self) -> SetupHost:
        """The engine itself for the length of one call (:func:`resolve_host`)."""
        return resolve_host(self._live, self.host)

    def served_model(self) -> str:
        """The model the next request goes to: routed backup, options override, or client's."""
        host = self.live_host()
        routed = host.fallback.routed_model() if host.fallback is not None else None
        return routed or host.request_options.model or host.client.model

    def build_request(
        self, transient: Sequence[Message] = (), *, host: SetupHost | None = None
    ) -> Request:
        """Transients first, then the conversation; system prompt and tools ride alongside."""
        if host is None:
            host = self.live_host()
        return Request(
            messages=(*transient, *host.session.history),
            system=host.system,
            tools=host.tool_schemas(),
        )

    def routed_options(
        self, *, host: SetupHost | None = None, tools_ran: bool = False
    ) -> RequestOptions:
        """The request options with the breaker's routed model as a per-request override.

        ``tools_ran``: a turn of a run after its tool phase. A ``tool_choice`` that forces a
        tool (``any``, ``required``, a tool's name) forced the run's first turn; this one goes
        with ``auto``: a model that obeys a forced choice calls a tool on every turn, and the
        run could only end at ``max_turns``, with no answer.
        """
        if host is None:
            host = self.live_host()
        fallback = host.fallback
        routed = fallback.routed_model() if fallback is not None else None
        options = host.request_options
        if tools_ran and options.tool_choice not in _UNFORCED:
            options = msgspec.structs.replace(options, tool_choice="auto")
        if routed is None or routed == options.model:
            return options
        return msgspec.structs.replace(options, model=routed)

    def turn_input(self, run_input: str | None, *, host: SetupHost | None = None) -> str:
        """What the model is being asked this turn (for ``on_turn_start`` and the audit):
        ``run_input`` (the prompt of the run in progress) on a run's first turn."""
        if host is None:
            host = self.live_host()
        session = host.session
        if run_input is not None and not session.audit.current_run.turns:
            return run_input
        history = session.history
        if not history:
            return ""
        last = history[-1]
        text = content_text(last.content)
        if text:
            return text
        return "\n".join(content_text((p,)) for p in last.content if isinstance(p, ToolResultPart))

    def note_routed_model(self, served: str) -> None:
        if self.last_served is not None and self.last_served != served:
            self.host.observers.emit(
                "on_model_switched", from_model=self.last_served, to_model=served
            )
        self.last_served = served

    def gathers(self, *, host: SetupHost | None = None) -> bool:
        """Whether a turn has transients to gather: contributors, or a memory to ask (without
        either, a turn's transients are its ``extra`` messages, and :meth:`transients` need
        not run)."""
        if host is None:
            host = self.live_host()
        return host.has_contributors() or (host.memory is not None and host.memory_top_k > 0)

    async def transients(self, turn: int, query: str, extra: Sequence[Message]) -> list[Message]:
        gathered = await gather_transients(
            self.host.contributors,
            self.host.memory,
            turn=turn,
            history=self.host.session.history,
            query=memory_query(self.host.session.history) or query,
            top_k=self.host.memory_top_k,
        )
        return [*gathered, *extra]

    def estimate(
        self, transients: Sequence[Message], *, host: SetupHost | None = None
    ) -> tuple[ContextEstimate, int]:
        """The context estimate (calibrated when calibration is on) and the raw total.

        Calibration learns from the raw total: fed its own scaled output, its factor would
        chase itself instead of converging.
        """
        if host is None:
            host = self.live_host()
        overhead = self.overhead
        if overhead is None:
            overhead = self.overhead = OverheadCache()
        estimate = context_estimate(
            host.counter,
            history=host.session.history,
            transients=transients,
            system=host.system,
            tools=host.tool_schemas(),
            overhead_cache=overhead,
        )
        raw = estimate.total
        scaled = host.calibrated(raw)
        if scaled != raw:
            estimate = msgspec.structs.replace(estimate, total=scaled)
        host.last_estimate = estimate
        return estimate, raw

    async def compact(self, estimate: ContextEstimate) -> None:
        """The deferred turn's work: compact, reserving room for this turn's transients."""
        assert self.host.context_window is not None
        budget = self.host.context_window.compaction_budget(
            overhead=estimate.overhead, reserved=estimate.transients
        )
        compacted = await self.host.compactor.compact(
            self.host.session.history, budget=max(budget, 0), counter=self.host.counter
        )
        self.host.session.history[:] = compacted
        after = (
            self.host.counter.count_messages(compacted) + estimate.overhead + estimate.transients
        )
        self.host.observers.emit("on_compaction", before_tokens=estimate.total, after_tokens=after)
