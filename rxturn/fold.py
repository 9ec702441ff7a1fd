"""The fold: stream events in, one assistant message out, as a pure ``(state, event) -> state``.

``ops.scan(fold, INITIAL_STATE)`` over a turn's events yields a :class:`TurnState` after every
event; ``state.message()`` builds the reply. The rules (docs/behaviour.md §1, and §6 for the
message):

- ``MessageStart`` comes first and sets ``id`` / ``model`` (a repeated one is ignored, as the
  official SDK ignores it). A lane event or ``MessageDelta`` before it is a
  :class:`~rxturn.errors.StreamProtocolError`; ``Ping`` is allowed anywhere and changes nothing.
- ``PartStart`` opens a lane whose kind never changes; a tool lane latches its call id and name.
- ``Delta`` goes to the oldest open lane with the same index and the matching kind (text → text,
  tool_json → tool_call, thinking → thinking); no such lane → dropped silently. Thinking is
  not stored unless the state keeps thinking (below): it reaches observers, not the message.
  A ``refusal`` lane (OpenAI) becomes a :class:`~rxturn.messages.RefusalPart` when non-empty.
- Kept thinking (``initial_state(keep_thinking=True)``; docs/wire-formats.md): a thinking lane
  becomes a :class:`~rxturn.messages.ThinkingPart` in block order — its thinking deltas joined,
  the last ``signature`` delta as its signature (``None`` if none came), the ``PartStart`` id —
  or, once a ``redacted_thinking`` delta arrived, a
  :class:`~rxturn.messages.RedactedThinkingPart` with that data. This is how the anthropic SDK
  accumulates a block: text appended, signature replaced. Without it, those deltas are dropped
  and the message is exactly what it always was. ``AttemptReset`` keeps the option.
- ``PartStop(i)`` closes the oldest open lane with index ``i``, ``PartStop(None)`` the oldest open
  lane; with nothing to close it does nothing. Closing a text lane keeps its text if non-empty;
  closing a tool lane with a name parses its JSON (no JSON → ``{}``; invalid JSON →
  :class:`~rxturn.errors.InvalidToolInputError`, raised by the ``PartStop`` that closed it).
- ``MessageDelta`` replaces ``usage`` (even with ``None``) and sets ``stop_reason`` when it is
  recognised (``StopReason.parse``); an unrecognised or missing reason keeps the previous one.
- ``MessageStop`` marks the reply complete. A tool lane still open then (a ``max_tokens`` stop)
  is a truncated call: ``message()`` keeps it with its input parsed as far as it goes, exactly as
  the anthropic SDK's ``jiter.from_json(buf, partial_mode=True)`` does (see
  :mod:`rxturn.wire._partial_json`). If even that fails, ``MessageStop`` raises
  ``InvalidToolInputError`` so the attempt fails where the SDK would have failed too.

Why the state looks the way it does. A scan hands every intermediate state downstream (to
``replay``, ``share``, observers), so ``fold`` must never change a state someone else holds; and it
runs once per event, so it must be O(1) amortised without re-copying text. Both hold because all
growing data lives in *append-only shared logs*: a state holds ``(log, n)`` and sees only
``log[:n]``. Appending when ``len(log) == n`` extends the list in place (no state holding a shorter
``n`` can notice); when another continuation has already appended (``len(log) > n``), the prefix is
copied first. Three logs exist: the text / tool-JSON fragments (plain strings), the *runs* that say
which lane owns them (one ``(first fragment, lane)`` entry each time the receiving lane changes,
so once per lane unless lanes interleave; the first run is implied until a second one starts, so
a reply whose text is one lane never makes this log), and the finished parts. Open lanes sit in
a small tuple. Fragments are joined only when a lane closes or ``message()`` runs, so text never
grows by ``+=``. A delta allocates one three-field ``TurnState`` and appends one string;
everything else sits in a shared ``Head`` that only the rarer events replace (see
benchmarks/bench_replay.py).

States compare by identity (``eq=False``): two states are equivalent when their ``message()``
and public fields are; the logs may hold data beyond what a state can see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from ._arguments import check_bool, shown
from ._fold_state import (
    Head,
    Lane,
    TurnState,
    append_log,
    closed_lane_part,
    fresh_log,
    open_lane_part,
)
from .errors import StreamProtocolError
from .events import (
    AttemptReset,
    Delta,
    Fallback,
    HandlerEvent,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
    Ping,
    StreamEvent,
)
from .messages import StopReason

__all__ = [
    "INITIAL_STATE",
    "TurnState",
    "fold",
    "fold_batch",
    "fold_events",
    "fold_handler",
    "fold_item",
    "initial_state",
]

# TurnState's fields are private to the fold (this module and rxturn._fold_state), not to the
# class: the fold functions below read them directly because a property or method call per event
# would cost the hot path.
# pyright: reportPrivateUsage=false

_replace = msgspec.structs.replace

#: The state before any event.
INITIAL_STATE: Final = TurnState()
_INITIAL_KEEPING: Final = TurnState(Head(keep_thinking=True))


def initial_state(*, keep_thinking: bool = False) -> TurnState:
    """The state before any event; with ``keep_thinking`` the fold keeps thinking blocks in the
    message (module docstring), which a tool loop with extended thinking needs.

    Examples:
        >>> initial_state() is INITIAL_STATE
        True
        >>> initial_state(keep_thinking=True).keep_thinking
        True

    Raises:
        ConfigError: ``keep_thinking`` is not a bool.
    """
    if keep_thinking is True:
        return _INITIAL_KEEPING
    if keep_thinking is not False:
        check_bool(keep_thinking, "initial_state(keep_thinking=...)")
    return INITIAL_STATE


def _not_a_state(state: object) -> TypeError:
    """The error for a ``state`` that is not a :class:`TurnState`: most often a scan without
    its seed, which hands the fold its first item as the state."""
    return TypeError(
        "fold: the state must be a TurnState (seed the scan with INITIAL_STATE: "
        f"ops.scan(fold, INITIAL_STATE)), got {type(state).__name__}"
    )


def fold(state: TurnState, event: StreamEvent) -> TurnState:
    """Fold one stream event into ``state``; returns a new state (``state`` is never changed).

    Args:
        state: the state so far (start from :data:`INITIAL_STATE`).
        event: the next provider event.

    Returns:
        The state after ``event`` (``state`` itself when the event changes nothing).

    Raises:
        StreamProtocolError: a lane event or ``MessageDelta`` before ``MessageStart``.
        InvalidToolInputError: a ``PartStop`` closed a tool lane whose JSON does not parse, or a
            ``MessageStop`` left a tool lane open whose JSON does not parse even partially.
        TypeError: ``state`` is not a :class:`TurnState` (a scan without its seed), or
            ``event`` is not a stream event.

    Examples:
        >>> from rxturn.events import MessageStart, PartStart, Delta, PartStop, MessageStop
        >>> fold_events([MessageStart(id="m", model="x"), PartStart(0), Delta(0, "Hi"),
        ...              PartStop(0), MessageStop()]).message().text
        'Hi'
    """
    cls = type(event)
    try:
        head = state._head
    except AttributeError:
        raise _not_a_state(state) from None
    if cls is Delta:  # the hot path, inlined: nearly every event of a long reply is a delta
        delta: Delta = event  # pyright: ignore[reportAssignmentType]  # narrowed by the type check above
        hot = head.hot
        if hot is not None and hot.index == delta.index and hot.accepts == delta.kind:
            # the common case: the lane that took the previous fragment takes this one too
            # (a hot lane implies message_start was seen and the kinds match): no lane scan
            text = delta.text
            if not text:
                return state
            frags, n = state._frags, state._nfrags
            if n and len(frags) == n:  # pyright: ignore[reportArgumentType]
                frags.append(text)  # pyright: ignore[reportOptionalMemberAccess]
            else:
                frags = fresh_log(frags, n, text)
            return TurnState(head, frags, n + 1)
        if not head.started:
            raise StreamProtocolError("delta before message_start")
        text = delta.text
        kind = delta.kind
        if kind == "text":
            lane_kind = "text"
        elif kind == "tool_json":
            lane_kind = "tool_call"
        elif kind == "refusal":
            lane_kind = "refusal"
        elif not head.keep_thinking:
            return state  # thinking: observers see it, the message never does
        elif kind == "thinking":
            lane_kind = "thinking"
        else:
            return _thinking_extra(state, delta)
        if not text:
            return state
        index = delta.index
        for lane in head.open:
            if lane.index == index and lane.kind == lane_kind:
                frags, n = state._frags, state._nfrags
                if lane.serial != head.owner:  # another lane's turn: start a new run
                    if head.owner < 0:
                        # the reply's first fragment: its run (from fragment 0) is implied, not
                        # logged; a reply whose text is one lane never makes the runs log
                        head = _replace(head, owner=lane.serial, hot=lane)
                    else:
                        runs, nruns = head.runs, head.nruns
                        if not nruns:  # a second run starts: the implied first one is written
                            runs, nruns = [(0, head.owner)], 1
                        runs = append_log(runs, nruns, (n, lane.serial))
                        head = _replace(
                            head, runs=runs, nruns=nruns + 1, owner=lane.serial, hot=lane
                        )
                else:
                    head = _replace(head, hot=lane)
                if n and len(frags) == n:  # pyright: ignore[reportArgumentType]
                    frags.append(text)  # pyright: ignore[reportOptionalMemberAccess]
                else:
                    frags = fresh_log(frags, n, text)
                return TurnState(head, frags, n + 1)
        return state  # no matching open lane: dropped (docs/behaviour.md §1 rule 3)
    if cls is Ping:
        return state
    # the rarer events: ``type(event)`` again, so that the checker narrows ``event`` too
    if type(event) is PartStart:
        return _part_start(state, event)
    if type(event) is PartStop:
        return _part_stop(state, event)
    if type(event) is MessageDelta:
        return _message_delta(state, event)
    if type(event) is MessageStart:
        if state._head.started:
            return state
        head = _replace(state._head, id=event.id, model=event.model, started=True)
        return TurnState(head, state._frags, state._nfrags)
    if cls is MessageStop:
        return _message_stop(state)
    raise TypeError(f"fold: not a stream event: {shown(event, 100)}")


def fold_handler(state: TurnState, event: HandlerEvent) -> TurnState:
    """Fold a stream-handler item: ``AttemptReset`` starts over, ``Fallback`` adopts its message.

    Examples:
        >>> fold_handler(fold_events([MessageStart(id="m")]),
        ...              AttemptReset(attempt=2, reason="x")) is INITIAL_STATE
        True
    """
    cls = type(event)
    if cls is not AttemptReset and cls is not Fallback:
        return fold(state, event)  # pyright: ignore[reportArgumentType]
    try:
        keep_thinking = state._head.keep_thinking
    except AttributeError:
        raise _not_a_state(state) from None
    if cls is AttemptReset:
        return _INITIAL_KEEPING if keep_thinking else INITIAL_STATE
    fallback: Fallback = event  # pyright: ignore[reportAssignmentType]  # narrowed by the type check above
    message = fallback.message
    head = Head(
        id=message.id,
        model=message.model,
        stop_reason=message.stop_reason or StopReason.END_TURN,
        usage=message.usage,
        started=True,
        completed=True,
        rescued=message,
        keep_thinking=keep_thinking,
    )
    return TurnState(head)


def fold_batch(state: TurnState, batch: Iterable[HandlerEvent]) -> TurnState:
    """Fold a batch of handler items at once: the state ``fold_handler`` reaches one by one.

    A batch is what one network chunk decoded to (:data:`rxturn.events.EventBatch`). Folding it
    in one call is what lets a long reply cost close to a bare decode loop: a run of deltas into
    the hot lane appends its fragments straight to the log, and only the batch's end (or its
    next structural event) builds a ``TurnState``. The intermediate states are never seen, so
    nothing about purity changes: ``state`` is untouched, and the logs are append-only as ever.

    Raises:
        the errors of :func:`fold` for the first event that fails; no state is returned then.

    Examples:
        >>> fold_batch(INITIAL_STATE, [MessageStart(id="m"), PartStart(0), Delta(0, "Hi"),
        ...                            Delta(0, "!"), MessageStop()]).message().text
        'Hi!'
    """
    return _fold_run(state, batch, fold_handler)


def _fold_run(
    state: TurnState, items: Iterable[HandlerEvent], step: Callable[[TurnState, Any], TurnState]
) -> TurnState:
    """``step`` over ``items`` from ``state``, a run of deltas into the hot lane appended
    straight to the log (what :func:`fold_batch` and :func:`fold_events` share: ``step`` is
    :func:`fold_handler` or :func:`fold`, which any other item goes to)."""
    try:
        head = state._head
    except AttributeError:
        raise _not_a_state(state) from None
    frags, n = state._frags, state._nfrags
    built = n  # ``state`` sees this many fragments; more means it must be rebuilt
    hot = head.hot
    index, accepts = (hot.index, hot.accepts) if hot is not None else (-1, None)
    # appending in place is safe while this state is the log's tip (module docstring); while
    # ``append`` is bound the fragments so far are the whole of ``frags``, so ``n`` is read
    # back from its length when the run ends (no count kept per delta)
    append = frags.append if n and len(frags) == n else None  # pyright: ignore[reportArgumentType, reportOptionalMemberAccess]
    delta_cls = Delta
    for event in items:
        if type(event) is delta_cls and event.index == index and event.kind == accepts:
            text = event.text
            if text:
                if append is None:
                    frags = fresh_log(frags, n, text)
                    append = frags.append
                else:
                    append(text)
            continue
        if append is not None:
            n = len(frags)  # pyright: ignore[reportArgumentType]
        if n != built:
            state = TurnState(head, frags, n)
        state = step(state, event)
        head = state._head
        frags, n = state._frags, state._nfrags
        built = n
        hot = head.hot
        index, accepts = (hot.index, hot.accepts) if hot is not None else (-1, None)
        append = frags.append if n and len(frags) == n else None  # pyright: ignore[reportArgumentType, reportOptionalMemberAccess]
    if append is not None:
        n = len(frags)  # pyright: ignore[reportArgumentType]
    return TurnState(head, frags, n) if n != built else state


def fold_item(state: TurnState, item: HandlerEvent | list[HandlerEvent]) -> TurnState:
    """Fold one item of a handler stream that may carry batches: a list goes to
    :func:`fold_batch`, a single event to :func:`fold_handler`."""
    if isinstance(item, list):
        return fold_batch(state, item)
    return fold_handler(state, item)


def fold_events(
    events: Iterable[StreamEvent],
    state: TurnState | None = None,
    *,
    keep_thinking: bool = False,
) -> TurnState:
    """Fold a whole sequence of events from ``state`` (by default
    ``initial_state(keep_thinking=keep_thinking)``): the state :func:`fold` reaches one by one,
    a run of deltas into the hot lane appended at once as :func:`fold_batch` does.

    Raises:
        the errors of :func:`fold` for the first event that fails; no state is returned then.
    """
    if state is None:
        state = initial_state(keep_thinking=keep_thinking)
    return _fold_run(state, events, fold)


# -- the rarer events ----------------------------------------------------------------------------


def _started_head(state: TurnState, what: str) -> Head:
    head = state._head
    if not head.started:
        raise StreamProtocolError(f"{what} before message_start")
    return head


def _part_start(state: TurnState, event: PartStart) -> TurnState:
    head = _started_head(state, "part_start")
    if event.kind == "tool_call":
        lane = Lane(
            head.lanes, event.index, "tool_call", event.id, event.name, state._nfrags, "tool_json"
        )
    elif event.kind == "text" or event.kind == "refusal":
        lane = Lane(head.lanes, event.index, event.kind, "", "", state._nfrags, event.kind)
    else:  # thinking enters the message only when kept
        accepts = "thinking" if head.keep_thinking else ""
        lane = Lane(head.lanes, event.index, event.kind, event.id, "", state._nfrags, accepts)
    if head.owner < 0 and lane.accepts:
        # no fragment yet in this reply, so every lane opened so far takes none (a lane that
        # takes some becomes the owner at its start, here): this lane is the first open match
        # for its deltas. It is hot (and the owner of the fragments to come) from now, so its
        # first delta takes the short way as the rest do; the runs log stays implied.
        head = _replace(
            head, open=(*head.open, lane), lanes=head.lanes + 1, owner=lane.serial, hot=lane
        )
        return TurnState(head, state._frags, state._nfrags)
    head = _replace(head, open=(*head.open, lane), lanes=head.lanes + 1, hot=None)
    return TurnState(head, state._frags, state._nfrags)


def _part_stop(state: TurnState, event: PartStop) -> TurnState:
    head = _started_head(state, "part_stop")
    lanes = head.open
    if not lanes:
        return state
    if event.index is None:
        position = 0
    else:
        for position, lane in enumerate(lanes):  # noqa: B007 - the loop finds `position`
            if lane.index == event.index:
                break
        else:
            return state
    lane = lanes[position]
    rest = lanes[:position] + lanes[position + 1 :]
    part = closed_lane_part(lane, state)
    if part is None:
        head = _replace(head, open=rest, hot=None)
    else:
        parts = append_log(head.parts, head.nparts, (lane.serial, part))
        head = _replace(head, open=rest, parts=parts, nparts=head.nparts + 1, hot=None)
    return TurnState(head, state._frags, state._nfrags)


def _message_delta(state: TurnState, event: MessageDelta) -> TurnState:
    head = _started_head(state, "message_delta")
    raw = event.stop_reason  # (none on a usage-only delta: nothing to parse)
    reason = None if raw is None else StopReason.parse(raw)
    if reason is None:
        head = _replace(head, usage=event.usage)
    else:
        head = _replace(head, usage=event.usage, stop_reason=reason)
    return TurnState(head, state._frags, state._nfrags)


def _thinking_extra(state: TurnState, delta: Delta) -> TurnState:
    """A kept thinking lane's ``signature`` (replaces the last) or ``redacted_thinking`` data."""
    head = state._head
    for position, lane in enumerate(head.open):
        if lane.index == delta.index and lane.kind == "thinking":
            if delta.kind == "signature":
                lane = _replace(lane, signature=delta.text)
            elif delta.kind == "redacted_thinking":
                lane = _replace(lane, redacted=delta.text)
            else:  # a kind newer than this fold
                return state
            lanes = head.open
            head = _replace(head, open=(*lanes[:position], lane, *lanes[position + 1 :]), hot=None)
            return TurnState(head, state._frags, state._nfrags)
    return state  # no matching open lane: dropped, as any delta


def _message_stop(state: TurnState) -> TurnState:
    head = _started_head(state, "message_stop")
    for lane in head.open:  # fail now, where the SDK fails, not later in message()
        open_lane_part(lane, state)
    return TurnState(_replace(head, completed=True), state._frags, state._nfrags)
