"""The runner: each row one :class:`~rxturn.engine.TurnEngine` turn, ``concurrency`` at a time.

A runner owns one client (one connection pool sized to its concurrency) and one engine per
concurrency slot, each with the resilient :class:`~rxturn.engine.handler.StreamHandler` (the
default policies, as ``rxturn chat`` uses) and, with fallbacks, a
:class:`~rxturn.resilience.fallback.FallbackManager` with same-turn failover per model. A slot's
engine is reused row after row: each row gets a fresh session (history = the row's messages,
an empty audit trail), its own system prompt and request options.

Budget: before a row's turn starts, its slot waits for a grant of the run's :class:`Gate` (one
request, estimated input + max tokens). Every later streaming request of the turn (a retry, a
failover leg) asks the gate again through the handler's proactive-limiter hook, before the
attempt's clock starts; the non-streaming rescue waits for its grant in the transport, inside
the rescue's own deadline (a rescue that cannot get one in time fails, as a rescue that timed
out does). So every attempt spends budget, and none is sent without a grant. A grant counts in
every window until its request has been sent, and from then on from the moment the send ended
(the runner's transport stamps it); a grant no request takes (the row ended first: cancelled,
failed at a deadline) is released when the row ends. A rate limit with a Retry-After that any
attempt meets pauses the gate, so every worker stops sending until it expires: the runner's
transport sees it as the response's headers arrive. What the provider reports replaces each
request's estimate: each slot observes its engine's attempts for that, and only then (an
observer costs every turn a look-up per callback it emits); with a client of the caller's,
whose responses the runner cannot see, the slot observes the attempts for the Retry-After too.

Per row, the slot only swaps the engine's session, system prompt and request options (the
options of a row that sets none are built once per model). The engine's context estimate uses a
character count (:class:`CharCounter`): a batch turn has no context window to keep, so a
tokenizer pass per row (and the tokenizer's load at start) would buy nothing.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Literal, cast

import msgspec

from .. import _constants as C
from .._arguments import described, shown
from .._jsonl import as_line
from .._redact import quoted
from .._validate import CONTROL_IN_NAME, MAX_TOKENS, has_control, is_utf8
from ..clients._base import ModelClient
from ..clients._connection import check_base_url
from ..clients._factory import client_for
from ..cost import Cost
from ..engine import TurnEngine
from ..engine.context.tokens import TokenCounter, counter_loaded, warm_up_counter
from ..engine.handler import StreamHandler
from ..engine.observation.observers import Observer
from ..errors import APIStatusError, Cancelled, ConfigError, RxturnError
from ..messages import Message, RequestOptions, Usage
from ..resilience.backoff import parse_retry_after
from ..resilience.fallback import FallbackManager
from ..resilience.limiter import RateLimiter
from ..resilience.policies import LimiterPolicy, TimeoutPolicy
from ._budget import MAX_PER_MINUTE, MAX_PER_MINUTE_TEXT, Gate, check_gate
from ._input import BatchRow

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_TOKENS",
    "PROVIDERS",
    "BatchConfig",
    "CharCounter",
    "ErrorInfo",
    "RowError",
    "RowOk",
    "RowResult",
    "Runner",
    "checked_config",
    "drive",
    "encode_result",
    "reply_budget",
]

Provider = Literal["anthropic", "openai", "openai-responses", "ollama"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "openai-responses", "ollama")

#: seconds a retry waits between asks when the budget lives in another process
_POLL = 0.02
#: statuses whose Retry-After pauses the whole run's sending
_PAUSING = frozenset({429, 503, 529})


MAX_CONCURRENCY = 10_000
"""The most turns one process runs at once: each holds an engine, a socket and its buffers
(about 30 KB), so 10,000 is some 300 MB, and no provider takes more streams from one key;
a typo such as ``--concurrency 1000000`` is refused, not obeyed."""


class BatchConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How every row of a run is asked (a row's own model, system and options win).

    Attributes:
        provider: ``anthropic``, ``openai``, ``openai-responses`` or ``ollama``.
        model: the default model.
        base_url: the endpoint (``None``: the provider's own).
        fallback: backup models: a breaker per slot, with same-turn failover.
        failover: same-turn failover to the next backup (on by default with ``fallback``).
        system: the default system prompt.
        max_tokens: the default reply budget (``None``: the client's).
        temperature: the default temperature.
        concurrency: turns in flight at once (per worker).
        rpm: requests per minute over the whole run (``None``: unlimited).
        tpm: tokens per minute (estimated input + max tokens, corrected by usage).
    """

    provider: Provider
    model: str
    base_url: str | None = None
    fallback: tuple[str, ...] = ()
    failover: bool = True
    system: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    concurrency: int = 64
    rpm: int | None = None
    tpm: int | None = None

    def check(self) -> BatchConfig:
        """Raises ConfigError for a value no run can use."""
        if self.provider not in PROVIDERS:
            raise ConfigError(f"provider must be one of {', '.join(PROVIDERS)}")
        for field in self.__struct_fields__:  # first: msgspec cannot even name such a str
            given: object = getattr(self, field)
            texts: list[object] = [given]
            if isinstance(given, tuple | list):
                texts.extend(cast("tuple[object, ...]", given))
            if any(isinstance(text, str) and not is_utf8(text) for text in texts):
                raise ConfigError(f"{field} is not valid UTF-8 text")
        try:  # the fields' types (a Struct takes anything it is given; bytes stay bytes, not
            # the base64 text that would pass for a str)
            builtins = msgspec.to_builtins(self, builtin_types=(bytes, bytearray, memoryview))
            msgspec.convert(builtins, type(self))
        except (msgspec.ValidationError, TypeError) as exc:
            raise ConfigError(f"BatchConfig: {exc}") from None
        if not self.model.strip():
            raise ConfigError("model must not be empty")
        if any(not name.strip() for name in self.fallback):
            raise ConfigError("fallback models must not be empty")
        for field, names in (("model", [self.model]), ("fallback", self.fallback)):
            if any(has_control(name) for name in names):  # the CLI's rule for --model too
                raise ConfigError(f"{field} {CONTROL_IN_NAME}")
        if self.base_url is not None:
            check_base_url(self.base_url)  # the clients' rule, whose errors never echo a key
        for name in ("concurrency", "max_tokens", "rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ConfigError(f"{name} must be an integer >= 1, got {shown(value)}")
        if self.max_tokens is not None and self.max_tokens > MAX_TOKENS:
            raise ConfigError(
                f"max_tokens must be at most {MAX_TOKENS} (2**31 - 1), got "
                f"{described(self.max_tokens)}"
            )
        for name in ("rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and value > MAX_PER_MINUTE:
                raise ConfigError(
                    f"{name} must be at most {MAX_PER_MINUTE_TEXT} (per minute), got "
                    f"{described(value)}"
                )
        if self.concurrency > MAX_CONCURRENCY:
            raise ConfigError(
                f"concurrency must be from 1 to {MAX_CONCURRENCY} (turns in flight at once in "
                f"one process), got {shown(self.concurrency)}"
            )
        if self.temperature is not None and not (
            math.isfinite(self.temperature) and self.temperature >= 0
        ):
            raise ConfigError(
                f"temperature must be a number >= 0, got {shown(self.temperature, 100)}"
            )
        return self

    def options(self) -> dict[str, object]:
        """The request options every row gets (what the manifest fingerprints)."""
        options: dict[str, object] = {}
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            options["temperature"] = self.temperature
        return options


def checked_config(config: object) -> BatchConfig:
    """``config`` when it is a :class:`BatchConfig` that :meth:`~BatchConfig.check` passes;
    else a ConfigError (what every entry point that takes one asks first)."""
    if not isinstance(config, BatchConfig):
        raise ConfigError(f"config must be a BatchConfig, got {type(config).__name__}")
    return config.check()


class ErrorInfo(msgspec.Struct, frozen=True):
    type: str
    message: str


class RowOk(msgspec.Struct, frozen=True, kw_only=True):
    """A served row: its output line, whose keys come in this order (``id``, ``status`` ``"ok"``,
    ...)."""

    id: str
    #: ``"ok"``, as the output line says (``isinstance(result, RowOk)`` is the same)
    status: Literal["ok"] = "ok"
    message: Message
    model: str
    attempts: int
    rescued: bool
    usage: Usage | None
    billed_usage: Usage | None
    input_sha: str
    run: int
    #: what the row's attempts cost (``None`` without the ``rxturn[cost]`` extra)
    cost: Cost | None = None

    @property
    def text(self) -> str:
        return self.message.text


class RowError(msgspec.Struct, frozen=True, kw_only=True):
    """A failed row: its output line (``id``, ``status`` ``"error"``, ...); a row's failure, not
    the run's."""

    id: str
    #: ``"error"``, as the output line says
    status: Literal["error"] = "error"
    error: ErrorInfo
    attempts: int
    billed_usage: Usage | None
    input_sha: str
    run: int
    cost: Cost | None = None


RowResult = RowOk | RowError

_encoder = msgspec.json.Encoder()


def encode_result(result: RowResult) -> bytes:
    """The output line of ``result`` (Message JSON inside, ending with a newline; one line for
    every line splitter: :func:`rxturn._jsonl.as_line`)."""
    return as_line(_encoder.encode(result))


def estimate_tokens(row: BatchRow, system: str | None, max_tokens: int) -> int:
    """What the budget charges for a row's request before usage is known: about four
    characters per input token, plus the reply's ``max_tokens``."""
    chars = len(system or "")
    for message in row.messages:
        chars += len(message.text)
    return chars // 4 + 8 * len(row.messages) + max_tokens


class CharCounter:
    """A :class:`~rxturn.engine.context.tokens.TokenCounter` that counts about four characters per
    token (plus a few per message), with nothing to load: the engine's context estimate of a
    batch turn, which no context window reads."""

    __slots__ = ()

    loaded = True

    def count_text(self, text: str) -> int:
        return len(text) // 4

    def count_message(self, message: Message) -> int:
        return len(message.text) // 4 + 8

    def count_messages(self, messages: Iterable[Message]) -> int:
        total = 0  # a loop, not sum() over a generator: called a few times every turn
        for message in messages:
            total += len(message.text) // 4 + 8
        return total


#: the slot whose turn is running in this task (the budget transport charges it)
_current_slot: ContextVar[_Slot | None] = ContextVar("rxturn_batch_slot", default=None)


class _SlotLimiter(RateLimiter):
    """The handler's proactive-limiter hook, asking the run's gate for each later attempt."""

    __slots__ = ("slot",)

    def __init__(self, slot: _Slot) -> None:
        super().__init__(LimiterPolicy(requests_per_minute=1))
        self.slot = slot

    @property
    def enabled(self) -> bool:
        return True

    @property
    def max_wait(self) -> float:
        return math.inf

    def acquire(self, key: str, now: float) -> float:
        return self.slot.permit()


class _Slot(Observer):
    """One concurrency slot: an engine reused row after row, and its budget bookkeeping."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        gate = runner.gate
        # every attempt after the first asks the gate: for budget, or for a Retry-After pause
        limiter = _SlotLimiter(self) if gate is not None else None
        self.managers: dict[str, FallbackManager] = {}
        config = runner.config
        manager = self._manager(config.model) if config.fallback else None
        failover = bool(config.fallback) and config.failover
        self.engine = TurnEngine(
            runner.client,
            handler=StreamHandler(
                timeouts=runner.timeouts, limiter=limiter, on_wait=runner.on_wait
            ),
            observers=(self,) if runner.observes else (),
            counter=runner.counter,
            fallback=manager,
            # the engine refuses failover without a backup, and the default model has none
            # when the only fallback named is itself; rows of other models may have some
            failover=failover and manager is not None and bool(manager.fallback_models()),
        )
        self.engine.failover = failover  # a row without a backup simply has none to use
        self.tokens = 0  # the current row's estimate per request
        #: a grant no request has taken yet (``-1``: a go-ahead without a budget, a pause over)
        self.ready: int | None = None
        self.tickets: deque[int] = deque()  # grants whose requests went out, oldest first
        self.pending: asyncio.Task[int] | None = None

    def _manager(self, model: str) -> FallbackManager:
        """The breaker and failover chain of rows asking ``model`` (one per model)."""
        manager = self.managers.get(model)
        if manager is None:
            # (each backup once, the row's own model left out: a list shared by several runs)
            fallback = dict.fromkeys(self.runner.config.fallback)
            chain = [name for name in fallback if name != model]
            manager = self.managers[model] = FallbackManager(model, chain)
        return manager

    # --------------------------------------------------------------- budget

    def permit(self) -> float:
        """Called (synchronously) before each streaming attempt: 0 to go, else a wait.

        The grant stays :attr:`ready` until the runner's transport sends the attempt's request
        (and stamps it sent); an attempt that ends before its request leaves hands the grant
        to the next one. With a client of the caller's, whose sends the runner cannot see, the
        attempt takes the grant now and it is stamped when the attempt ends."""
        ready = self.ready
        if ready is None:
            pending = self.pending
            if pending is None:
                gate = self.runner.gate
                assert gate is not None
                self.pending = asyncio.ensure_future(gate.acquire(self.tokens))
                return _POLL
            if not pending.done():
                return _POLL
            self.pending = None
            ready = self.ready = pending.result()
        if not self.runner.stamps_sends:
            self.ready = None
            if ready >= 0:
                self.tickets.append(ready)
        return 0.0

    def take_ready(self) -> int | None:
        """The grant for the request being sent now (the transport's), if one is waiting."""
        ready, self.ready = self.ready, None
        return ready

    def _settle(self) -> None:
        """The row is over: every grant it holds is sent or given back."""
        gate = self.runner.gate
        assert gate is not None
        ready, self.ready = self.ready, None
        if ready is not None and ready >= 0:
            gate.release(ready)  # granted, never sent
        pending, self.pending = self.pending, None
        if pending is not None:
            if not pending.done():
                pending.cancel()  # the gate grants nothing to a cancelled ask
            elif not pending.cancelled() and pending.exception() is None:
                gate.release(pending.result())
        if not self.runner.stamps_sends:
            for ticket in self.tickets:  # handed to attempts that may have sent them
                gate.restamp(ticket)
        self.tickets.clear()

    def on_attempt_end(self, *, record: Any, error: BaseException | None, **_: object) -> None:
        gate = self.runner.gate
        if gate is None:
            return
        if self.tickets:
            ticket = self.tickets.popleft()
            if not self.runner.stamps_sends:
                gate.restamp(ticket)  # its request left by now, if it left at all
            usage: Usage | None = record.usage
            if usage is not None:
                gate.correct(ticket, usage.input_tokens + usage.output_tokens)
        if self.runner.sees_responses or not isinstance(error, APIStatusError):
            return  # the runner's own transport saw the Retry-After, if there was one
        if error.status_code in _PAUSING:
            self.runner.met_retry_after(error.retry_after)

    # --------------------------------------------------------------- one row

    def _prepare(self, row: BatchRow) -> None:
        runner, config = self.runner, self.runner.config
        engine = self.engine
        engine.session = type(engine.session)(row.messages)
        engine.system = row.system if row.system is not None else config.system
        model = row.model or config.model
        engine.request_options = runner.options_for(model, row.options)
        if config.fallback:
            engine.fallback = self._manager(model)
        if runner.limited:  # what the budget charges (without one, nothing reads it)
            max_tokens = engine.request_options.max_tokens or runner.default_max_tokens
            self.tokens = estimate_tokens(row, engine.system, max_tokens)

    async def run(self, row: BatchRow, sha: str, run: int) -> RowResult:
        self._prepare(row)
        gate = self.runner.gate
        if gate is not None:
            self.ready = await gate.acquire(self.tokens)  # the first attempt's grant
        engine = self.engine
        current = _current_slot.set(self)
        try:
            result = await engine.turn()
        except Exception as exc:  # a row's failure is its line, never the batch's
            if isinstance(exc, Cancelled):
                raise
            turns = engine.session.audit.all_turns()
            last = turns[-1] if turns else None
            return RowError(
                id=row.key,
                error=ErrorInfo(type(exc).__name__, _error_message(exc)),
                attempts=last.attempts if last is not None else 1,
                billed_usage=last.billed_usage if last is not None else None,
                input_sha=sha,
                run=run,
                cost=last.cost if last is not None else None,
            )
        finally:
            _current_slot.reset(current)
            if gate is not None:
                self._settle()
        return RowOk(
            id=row.key,
            message=result.message,
            model=result.model,
            attempts=result.attempts,
            rescued=result.rescued,
            usage=result.usage,
            billed_usage=result.billed_usage,
            input_sha=sha,
            run=run,
            cost=result.cost,
        )


def _error_message(error: Exception) -> str:
    """A failed row's ``error.message``: an rxturn error's own (one line, no key, by
    construction); any other (a user's client or transport raising its own exception) quoted
    as one line with key-like text taken out."""
    if isinstance(error, RxturnError):
        return str(error)
    return quoted(error) or type(error).__name__


def reply_budget(client: object) -> int:
    """The reply budget a request's estimate counts when neither the run nor the row sets
    ``max_tokens``: the client's own default (4096 for a client that has none)."""
    return int(getattr(client, "max_tokens", None) or 4096)


class _BudgetTransport:
    """The runner's transport, where a request of a budgeted run spends its grant.

    A streaming request takes the grant its slot got before the attempt started; the
    non-streaming rescue waits here for a grant of its own (charged to the slot whose turn
    sends it), inside the rescue's deadline. Either way the grant is stamped sent once the
    send is over (the response's headers are in, or the send failed): the provider has the
    request by then, if it ever will, so the window never counts it from before it arrived,
    however long it waited for a connection of the pool."""

    __slots__ = ("_inner", "_runner")

    def __init__(self, inner: Any, runner: Runner) -> None:
        self._inner = inner
        self._runner = runner

    async def send(
        self, method: str, url: str, *, headers: Mapping[str, str], body: bytes, stream: bool
    ) -> Any:
        runner = self._runner
        if runner.gate is None:
            return await self._inner.send(method, url, headers=headers, body=body, stream=stream)
        if runner.limited:
            response = await self._send_granted(method, url, headers, body, stream)
        else:
            response = await self._inner.send(
                method, url, headers=headers, body=body, stream=stream
            )
        if response.status in _PAUSING:  # a Retry-After pauses every slot and worker
            runner.met_retry_after(parse_retry_after(response.headers))
        return response

    async def _send_granted(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes, stream: bool
    ) -> Any:
        runner = self._runner
        gate = runner.gate
        assert gate is not None
        slot = _current_slot.get()
        ticket = slot.take_ready() if stream and slot is not None else None
        if ticket is None:
            tokens = slot.tokens if slot is not None else len(body) // 4 + runner.default_max_tokens
            ticket = await gate.acquire(tokens)  # cancelled with the rescue at its deadline
        if slot is not None:
            slot.tickets.append(ticket)
        try:
            return await self._inner.send(method, url, headers=headers, body=body, stream=stream)
        finally:
            gate.restamp(ticket)

    async def aclose(self) -> None:
        await self._inner.aclose()


def make_client(config: BatchConfig, api_key: str | None, *, transport: Any) -> Any:
    """The provider's client, sending through ``transport``."""
    settings: dict[str, Any] = {"transport": transport}
    if config.base_url is not None:
        settings["base_url"] = config.base_url
    return client_for(config.provider, config.model, api_key, **settings)


class Runner:
    """Runs rows as turns on ``config.concurrency`` slots (use ``async with``).

    Args:
        config: the run's settings.
        api_key: the provider key (never stored anywhere but the client).
        gate: the run's budget (``None``: no budget and no shared Retry-After pause).
        client: a client to use instead of building one from ``config`` (not closed here).
            The runner's own client sends the non-streaming rescue through a transport that
            waits for its grant; a client passed in has no such transport, so with ``rpm`` or
            ``tpm`` its turns run without the rescue (no request leaves without a grant).
        counter: the engine's token counter (default: :class:`CharCounter`).
        timeouts: the turns' deadlines (default: the stream handler's).
    """

    def __init__(
        self,
        config: BatchConfig,
        *,
        api_key: str | None = None,
        gate: Gate | None = None,
        client: ModelClient | None = None,
        counter: TokenCounter | None = None,
        timeouts: TimeoutPolicy | None = None,
    ) -> None:
        self.config = checked_config(config)
        check_gate(gate, "Runner(gate=...)")
        self.limited = config.rpm is not None or config.tpm is not None
        timeouts = timeouts if timeouts is not None else TimeoutPolicy()
        if client is not None and self.limited and timeouts.rescue:
            timeouts = msgspec.structs.replace(timeouts, rescue=False)
        self.timeouts = timeouts
        self.gate = gate
        #: the gate's count of rate-limit waits, told of each row's sleep after a rate limit
        #: (a gate of the caller's may have none)
        self._rate_limited: Callable[[float], object] | None = getattr(gate, "rate_limited", None)
        #: every response goes through the runner's own transport (a Retry-After is seen there)
        self.sees_responses = client is None
        #: the runner's own transport stamps each budgeted request when it has been sent
        self.stamps_sends = client is None and self.limited
        #: the slots observe their attempts: for the usage that corrects the budget, and for
        #: a Retry-After when the responses go through a client of the caller's
        self.observes = gate is not None and (self.limited or client is not None)
        self._transport: Any = None
        self._own: Any = None
        if client is None:
            from ..transport.aiohttp import AiohttpTransport

            self._transport = AiohttpTransport(limit=config.concurrency)
            budgeted = _BudgetTransport(self._transport, self)
            self._own = make_client(config, api_key, transport=budgeted)
        self.client: ModelClient = client if client is not None else self._own
        self.counter: TokenCounter = counter if counter is not None else CharCounter()
        self._warm: asyncio.Future[None] | None = None
        self.base_options = config.options()
        self._options: dict[str, RequestOptions] = {}
        #: a request's reply budget when neither the run nor the row sets one
        self.default_max_tokens = reply_budget(self.client)
        self.paused_by_provider = 0
        self._free: list[_Slot] = []
        self._made = 0
        self._waiters: deque[asyncio.Future[_Slot]] = deque()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own is not None:
            await self._own.aclose()
            await self._transport.aclose()
            self._own = None

    def met_retry_after(self, seconds: float | None) -> None:
        """A response asked to wait ``seconds``: the gate pauses every slot and worker, for
        as long as the rate-limit ladder waits at most (``RATE_LIMIT_MAX_DELAY``): a longer
        hint (a daily quota's) would hold every row while its own retry came back sooner."""
        gate = self.gate
        if gate is not None and seconds is not None and seconds > 0:
            gate.pause(min(seconds, C.RATE_LIMIT_MAX_DELAY))
            self.paused_by_provider += 1

    def on_wait(self, *, reason: str, seconds: float, **_: object) -> None:
        """The stream handler's hook, as a row's retry wait starts: a sleep on the rate-limit
        ladder (after a 429/529) is a wait for the provider's rate limit, which the progress
        line's ``waiting_s`` counts (a transport backoff is not)."""
        if reason == "rate_limit" and self._rate_limited is not None:
            self._rate_limited(seconds)

    def options_for(self, model: str, own: Mapping[str, object] | None) -> RequestOptions:
        """The request options of a row: the run's, the row's own over them, its model."""
        if not own:
            options = self._options.get(model)
            if options is None:
                fields = {**self.base_options, "model": model}
                options = self._options[model] = msgspec.convert(fields, RequestOptions)
            return options
        return msgspec.convert({**self.base_options, **own, "model": model}, RequestOptions)

    def prepare(self) -> None:
        """Make the first slot now, not for the first row: its engine starts loading what
        every turn of the process shares (the price data, with the ``rxturn[cost]`` extra, in a
        background thread: :func:`rxturn.cost.warm_up_prices` awaits it), so that a batch
        process which freezes its set-up before the rows (:mod:`rxturn._heap`) freezes
        that as well."""
        if self._made == 0:
            self._made = 1
            self._free.append(_Slot(self))

    async def _slot(self) -> _Slot:
        """A new slot while fewer than ``concurrency`` exist, else the next one freed: handed
        to this waiter itself (a slot put back in the free list could be taken first by a row
        arriving in the same turn of the loop, leaving this waiter none)."""
        if self._made < self.config.concurrency:
            self._made += 1
            return _Slot(self)
        waiter: asyncio.Future[_Slot] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed over, then cancelled
                self._release(waiter.result())
            raise

    def _release(self, slot: _Slot) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(slot)
                return
        self._free.append(slot)

    async def run_row(self, row: BatchRow, sha: str, run: int = 1) -> RowResult:
        """Run one row on a free slot (waiting for one); its result, error or not.

        Raises:
            Cancelled: the row was cancelled (it gets no line; a later run sends it again).
        """
        warm = self._warm
        if warm is None or not warm.done():  # a tokenizer loads once, before any grant
            if warm is None:
                if counter_loaded(self.counter):
                    warm = self._warm = asyncio.get_running_loop().create_future()
                    warm.set_result(None)
                else:
                    warm = self._warm = asyncio.ensure_future(warm_up_counter(self.counter))
            await asyncio.shield(warm)
        slot = self._free.pop() if self._free else await self._slot()
        try:
            return await slot.run(row, sha, run)
        finally:
            self._release(slot)


async def drive(
    jobs: Iterable[Any] | AsyncIterable[Any],
    start: Callable[[Any], asyncio.Future[Any]],
    *,
    limit: int,
    stop: asyncio.Event | None = None,
) -> list[asyncio.Future[Any]]:
    """Start ``start(job)`` for each job, at most ``limit`` unfinished at once, reading
    ``jobs`` (an iterable or an async iterable) only as fast as places free up (memory stays
    bounded by the jobs in flight).

    Stops taking jobs once ``stop`` is set, even while an async iterable is waiting for its
    next job (that wait is cancelled: a source fed from a queue may wait for ever); returns
    the futures still running then. ``jobs``' iterator is closed when this returns or raises
    (``aclose()``, or a sync one's ``close()``, when it has one).
    """
    places = asyncio.Semaphore(limit)
    running: set[asyncio.Future[Any]] = set()

    def finished(future: asyncio.Future[Any]) -> None:
        running.discard(future)
        places.release()

    end = object()
    stopped: asyncio.Future[Any] | None = None
    if isinstance(jobs, AsyncIterable):
        stream = aiter(jobs)

        async def next_job() -> Any:
            try:
                return await anext(stream)
            except StopAsyncIteration:
                return end

        async def take() -> Any:
            if stopped is None:
                return await next_job()
            pending = asyncio.ensure_future(next_job())
            try:
                await asyncio.wait((pending, stopped), return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not pending.done():  # stopped (or this task cancelled) while it waits
                    pending.cancel()
                    await asyncio.wait((pending,))
            return end if pending.cancelled() else pending.result()

        if stop is not None:
            stopped = asyncio.ensure_future(stop.wait())
    else:
        stream = iter(jobs)

        async def take() -> Any:
            return next(stream, end)

    try:
        while True:
            await places.acquire()  # a place first, then the next job: no job waits in memory
            job = end if stop is not None and stop.is_set() else await take()
            if job is end or (stop is not None and stop.is_set()):  # read after the stop: unsent
                places.release()
                break
            future = start(job)
            running.add(future)
            future.add_done_callback(finished)
    finally:
        if stopped is not None:
            stopped.cancel()
            await asyncio.wait((stopped,))
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
        else:
            close = getattr(stream, "close", None)  # a generator: its ``finally`` runs now
            if callable(close):
                close()
    return list(running)
