"""The branches every handler event reaches before the fold, in the routing table's order."""

from __future__ import annotations

import logging
from collections.abc import Callable

from reactivex.subject import Subject

from ..events import AttemptReset, Delta, Fallback, HandlerEvent
from ._results import AttemptStats, TextStreamer
from .observers import ObserverSet, report_observer_error

__all__ = ["fan_out"]

log = logging.getLogger("rxturn.engine")


def fan_out(
    turn: int,
    stats: AttemptStats,
    streamer: TextStreamer | None,
    observers: ObserverSet,
    events: Subject[HandlerEvent] | None,
) -> tuple[Callable[[list[HandlerEvent]], None], Callable[[], None]]:
    """The branches every handler event reaches before the fold (seed routing table).

    Text deltas go to the ``text_streamer`` first, then to ``on_text_delta``; thinking
    deltas to ``on_thinking_delta`` only; ``AttemptReset`` to ``on_attempt_reset`` (so a UI
    can retract); every event to ``engine.events`` when someone listens. Each branch is
    isolated: a raising callback is logged and the turn goes on. Returns the tap and a
    ``stop`` for when the turn ends: a callback that cancels the turn mid-batch sees no
    more of that batch, exactly as one event at a time.

    This is the ``share`` of SPEC §1 as one tap instead of a ``publish()`` Subject with a
    subscriber per branch: the same branches in the same order, event by event, for one Rx
    emission per batch instead of a Subject hop and a subscriber per branch per event
    (benchmarks/README.md).
    """
    thinking_delta = observers.thinking_delta
    delta_cls = Delta
    # Set when the turn has ended (a callback cancelled it): the rest of a batch then
    # reaches nobody, as it would have reached nobody one event at a time.
    stopped = False

    def stop() -> None:
        nonlocal stopped
        stopped = True

    def tap(batch: list[HandlerEvent]) -> None:
        for event in batch:
            if stopped:
                return
            if type(event) is delta_cls:
                kind = event.kind
                if kind == "text":
                    text = event.text
                    if streamer is not None:
                        try:
                            streamer(text)
                        except Exception:
                            log.exception("text_streamer raised; the turn goes on")
                    # read per delta: a callback may add or remove an observer mid-batch
                    single = observers.text_single
                    if single is not None:  # the common case: no loop (~15 % of this)
                        try:
                            single[1](turn=turn, delta=text)
                        except Exception:
                            report_observer_error(single[0], "on_text_delta")
                    else:
                        for observer, method in observers.targets("on_text_delta"):
                            try:
                                method(turn=turn, delta=text)
                            except Exception:
                                report_observer_error(observer, "on_text_delta")
                elif kind == "thinking":
                    thinking_delta(turn, event.text)
            elif type(event) is AttemptReset or type(event) is Fallback:
                stats.note(event)
                if type(event) is AttemptReset:
                    observers.emit("on_attempt_reset", turn=turn, reset=event)
            if events is not None:
                try:
                    events.on_next(event)
                except Exception:
                    log.exception("an engine.events subscriber raised; the turn goes on")

    return tap, stop
