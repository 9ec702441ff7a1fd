"""Recording a turn's outcome: the glue between the LLM turn and the model breaker.

This is docs/behaviour.md §4.2 in code, kept apart from the engine because the
order of its steps *is* the behaviour:

success — capture the serving model **before** touching the breaker; ``record_success`` (which
during a recovery probe may close the breaker); then ``on_stream_success`` with that model.

failure — (1) a cancel short-circuits: breaker untouched, no event; (2) note whether we were
already on a backup; (3) ``record_failure`` as RATE_LIMIT for a :class:`RateLimitEscalation`,
TRANSIENT otherwise; (4) if that tripped the breaker and a backup exists, ``on_fallback``;
(5) if a backup was serving and failed too, it takes a strike (routing advances once it has
used its strikes); (6) ``on_stream_failure``. The caller then re-raises the original error.

Same-turn failover (``routed`` false): a leg on a backup the breaker did not route the turn to
leaves the breaker's counters alone — they judge the routed model — and its success is not one
for the breaker either; its failure costs that backup a strike, and ``on_stream_failure`` and
``on_stream_success`` fire with the model that failed or served, as always.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import Cancelled
from ...messages import Usage
from ...resilience.fallback import FallbackManager
from ...resilience.verdicts import is_cancel
from ..observation.observers import ObserverSet
from ..records._results import TurnResult

__all__ = ["emit_turn_end", "record_turn_failure", "record_turn_success", "turn_end_error"]


def record_turn_success(
    fallback: FallbackManager | None,
    observers: ObserverSet,
    *,
    turn: int,
    served: str,
    usage: Usage | None,
    routed: bool = True,
) -> None:
    if fallback is not None and routed:
        fallback.record_success()
    if not (observers.listening and observers.interested("on_stream_success")):
        return
    observers.emit(
        "on_stream_success",
        turn=turn,
        model=served,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
    )


def record_turn_failure(
    fallback: FallbackManager | None,
    observers: ObserverSet,
    *,
    turn: int,
    served: str,
    error: BaseException,
    routed: bool = True,
) -> None:
    if isinstance(error, Cancelled):
        return
    if fallback is not None:
        if routed:
            outcome = fallback.record_turn_failure(error, served=served)
            if outcome is not None and outcome.fallback_to is not None:
                observers.emit("on_fallback", from_model=served, to_model=outcome.fallback_to)
        else:
            fallback.record_failover_failure(error, served=served)
    observers.emit("on_stream_failure", turn=turn, model=served, error=error)


def emit_turn_end(
    observers: ObserverSet,
    now: Callable[[], float],
    result: TurnResult,
    started: float,
    error: BaseException | None = None,
) -> None:
    """``on_turn_end`` of a served turn (after its tool phase, when it asked for tools; with
    ``error``, the one that ended that phase: a cancel reads ``"cancelled"``, as a turn's)."""
    if not (observers.listening and observers.interested("on_turn_end")):
        return
    observers.emit(
        "on_turn_end",
        turn=result.turn,
        success=error is None,
        error=None if error is None else turn_end_error(error),
        duration_ms=(now() - started) * 1000,
        input_tokens=result.usage.input_tokens if result.usage else 0,
        output_tokens=result.usage.output_tokens if result.usage else 0,
    )


def turn_end_error(error: BaseException) -> str:
    """``on_turn_end``'s ``error`` for a turn ended by ``error``: ``"cancelled"`` for a cancel,
    else the error's text (its class name when it has none)."""
    return "cancelled" if is_cancel(error) else (str(error) or type(error).__name__)
