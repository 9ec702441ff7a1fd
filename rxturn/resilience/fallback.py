"""The model circuit breaker: which model serves the next turn, and when to go back.

Theory of operation
===================

A turn is served by the *primary* model until it fails ``trip_threshold`` times in a row. Then
the breaker *trips*: it routes every turn to the first healthy model of a *chain* of backups and
stops counting. It stays there for ``recovery_timeout`` seconds (the cooldown), measured on the
injected clock from the moment it tripped. The first turn that begins after the cooldown
*probes* the primary again: ``recovery_successes`` successes in a row close the breaker (back to
the primary, every strike forgotten); a rate-limit escalation during the probe sends it straight
back to the backup with a fresh cooldown; a transient failure merely restarts the streak.

That is three states (docs/behaviour.md §3)::

                 failure #trip_threshold
        PRIMARY ─────────────────────────► FALLBACK ◄──────────────┐
           ▲                                  │                    │ rate-limit failure
           │ success #recovery_successes      │ cooldown elapsed   │ (new cooldown)
           │                                  ▼ (begin_turn)       │
           └────────────────────────────── RECOVERING ─────────────┘
                                            │    ▲
                                            └────┘ transient failure: streak back to 0

Backups are judged separately from the breaker. Each chain entry has ``max_fail_count`` strikes
(two by default); the engine strikes the active backup when it fails a turn while the breaker is
in FALLBACK (:meth:`FallbackManager.record_turn_failure` does that bookkeeping in the order of
docs/behaviour.md §4.2). An entry with all its strikes, or one taken out of rotation by hand
(``set_fallback_available(name, False)``), is *failed*: routing skips it. When every entry of a
non-empty chain has failed, the chain is *exhausted*: :meth:`FallbackManager.begin_turn` raises
:class:`~rxturn.errors.FallbackExhausted` before the turn fires any event. An empty chain is never
exhausted: the breaker still trips (observers learn of it) but keeps serving the primary, and the
cooldown still leads to a probe.

How the code is laid out
------------------------

The transitions are data, the way h11 writes ``EVENT_TRIGGERED_TRANSITIONS``: :data:`TRANSITIONS`
maps ``(state, trigger)`` to ``(next state, effect)``. The public methods only *classify* their
input into a :class:`Trigger` (that is where the threshold guards live) and hand it to one
dispatcher that looks the pair up and applies the effect. A pair missing from the table is a
bug, not a silent no-op. Things that are not transitions — the chain and its strikes — are
ordinary methods on the entries, which are immutable :class:`FallbackEntry` values replaced on
every change.

Time comes from ``clock``, a ``() -> float`` in seconds. A manager given no clock runs on
``time.monotonic`` until an engine adopts it: ``TurnEngine(scheduler=...)`` hands it its
scheduler's clock (:meth:`FallbackManager.adopt_clock`), so that the cooldown and the probe run on
the same time as the engine's ladders and deadlines — ``reactivex.testing.TestScheduler`` virtual
time in tests. A clock given explicitly is never replaced.

Thread safety: none, by design. rxturn drives a turn on one asyncio loop; the manager is owned
by one engine (or shared by engines on the same loop) and every method runs to completion
without awaiting. Guard it with a lock yourself if you share it across threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import cast

import msgspec

from .._arguments import check_callable, check_instance, check_items, shown
from .._validate import positive
from ..errors import ConfigError, FallbackExhausted
from ._breaker import (
    TRANSITIONS,
    BreakerState,
    Effect,
    FailureKind,
    FailureOutcome,
    FallbackEntry,
    Trigger,
    clean_model_name,
    failure_kind,
)
from .policies import FallbackPolicy

__all__ = [
    "TRANSITIONS",
    "BreakerState",
    "Effect",
    "FailureKind",
    "FailureOutcome",
    "FallbackEntry",
    "FallbackManager",
    "FallbackPolicy",
    "Trigger",
    "failure_kind",
    "for_model",
]

_log = logging.getLogger("rxturn.resilience.fallback")


class FallbackManager:
    """The model circuit breaker (docs/behaviour.md §3; the module docstring tells the story).

    Args:
        primary: the model turns go to while the breaker is closed (``None``: the client's own
            model; the engine then falls back to ``client.model``).
        chain: backup models in priority order.
        policy: thresholds and timeouts.
        clock: ``() -> seconds``; the cooldown is measured on it. Default: ``time.monotonic``,
            or the clock of the first engine with a scheduler that adopts this manager.

    Raises:
        ConfigError: a blank model name, a backup that is the primary or is listed twice, or
            an invalid policy.

    Examples:
        >>> now = 0.0
        >>> fm = FallbackManager("big", ["small"], clock=lambda: now)
        >>> [fm.record_failure(FailureKind.TRANSIENT) for _ in range(3)]
        [False, False, True]
        >>> fm.routed_model()
        'small'
    """

    __slots__ = (
        "_activated",
        "_clock",
        "_clock_given",
        "_entries",
        "_failures",
        "_policy",
        "_primary",
        "_state",
        "_successes",
        "_switched_at",
    )

    def __init__(
        self,
        primary: str | None = None,
        chain: Sequence[str] = (),
        *,
        policy: FallbackPolicy = FallbackPolicy(),  # noqa: B008 - frozen, shared safely
        clock: Callable[[], float] | None = None,
    ) -> None:
        check_instance(policy, FallbackPolicy, "FallbackManager(policy=...)", "a FallbackPolicy")
        if isinstance(chain, str):
            raise ConfigError(
                f"chain must be a sequence of model names, not the string {shown(chain)}"
            )
        names = check_items(chain, "FallbackManager(chain=...)", "model names")
        check_callable(
            clock, "FallbackManager(clock=...)", "a () -> seconds callable", optional=True
        )
        policy.validate()
        self._policy = policy
        self._clock: Callable[[], float] = clock if clock is not None else time.monotonic
        self._clock_given = clock is not None
        self._primary = None if primary is None else clean_model_name(primary, "primary model")
        self._entries: list[FallbackEntry] = [
            self._new_entry(cast(str, name))
            for name in names  # each checked by _new_entry
        ]
        _check_chain(self._primary, self._entries, "FallbackManager(chain=...)")
        self._state = BreakerState.PRIMARY
        self._failures = 0
        self._successes = 0
        self._activated = False
        self._switched_at: float | None = None

    def __repr__(self) -> str:
        return (
            f"FallbackManager(state={self._state.name}, primary={self._primary!r}, "
            f"chain={self.fallback_models()!r}, failures={self._failures})"
        )

    # ------------------------------------------------------------------ reads

    @property
    def state(self) -> BreakerState:
        return self._state

    @property
    def policy(self) -> FallbackPolicy:
        return self._policy

    @property
    def primary(self) -> str | None:
        """The primary model name (``None``: unset, the client's model)."""
        return self._primary

    @property
    def consecutive_failures(self) -> int:
        """PRIMARY failures in a row; zeroed by a success, by the trip and by closing."""
        return self._failures

    @property
    def probe_successes(self) -> int:
        """Successes in a row during the current RECOVERING probe."""
        return self._successes

    @property
    def switched_at(self) -> float | None:
        """Clock reading when the breaker last opened (tripped or re-opened); ``None`` if closed."""
        return self._switched_at

    @property
    def fallback_activated(self) -> bool:
        """Set on a trip; cleared when the breaker closes or is reset."""
        return self._activated

    @property
    def entries(self) -> tuple[FallbackEntry, ...]:
        """The chain with each entry's strikes, in priority order."""
        return tuple(self._entries)

    def fallback_models(self) -> list[str]:
        """The chain's model names, in priority order."""
        return [entry.name for entry in self._entries]

    def fallback_entry(self, name: str) -> FallbackEntry | None:
        """The first chain entry called ``name``, if any."""
        index = self._find(name)
        return None if index is None else self._entries[index]

    def fallback_model(self) -> str | None:
        """The first healthy backup, whatever the state (``None``: none left, or no chain)."""
        for entry in self._entries:
            if not entry.failed:
                return entry.name
        return None

    def active_model(self) -> str | None:
        """The model the breaker wants now; ``None`` means the chain is exhausted.

        PRIMARY and RECOVERING: the primary. FALLBACK: the first healthy backup, or the primary
        when the chain is empty (a trip with nowhere to go keeps serving the primary).
        """
        if self._state is not BreakerState.FALLBACK or not self._entries:
            return self._primary
        return self.fallback_model()

    def routed_model(self) -> str | None:
        """The model to put in ``RequestOptions.model`` for the next turn (docs/behaviour.md §3)."""
        if self._state is BreakerState.PRIMARY:
            return self._primary
        return self.active_model()

    def failed_fallbacks(self) -> list[str]:
        """Names of chain entries routing skips, in chain order."""
        return [entry.name for entry in self._entries if entry.failed]

    def available_fallbacks(self) -> list[str]:
        """Names of chain entries routing may use, in chain order."""
        return [entry.name for entry in self._entries if not entry.failed]

    def should_try_resume_primary(self) -> bool:
        """Whether the breaker is open and its cooldown has run out."""
        if self._state is not BreakerState.FALLBACK or self._switched_at is None:
            return False
        return self._clock() - self._switched_at >= self._policy.recovery_timeout

    def adopt_clock(self, clock: Callable[[], float]) -> bool:
        """Measure the cooldown on ``clock`` from now on, unless a clock was given explicitly.

        An engine with a scheduler calls this so that the whole session runs on one clock.
        Returns whether ``clock`` was adopted. An open breaker keeps its remaining cooldown.
        """
        if self._clock_given or clock is self._clock:
            return False
        if self._switched_at is not None:  # carry the cooldown over to the new time base
            self._switched_at = clock() - (self._clock() - self._switched_at)
        self._clock = clock
        return True

    def failover_model(self, tried: Iterable[str]) -> str | None:
        """The chain's first healthy backup not in ``tried`` (same-turn failover's next model)."""
        skip = set(tried)
        for entry in self._entries:
            if not entry.failed and entry.name not in skip:
                return entry.name
        return None

    def record_failover_failure(
        self, error: BaseException, *, served: str
    ) -> FailureOutcome | None:
        """A backup the breaker did not route to failed during a same-turn failover.

        The breaker's counters are the routed model's business, so they are left alone; the
        backup takes one of its strikes, as an active backup that fails does. ``None`` for a
        cancel.
        """
        kind = failure_kind(error)
        if kind is None:
            return None
        struck = served if self.mark_fallback_failed(served) else None
        return FailureOutcome(kind=kind, served=served, struck=struck)

    # ------------------------------------------------------------ transitions

    def record_failure(self, kind: FailureKind) -> bool:
        """Count one failed turn; return ``True`` iff this call tripped the breaker."""
        if not isinstance(kind, FailureKind):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"record_failure expects a FailureKind, got {shown(kind)}")
        primary = self._state is BreakerState.PRIMARY
        if primary and self._failures + 1 >= self._policy.trip_threshold:
            trigger = Trigger.TRIP
        elif kind is FailureKind.RATE_LIMIT:
            trigger = Trigger.RATE_LIMITED
        else:
            trigger = Trigger.FAILURE
        if self._state is BreakerState.FALLBACK:
            _log.warning("backup model %r failed while the breaker is open", self.fallback_model())
        self._fire(trigger)
        return trigger is Trigger.TRIP

    def record_success(self) -> None:
        """Count one served turn (during a probe, one step towards closing)."""
        if (
            self._state is BreakerState.RECOVERING
            and self._successes + 1 >= self._policy.recovery_successes
        ):
            self._fire(Trigger.CLOSE)
        else:
            self._fire(Trigger.SUCCESS)

    def begin_turn(self) -> None:
        """The per-turn housekeeping (docs/behaviour.md §4.1 step 1); call it before any turn event.

        Moves an open breaker whose cooldown has passed to RECOVERING (this turn probes the
        primary), then refuses to serve when the breaker is open and every backup has failed.

        Raises:
            FallbackExhausted: FALLBACK, a non-empty chain, and no healthy entry in it.
        """
        if self.should_try_resume_primary():
            self._fire(Trigger.COOLDOWN_ELAPSED)
        if self._state is BreakerState.FALLBACK and self._entries and self.active_model() is None:
            raise FallbackExhausted(self._primary, self.fallback_models())

    def record_turn_failure(
        self, error: BaseException, *, served: str | None = None
    ) -> FailureOutcome | None:
        """The failure steps of docs/behaviour.md §4.2, in order; ``None`` for a cancel.

        Classifies ``error`` (:func:`failure_kind`), records it, and strikes the active backup
        when the breaker was already open. The engine then fires ``on_fallback`` when
        ``fallback_to`` is set and ``on_stream_failure`` always, and re-raises ``error``.

        Args:
            error: the turn's error, unchanged.
            served: the model that actually served (default: :meth:`routed_model`); pass the
                client's model when routing yields ``None``.
        """
        kind = failure_kind(error)
        if kind is None:
            return None
        served = self.routed_model() if served is None else served
        was_open = self._state is BreakerState.FALLBACK
        tripped = self.record_failure(kind)
        backup = self.fallback_model()
        fallback_to = backup if tripped else None
        struck = backup if was_open and backup is not None else None
        if struck is not None:
            self.mark_fallback_failed(struck)
        return FailureOutcome(
            kind=kind, served=served, tripped=tripped, fallback_to=fallback_to, struck=struck
        )

    def reset(self) -> None:
        """Close the breaker and forget every counter and strike (availability is kept)."""
        self._fire(Trigger.RESET)

    def _fire(self, trigger: Trigger) -> None:
        key = (self._state, trigger)
        try:
            next_state, effect = TRANSITIONS[key]
        except KeyError:  # pragma: no cover - the guards above never produce such a pair
            raise AssertionError(f"no breaker transition for {key}") from None
        self._apply(effect)
        previous, self._state = self._state, next_state
        if next_state is not previous:
            _log.info(
                "model breaker %s -> %s (%s); routing to %r",
                previous.name,
                next_state.name,
                trigger.value,
                self.routed_model(),
            )

    def _apply(self, effect: Effect) -> None:
        match effect:
            case Effect.NOTHING:
                pass
            case Effect.COUNT_FAILURE:
                self._failures += 1
            case Effect.CLEAR_FAILURES:
                self._failures = 0
            case Effect.OPEN:
                self._activated = True
                self._switched_at = self._clock()
                self._failures = 0
                self._successes = 0
            case Effect.PROBE:
                self._successes = 0
            case Effect.COUNT_PROBE_SUCCESS:
                self._successes += 1
            case Effect.RESTART_PROBE:
                self._successes = 0
            case Effect.CLOSE:
                self._activated = False
                self._switched_at = None
                self._failures = 0
                self._successes = 0
                self.clear_all_fallback_failed()

    # ------------------------------------------------------------ configuration

    def set_primary(self, name: str) -> None:
        """Change the primary model (trimmed; blank, or a model of the chain, is a
        ``ConfigError``). The state is kept: call :meth:`reset` as well for an explicit model
        switch."""
        primary = clean_model_name(name, "primary model")
        _check_chain(primary, self._entries, "set_primary(...)", new_primary=True)
        self._primary = primary

    def set_policy(self, policy: FallbackPolicy) -> None:
        """Adopt new numbers. Every entry takes the new strike limit; failed ones stay failed."""
        check_instance(policy, FallbackPolicy, "set_policy(policy=...)", "a FallbackPolicy")
        policy.validate()
        self._policy = policy
        self._entries = [entry.with_max_fail_count(policy.strikes) for entry in self._entries]

    # ------------------------------------------------------------ the chain

    def _new_entry(self, name: str) -> FallbackEntry:
        return FallbackEntry(
            name=clean_model_name(name, "fallback model"), max_fail_count=self._policy.strikes
        )

    def _find(self, name: str) -> int | None:
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            return None
        wanted = name.strip()
        for index, entry in enumerate(self._entries):
            if entry.name == wanted:
                return index
        return None

    def set_fallback_model(self, name: str) -> None:
        """Make ``name`` the whole chain (the primary is a ``ConfigError``)."""
        entries = [self._new_entry(name)]
        _check_chain(self._primary, entries, "set_fallback_model(...)")
        self._entries = entries

    def add_fallback_model(self, name: str) -> None:
        """Append ``name`` as the last resort (the primary or a backup already listed is a
        ``ConfigError``)."""
        entries = [*self._entries, self._new_entry(name)]
        _check_chain(self._primary, entries, "add_fallback_model(...)")
        self._entries = entries

    def insert_fallback_model(self, index: int, name: str) -> None:
        """Insert ``name`` at ``index`` (0 = first choice; past the end appends)."""
        if not positive(index, integer=True, allow_zero=True):
            raise ConfigError(f"fallback chain index must be an int >= 0, got {shown(index)}")
        entries = list(self._entries)
        entries.insert(min(index, len(entries)), self._new_entry(name))
        _check_chain(self._primary, entries, "insert_fallback_model(...)")
        self._entries = entries

    def remove_fallback_model(self, name: str) -> bool:
        """Remove the first entry called ``name``; ``False`` if there is none."""
        index = self._find(name)
        if index is None:
            return False
        del self._entries[index]
        return True

    def set_fallback_models(self, names: Iterable[str]) -> None:
        """Replace the chain (fresh entries, no strikes)."""
        if isinstance(names, str):
            raise ConfigError(f"expected a sequence of model names, not the string {shown(names)}")
        entries = [self._new_entry(name) for name in names]
        _check_chain(self._primary, entries, "set_fallback_models(...)")
        self._entries = entries

    def mark_fallback_failed(self, name: str) -> bool:
        """Give ``name`` one strike; ``False`` if it is not in the chain."""
        return self._update(name, FallbackEntry.struck)

    def clear_fallback_failed(self, name: str) -> bool:
        """Forget ``name``'s strikes; ``False`` if it is not in the chain."""
        return self._update(name, FallbackEntry.cleared)

    def clear_all_fallback_failed(self) -> None:
        """Forget every entry's strikes."""
        self._entries = [entry.cleared() for entry in self._entries]

    def set_fallback_available(self, name: str, available: bool) -> bool:
        """Take ``name`` out of rotation (or put it back); ``False`` if it is not in the chain."""
        return self._update(
            name, lambda entry: msgspec.structs.replace(entry, available=bool(available))
        )

    def _update(self, name: str, change: Callable[[FallbackEntry], FallbackEntry]) -> bool:
        index = self._find(name)
        if index is None:
            return False
        self._entries[index] = change(self._entries[index])
        return True


def _check_chain(
    primary: str | None, entries: Sequence[FallbackEntry], where: str, *, new_primary: bool = False
) -> None:
    """Each backup another model: one that is the primary (or an earlier backup) is no backup.
    The breaker would "fail over" to the model that just failed, and strikes, which find an
    entry by name, would never reach a second entry of the same name, so the chain would
    never be exhausted."""
    seen: set[str | None] = {primary}
    for entry in entries:
        if entry.name in seen:
            if new_primary and entry.name == primary:
                raise ConfigError(
                    f"{where}: {shown(entry.name)} is a backup in the fallback chain; the primary "
                    "must be another model"
                )
            what = "the primary model" if entry.name == primary else "listed twice"
            raise ConfigError(
                f"{where}: {shown(entry.name)} is {what}; each backup must be another model"
            )
        seen.add(entry.name)


def for_model(
    primary: str,
    chain: Sequence[str] = (),
    *,
    policy: FallbackPolicy = FallbackPolicy(),  # noqa: B008
    clock: Callable[[], float] | None = None,
) -> FallbackManager:
    """A manager for ``primary`` with the default policy (docs/behaviour.md §3)."""
    return FallbackManager(primary, chain, policy=policy, clock=clock)
