"""The attempt's shadow guard: accept an attempt's events only if the fold accepts them.

Theory of operation. Every provider event is folded into a *shadow* state before it goes on,
so the handler knows what a consumer's fold will know, at the same event:

- an event the fold rejects (a closed tool block with invalid JSON, a lane event before
  ``MessageStart``) fails the attempt with the fold's typed error, and that event is **not**
  forwarded: a consumer never sees a half-applied reply;
- a stream that completes without ``MessageStop`` is truncated, whatever it carried
  (:meth:`ShadowGuard.truncated`);
- the shadow answers ``has_partial_data`` and the usage the attempt reported.

The shadow is the fold itself, run from :data:`~rxturn.fold.INITIAL_STATE` over the attempt's
events (:func:`~rxturn.fold.fold_events` for a batch, :func:`~rxturn.fold.fold` for one event),
so every verdict is the fold's, at the same event, and the shadow is **exact**: it is the
state a consumer's fold of the attempt's accepted events reaches (without kept thinking). The
engine takes its reply from it rather than folding every event a second time
(:mod:`rxturn.engine.fanout._turn_stream`). A batch is folded in one call, a run of deltas into
the hot lane appended straight to the log; when one of its events is rejected, the batch is
folded again event by event from where it started (the fold is pure) to find how many came
before it (:attr:`ShadowGuard.accepted`): those go on as a shorter batch ahead of the error,
and the shadow is the state after them. An empty batch (a client of your own may send one for
a chunk that decoded to nothing) is no event: its verdict is :data:`EMPTY`, nothing changes and
nothing is to be forwarded. This is the one place that says so: the callers forward what the
verdict says, and the check costs them nothing extra (it is made here instead of before the
call).

State is data: one :class:`ShadowGuard` per turn, :meth:`~ShadowGuard.reset` per attempt. The
verdicts are return values (the fold's exception, ``None``, or :data:`EMPTY`): nothing is
raised, nothing is allocated per event but the fold's own states.
"""

from __future__ import annotations

import enum
from typing import Final, get_args

from .._arguments import type_named
from ..errors import ConfigError, TruncatedStreamError
from ..events import StreamEvent
from ..fold import INITIAL_STATE, TurnState, fold, fold_events

__all__ = ["EMPTY", "BatchVerdict", "ShadowGuard", "truncation"]


class BatchVerdict(enum.Enum):
    """The verdict on a batch that is neither accepted nor rejected (the type of :data:`EMPTY`)."""

    EMPTY = "empty"


#: :meth:`ShadowGuard.batch`'s verdict on an empty batch: no event, nothing to forward.
EMPTY: Final = BatchVerdict.EMPTY


def truncation(stopped: bool, events: int) -> TruncatedStreamError | None:
    """The verdict on a stream that completed after ``events`` events: ``None`` when it had
    reached ``MessageStop`` (``stopped``), else the truncation. The shadow guard asks it for an
    attempt, the hedge race for a racer that ends before the race is decided."""
    return None if stopped else TruncatedStreamError(events)


class ShadowGuard:
    """The shadow fold of the attempt in flight (see the module docstring).

    Attributes:
        shadow: the fold's state after the attempt's accepted events (exact).
        accepted: after :meth:`batch` rejected an event, how many events of the batch came
            before it (not set when a batch is accepted whole: the caller knows its length).
    """

    __slots__ = ("accepted", "shadow")

    def __init__(self) -> None:
        self.shadow: TurnState = INITIAL_STATE
        self.accepted = 0

    def __repr__(self) -> str:
        shadow = self.shadow
        return f"ShadowGuard(started={shadow.started}, completed={shadow.completed})"

    def reset(self) -> None:
        """A new attempt: the shadow starts from the initial state."""
        self.shadow = INITIAL_STATE

    def event(self, event: StreamEvent) -> Exception | None:
        """The verdict on one event: ``None`` (forward it) or the fold's error (the attempt
        failed here; the event is not forwarded)."""
        try:
            self.shadow = fold(self.shadow, event)
        except Exception as error:  # the fold's verdict
            return _verdict(error, event)
        return None

    def batch(self, batch: list[StreamEvent]) -> Exception | BatchVerdict | None:
        """The verdict on a batch: ``None`` (forward it whole), :data:`EMPTY` (an empty batch:
        no event, forward nothing) or the error of the first event the fold rejects,
        :attr:`accepted` events after the batch's start."""
        if not batch:
            return EMPTY
        before = self.shadow
        try:
            self.shadow = fold_events(batch, before)
        except Exception as error:  # the fold's verdict
            self.accepted, self.shadow = _accepted(before, batch)
            return _verdict(error, batch[self.accepted])
        return None

    def truncated(self, events: int) -> TruncatedStreamError | None:
        """The verdict on the attempt's completion after ``events`` events: ``None`` when the
        shadow saw ``MessageStop``, else the truncation."""
        return truncation(self.shadow.completed, events)


#: The classes a client's stream may emit (``rxturn.events``; a batch is a list of them).
_EVENT_CLASSES: tuple[type, ...] = get_args(StreamEvent)
_EVENT_TYPES = frozenset(_EVENT_CLASSES)
_EVENT_NAMES = ", ".join(cls.__name__ for cls in _EVENT_CLASSES)


def _verdict(error: Exception, event: object) -> Exception:
    """The fold's error for a rejected event, unless the event is no stream event at all: a
    client of your own whose Observable emits ``None``, a str, a dict…, which the fold refuses
    with a bare ``TypeError``. That is the client breaking its contract, which no retry or
    other model mends: a :class:`~rxturn.errors.ConfigError` naming what it emitted. (Only
    the failure path looks; a well-behaved stream costs nothing more.)"""
    if type(event) in _EVENT_TYPES or not isinstance(error, TypeError):
        return error
    what = "None" if event is None else type_named(event)
    return ConfigError(
        f"the client's stream emitted {what}, not a stream event (rxturn.events: "
        f"{_EVENT_NAMES}; a batch is a list of them)"
    )


def _accepted(state: TurnState, batch: list[StreamEvent]) -> tuple[int, TurnState]:
    """How many events of ``batch`` the fold accepts from ``state`` before the first it
    rejects, and the state after them (the batch folded again, one event at a time)."""
    for position, event in enumerate(batch):
        try:
            state = fold(state, event)
        except Exception:  # the event the whole batch's fold rejected
            return position, state
    return len(batch), state
