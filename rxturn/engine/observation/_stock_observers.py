"""The stock observers: :class:`RecordingObserver` (tests, notebooks) and
:class:`LoggingObserver` (one structured log line per callback)."""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable
from typing import Any, Final

from ..._arguments import check_bool, check_instance, described
from ..._validate import is_int
from ...errors import ConfigError
from ...events import AttemptReset
from ...messages import Message, Request, RequestOptions, ToolCallPart, ToolResultPart, Usage
from ..records.audit import AttemptRecord, Turn
from ._callbacks import CALLBACKS, REQUEST_CALLBACKS, Observer

__all__ = ["LoggingObserver", "RecordingObserver"]


class RecordingObserver(Observer):
    """Records every callback as ``(name, kwargs)`` in :attr:`calls` (tests, notebooks).

    Every callback of :data:`CALLBACKS` is overridden, so it also sees every delta; with
    ``requests=True`` it records the :data:`REQUEST_CALLBACKS` as well.
    """

    def __init__(self, *, requests: bool = False) -> None:
        check_bool(requests, "RecordingObserver(requests=...)")
        self.calls: list[tuple[str, dict[str, Any]]] = []
        if requests:
            _opt_in(self, self.calls)

    def names(self) -> list[str]:
        """The callback names in the order they were called."""
        return [name for name, _ in self.calls]

    def calls_of(self, name: str) -> list[dict[str, object]]:
        """The keyword arguments of every call to ``name``, in order."""
        return [kwargs for called, kwargs in self.calls if called == name]

    def clear(self) -> None:
        self.calls.clear()


def _recorder(name: str) -> Callable[..., None]:
    def record(self: RecordingObserver, **kwargs: object) -> None:
        self.calls.append((name, kwargs))

    record.__name__ = record.__qualname__ = name
    record.__doc__ = f"Record ``{name}``."
    return record


def _opt_in(observer: RecordingObserver, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Give one recorder its own callables for the request callbacks."""
    for name in REQUEST_CALLBACKS:

        def record(name: str = name, **kwargs: Any) -> None:
            calls.append((name, kwargs))

        setattr(observer, name, record)


def _install(cls: type[Observer], make: Callable[[str], Callable[..., None]]) -> None:
    """Give ``cls`` its own method for every callback (so the fast path sees it as interested)."""
    for name in CALLBACKS:
        setattr(cls, name, make(name))


_install(RecordingObserver, _recorder)

_MAX_LOGGED_CHARS = 200
_DELTAS: Final = frozenset({"on_text_delta", "on_thinking_delta"})


def _fmt(value: object) -> str:
    """A compact, bounded rendering of one callback argument for a log line."""
    if isinstance(value, str):
        if len(value) > _MAX_LOGGED_CHARS:
            return repr(value[:_MAX_LOGGED_CHARS]) + f"…(+{len(value) - _MAX_LOGGED_CHARS} chars)"
        return repr(value)
    if isinstance(value, BaseException):
        return _fmt(f"{type(value).__name__}: {value}")
    if isinstance(value, Usage):
        return f"{value.input_tokens}/{value.output_tokens}"
    if isinstance(value, ToolCallPart):
        return f"{value.name}#{value.id}"  # inputs may be large or private: not logged
    if isinstance(value, ToolResultPart):
        flag = " error" if value.is_error else ""
        media = f", {len(value.media)} media" if value.media else ""
        return f"#{value.tool_call_id}{flag} ({len(value.text)} chars{media})"
    if isinstance(value, AttemptReset):
        return f"attempt {value.attempt} after {value.error_type or 'error'}"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, Request):  # prompts are private and may be large: not logged
        return f"<{len(value.messages)} messages>"
    if isinstance(value, Message):
        return f"<{value.role} message {value.id or ''}>".replace(" >", ">")
    if isinstance(value, RequestOptions):
        return f"<options model={value.model!r}>"
    if isinstance(value, contextvars.Context):
        return "<context>"
    if isinstance(value, AttemptRecord):
        return f"{value.model}/{value.kind}:{value.outcome}"
    if isinstance(value, Turn):
        return f"<turn {value.turn} error={value.error!r}>"
    return repr(value)


class LoggingObserver(Observer):
    """One structured log line per callback.

    Deltas go out at ``delta_level`` (DEBUG), everything else at ``level`` (INFO). Each record
    carries ``extra={"rxturn_callback": name, "rxturn_fields": kwargs}`` for structured
    handlers; the message renders the fields as ``key=value`` with long text cut to 200 chars
    and tool inputs left out. It logs only what the engine hands it, which never includes keys
    (requests and messages are summarised, never printed). With ``requests=True`` it logs the
    :data:`REQUEST_CALLBACKS` as well.
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        level: int = logging.INFO,
        delta_level: int = logging.DEBUG,
        requests: bool = False,
    ) -> None:
        check_instance(
            logger, logging.Logger, "LoggingObserver(logger=...)", "a logging.Logger", optional=True
        )
        for name, value in (("level", level), ("delta_level", delta_level)):
            if not is_int(value) or value < 0:
                raise ConfigError(
                    f"LoggingObserver({name}=...) must be a logging level (an int >= 0 such as "
                    f"logging.INFO), got {described(value)}"
                )
        check_bool(requests, "LoggingObserver(requests=...)")
        self.logger = logger if logger is not None else logging.getLogger("rxturn.turn")
        self.level = level
        self.delta_level = delta_level
        if requests:
            for name in REQUEST_CALLBACKS:
                setattr(self, name, functools.partial(self.log_kwargs, name))

    def log_kwargs(self, name: str, /, **fields: object) -> None:
        """:meth:`log` with the fields as keywords."""
        self.log(name, fields)

    def log(self, name: str, fields: dict[str, object]) -> None:
        """Emit the line for callback ``name`` (skipped cheaply when the level is disabled)."""
        level = self.delta_level if name in _DELTAS else self.level
        if not self.logger.isEnabledFor(level):
            return
        rendered = " ".join(f"{key}={_fmt(value)}" for key, value in fields.items())
        self.logger.log(
            level,
            "%s %s",
            name,
            rendered,
            extra={"rxturn_callback": name, "rxturn_fields": fields},
        )


def _logger_method(name: str) -> Callable[..., None]:
    def log(self: LoggingObserver, **kwargs: object) -> None:
        self.log(name, kwargs)

    log.__name__ = log.__qualname__ = name
    log.__doc__ = f"Log ``{name}``."
    return log


_install(LoggingObserver, _logger_method)
