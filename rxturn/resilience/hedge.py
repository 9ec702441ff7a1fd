"""The hedged first token: the policy (targets, delay, budget) and the race, as a state machine.

Theory of operation
===================

Time to first content has a long tail: a model that starts answering in one second at the
median may take twenty at the 99th percentile. A *hedged request* ("The Tail at Scale") sends a
second request once the first is slower than it usually is, and keeps whichever answers first.
For a stream "answers" means *content*: a text, thinking, refusal or tool-JSON delta, a tool
call's start, or the end of a reply (an empty reply is an answer too). A preamble is not
content: ``message_start``, pings and the OpenAI role chunk arrive at once from a slow model
as from a fast one (:func:`is_content`).

A race, step by step (every instant is a float the caller passes in; nothing here sleeps)::

    start(now)         racer 0 (the primary) starts; the hedge is armed at now + delay
    hedge_due(now)     a hedge goes out on the first eligible target (or is skipped, with a
                       reason); the next one is armed while max_hedges allows
    content(i, now)    racer i produced content: the decision is taken at the end of this
                       instant (decide), so that a tie goes to the racer that started first
    decide(now)        the winner is chosen; every other running racer is cut (it lost)
    failed(i, e, now)  a fatal error (cancel, 400/401/403, configuration: no other model
                       would answer differently) ends the race, unless another racer's
                       content came earlier in this instant (it wins the decision); any
                       other error hands over to
                       the racers still running, or sends the pending hedge at once; with
                       nothing left, the race fails with the primary's error (the retry
                       ladder retries the primary's target: its Retry-After is the one)
    cancel(now)        the turn is cancelled: every running racer is cut (cancelled); a
                       racer stopped without content is a lower bound for the estimate, as
                       a loser is (let_go(now) is the same for a race its subscriber dropped)

Each step returns the actions the caller carries out, in order: :class:`Start` a racer,
:class:`Cut` one (dispose it: close its connection), :class:`Arm` the hedge timer (``None``
disarms it), :class:`Decide` at the end of the instant, :class:`Win` (forward that racer's
held events, then its stream), :class:`Fail` (the race's error is that racer's),
:class:`Skipped` (a hedge that was due but not sent, and why). The Rx operator
:func:`rxturn.operators.hedge` is a thin shell that does exactly that.

Eligibility of a target, in order: not already tried in this race (the primary's own target
counts as tried); its breaker is not open (the caller says so through ``blocked``); it is not
on the primary's quota while the primary is rate limited this turn (a 429 seen before the
race, or from a racer on that quota); and the policy's budget has a hedge left.

The policy owns what outlives a race: the budget (hedges over a sliding 60 s window, at most
``budget_ratio`` of the primary requests in that window plus ``budget_min``) and the latency
estimator (:class:`FirstContentEstimator`), from which an adaptive delay is read.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final, Literal

from .._arguments import shown
from .._validate import is_int, is_number, positive, seconds_problem
from ..errors import ConfigError
from ..events import Delta, MessageStop, PartStart, StreamEvent
from .verdicts import ends_race, is_rate_limit

__all__ = [
    "BUDGET_WINDOW",
    "Action",
    "Arm",
    "Cut",
    "Decide",
    "Fail",
    "FirstContentEstimator",
    "HedgePolicy",
    "HedgeRace",
    "HedgeTarget",
    "Racer",
    "Skipped",
    "Start",
    "Win",
    "error_kind",
    "is_content",
]

#: The budget's sliding window, in seconds.
BUDGET_WINDOW: Final = 60.0

#: Delta kinds that are content (``signature`` and ``redacted_thinking`` belong to thinking).
_CONTENT_DELTAS: Final = frozenset(
    {"text", "thinking", "refusal", "tool_json", "signature", "redacted_thinking"}
)

#: The most samples the estimator keeps per model (``window``).
_MAX_WINDOW: Final = 1_000_000

SkipReason = Literal["tried", "breaker_open", "rate_limited", "budget"]
ErrorKind = Literal["fatal", "rate_limit", "other"]


def is_content(event: StreamEvent) -> bool:
    """Whether ``event`` shows that a racer is answering (see the module docstring).

    Examples:
        >>> from rxturn.events import Delta, MessageStart, PartStart, Ping
        >>> [is_content(e) for e in (MessageStart(), Ping(), PartStart(0), Delta(0, "hi"))]
        [False, False, False, True]
        >>> is_content(PartStart(1, "tool_call", id="t", name="f"))
        True
    """
    kind = type(event)
    if kind is Delta:
        return event.kind in _CONTENT_DELTAS  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    if kind is PartStart:
        return event.kind == "tool_call"  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
    return kind is MessageStop


def error_kind(error: BaseException) -> ErrorKind:
    """How a racer's error weighs on the race: ``"fatal"`` when no other request would fare
    better (cancel, 400, 401, 403, configuration), ``"rate_limit"`` for 429/503/529, else
    ``"other"`` (the handler's table, :mod:`rxturn.resilience.verdicts`, decides each)."""
    if ends_race(error):
        return "fatal"
    if is_rate_limit(error):
        return "rate_limit"
    return "other"


class HedgeTarget:
    """Where a hedge may go: another model of the primary's client, or a model (the primary's
    by default) on another client or endpoint.

    Args:
        model: the model to ask (``None``: the primary's model).
        client: the client to ask it through (``None``: the primary's client). Any object the
            engine accepts as a client.
        same_quota: whether the target draws on the primary's rate-limit quota (``None``: yes
            exactly when it is the primary's client and model). A target on that quota is
            skipped once the primary was rate limited in the turn.

    Raises:
        ConfigError: neither ``model`` nor ``client`` given, or a value of the wrong type.
    """

    __slots__ = ("client", "model", "same_quota")

    def __init__(
        self,
        model: str | None = None,
        client: object | None = None,
        *,
        same_quota: bool | None = None,
    ) -> None:
        if model is not None and (not isinstance(model, str) or not model.strip()):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"HedgeTarget: model must be a non-empty string, got {shown(model)}")
        if model is None and client is None:
            raise ConfigError("HedgeTarget: give a model, a client, or both")
        if same_quota is not None and not isinstance(same_quota, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"HedgeTarget: same_quota must be True, False or None, got {shown(same_quota)}"
            )
        self.model = model
        self.client = client
        self.same_quota = same_quota

    def key(self, primary_model: str, primary_client: object | None) -> tuple[int, str]:
        """What identifies the request it makes: (client identity, model)."""
        client = self.client if self.client is not None else primary_client
        return (id(client), self.model if self.model is not None else primary_model)

    def __repr__(self) -> str:
        client = "" if self.client is None else f", client={type(self.client).__name__}(…)"
        return f"HedgeTarget(model={self.model!r}{client})"


def _window_ok(window: object) -> bool:
    """A window the estimator can keep (a deque's bound is a C size: 10**30 would raise)."""
    return is_int(window) and 1 <= window <= _MAX_WINDOW


class FirstContentEstimator:
    """Per model, a quantile of the observed time to first content, with censored samples.

    A racer cut before its first content tells only that its time to content was *longer*
    than its elapsed time: a right-censored sample. Dropping it would make the estimate drift
    down (only the fast racers would be seen); counting it as exact would too. The quantile is
    read from the Kaplan-Meier estimate of the distribution over the last ``window`` samples,
    which treats a censored sample as the lower bound it is. When censoring leaves the
    quantile unknown, the largest censored time is the answer (the estimate is at least that).

    Examples:
        >>> est = FirstContentEstimator(window=8)
        >>> for t in (1.0, 2.0, 3.0, 4.0):
        ...     est.observe("m", t)
        >>> est.quantile("m", 0.5)
        2.0
        >>> est.observe("m", 10.0, censored=True)
        >>> est.quantile("m", 0.9)
        10.0
    """

    __slots__ = ("_samples", "window")

    def __init__(self, window: int = 64) -> None:
        if not _window_ok(window):
            raise ConfigError(
                f"FirstContentEstimator: window must be an integer from 1 to {_MAX_WINDOW}, "
                f"got {shown(window)}"
            )
        self.window = window
        self._samples: dict[str, deque[tuple[float, bool]]] = {}

    def observe(self, model: str, seconds: float, *, censored: bool = False) -> None:
        """One racer's time to first content (``censored``: it was cut before any)."""
        samples = self._samples.get(model)
        if samples is None:
            samples = self._samples[model] = deque(maxlen=self.window)
        samples.append((max(0.0, float(seconds)), censored))

    def count(self, model: str) -> int:
        """How many samples (censored ones included) are held for ``model``."""
        samples = self._samples.get(model)
        return 0 if samples is None else len(samples)

    def quantile(self, model: str, q: float) -> float | None:
        """The ``q`` quantile for ``model`` (``None`` with no samples)."""
        samples = self._samples.get(model)
        if not samples:
            return None
        ordered = sorted(samples, key=lambda s: (s[0], s[1]))  # exact before censored at a tie
        at_risk = len(ordered)
        survival = 1.0
        largest = 0.0
        for seconds, censored in ordered:
            largest = seconds
            if not censored:
                survival *= 1.0 - 1.0 / at_risk
                if 1.0 - survival >= q - 1e-12:
                    return seconds
            at_risk -= 1
        return largest


class HedgePolicy:
    """When and where a streaming turn sends a hedge, and how many it may spend.

    One policy object may serve many engines: it owns the budget and the latency estimator,
    so what it learns and spends is shared by every turn that uses it.

    Args:
        targets: where hedges go, in order of preference (at least one).
        delay: a fixed delay in seconds before the hedge; ``None`` makes it adaptive: the
            ``quantile`` of the primary model's observed time to first content, within
            ``min_delay``…``max_delay`` (``max_delay`` until ``min_samples`` were seen).
        quantile: the adaptive delay's quantile, in (0, 1).
        min_delay: the adaptive delay's floor, seconds.
        max_delay: the adaptive delay's ceiling, seconds.
        min_samples: observations of a model before its adaptive delay is trusted.
        max_hedges: hedges one race may send.
        budget_ratio: hedges allowed per primary request over the last 60 s.
        budget_min: hedges allowed per 60 s on top of the ratio.
        window: samples kept per model by the estimator (1 to 1,000,000).

    Raises:
        ConfigError: a bad argument, named.

    Examples:
        >>> policy = HedgePolicy((HedgeTarget("backup"),), delay=2.0)
        >>> policy.delay_for("primary")
        2.0
    """

    __slots__ = (
        "_hedges",
        "_primaries",
        "budget_min",
        "budget_ratio",
        "delay",
        "estimator",
        "max_delay",
        "max_hedges",
        "min_delay",
        "min_samples",
        "quantile",
        "targets",
    )

    def __init__(
        self,
        targets: Sequence[HedgeTarget],
        *,
        delay: float | None = None,
        quantile: float = 0.9,
        min_delay: float = 0.5,
        max_delay: float = 10.0,
        min_samples: int = 5,
        max_hedges: int = 1,
        budget_ratio: float = 0.10,
        budget_min: int = 3,
        window: int = 64,
    ) -> None:
        if isinstance(targets, HedgeTarget):
            targets = (targets,)
        if not isinstance(targets, Sequence) or isinstance(targets, str | bytes) or not targets:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("HedgePolicy: targets must be a non-empty sequence of HedgeTarget")
        for target in targets:
            if not isinstance(target, HedgeTarget):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(
                    f"HedgePolicy: targets must hold HedgeTarget, got {shown(target)}"
                )
        if delay is not None:
            problem = seconds_problem(delay, allow_zero=True)
            if problem is not None:
                raise ConfigError(f"HedgePolicy: delay {problem} (or None for adaptive)")
        for name, value in (("min_delay", min_delay), ("max_delay", max_delay)):
            problem = seconds_problem(value, allow_zero=True)
            if problem is not None:
                raise ConfigError(f"HedgePolicy: {name} {problem}")
        if min_delay > max_delay:
            raise ConfigError(
                f"HedgePolicy: min_delay ({min_delay:g}s) must be <= max_delay ({max_delay:g}s)"
            )
        if not is_number(quantile) or not 0.0 < quantile < 1.0:
            raise ConfigError(f"HedgePolicy: quantile must be in (0, 1), got {shown(quantile)}")
        if not positive(min_samples, integer=True):
            raise ConfigError(
                f"HedgePolicy: min_samples must be an integer >= 1, got {shown(min_samples)}"
            )
        if not positive(max_hedges, integer=True):
            raise ConfigError(
                f"HedgePolicy: max_hedges must be an integer >= 1, got {shown(max_hedges)}"
            )
        if (
            not is_number(budget_ratio)
            or not 0.0 <= budget_ratio <= 1.0
            or math.isnan(budget_ratio)
        ):
            raise ConfigError(
                f"HedgePolicy: budget_ratio must be in [0, 1], got {shown(budget_ratio)}"
            )
        if not is_int(budget_min) or budget_min < 0:
            raise ConfigError(
                f"HedgePolicy: budget_min must be an integer >= 0, got {shown(budget_min)}"
            )
        if not _window_ok(window):
            raise ConfigError(
                f"HedgePolicy: window must be an integer from 1 to {_MAX_WINDOW}, "
                f"got {shown(window)}"
            )
        self.targets: tuple[HedgeTarget, ...] = tuple(targets)
        self.delay = None if delay is None else float(delay)
        self.quantile = float(quantile)
        self.min_delay = float(min_delay)
        self.max_delay = float(max_delay)
        self.min_samples = min_samples
        self.max_hedges = max_hedges
        self.budget_ratio = float(budget_ratio)
        self.budget_min = budget_min
        self.estimator = FirstContentEstimator(window)
        self._primaries: deque[float] = deque()
        self._hedges: deque[float] = deque()

    def __repr__(self) -> str:
        delay = "adaptive" if self.delay is None else f"{self.delay:g}"
        return (
            f"HedgePolicy(targets={self.targets!r}, delay={delay}, max_hedges={self.max_hedges}, "
            f"budget_ratio={self.budget_ratio:g}, budget_min={self.budget_min})"
        )

    # -- the delay -----------------------------------------------------------------------

    def delay_for(self, model: str) -> float:
        """Seconds to wait for ``model``'s first content before hedging."""
        if self.delay is not None:
            return self.delay
        estimator = self.estimator
        if estimator.count(model) < self.min_samples:
            return self.max_delay
        estimate = estimator.quantile(model, self.quantile)
        assert estimate is not None
        return min(self.max_delay, max(self.min_delay, estimate))

    # -- the budget ----------------------------------------------------------------------

    def _expire(self, now: float) -> None:
        horizon = now - BUDGET_WINDOW
        for times in (self._primaries, self._hedges):
            while times and times[0] <= horizon:
                times.popleft()

    def note_primary(self, now: float) -> None:
        """A race's primary request went out at ``now``."""
        self._expire(now)
        self._primaries.append(now)

    def allowance(self, now: float) -> int:
        """Hedges the window allows at ``now``, spent ones included."""
        self._expire(now)
        return math.floor(self.budget_ratio * len(self._primaries) + 1e-9) + self.budget_min

    def available(self, now: float) -> int:
        """Hedges that may still be sent at ``now``."""
        return max(0, self.allowance(now) - len(self._hedges))

    def try_spend(self, now: float) -> bool:
        """Spend one hedge if the budget has one at ``now``."""
        if self.available(now) <= 0:
            return False
        self._hedges.append(now)
        return True


# --------------------------------------------------------------------------- the actions


class Start:
    """Start racer ``index`` on ``target`` (``None``: the primary). ``reason``: why a hedge
    went out (``"delay"``, or ``"error"`` when a failure sent it early)."""

    __slots__ = ("index", "reason", "target")

    def __init__(self, index: int, target: HedgeTarget | None, reason: str) -> None:
        self.index = index
        self.target = target
        self.reason = reason

    def __repr__(self) -> str:
        return f"Start({self.index}, {self.target!r}, {self.reason!r})"


class Cut:
    """Dispose racer ``index``; ``outcome`` is ``"hedge_lost"`` or ``"cancelled"``."""

    __slots__ = ("index", "outcome")

    def __init__(self, index: int, outcome: str) -> None:
        self.index = index
        self.outcome = outcome

    def __repr__(self) -> str:
        return f"Cut({self.index}, {self.outcome!r})"


class Arm:
    """Arm the hedge timer for instant ``at`` (``None``: disarm it)."""

    __slots__ = ("at",)

    def __init__(self, at: float | None) -> None:
        self.at = at

    def __repr__(self) -> str:
        return f"Arm({self.at!r})"


class Decide:
    """Call :meth:`HedgeRace.decide` once every item due at this instant has run."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Decide()"


class Win:
    """Racer ``index`` won: forward its held events, then its stream."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"Win({self.index})"


class Fail:
    """The race failed with racer ``index``'s error (it goes downstream): the racer whose
    error was fatal, or the primary when every racer failed."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"Fail({self.index})"


class Skipped:
    """A hedge was due but ``target`` was not asked, for ``reason``."""

    __slots__ = ("reason", "target")

    def __init__(self, target: HedgeTarget | None, reason: SkipReason) -> None:
        self.target = target
        self.reason: SkipReason = reason

    def __repr__(self) -> str:
        return f"Skipped({self.target!r}, {self.reason!r})"


Action = Start | Cut | Arm | Decide | Win | Fail | Skipped

RUNNING: Final = "running"
WON: Final = "won"
LOST: Final = "hedge_lost"
FAILED: Final = "failed"
CANCELLED: Final = "cancelled"


class Racer:
    """One request of the race, as data."""

    __slots__ = ("content_at", "ended", "index", "model", "started", "state", "target")

    def __init__(self, index: int, target: HedgeTarget | None, model: str, started: float) -> None:
        self.index = index
        self.target = target
        self.model = model
        self.started = started
        self.content_at: float | None = None
        self.ended: float | None = None
        self.state: str = RUNNING

    def __repr__(self) -> str:
        return f"Racer({self.index}, {self.model!r}, {self.state}, started={self.started:g})"


class HedgeRace:
    """One race: the primary and its hedges, until one produces content (module docstring).

    Args:
        policy: the shared policy (its budget is spent and its estimator fed here).
        model: the primary's model.
        client: the primary's client (only its identity is used: which targets are the same).
        blocked: tells whether a target must be skipped because its breaker is open.
        rate_limited: the primary was already rate limited in this turn.
    """

    __slots__ = (
        "_blocked",
        "_client",
        "_decide_pending",
        "_due",
        "_tried",
        "done",
        "hedges_sent",
        "model",
        "policy",
        "racers",
        "rate_limited",
        "skips",
        "winner",
    )

    def __init__(
        self,
        policy: HedgePolicy,
        model: str,
        client: object | None = None,
        *,
        blocked: Callable[[HedgeTarget], bool] | None = None,
        rate_limited: bool = False,
    ) -> None:
        self.policy = policy
        self.model = model
        self._client = client
        self._blocked = blocked
        self.rate_limited = rate_limited
        self.racers: list[Racer] = []
        self.hedges_sent = 0
        self.winner: int | None = None
        self.done = False
        self.skips: list[Skipped] = []
        self._tried: set[tuple[int, str]] = {(id(client), model)}
        self._due: float | None = None
        self._decide_pending = False

    # -- helpers -------------------------------------------------------------------------

    def _running(self) -> list[Racer]:
        return [racer for racer in self.racers if racer.state == RUNNING]

    def _on_primary_quota(self, target: HedgeTarget) -> bool:
        if target.same_quota is not None:
            return target.same_quota
        return target.key(self.model, self._client) == (id(self._client), self.model)

    def _arm(self, now: float) -> Arm:
        if self.hedges_sent >= self.policy.max_hedges:
            self._due = None
        else:
            self._due = now + self.policy.delay_for(self.model)
        return Arm(self._due)

    def _hedge(self, now: float, reason: str) -> list[Action]:
        """Send the next hedge if a target is eligible (else say why not)."""
        actions: list[Action] = []
        if self.hedges_sent >= self.policy.max_hedges:
            return actions
        chosen: HedgeTarget | None = None
        for target in self.policy.targets:
            skip: SkipReason | None = None
            if target.key(self.model, self._client) in self._tried:
                skip = "tried"
            elif self._blocked is not None and self._blocked(target):
                skip = "breaker_open"
            elif self.rate_limited and self._on_primary_quota(target):
                skip = "rate_limited"
            if skip is None:
                chosen = target
                break
            if skip != "tried":
                actions.append(Skipped(target, skip))
        if chosen is None:
            self._record_skips(actions)
            return actions
        if not self.policy.try_spend(now):
            actions.append(Skipped(chosen, "budget"))
            self._record_skips(actions)
            return actions
        self._record_skips(actions)
        self._tried.add(chosen.key(self.model, self._client))
        index = len(self.racers)
        model = chosen.model if chosen.model is not None else self.model
        self.racers.append(Racer(index, chosen, model, now))
        self.hedges_sent += 1
        actions.append(Start(index, chosen, reason))
        return actions

    def _record_skips(self, actions: list[Action]) -> None:
        self.skips.extend(action for action in actions if isinstance(action, Skipped))

    def _end(self, now: float, winner: int | None, outcome: str) -> list[Action]:
        """Cut every running racer but ``winner``; the race is over."""
        self.done = True
        actions: list[Action] = []
        if self._due is not None:
            self._due = None
            actions.append(Arm(None))
        for racer in self.racers:
            if racer.state == RUNNING and racer.index != winner:
                racer.state = outcome
                racer.ended = now
                actions.append(Cut(racer.index, outcome))
        return actions

    # -- the inputs ----------------------------------------------------------------------

    def start(self, now: float) -> list[Action]:
        """The race begins: the primary goes out, the hedge is armed."""
        self.policy.note_primary(now)
        self.racers.append(Racer(0, None, self.model, now))
        return [Start(0, None, "primary"), self._arm(now)]

    def hedge_due(self, now: float) -> list[Action]:
        """The hedge timer fired."""
        if self.done or self._due is None:
            return []
        actions = self._hedge(now, "delay")
        if any(isinstance(action, Start) for action in actions):
            actions.append(self._arm(now))
        else:  # nothing to send now: nothing later either (budget and breakers are per race)
            self._due = None
            actions.append(Arm(None))
        return actions

    def content(self, index: int, now: float) -> list[Action]:
        """Racer ``index`` produced content (or ended its reply) at ``now``."""
        racer = self.racers[index]
        if self.done or racer.state != RUNNING or racer.content_at is not None:
            return []
        racer.content_at = now
        if self._decide_pending:
            return []
        self._decide_pending = True
        return [Decide()]

    def decide(self, now: float) -> list[Action]:
        """End of the instant: the earliest-started racer with content wins."""
        self._decide_pending = False
        if self.done:
            return []
        contenders = [r for r in self.racers if r.state == RUNNING and r.content_at is not None]
        if not contenders:
            return []
        winner = min(contenders, key=lambda r: (r.started, r.index))
        self._observe_undecided(now)
        winner.state = WON
        self.winner = winner.index
        actions = self._end(now, winner.index, LOST)
        actions.append(Win(winner.index))
        return actions

    def failed(self, index: int, error: BaseException, now: float) -> list[Action]:
        """Racer ``index`` failed before the race was decided."""
        racer = self.racers[index]
        if self.done or racer.state != RUNNING:
            return []
        kind = error_kind(error)
        racer.state = FAILED
        racer.ended = now
        if self._decide_pending and any(r.content_at is not None for r in self._running()):
            return []  # an answer came earlier in this instant: it wins at the decision
        if kind == "fatal":
            actions = self._end(now, None, LOST)
            actions.append(Fail(index))
            return actions
        if kind == "rate_limit" and (racer.target is None or self._on_primary_quota(racer.target)):
            self.rate_limited = True
        if self._running():
            return []  # the racers still running carry on
        actions = self._hedge(now, "error")
        if any(isinstance(action, Start) for action in actions):
            actions.append(self._arm(now))
            return actions
        actions.extend(self._end(now, None, LOST))
        # every racer failed: the retry ladder retries the primary's target, so the race fails
        # with the primary's error (its Retry-After, its verdict), not a hedge's from elsewhere
        actions.append(Fail(0))
        return actions

    def cancel(self, now: float) -> list[Action]:
        """The turn was cancelled or let go: every running racer is cut."""
        if self.done:
            return []
        self._observe_undecided(now)
        return self._end(now, None, CANCELLED)

    def let_go(self, now: float) -> list[int]:
        """The race is dropped undecided (its subscriber let it go: the turn's deadline, a
        cancel): every running racer is ``cancelled``, its wait kept by the estimator as
        :meth:`cancel` keeps it; the indexes of those racers, for the caller to dispose."""
        if self.done:
            return []
        self._observe_undecided(now)
        self.done = True
        self._due = None
        running: list[int] = []
        for racer in self.racers:
            if racer.state == RUNNING:
                racer.state = CANCELLED
                racer.ended = now
                running.append(racer.index)
        return running

    def _observe_undecided(self, now: float) -> None:
        """Racers stopped before a decision: what each showed of its time to first content
        (exact if its content came in this instant, else a lower bound: it waited that long)."""
        estimator = self.policy.estimator
        for racer in self.racers:
            if racer.state != RUNNING:
                continue
            if racer.content_at is not None:
                estimator.observe(racer.model, racer.content_at - racer.started)
            else:
                estimator.observe(racer.model, now - racer.started, censored=True)
