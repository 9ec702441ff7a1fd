"""Keeping secrets out of what rxturn hands out: text with keys removed and capped
(:func:`redact`), and an exception chain scrubbed in place (:func:`scrub_exception`, behind
:func:`rxturn.errors.scrub_secrets`)."""

from __future__ import annotations

import re
from typing import Any, Protocol, cast
from urllib.parse import quote

__all__ = [
    "is_credential_header",
    "one_line",
    "quoted",
    "redact",
    "scrub_exception",
    "without_base64",
    "without_secrets",
]


class _Message(Protocol):
    message: str


# Bodies and messages we keep are capped so a hostile server cannot make an error huge.
_MAX_BODY_CHARS = 8192

#: Request headers whose values are credentials (or may be): never echoed in an error or a repr.
_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|cookie|session|password", re.IGNORECASE)


def is_credential_header(name: str) -> bool:
    """Whether a header called ``name`` carries a credential (``Authorization``,
    ``x-api-key``, a gateway's ``Helicone-Auth``...): its value is a secret."""
    return _CREDENTIAL_HEADER.search(name) is not None


_KEY_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-]{6,}|sk-ant-[A-Za-z0-9_\-]{6,})")

#: A run of base64 this long is data, not words: a server echoing the request in an error
#: (``could not process image: {... "data": "iVBORw0K..."}``) echoes the media's bytes.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{160,}={0,2}")


def _base64_run(match: re.Match[str]) -> str:
    run = match.group()
    # data has upper and lower case letters and digits; a run of one letter is padding
    if run.lower() == run or run.upper() == run or not any(c.isdigit() for c in run):
        return run
    return f"[base64: {len(run)} chars]"


#: What a message quoting a server never carries: line breaks, other whitespace runs and control
#: characters (a hostile server's ANSI escapes, NULs, bells), each run shown as one space.
_NOT_ONE_LINE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")


def one_line(text: str) -> str:
    """``text`` (a server's words quoted in an error message) on one line, without control
    characters: every run of whitespace or control characters becomes one space.

    Examples:
        >>> one_line("bad\\n  request\\x1b[2J ")
        'bad request [2J'
    """
    return _NOT_ONE_LINE.sub(" ", text).strip()


def quoted(error: BaseException) -> str:
    """An exception of someone else's (a client's, a transport's, Ray's) as rxturn's messages
    quote it: its words on one line, key-like text taken out (:func:`redact`); ``""`` when its
    ``str()`` itself raises.

    Examples:
        >>> quoted(RuntimeError("no\\nkey sk-ant-api03-" + "k" * 40))
        'no key [redacted]'
    """
    try:
        text = str(error)
    except Exception:  # a __str__ that raises: nothing to quote (the caller names the type)
        return ""
    return one_line(redact(text))


def without_base64(text: str) -> str:
    """``text`` with each long run of base64 replaced by ``[base64: N chars]`` (before any
    cut: a cut run would leave its head behind)."""
    return _BASE64_RUN.sub(_base64_run, text)


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API-key-looking tokens (and any given secrets) from ``text``, and long runs of
    base64 (media bytes a server echoed); cap its length."""
    text = without_base64(without_secrets(text, secrets))
    if len(text) > _MAX_BODY_CHARS:
        text = text[:_MAX_BODY_CHARS] + f"… [{len(text) - _MAX_BODY_CHARS} more chars]"
    return text


def without_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every given secret (as is, and percent-encoded as a URL would carry it) and
    every key-looking token replaced by ``[redacted]``; the length is not capped."""
    for secret in secrets:
        if len(secret) >= 8:  # a short "secret" would shred ordinary words
            text = text.replace(secret, "[redacted]")
            # a key from the environment holds its bytes that are not UTF-8 as lone surrogates
            # (os.environ's surrogateescape): percent-encoded as those bytes, not a crash
            quoted = quote(secret, safe="", errors="surrogateescape")
            if quoted != secret:
                text = text.replace(quoted, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", text)


def scrub_exception(
    exc: BaseException, secrets: tuple[str, ...], ours: type[BaseException]
) -> None:
    """Remove ``secrets`` from ``exc`` in place; chained exceptions that are not ``ours`` are
    dropped (see :func:`rxturn.errors.scrub_secrets`, which passes the error tree's root)."""
    _scrub(exc, secrets, ours, set())


def _scrub(
    exc: BaseException, secrets: tuple[str, ...], ours: type[BaseException], seen: set[int]
) -> None:
    if id(exc) in seen:
        return
    seen.add(id(exc))
    if isinstance(exc, ours):
        own = cast("_Message", exc)  # the tree's root keeps its text in ``message``
        own.message = redact(own.message, secrets)
        exc.args = (own.message,)
        for name, value in list(vars(exc).items()):
            if name != "message":
                cleaned = _scrub_value(value, secrets, ours, seen)
                if cleaned is not value:
                    setattr(exc, name, cleaned)
    else:
        exc.args = tuple(_scrub_value(arg, secrets, ours, seen) for arg in exc.args)
    notes: Any = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        exc.__notes__ = [
            without_secrets(note, secrets) if isinstance(note, str) else "[note]"
            for note in notes  # pyright: ignore[reportUnknownVariableType]
        ]
    cause, context = exc.__cause__, exc.__context__
    if isinstance(cause, ours):
        _scrub(cause, secrets, ours, seen)
    elif cause is not None:
        exc.__cause__ = None
    if isinstance(context, ours):
        _scrub(context, secrets, ours, seen)
    elif context is not None:
        exc.__context__ = None
        exc.__suppress_context__ = True


def _scrub_value(
    value: Any, secrets: tuple[str, ...], ours: type[BaseException], seen: set[int]
) -> Any:
    if isinstance(value, str):
        cleaned = without_secrets(value, secrets)
        return value if cleaned == value else cleaned
    if isinstance(value, bytes):
        cleaned_bytes = value
        for secret in secrets:
            if len(secret) >= 8:
                cleaned_bytes = cleaned_bytes.replace(secret.encode(), b"[redacted]")
        return value if cleaned_bytes == value else cleaned_bytes
    if isinstance(value, BaseException):
        _scrub(value, secrets, ours, seen)
        return value
    if isinstance(value, tuple | list):
        old_items = cast("list[Any] | tuple[Any, ...]", value)
        items = [_scrub_value(item, secrets, ours, seen) for item in old_items]
        if all(new is old for new, old in zip(items, old_items, strict=True)):
            return old_items
        return tuple(items) if isinstance(old_items, tuple) else items
    if isinstance(value, dict):
        return {
            _scrub_value(key, secrets, ours, seen): _scrub_value(item, secrets, ours, seen)
            for key, item in cast("dict[Any, Any]", value).items()
        }
    return value
