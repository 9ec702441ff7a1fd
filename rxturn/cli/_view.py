"""How ``chat`` and ``demo`` show a running turn: reply text on stdout, notices on stderr.

:class:`TurnView` is an observer plus the engine's ``text_streamer``, the handler's ``on_wait``
hook and a subscriber of ``engine.events`` (for the rescue's ``Fallback``). It applies the
rules of :mod:`rxturn.cli._console`:

* stdout a terminal: text is live; the failed attempt's text is erased when the attempt is
  known to have failed (a wait starts, ``AttemptReset``, the rescue replaces it, the turn
  fails or is cancelled);
* stdout anything else: the view writes no text at all. The command writes what was served,
  from the run's result (``chat``) or from ``on_response`` through ``commit`` (``demo``);
* notices on stderr in the order things happened: a long wait as it starts, a retry as it
  starts, the rescue, the serving model changing. The engine reports a breaker trip before the
  failure that caused it; the view holds the trip back until the failure has been told
  (``report_failures``) or until the command calls :meth:`flush` after its error line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from ..engine.observation.observers import Observer
from ..errors import Cancelled, ConfigError, RescueFailed
from ..events import AttemptReset, Delta, Fallback
from ..messages import Usage
from ._console import LONG_WAIT, LiveText, Notices, one_line

__all__ = ["TurnView", "describe_error"]


def describe_error(exc: BaseException, where: str = "") -> str:
    """One line for a failed turn: what failed, and ``where`` (model and URL) unless the
    message already names the URL. The non-streaming rescue is named as such."""
    url = where.rpartition(" at ")[2]
    if isinstance(exc, RescueFailed):
        streamed = one_line(str(exc.stream_error) or type(exc.stream_error).__name__)
        rescued = one_line(str(exc.rescue_error) or type(exc.rescue_error).__name__)
        if streamed == rescued:
            text = f"{streamed} (streaming and the non-streaming rescue request both failed)"
        else:
            text = f"streaming failed: {streamed}; the non-streaming rescue request failed too: "
            text += rescued
    else:
        text = one_line(str(exc) or type(exc).__name__)
    if where and not isinstance(exc, Cancelled | ConfigError) and (not url or url not in text):
        text += f" ({one_line(where)})"
    return text


class TurnView(Observer):
    """Shows one engine's turns (see the module docstring).

    Args:
        out: stdout.
        notices: where notices go.
        live: stdout is a terminal: stream text and erase failed attempts.
        prefix: written before a reply's text on a terminal (the demo indents replies).
        commit: not live: called with each served turn's text (``None``: the command prints
            the result itself).
        report_failures: tell a failed turn as a notice (the demo); otherwise the command
            reports it as an error and then calls :meth:`flush`.
    """

    def __init__(
        self,
        out: TextIO,
        notices: Notices,
        *,
        live: bool,
        prefix: str = "",
        commit: Callable[[str], object] | None = None,
        report_failures: bool = False,
        color: bool = False,
    ) -> None:
        self.reply = LiveText(out, prefix=prefix, color=color) if live else None
        self.notices = notices
        self.commit = commit
        self.report_failures = report_failures
        self._pending: list[tuple[str, str]] = []
        self._announced = 0  # the attempt whose wait notice is on stderr
        self._last_reason = ""  # the turn's previous retry reason (a repeat is said briefly)

    # -- the engine's text_streamer, the handler's on_wait, engine.events ----------------------

    def text(self, chunk: str) -> None:
        if self.reply is not None:
            self.reply.write(chunk)

    def on_wait(self, *, reason: str, seconds: float, attempt: int, error: BaseException) -> None:
        if self.reply is not None:
            self.reply.erase()  # the attempt has failed: its text goes now, not after the wait
        if seconds < LONG_WAIT:
            return  # the retry notice at AttemptReset follows at once
        what = "rate limit" if reason == "rate_limit" else "backoff"
        cause = one_line(str(error) or type(error).__name__, 200)
        self._announced = attempt
        self.notices.wait(
            "wait", lambda duration: f"attempt {attempt} in {duration} ({what}): {cause}", seconds
        )

    def handler_event(self, event: Any) -> None:
        if type(event) is Delta:
            # thinking, on a terminal only (the reply's text comes through ``text``)
            if event.kind == "thinking" and self.reply is not None:
                self.reply.thinking(event.text)
            return
        if type(event) is Fallback:
            if self.reply is not None:
                self.reply.erase()
            self.notices.line("rescue", "rescued by the non-streaming request")
            if self.reply is not None:
                self.reply.write(event.message.text)

    # -- observer callbacks --------------------------------------------------------------------

    def on_attempt_reset(self, *, turn: int, reset: AttemptReset) -> None:
        if self.reply is not None:
            self.reply.erase()
        reason = one_line(reset.reason, 200)
        if self._announced == reset.attempt:
            self.notices.settle()  # the wait's own line already said why
        elif reset.attempt > 2 and reason == self._last_reason:
            self.notices.line("retry", f"attempt {reset.attempt}: the same error again")
        else:
            self.notices.line("retry", f"attempt {reset.attempt}: {reason}")
        self._announced = 0
        self._last_reason = reason

    def on_turn_start(self, *, turn: int, query: str) -> None:
        self._last_reason = ""

    def on_response(self, *, turn: int, text: str, usage: Usage | None) -> None:
        if self.reply is not None:
            self.reply.end()
        elif self.commit is not None and text:
            self.commit(text)

    def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
        if isinstance(error, Cancelled):
            self.notices.settle()  # the command marks the kept text (turn_cancelled)
            return
        self.turn_failed()
        if self.report_failures:
            detail = one_line(describe_error(error), 160)
            self.notices.line("failure", f"{model} failed: {type(error).__name__}: {detail}")
            self.flush()

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        self._pending.append(("breaker", f"breaker tripped: {from_model} → {to_model}"))

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        self.flush()
        self.notices.line("model", f"serving model: {from_model} → {to_model}")

    def on_hedge(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, reason: str, after: float
    ) -> None:
        why = "failed" if reason == "error" else "no first token"
        self.notices.line(
            "hedge", f"hedge: {model} {why} after {after:.1f}s; also asking {hedge_model}"
        )

    def on_hedge_skipped(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str | None, reason: str
    ) -> None:
        why = {"breaker_open": "its breaker is open", "rate_limited": "the quota is rate limited"}
        text = why.get(reason, "the hedge budget is spent")
        self.notices.line("hedge", f"hedge to {hedge_model} skipped: {text}")

    def on_hedge_won(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, after: float
    ) -> None:
        self.notices.line(
            "hedge", f"{hedge_model} answered first; the request to {model} was closed"
        )

    # -- for the command -----------------------------------------------------------------------

    def turn_failed(self) -> None:
        """The turn failed or was cancelled: erase its text, end any countdown."""
        if self.reply is not None:
            self.reply.erase()
        self.notices.settle()
        self._announced = 0

    def turn_cancelled(self) -> None:
        """The user cancelled the turn: on a terminal the text already shown stays, marked."""
        if self.reply is not None:
            self.reply.end("[cancelled]")
        self.notices.settle()
        self._announced = 0

    def flush(self) -> None:
        """Write the notices held back until the failure they follow was told."""
        pending, self._pending = self._pending, []
        for kind, text in pending:
            self.notices.line(kind, text)
