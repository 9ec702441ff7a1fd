"""Turn setup: what one turn sends, before anything is sent.

:class:`TurnSetup` is the part of :class:`~rxturn.engine.TurnEngine` that prepares a turn:
the request (transients first, then the conversation; the system prompt and tools alongside),
the breaker's routed model as a per-request override, the turn's input for ``on_turn_start``
and the audit, the transients (contributors, then memory, then the caller's own), the context
estimate, and the compaction of a deferred turn (docs/behaviour.md §4.1, §4.5).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ...clients._base import ModelClient
from ...messages import Message, Request, RequestOptions, ToolResultPart, content_text
from ...resilience.fallback import FallbackManager
from ..agent.tools import ToolRegistry
from ..context.tokens import ContextEstimate, OverheadCache, TokenCounter, estimate_context
from ..context.window import (
    Calibration,
    Compactor,
    ContextContributor,
    ContextWindow,
    MemoryProvider,
    gather_transients,
    memory_query,
)
from ..observation.observers import ObserverSet
from ..records._results import Session

__all__ = ["TurnSetup"]


class TurnSetup:
    """Request building, routing, transients, the context estimate and compaction."""

    # provided by the engine
    client: ModelClient
    system: str | None
    tools: ToolRegistry
    fallback: FallbackManager | None
    observers: ObserverSet
    request_options: RequestOptions
    session: Session
    counter: TokenCounter
    context_window: ContextWindow | None
    compactor: Compactor
    contributors: list[ContextContributor]
    memory: MemoryProvider | None
    memory_top_k: int
    calibration: Calibration
    last_estimate: ContextEstimate | None
    _overhead: OverheadCache
    _last_served: str | None
    _run_input: str | None

    def served_model(self) -> str:
        raise NotImplementedError

    def build_request(self, transient: Sequence[Message] = ()) -> Request:
        """Transients first, then the conversation; system prompt and tools ride alongside."""
        return Request(
            messages=(*transient, *self.session.history),
            system=self.system,
            tools=self.tools.schemas(),
        )

    def routed_options(self) -> RequestOptions:
        """The request options with the breaker's routed model as a per-request override."""
        routed = self.fallback.routed_model() if self.fallback is not None else None
        if routed is None or routed == self.request_options.model:
            return self.request_options
        return msgspec.structs.replace(self.request_options, model=routed)

    def _turn_input(self) -> str:
        """What the model is being asked this turn (for ``on_turn_start`` and the audit)."""
        run = self.session.audit.current_run
        if self._run_input is not None and not run.turns:
            return self._run_input
        if not self.session.history:
            return ""
        last = self.session.history[-1]
        text = content_text(last.content)
        if text:
            return text
        return "\n".join(content_text((p,)) for p in last.content if isinstance(p, ToolResultPart))

    def _note_routed_model(self, served: str) -> None:
        if self._last_served is not None and self._last_served != served:
            self.observers.emit("on_model_switched", from_model=self._last_served, to_model=served)
        self._last_served = served

    async def _transients(self, turn: int, query: str, extra: Sequence[Message]) -> list[Message]:
        gathered = await gather_transients(
            self.contributors,
            self.memory,
            turn=turn,
            history=self.session.history,
            query=memory_query(self.session.history) or query,
            top_k=self.memory_top_k,
        )
        return [*gathered, *extra]

    def _estimate(self, transients: Sequence[Message]) -> tuple[ContextEstimate, int]:
        """The context estimate (calibrated when calibration is on) and the raw total.

        Calibration learns from the raw total: fed its own scaled output, its factor would
        chase itself instead of converging.
        """
        estimate = estimate_context(
            self.counter,
            history=self.session.history,
            transients=transients,
            system=self.system,
            tools=self.tools.schemas(),
            overhead_cache=self._overhead,
        )
        raw = estimate.total
        if self.calibration.enabled:
            scaled = self.calibration.scale(self.served_model(), raw)
            estimate = msgspec.structs.replace(estimate, total=scaled)
        self.last_estimate = estimate
        return estimate, raw

    async def _compact(self, estimate: ContextEstimate) -> None:
        """The deferred turn's work: compact, reserving room for this turn's transients."""
        assert self.context_window is not None
        budget = self.context_window.compaction_budget(
            overhead=estimate.overhead, reserved=estimate.transients
        )
        compacted = await self.compactor.compact(
            self.session.history, budget=max(budget, 0), counter=self.counter
        )
        self.session.history[:] = compacted
        after = self.counter.count_messages(compacted) + estimate.overhead + estimate.transients
        self.observers.emit("on_compaction", before_tokens=estimate.total, after_tokens=after)
