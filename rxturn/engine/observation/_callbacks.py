"""The observer protocol: every callback's name and its no-op default.

The table of what each callback receives and when it fires is
:mod:`rxturn.engine.observation.observers`' docstring; the names and the defaults live here so
that the fan-out and the stock observers can share them.
"""

from __future__ import annotations

import contextvars
import inspect
import weakref
from typing import Final, cast

from ..._arguments import check_callable, described
from ...errors import ConfigError
from ...events import AttemptReset
from ...messages import Message, Request, RequestOptions, ToolCallPart, ToolResultPart, Usage
from ..records.audit import AttemptRecord, Turn

__all__ = ["ALL_CALLBACKS", "CALLBACKS", "REQUEST_CALLBACKS", "Observer", "checked_observer"]

#: Every callback name, in the order of the table above.
CALLBACKS: Final[tuple[str, ...]] = (
    "on_run_start",
    "on_run_end",
    "on_turn_start",
    "on_text_delta",
    "on_thinking_delta",
    "on_attempt_reset",
    "on_response",
    "on_stream_success",
    "on_stream_failure",
    "on_fallback",
    "on_model_switched",
    "on_turn_end",
    "on_tool_call",
    "on_tool_result",
    "on_compaction",
    "on_hedge",
    "on_hedge_skipped",
    "on_hedge_won",
)

#: The request callbacks, for tracers (see the module docstring). :class:`RecordingObserver` and
#: :class:`LoggingObserver` see them only when built with ``requests=True``.
REQUEST_CALLBACKS: Final[tuple[str, ...]] = (
    "on_request",
    "on_attempt_start",
    "on_attempt_end",
    "on_first_chunk",
    "on_request_end",
)

#: Every callback an :class:`ObserverSet` knows.
ALL_CALLBACKS: Final[tuple[str, ...]] = CALLBACKS + REQUEST_CALLBACKS


class Observer:
    """Base class: every callback is an optional no-op. Override the ones you care about."""

    def on_run_start(self, *, session_id: str) -> None:
        """A run begins."""

    def on_run_end(
        self, *, success: bool, error: str | None, total_turns: int, duration_ms: float
    ) -> None:
        """A run ended (successfully or not)."""

    def on_turn_start(self, *, turn: int, query: str) -> None:
        """A served turn begins; ``query`` is what the model is asked (display text)."""

    def on_text_delta(self, *, turn: int, delta: str) -> None:
        """A text fragment arrived (from any attempt: reset on ``on_attempt_reset``)."""

    def on_thinking_delta(self, *, turn: int, delta: str) -> None:
        """A reasoning fragment arrived; it never enters the message."""

    def on_attempt_reset(self, *, turn: int, reset: AttemptReset) -> None:
        """A retry starts: the failed attempt's fragments are void."""

    def on_response(self, *, turn: int, text: str, usage: Usage | None) -> None:
        """The turn's committed reply text (tool calls excluded)."""

    def on_stream_success(
        self, *, turn: int, model: str, input_tokens: int, output_tokens: int
    ) -> None:
        """The turn was served by ``model`` (the model that actually served, not the configured)."""

    def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
        """The turn failed on ``model``; never called for a cancel."""

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        """The model breaker tripped: turns now go to ``to_model``."""

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        """The serving model changed between turns (trip, chain advance, recovery, switch) or
        within one (a same-turn failover)."""

    def on_turn_end(
        self,
        *,
        turn: int,
        success: bool,
        error: str | None,
        duration_ms: float,
        input_tokens: int,
        output_tokens: int,
    ) -> None:
        """A turn's LLM phase (or tool phase) ended."""

    def on_tool_call(self, *, turn: int, call: ToolCallPart) -> None:
        """The model asked for a tool to be run."""

    def on_tool_result(self, *, turn: int, result: ToolResultPart) -> None:
        """A tool's result is going back to the model."""

    def on_compaction(self, *, before_tokens: int, after_tokens: int) -> None:
        """The conversation was compacted from ``before_tokens`` to ``after_tokens``."""

    def on_hedge(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        hedge_model: str,
        reason: str,
        after: float,
    ) -> None:
        """A hedged first token sent a hedge to ``hedge_model``, ``after`` seconds into the
        race (``reason``: ``"delay"``, or ``"error"`` when the racers failed before it)."""

    def on_hedge_skipped(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str | None, reason: str
    ) -> None:
        """A hedge was due but not sent (``"breaker_open"``, ``"rate_limited"``, ``"budget"``)."""

    def on_hedge_won(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, after: float
    ) -> None:
        """The hedge to ``hedge_model`` produced content first: it serves the turn (the primary
        ``model`` was cut; nothing of it was shown). ``after`` counts from the turn's start."""

    def on_request(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        request: Request,
        options: RequestOptions,
        provider: str,
        base_url: str,
        stream: bool,
        estimated_input_tokens: int,
    ) -> None:
        """The turn's model call begins: ``model`` (the routed one) is asked ``request``.

        ``options`` are the request options as the request carries them (the client's default
        ``max_tokens`` filled in when they set none), ``provider`` is ``"anthropic"``,
        ``"openai"``, ``"ollama"`` (or a client's own name), ``base_url`` where requests go,
        ``estimated_input_tokens`` the engine's offline estimate of the prompt.
        """

    def on_attempt_start(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        kind: str,
        model: str,
        wait: float,
        after: str | None,
        context: contextvars.Context,
    ) -> None:
        """Request ``attempt`` (1, 2, …) of the turn is about to be sent to ``model``.

        ``context`` is the :mod:`contextvars` context the request is sent in (set variables in
        it with ``context.run(var.set, value)``); see the module docstring.
        """

    def on_attempt_end(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        record: AttemptRecord,
        error: BaseException | None,
    ) -> None:
        """Request ``attempt`` ended: ``record`` is its attempt-log entry (``record.outcome``
        says how), ``error`` what ended it (``None`` when it served or was let go from outside)."""

    def on_first_chunk(self, *, turn: int, turn_id: int) -> None:
        """The first reply content of the turn arrived (streaming turns only)."""

    def on_request_end(
        self,
        *,
        turn: int,
        turn_id: int,
        record: Turn,
        message: Message | None,
        error: BaseException | None,
    ) -> None:
        """The turn's model call ended: ``record`` is its audit entry, ``message`` the reply
        (``None`` when it failed with ``error``)."""


def checked_observer(value: object, where: str) -> Observer:
    """``value`` when it can be an observer — an instance with at least one ``on_…`` callback
    (an :class:`Observer` subclass, or any object with such methods), each of which takes the
    keywords :class:`Observer`'s own does — else a ConfigError naming ``where``."""
    if isinstance(value, type):
        raise ConfigError(f"{where} must be an observer instance, got the class {value.__name__}")
    if not isinstance(value, Observer) and not any(
        callable(getattr(value, name, None)) for name in ALL_CALLBACKS
    ):
        raise ConfigError(
            f"{where} must be an observer (an Observer subclass or an object with on_... "
            f"callbacks such as on_text_delta), got {described(value)}"
        )
    for name in ALL_CALLBACKS:
        _check_callback(value, name)
    return cast(Observer, value)  # duck-typed: it has callbacks of the table


def _check_callback(observer: object, name: str) -> None:
    """A ConfigError when ``observer``'s callback ``name`` cannot be called with the keywords
    that :class:`Observer`'s does: it would raise a TypeError at every call, each reported and
    ignored (a log flood for ``on_text_delta``), and the observer would never see anything."""
    method = getattr(observer, name, None)
    default = getattr(Observer, name)
    function = getattr(method, "__func__", None)
    if not callable(method) or function is default or function in _SIGNATURES_OK:
        return
    check_callable(method, f"observer {type(observer).__name__}.{name}", "a method")
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # a callable whose signature cannot be read: trusted
        return
    keywords = [key for key in inspect.signature(default).parameters if key != "self"]
    try:
        signature.bind(**dict.fromkeys(keywords))
    except TypeError as exc:
        raise ConfigError(
            f"observer {type(observer).__name__}.{name} cannot take the callback's keyword "
            f"arguments ({exc}); define it as {name}(self, *, {', '.join(keywords)}) "
            "(or add **kwargs)"
        ) from None
    if function is not None:
        _SIGNATURES_OK.add(function)


#: The callback functions whose signatures passed :func:`_check_callback` (checked once per
#: class, not once per engine built).
_SIGNATURES_OK: weakref.WeakSet[object] = weakref.WeakSet()
