"""The model breaker on virtual time: scripted outcomes in, state samples and a step plot out.

:func:`sample_breaker` runs a script of ``(time, outcome)`` turns through a real
:class:`~rxturn.FallbackManager` the way the engine drives it (``begin_turn``, then the
turn's outcome), reading time from a :class:`ManualClock` or a virtual-time scheduler — so a
60 s cooldown costs no real time. :func:`breaker_timeline` plots the samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import msgspec
from reactivex import abc
from reactivex.scheduler import VirtualTimeScheduler

from .._arguments import shown
from .._validate import finite, positive
from ..errors import ConfigError, FallbackExhausted, RateLimitEscalation, ReadError
from ..operators._scheduling import clock as scheduler_clock
from ..resilience.fallback import BreakerState, FallbackManager, FallbackPolicy
from ._timeline import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "BreakerOutcome",
    "BreakerSample",
    "ManualClock",
    "breaker_timeline",
    "sample_breaker",
    "simulate_breaker",
]

# matplotlib's Axes methods leave ``**kwargs`` unannotated, so a strict checker reads every call
# through them as partially unknown; that one rule is off here, the rest of the module is typed.
# pyright: reportUnknownMemberType=false

BreakerOutcome = Literal["success", "failure", "rate_limit"]
_LEVEL: dict[BreakerState, int] = {
    BreakerState.PRIMARY: 0,
    BreakerState.RECOVERING: 1,
    BreakerState.FALLBACK: 2,
}


class BreakerSample(msgspec.Struct, frozen=True, kw_only=True):
    """The breaker's state right after one scripted step (or at the start).

    Attributes:
        time: clock reading of the step.
        state: the state after the step.
        event: ``start``, ``probe`` (cooldown over: this turn tries the primary), ``success``,
            ``failure``, ``rate_limit``, ``trip`` (this failure opened the breaker), ``close``
            (the probe streak closed it), ``reopen`` (a rate limit during the probe) or
            ``exhausted`` (no healthy backup: the turn was refused).
        model: the model that served this step's turn (for ``start``/``probe``: the routed one).
        failures: consecutive PRIMARY failures after the step.
        probe_successes: probe streak after the step.
        cooldown: ``(start, end)`` of the current cooldown (FALLBACK only).
    """

    time: float
    state: BreakerState
    event: str
    model: str | None
    failures: int = 0
    probe_successes: int = 0
    cooldown: tuple[float, float] | None = None

    @classmethod
    def of(
        cls, manager: FallbackManager, time: float, event: str, model: str | None
    ) -> BreakerSample:
        """Snapshot ``manager`` now (e.g. after each turn of a real engine run)."""
        switched = manager.switched_at
        cooldown = (
            (switched, switched + manager.policy.recovery_timeout)
            if switched is not None and manager.state is BreakerState.FALLBACK
            else None
        )
        return cls(
            time=time,
            state=manager.state,
            event=event,
            model=model,
            failures=manager.consecutive_failures,
            probe_successes=manager.probe_successes,
            cooldown=cooldown,
        )


class ManualClock:
    """A clock you move by hand: ``FallbackManager(..., clock=manual)``."""

    def __init__(self, now: float = 0.0) -> None:
        if not finite(now):
            raise ConfigError(
                f"ManualClock(now) must be a finite number of seconds, got {shown(now, 100)}"
            )
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance_to(self, when: float) -> None:
        if not finite(when):
            raise ConfigError(
                "ManualClock.advance_to(when) must be a finite number of seconds, got "
                f"{shown(when, 100)}"
            )
        if when < self.now:
            raise ConfigError(
                f"ManualClock cannot go back in time ({shown(when, 100)} < {self.now})"
            )
        self.now = float(when)


def _step(manager: FallbackManager, at: float, outcome: BreakerOutcome) -> list[BreakerSample]:
    """One turn as the engine runs it: the breaker's housekeeping, then the turn's outcome."""
    samples: list[BreakerSample] = []
    before = manager.state
    try:
        manager.begin_turn()
    except FallbackExhausted:
        return [BreakerSample.of(manager, at, "exhausted", None)]
    served = manager.routed_model()
    if manager.state is not before:
        samples.append(BreakerSample.of(manager, at, "probe", served))
    before = manager.state
    if outcome == "success":
        manager.record_success()
        closed = before is BreakerState.RECOVERING and manager.state is BreakerState.PRIMARY
        samples.append(BreakerSample.of(manager, at, "close" if closed else "success", served))
    elif outcome in ("failure", "rate_limit"):
        error: Exception = (
            RateLimitEscalation(4) if outcome == "rate_limit" else ReadError("scripted failure")
        )
        result = manager.record_turn_failure(error, served=served)
        reopened = before is BreakerState.RECOVERING and manager.state is BreakerState.FALLBACK
        event = "trip" if result and result.tripped else "reopen" if reopened else outcome
        samples.append(BreakerSample.of(manager, at, event, served))
    else:
        raise ConfigError(
            "breaker script outcome must be 'success', 'failure' or 'rate_limit', got "
            f"{shown(outcome, 100)}"
        )
    return samples


_OUTCOMES = ("success", "failure", "rate_limit")


def _script(script: object, name: str) -> list[tuple[float, BreakerOutcome]]:
    """``script`` as ``(time, outcome)`` steps sorted by time, or a ConfigError naming ``name``."""
    if isinstance(script, str | bytes) or not isinstance(script, Iterable):
        raise ConfigError(
            f"{name} must be an iterable of (time, outcome) pairs, got {type(script).__name__}"
        )
    steps: list[tuple[float, BreakerOutcome]] = []
    for i, step in enumerate(cast("Iterable[object]", script)):
        pair = tuple(cast("Iterable[object]", step)) if isinstance(step, tuple | list) else ()
        if len(pair) != 2 or not finite(pair[0]) or pair[1] not in _OUTCOMES:
            raise ConfigError(
                f"{name}[{i}] must be a (time, outcome) pair with a finite time and an outcome "
                f"of 'success', 'failure' or 'rate_limit', got {shown(cast(object, step), 100)}"
            )
        steps.append((float(pair[0]), pair[1]))
    return sorted(steps, key=lambda step: step[0])


def sample_breaker(
    manager: FallbackManager,
    script: Iterable[tuple[float, BreakerOutcome]],
    *,
    clock: ManualClock | VirtualTimeScheduler,
) -> list[BreakerSample]:
    """Run ``script`` (``(time, outcome)`` per turn, times ascending) through ``manager``.

    ``clock`` is what ``manager`` reads time from: a :class:`ManualClock` it was built with, or
    a virtual-time scheduler (e.g. ``reactivex.testing.TestScheduler``) whose
    ``operators._scheduling.clock(scheduler)`` it was built with. Each step runs at its virtual
    time: no real waiting, whatever the cooldown.

    Returns:
        A ``start`` sample at the clock's current time, then one or two samples per step.
    """
    steps = _script(script, "sample_breaker(script)")
    samples: list[BreakerSample] = []
    if isinstance(clock, ManualClock):
        samples.append(BreakerSample.of(manager, clock.now, "start", manager.routed_model()))
        for at, outcome in steps:
            clock.advance_to(at)
            samples.extend(_step(manager, at, outcome))
        return samples
    read = scheduler_clock(clock)
    now = read()
    if steps and steps[0][0] < now:
        raise ConfigError(f"breaker script starts at {steps[0][0]}, before the clock ({now})")
    samples.append(BreakerSample.of(manager, now, "start", manager.routed_model()))
    failure: list[BaseException] = []

    def schedule(at: float, outcome: BreakerOutcome) -> None:
        def action(_: abc.SchedulerBase, __: Any = None) -> None:
            try:
                samples.extend(_step(manager, read(), outcome))
            except BaseException as exc:  # surfaced after the run, not lost in the scheduler
                failure.append(exc)

        clock.schedule_absolute(at, action)

    for at, outcome in steps:
        schedule(at, outcome)
    # VirtualTimeScheduler.start, not TestScheduler.start (which also schedules its own
    # create/subscribe/dispose actions): run the queue in time order, on virtual time only.
    VirtualTimeScheduler.start(clock)
    if failure:
        raise failure[0]
    return samples


def simulate_breaker(
    script: Iterable[tuple[float, BreakerOutcome]],
    *,
    primary: str = "primary",
    chain: Sequence[str] = ("backup",),
    policy: FallbackPolicy | None = None,
) -> list[BreakerSample]:
    """A fresh :class:`FallbackManager` on a fresh ``TestScheduler``, driven by ``script``.

    Examples:
        >>> samples = simulate_breaker([(0, "failure"), (1, "failure"), (2, "failure")])
        >>> [s.event for s in samples], samples[-1].state.name, samples[-1].cooldown
        (['start', 'failure', 'failure', 'trip'], 'FALLBACK', (2.0, 62.0))
    """
    from reactivex.testing import TestScheduler

    steps = _script(script, "simulate_breaker(script)")
    scheduler = TestScheduler()
    manager = FallbackManager(
        primary, chain, policy=policy or FallbackPolicy(), clock=scheduler_clock(scheduler)
    )
    return sample_breaker(manager, steps, clock=scheduler)


_MARKERS: dict[str, tuple[str, str, str]] = {
    "success": ("o", "#2e7d32", "turn served"),
    "close": ("o", "#2e7d32", "turn served"),
    "failure": ("x", "#c62828", "turn failed"),
    "trip": ("x", "#c62828", "turn failed"),
    "rate_limit": ("s", "#ef6c00", "rate-limit escalation"),
    "reopen": ("s", "#ef6c00", "rate-limit escalation"),
    "exhausted": ("P", "#000000", "refused: chain exhausted"),
}


def breaker_timeline(
    samples: Sequence[BreakerSample],
    *,
    title: str = "model breaker over time",
    width: float = 11.0,
) -> Figure:
    """Plot breaker state (PRIMARY / RECOVERING / FALLBACK) against time as a step plot.

    The step line (``gid="breaker-state"``) has one point per sample plus a final point that
    holds the last state a little longer. Each turn's outcome is a marker at the state it was
    served in; cooldown windows are shaded (``gid="cooldown"``); the serving model is annotated
    wherever it changes.

    Raises:
        ConfigError: ``samples`` is not a sequence of :class:`BreakerSample`, or ``width`` is
            not a positive number of inches.
    """
    if isinstance(samples, str | bytes) or not isinstance(samples, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            "breaker_timeline(samples) must be a list of BreakerSample, "
            f"got {type(samples).__name__}"
        )
    for i, sample in enumerate(cast("Sequence[object]", samples)):
        if not isinstance(sample, BreakerSample):
            raise ConfigError(
                f"breaker_timeline(samples)[{i}] must be a BreakerSample, "
                f"got {type(sample).__name__}"
            )
    if not positive(width, finite=True):
        raise ConfigError(
            f"breaker_timeline(width) must be a positive number of inches, got {shown(width, 100)}"
        )
    figure, ax = new_figure(width, 3.6)
    ax.set_title(title)
    if not samples:
        ax.text(0.5, 0.5, "no samples", ha="center", va="center", transform=ax.transAxes)
        return figure
    times = [s.time for s in samples]
    levels = [_LEVEL[s.state] for s in samples]
    span = max(times[-1] - times[0], 1.0)
    ax.step(
        [*times, times[-1] + 0.05 * span],
        [*levels, levels[-1]],
        where="post",
        color="#1565c0",
        linewidth=2,
        label="breaker state",
        gid="breaker-state",
    )

    shaded: set[tuple[float, float]] = set()
    for sample in samples:
        if sample.cooldown is not None and sample.cooldown not in shaded:
            shaded.add(sample.cooldown)
            ax.axvspan(
                *sample.cooldown,
                color="#ffb74d",
                alpha=0.18,
                label="cooldown" if len(shaded) == 1 else None,
                gid="cooldown",
            )

    labelled: set[str] = set()
    previous_level = levels[0]
    previous_model: str | None = None
    for sample, level in zip(samples, levels, strict=True):
        style = _MARKERS.get(sample.event)
        if style is not None:
            marker, colour, label = style
            ax.scatter(
                [sample.time],
                [previous_level],
                marker=marker,
                color=colour,
                s=50,
                zorder=3,
                label=None if label in labelled else label,
                gid=f"outcome-{sample.event}",
            )
            labelled.add(label)
        if sample.model is not None and sample.model != previous_model:
            ax.annotate(
                f"serves {sample.model}",
                (sample.time, previous_level if style is not None else level),
                xytext=(4, 8),
                textcoords="offset points",
                fontsize=8,
                color="#37474f",
            )
            previous_model = sample.model
        previous_level = level

    ax.set_yticks(list(_LEVEL.values()))
    ax.set_yticklabels([state.name for state in _LEVEL])
    ax.set_ylim(-0.5, 2.6)
    ax.set_xlabel("virtual time (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure
