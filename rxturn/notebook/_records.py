"""The notebook helpers' value types: log records, delta counters and live-view snapshots.

These are plain data, shared by the recorder (which makes them), the live display and the plots
(which read them). :class:`Record` and :class:`LiveView` are frozen msgspec Structs, so a view
handed to a display can never change under it; :class:`DeltaDensity` is the one mutable
counter, owned by the recorder and bounded in size whatever the stream length.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal, Protocol, cast

import msgspec

from .._arguments import shown
from .._redact import without_base64, without_secrets
from .._validate import positive
from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from reactivex import Observable

    from ..engine.observation.observers import Observer, ObserverSet
    from ..events import HandlerEvent

__all__ = [
    "Change",
    "Clock",
    "DeltaDensity",
    "EngineLike",
    "LiveView",
    "Outcome",
    "Record",
    "Retracted",
]

Clock = Callable[[], float]
#: What changed in a recorder, as told to its listeners.
Change = Literal["turn", "text", "reset", "rescue", "response", "end"]
Outcome = Literal["ok", "reset", "rescued", "failed", "open"]

_MAX_DETAIL = 160


def cut(text: str, limit: int = _MAX_DETAIL) -> str:
    """``text`` without API-key-looking tokens and runs of base64 (media bytes a server echoed
    in an error), shortened to ``limit`` characters (an ellipsis marks the cut).

    Every detail a record keeps (a query, a reset's reason, an error) passes here, so what a
    notebook displays or saves of a log never carries a key or image bytes.
    """
    text = without_base64(without_secrets(text, ()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error_text(error: BaseException) -> str:
    """``"ErrorClass: message"``, bounded."""
    return cut(f"{type(error).__name__}: {error}")


# ------------------------------------------------------------------------------------ records


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """One timestamped entry of a :class:`TurnRecorder` log.

    Attributes:
        time: the recorder's clock reading (seconds).
        kind: the callback or event, without ``on_`` (``turn_start``, ``attempt_reset``,
            ``rescue``, ``fallback``, ``message_start``…).
        seq: the recorder's own serial number of the turn (unique across runs; the engine's
            ``turn`` restarts at 0 every run), ``-1`` outside a turn.
        turn: the engine's turn index, if the entry belongs to a turn.
        attempt: the streaming attempt the entry belongs to (1 = first; 0 between turns).
        model: the model serving at that moment, when known.
        detail: a short human-readable description (bounded length).
        ok: success flag for ``turn_end`` / ``run_end``, else ``None``.
    """

    time: float
    kind: str
    seq: int = -1
    turn: int | None = None
    attempt: int = 1
    model: str | None = None
    detail: str = ""
    ok: bool | None = None


class DeltaDensity:
    """How many deltas (and characters) one attempt received, in time bins.

    Memory stays bounded whatever the stream length: when the bins would exceed ``max_bins``,
    the bin width doubles and neighbouring bins merge.
    """

    __slots__ = (
        "attempt",
        "bin_width",
        "bins",
        "chars",
        "deltas",
        "max_bins",
        "origin",
        "seq",
        "thinking",
    )

    def __init__(
        self, seq: int, attempt: int, origin: float, *, bin_width: float, max_bins: int = 512
    ) -> None:
        self.seq = seq
        self.attempt = attempt
        self.origin = origin
        self.bin_width = bin_width
        self.max_bins = max_bins
        self.bins: dict[int, int] = {}
        self.deltas = 0
        self.chars = 0
        self.thinking = 0

    def add(self, now: float, chars: int) -> None:
        """Count one text delta of ``chars`` characters received at ``now``."""
        self.deltas += 1
        self.chars += chars
        key = int((now - self.origin) / self.bin_width) if now > self.origin else 0
        bins = self.bins
        bins[key] = bins.get(key, 0) + 1
        if len(bins) > self.max_bins:
            self.bin_width *= 2
            merged: dict[int, int] = {}
            for k, count in bins.items():
                merged[k // 2] = merged.get(k // 2, 0) + count
            self.bins = merged

    def series(self) -> list[tuple[float, int]]:
        """``(bin start time, deltas in the bin)`` in time order."""
        return [(self.origin + k * self.bin_width, n) for k, n in sorted(self.bins.items())]

    def __repr__(self) -> str:
        return (
            f"DeltaDensity(seq={self.seq}, attempt={self.attempt}, deltas={self.deltas}, "
            f"chars={self.chars}, bins={len(self.bins)})"
        )


class Retracted(msgspec.Struct, frozen=True, kw_only=True):
    """Text an attempt showed before it was discarded (its tail, if it was long)."""

    attempt: int
    text: str
    reason: str
    dropped_chars: int = 0


class LiveView(msgspec.Struct, frozen=True, kw_only=True):
    """What a live display shows at one moment (see :meth:`TurnRecorder.view`)."""

    seq: int
    turn: int | None
    attempt: int
    model: str | None
    text: str
    retracted: tuple[Retracted, ...] = ()
    status: Literal["idle", "streaming", "rescued", "done", "failed"] = "idle"
    error: str | None = None

    def headline(self) -> str:
        """One status line: ``turn 0 · attempt 2 · primary · streaming``."""
        bits = [f"turn {self.turn}" if self.turn is not None else "no turn yet"]
        if self.attempt > 1:
            bits.append(f"attempt {self.attempt}")
        if self.model:
            bits.append(self.model)
        bits.append(self.status if self.error is None else f"{self.status}: {self.error}")
        return " · ".join(bits)

    def to_html(self, *, max_chars: int = 20_000) -> str:
        """HTML with retracted attempts struck through and greyed, then the live text (its last
        ``max_chars`` characters).

        Raises:
            ConfigError: ``max_chars`` is not an int >= 1.
        """
        if not positive(max_chars, integer=True):
            raise ConfigError(
                f"LiveView.to_html(max_chars) must be an int >= 1, got {shown(max_chars, 100)}"
            )
        parts = [
            "<div style='font-family:monospace;white-space:pre-wrap'>",
            f"<div style='color:#666;font-size:85%'>{html.escape(self.headline())}</div>",
        ]
        for gone in self.retracted:
            more = f"…({gone.dropped_chars} chars) " if gone.dropped_chars else ""
            parts.append(
                "<div style='color:#999'><del>"
                f"{html.escape(more + gone.text)}</del> "
                f"<span style='color:#c33'>↻ attempt {gone.attempt} discarded: "
                f"{html.escape(gone.reason)}</span></div>"
            )
        kept, hidden = tail(self.text, max_chars)
        prefix = f"…({hidden} earlier chars) " if hidden else ""
        parts.append(f"<div>{html.escape(prefix + kept)}</div></div>")
        return "".join(parts)

    def to_text(self) -> str:
        """Plain text rendering (retracted attempts marked, not struck)."""
        lines = [f"[{self.headline()}]"]
        for gone in self.retracted:
            lines.append(f"~~{gone.text}~~ [attempt {gone.attempt} discarded: {gone.reason}]")
        lines.append(self.text)
        return "\n".join(lines)


def as_records(value: object, *, name: str, recorder: bool = True) -> list[Record]:
    """``value`` as a list of :class:`Record`, or a :class:`ConfigError` naming ``name``.

    A hurried caller passes ``None``, an engine or a list of something else; the log functions
    then fail here with one line, not deep inside with an ``AttributeError``.
    """
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        wanted = "a TurnRecorder or an iterable of Record" if recorder else "an iterable of Record"
        raise ConfigError(f"{name} must be {wanted}, got {type(value).__name__}")
    items: list[object] = list(cast("Iterable[object]", value))
    records: list[Record] = []
    for i, item in enumerate(items):
        if not isinstance(item, Record):
            raise ConfigError(f"{name}[{i}] must be a Record, got {type(item).__name__}")
        records.append(item)
    return records


def check_engine(value: object, *, name: str, wanted: str = "a TurnEngine") -> None:
    """A :class:`ConfigError` naming ``name`` unless ``value`` looks like a ``TurnEngine``."""
    needs = ("observers", "add_observer", "events", "served_model")
    if not all(hasattr(value, attr) for attr in needs) or not hasattr(
        getattr(value, "events", None), "subscribe"
    ):
        raise ConfigError(f"{name} must be {wanted}, got {type(value).__name__}")


def tail(text: str, limit: int) -> tuple[str, int]:
    """The last ``limit`` characters of ``text`` and how many were left out."""
    if len(text) <= limit:
        return text, 0
    return text[len(text) - limit :], len(text) - limit


class EngineLike(Protocol):
    """What :meth:`TurnRecorder.attach` needs from a :class:`~rxturn.engine.TurnEngine`."""

    @property
    def events(self) -> Observable[HandlerEvent]: ...

    @property
    def observers(self) -> ObserverSet: ...

    def add_observer(self, observer: Observer) -> None: ...

    def served_model(self) -> str: ...
