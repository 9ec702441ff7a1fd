"""The attempt's shadow guard: accept an attempt's events only if the fold accepts them.

Theory of operation. Every provider event is folded into a *shadow* state before it goes on,
so the handler knows what a consumer's fold will know, at the same event:

- an event the fold rejects (a closed tool block with invalid JSON, a lane event before
  ``MessageStart``) fails the attempt with the fold's typed error, and that event is **not**
  forwarded: a consumer never sees a half-applied reply;
- a stream that completes without ``MessageStop`` is truncated, whatever it carried
  (:meth:`ShadowGuard.truncated`);
- the shadow answers ``has_partial_data`` and the usage the attempt reported.

The shadow fold is the only real per-event work of the handler, so runs of deltas are not
folded one by one. Between two structural events the open lanes do not change, so consecutive
deltas with the same index and kind land in the same lane:

- a text delta repeating the lane of the text delta just before it needs no fold: the lane is
  already non-empty, and no verdict depends on its exact text;
- tool-JSON deltas repeating the previous one's lane are collected and folded as one joined
  fragment just before the next other event (the JSON must be exact: it is parsed at the close);
- thinking deltas are never stored by the fold, so once the reply has started they are skipped.

Every verdict is therefore exactly the fold's, at the same event; only the shadow's text is
incomplete (never build the reply from it). A batch gets the same checks event by event
(:meth:`ShadowGuard.batch`); when one is rejected, :attr:`ShadowGuard.accepted` says how many
came before it, which go on as a shorter batch ahead of the error. An empty batch (a client of
your own may send one for a chunk that decoded to nothing) is no event: its verdict is
:data:`EMPTY`, nothing changes and nothing is to be forwarded. This is the one place that says
so: the callers forward what the verdict says, and the check costs them nothing extra (it is
made here instead of before the call).

State is data: one :class:`ShadowGuard` per turn, :meth:`~ShadowGuard.reset` per attempt. The
verdicts are return values (the fold's exception, ``None``, or :data:`EMPTY`): nothing is
raised, nothing is allocated per event but the fold's own states.
"""

from __future__ import annotations

import enum
from typing import Final

from ..errors import TruncatedStreamError
from ..events import Delta, StreamEvent
from ..fold import INITIAL_STATE, TurnState, fold

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
    """The shadow fold of the attempt in flight and its shortcuts (see the module docstring).

    Attributes:
        shadow: the shadow state (exact for every verdict; its text may be incomplete).
        accepted: after :meth:`batch` rejected an event, how many events of the batch came
            before it (not set when a batch is accepted whole: the caller knows its length).
    """

    __slots__ = ("_pending", "_pending_index", "_repeat_index", "_started", "accepted", "shadow")

    def __init__(self) -> None:
        self.shadow: TurnState = INITIAL_STATE
        self.accepted = 0
        self._started = False  # the shadow folded MessageStart: deltas can no longer fail
        self._repeat_index = -1  # lane of the previous event, if a folded non-empty text delta
        self._pending_index = -1  # lane of the collected tool-JSON run, if any
        self._pending: list[str] | None = None  # the run's fragments (None: no run)

    def __repr__(self) -> str:
        return f"ShadowGuard(started={self._started}, completed={self.shadow.completed})"

    def reset(self) -> None:
        """A new attempt: the shadow starts from the initial state."""
        self.shadow = INITIAL_STATE
        self._started = False
        self._repeat_index = self._pending_index = -1
        self._pending = None

    def event(self, event: StreamEvent) -> Exception | None:
        """The verdict on one event: ``None`` (forward it) or the fold's error (the attempt
        failed here; the event is not forwarded)."""
        if type(event) is Delta and self._started:
            kind = event.kind
            if kind == "text":
                if event.index == self._repeat_index:
                    return None
            elif kind == "tool_json":
                if event.index == self._pending_index:
                    self._pending.append(event.text)  # pyright: ignore[reportOptionalMemberAccess]
                    return None
            else:  # thinking: never stored
                return None
        try:
            self._accept(event)
        except Exception as error:  # the fold's verdict
            return error
        return None

    def batch(self, batch: list[StreamEvent]) -> Exception | BatchVerdict | None:
        """The verdict on a batch: ``None`` (forward it whole), :data:`EMPTY` (an empty batch:
        no event, forward nothing) or the error of the first event the fold rejects,
        :attr:`accepted` events after the batch's start."""
        if not batch:
            return EMPTY
        position = 0
        delta = Delta
        # :meth:`event`'s shortcuts, written out: this loop runs per event. What they read is
        # held in locals, read again after each event the shadow folds (only that changes it).
        started, repeat, pending = self._started, self._repeat_index, self._pending_index
        try:
            for position, event in enumerate(batch):  # noqa: B007 - kept for the error
                if type(event) is delta and started:
                    kind = event.kind
                    if kind == "text":
                        if event.index == repeat:
                            continue
                    elif kind == "tool_json":
                        if event.index == pending:
                            self._pending.append(event.text)  # pyright: ignore[reportOptionalMemberAccess]
                            continue
                    else:  # thinking: never stored
                        continue
                self._accept(event)
                started, repeat, pending = self._started, self._repeat_index, self._pending_index
        except Exception as error:  # the fold's verdict
            self.accepted = position
            return error
        return None

    def truncated(self, events: int) -> TruncatedStreamError | None:
        """The verdict on the attempt's completion after ``events`` events: ``None`` when the
        shadow saw ``MessageStop``, else the truncation."""
        return truncation(self.shadow.completed, events)

    def _accept(self, event: StreamEvent) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            if pending:
                self.shadow = fold(
                    self.shadow, Delta(self._pending_index, "".join(pending), "tool_json")
                )
        self.shadow = state = fold(self.shadow, event)
        self._started = state.started
        self._repeat_index = self._pending_index = -1
        if type(event) is Delta:
            if event.kind == "text":
                if event.text:
                    self._repeat_index = event.index
            elif event.kind == "tool_json":
                self._pending_index = event.index
                self._pending = []
