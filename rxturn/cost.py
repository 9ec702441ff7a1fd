"""What a turn cost, in US dollars: each attempt's usage priced with ``genai-prices``.

Pricing is the optional extra ``rxturn[cost]`` (``pip install 'rxturn[cost]'``), on the maintained
`genai-prices <https://pypi.org/project/genai-prices/>`_ data, which ships inside the package: it
prices offline, and its network updater runs only if you start it
(:func:`enable_price_updates`). ``import rxturn`` never imports it; an engine looks for it once,
when it is built. Importing it and loading its data takes about half a second, once per process:
an engine starts that load in a background thread when it is built (:func:`prefetch_prices`)
and its first turn awaits it in a worker thread (:func:`warm_up_prices`), so the event loop is
never held by it.

Each attempt is priced on its own (a tiered price applies to that attempt's input), at the time
it ended:

* the provider's own figure wins when it reported one (``Usage.provider_cost``, OpenRouter's
  ``usage.cost``, xAI's ``usage.cost_in_usd_ticks``);
* else the provider is found by the client's base URL (``provider_api_url``), then by the wire's
  provider id (``anthropic``, ``openai``…), and the model by its name;
* an attempt with no usage, an unknown provider or model, or usage the price data cannot take is
  *unpriced*: its cost is ``None`` and it is counted in :attr:`Cost.unpriced_attempts`.

A turn's :class:`Cost` sums its attempts; a turn whose attempts were all unpriced costs 0 with
every attempt counted. Without the extra, costs are ``None`` everywhere.

Pricing stays off the hot path: ``genai-prices`` is linear in the counts below its first price
tier, so the first price of a (model, day, set of counts) is its full calculation and later ones
use the per-token rates that calculation implies (asked of ``genai-prices`` itself, one count at
a time). A usage at or past a tier, one whose counts do not add up, or a model whose price
changes with the hour of the day (DeepSeek's off-peak prices) takes the full calculation again.
docs/usage-and-cost.md has a worked example.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import math
import threading
import time
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

import msgspec

from ._arguments import check_items, described
from ._validate import seconds_problem
from .errors import ConfigError
from .messages import Usage

if TYPE_CHECKING:
    from genai_prices import UpdatePrices
    from genai_prices.types import PriceCalculation


__all__ = [
    "Cost",
    "Pricer",
    "cost_available",
    "cost_to_json",
    "describe_cost",
    "enable_price_updates",
    "finish_prefetch",
    "format_decimal",
    "prefetch_prices",
    "pricer_for",
    "prices_loaded",
    "total_cost",
    "warm_up_prices",
]

_ZERO = Decimal(0)


class Cost(msgspec.Struct, frozen=True, kw_only=True):
    """What some attempts cost: ``total`` over the attempts that could be priced, and how many
    could not (``unpriced_attempts``: no usage, unknown model or provider)."""

    total: Decimal
    unpriced_attempts: int = 0
    currency: str = "USD"

    def __post_init__(self) -> None:
        # checked when built: a float or str total failed later, in describe_cost or a sum
        total: object = self.total
        if not isinstance(total, Decimal) or not total.is_finite():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"Cost.total must be a finite decimal.Decimal, got {described(total)}"
            )
        count: object = self.unpriced_attempts
        if type(count) is not int or count < 0:
            raise ConfigError(
                f"Cost.unpriced_attempts must be an int of 0 or more, got {described(count)}"
            )
        currency: object = self.currency
        if not isinstance(currency, str) or not currency:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"Cost.currency must be a non-empty str, got {described(currency)}")

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        if other.currency != self.currency:
            raise ConfigError(f"cannot add a cost in {other.currency} to one in {self.currency}")
        return Cost(
            total=self.total + other.total,
            unpriced_attempts=self.unpriced_attempts + other.unpriced_attempts,
            currency=self.currency,
        )


_available: bool | None = None


def cost_available() -> bool:
    """True when the ``rxturn[cost]`` extra (``genai-prices``) is installed."""
    global _available
    if _available is None:
        try:
            _available = importlib.util.find_spec("genai_prices") is not None
        except (ImportError, ValueError):  # blocked or half-installed: not available
            _available = False
    return _available


def enable_price_updates(update_interval: float = 3600.0) -> UpdatePrices:
    """Start ``genai-prices``' own updater, which fetches fresh prices over the network every
    ``update_interval`` seconds in a background thread. Never started unless you call this.

    Returns:
        the ``genai_prices.UpdatePrices`` instance; call its ``stop()`` when done.

    Raises:
        ConfigError: ``update_interval`` is not a positive, finite number of seconds (checked
            before the thread starts: 0, a negative number or NaN would have it fetch without
            pause), or the ``rxturn[cost]`` extra is not installed.
    """
    if (problem := seconds_problem(update_interval)) is not None:
        raise ConfigError(f"enable_price_updates: update_interval {problem}")
    _require()
    import genai_prices

    updater = genai_prices.UpdatePrices(update_interval=update_interval)
    updater.start()
    return updater


def _require() -> None:
    if not cost_available():
        raise ConfigError("pricing needs the cost extra: pip install 'rxturn[cost]'")


#: Whether genai-prices is imported and its bundled data loaded (:func:`_load_prices`)
_prices_loaded = False
_prices_lock = threading.Lock()
_prices_prefetched = False


def _load_snapshot() -> None:
    """Import genai-prices and load its bundled data: the half second :func:`_load_prices`
    keeps off the event loop."""
    from genai_prices import data_snapshot

    data_snapshot.get_snapshot()


def _load_prices() -> None:
    """Load the price data, once per process: a caller that comes while another thread loads
    it waits for that load instead of starting another."""
    global _prices_loaded
    if _prices_loaded:
        return
    with _prices_lock:
        if not _prices_loaded:
            _load_snapshot()
            _prices_loaded = True


def _load_quietly() -> None:
    with contextlib.suppress(Exception):  # (not reported here: the turn's own load raises it)
        _load_prices()


async def finish_prefetch() -> None:
    """Wait, in a worker thread, for a load :func:`prefetch_prices` started and that is still
    under way (nothing when none was started: this never starts a load). A failed load is not
    reported here: the turn's own load raises it."""
    if _prices_prefetched and not _prices_loaded:
        await asyncio.to_thread(_load_quietly)


def prices_loaded() -> bool:
    """Whether the price data is loaded (pricing will not stop to load it)."""
    return _prices_loaded


def prefetch_prices() -> None:
    """Start loading the price data in a background thread, once per process, and return at
    once (no event loop needed); :func:`warm_up_prices` then waits for that same load.

    Raises:
        ConfigError: the ``rxturn[cost]`` extra is not installed.
    """
    global _prices_prefetched
    _require()
    if _prices_loaded:
        return
    with _prices_lock:
        if _prices_prefetched or _prices_loaded:
            return
        _prices_prefetched = True
    threading.Thread(target=_load_quietly, name="rxturn-prices", daemon=True).start()


async def warm_up_prices() -> None:
    """Load the price data in a worker thread (or wait there for a load under way); the
    event loop keeps running meanwhile. Returns at once when it is loaded.

    Raises:
        ConfigError: the ``rxturn[cost]`` extra is not installed.
    """
    _require()
    if not _prices_loaded:
        await asyncio.to_thread(_load_prices)


#: Usage fields passed to genai-prices under its own names, and the counts each is a part of
#: (a probe for its rate reports those as well, so that it is a usage the data accepts).
_PARTS: dict[str, tuple[str, ...]] = {
    "input_tokens": (),
    "output_tokens": (),
    "cache_read_tokens": ("input_tokens",),
    "cache_write_tokens": ("input_tokens",),
    "cache_write_5m_tokens": ("input_tokens", "cache_write_tokens"),
    "cache_write_1h_tokens": ("input_tokens", "cache_write_tokens"),
    "input_audio_tokens": ("input_tokens",),
    "output_audio_tokens": ("output_tokens",),
    "output_reasoning_tokens": ("output_tokens",),
}
#: ``details`` keys genai-prices prices, by its name for them
_DETAILS = {"server_tool_use.web_search_requests": "web_searches"}


def _counts(usage: Usage) -> dict[str, int]:
    """The counts of ``usage`` genai-prices takes, input and output first, then each reported
    one in :data:`_PARTS`' order (a price's cache key lists them: one fixed order)."""
    counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    # (read one by one: no loop of getattr calls, and the usual usage reports few of them)
    if (value := usage.cache_read_tokens) is not None:
        counts["cache_read_tokens"] = value
    if (value := usage.cache_write_tokens) is not None:
        counts["cache_write_tokens"] = value
    if (value := usage.cache_write_5m_tokens) is not None:
        counts["cache_write_5m_tokens"] = value
    if (value := usage.cache_write_1h_tokens) is not None:
        counts["cache_write_1h_tokens"] = value
    if (value := usage.input_audio_tokens) is not None:
        counts["input_audio_tokens"] = value
    if (value := usage.output_audio_tokens) is not None:
        counts["output_audio_tokens"] = value
    if (value := usage.output_reasoning_tokens) is not None:
        counts["output_reasoning_tokens"] = value
    if usage.details:
        for detail, name in _DETAILS.items():
            value = usage.details.get(detail)
            if value is not None:
                counts[name] = value
    return counts


def _adds_up(counts: dict[str, int]) -> bool:
    inp = counts["input_tokens"]
    out = counts["output_tokens"]
    writes = counts.get("cache_write_tokens", 0)
    return (
        counts.get("cache_read_tokens", 0) + writes <= inp
        and counts.get("cache_write_5m_tokens", 0) + counts.get("cache_write_1h_tokens", 0)
        <= writes
        and counts.get("input_audio_tokens", 0) <= inp
        and counts.get("output_audio_tokens", 0) + counts.get("output_reasoning_tokens", 0) <= out
    )


class _Rates:
    """The per-count rates of one (model, day, set of counts), valid below ``tier_start``."""

    __slots__ = ("rates", "tier_start")

    def __init__(self, rates: dict[str, Decimal], tier_start: int | None) -> None:
        self.rates = rates
        self.tier_start = tier_start


class Pricer:
    """Prices usage for one client: its wire's provider id and its base URL.

    Building one loads nothing: the first :meth:`price` loads ``genai-prices``' data on the
    calling thread unless :func:`warm_up_prices` did it first (a turn awaits that, off the
    event loop); :meth:`price` is then cheap (see the module docstring).

    Raises:
        ConfigError: the ``rxturn[cost]`` extra is not installed.
    """

    __slots__ = ("_day", "_rates", "_where", "base_url", "provider_id")

    def __init__(self, provider_id: str, base_url: str | None = None) -> None:
        given: object = provider_id  # (None let genai-prices guess the provider)
        if not isinstance(given, str) or not given:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"Pricer: provider_id must be a non-empty str, got {described(given)}"
            )
        url: object = base_url
        if url is not None and not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"Pricer: base_url must be a str or None, got {described(url)}")
        _require()
        self.provider_id = provider_id
        self.base_url = base_url
        #: (model, day, counts reported) → rates; None: that model cannot be priced
        self._rates: dict[tuple[str, date, tuple[str, ...]], _Rates | None] = {}
        #: model → how genai-prices finds its provider (by URL or by id), once it did
        self._where: dict[str, tuple[str, str]] = {}
        #: the UTC day of the last price: (its first second, its end, the day), as POSIX time
        self._day: tuple[float, float, date] = (0.0, 0.0, date.min)

    def __repr__(self) -> str:
        return f"Pricer({self.provider_id!r}, base_url={self.base_url!r})"

    def price(
        self, model: str, usage: Usage | None, when: datetime | None = None
    ) -> Decimal | None:
        """What ``usage`` of ``model`` cost in USD at ``when`` (default: now); ``None`` when it
        cannot be priced (a lookup that fails never raises).

        Raises:
            ConfigError: ``model`` is not a str, ``usage`` not a :class:`Usage` or ``None``,
                ``when`` not a datetime or ``None``.
        """
        if not isinstance(usage, Usage):
            if usage is None:
                return None
            raise ConfigError(
                f"Pricer.price: usage must be a Usage or None, got {described(usage)}"
            )
        if type(model) is not str:
            raise ConfigError(f"Pricer.price: model must be a str, got {described(model)}")
        if when is not None and not isinstance(when, datetime):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"Pricer.price: when must be a datetime or None, got {described(when)}"
            )
        cost = usage.provider_cost
        if cost is not None and math.isfinite(cost) and cost >= 0:  # (a Usage built by hand)
            return Decimal(repr(cost + 0.0))  # (+ 0.0: -0.0 is 0)
        if not _prices_loaded:  # (a turn loads it off the loop first: warm_up_prices)
            _load_prices()
        try:
            return self._price(model, usage, when)
        except Exception:  # a price lookup that fails leaves the attempt unpriced
            return None

    def _price(self, model: str, usage: Usage, when: datetime | None) -> Decimal | None:
        counts = _counts(usage)
        if when is None:  # now: the day read from the clock, a datetime made only when needed
            now = time.time()
            start, end, day = self._day
            if not start <= now < end:
                start = now - now % _DAY
                day = datetime.fromtimestamp(start, UTC).date()
                self._day = (start, start + _DAY, day)
        else:
            now = 0.0
            # the UTC day, as genai-prices dates its prices (a naive datetime is UTC there too):
            # the local date of an aware one keyed an earlier day's rates to the next day
            day = (when.astimezone(UTC) if when.tzinfo is not None else when).date()
        # _counts lists them in one fixed order, input and output first
        key = (model, day, _PLAIN if len(counts) == 2 else tuple(counts))
        rates = self._rates.get(key, _MISSING)
        if rates is _MISSING:
            if when is None:
                when = datetime.fromtimestamp(now, UTC)
            total = self._full(model, counts, when)
            self._rates[key] = self._derive(model, counts, when) if total is not None else None
            return total
        if rates is None:
            return None
        assert isinstance(rates, _Rates)
        if (rates.tier_start is not None and counts["input_tokens"] >= rates.tier_start) or (
            len(counts) > 2 and not _adds_up(counts)  # input and output alone always add up
        ):
            return self._full(model, counts, when or datetime.fromtimestamp(now, UTC))
        per = rates.rates
        total = _ZERO
        for name, value in counts.items():
            if value:
                total += per[name] * value
        return total

    def _full(self, model: str, counts: dict[str, int], when: datetime) -> Decimal | None:
        """genai-prices' own calculation (its provider found as the module docstring says)."""
        where = self._where.get(model)
        if where is not None:
            return _calc(counts, model, when, where).total_price
        ways: list[tuple[str, str]] = []
        if self.base_url:
            ways.append(("url", self.base_url))
        ways.append(("id", self.provider_id))
        for way in ways:
            try:
                result = _calc(counts, model, when, way)
            except LookupError:
                continue
            self._where[model] = way
            return result.total_price
        return None

    def _derive(self, model: str, counts: dict[str, int], when: datetime) -> _Rates | None:
        """Each count's rate, from genai-prices' price of a one-token probe of it."""
        where = self._where[model]
        names = tuple(counts)

        def probe(ones: Iterable[str]) -> PriceCalculation:
            values = dict.fromkeys(names, 0)
            for name in ones:
                values[name] = 1
            return _calc(values, model, when, where)

        base = probe(())
        if _priced_by_time_of_day(base.model.prices):
            # its rates change within the day (DeepSeek's off-peak hours): rates derived at
            # one hour would price the rest of the day, so every price is the full calculation
            return _Rates({}, 0)
        rates: dict[str, Decimal] = {}
        for name in names:
            parts = _PARTS.get(name, ())
            with_it = probe((*parts, name)).total_price
            without = probe(parts).total_price if parts else base.total_price
            rates[name] = with_it - without
        return _Rates(rates, _tier_start(base.model_price))


_MISSING = object()
_PLAIN = ("input_tokens", "output_tokens")
_DAY = 86400.0  # seconds in a UTC day, as POSIX time counts them


def _calc(
    counts: dict[str, int], model: str, when: datetime, where: tuple[str, str]
) -> PriceCalculation:
    import genai_prices

    usage = genai_prices.Usage(**counts)
    if where[0] == "url":
        return genai_prices.calc_price(
            usage, model, provider_api_url=where[1], genai_request_timestamp=when
        )
    return genai_prices.calc_price(usage, model, provider_id=where[1], genai_request_timestamp=when)


def _priced_by_time_of_day(prices: object) -> bool:
    """Whether a model's prices (``ModelInfo.prices``) hold one that applies only at some
    hours of the day."""
    from genai_prices.types import TimeOfDateConstraint

    return isinstance(prices, list) and any(
        isinstance(price.constraint, TimeOfDateConstraint)  # pyright: ignore[reportUnknownMemberType]
        for price in prices  # pyright: ignore[reportUnknownVariableType]
    )


def _tier_start(model_price: object) -> int | None:
    """The lowest input count at which any of a model's prices changes tier (``None``: none)."""
    from genai_prices.types import TieredPrices

    starts: list[int] = []
    prices: dict[str, object] = vars(model_price)
    for value in prices.values():
        if isinstance(value, TieredPrices):
            starts.extend(tier.start for tier in value.tiers)
    return min(starts) if starts else None


def pricer_for(provider_id: str, base_url: str | None = None) -> Pricer:
    """The process's one :class:`Pricer` for a provider and endpoint: every engine of that
    endpoint shares its rate cache, so an engine per conversation prices from the cache
    instead of asking genai-prices again."""
    given: tuple[object, object] = (provider_id, base_url)
    if type(given[0]) is not str or (given[1] is not None and type(given[1]) is not str):
        return Pricer(provider_id, base_url)  # its ConfigError (a list is no cache key)
    return _shared_pricer(provider_id, base_url)


@functools.lru_cache(maxsize=64)
def _shared_pricer(provider_id: str, base_url: str | None) -> Pricer:
    return Pricer(provider_id, base_url)


def cost_to_json(cost: Cost | None) -> dict[str, object] | None:
    """A cost as its JSON object: ``{"total": "0.0123", "unpriced_attempts": 0, "currency":
    "USD"}`` (the total a decimal string, exact; as in the audit's JSON lines), ``None`` staying
    ``None``. The one place that shapes a cost for the CLI and batch output."""
    if cost is None:
        return None
    return msgspec.to_builtins(cost)


def format_decimal(value: Decimal) -> str:
    """A decimal as plain digits, without trailing zeros or an exponent (``0.006``)."""
    return format(value.normalize(), "f")


def describe_cost(cost: Cost | None) -> str:
    """One line for people: ``$0.006``, ``$0.006 (1 attempt unpriced)``, or ``unpriced``."""
    if cost is None:
        return "not priced (pip install 'rxturn[cost]')"
    text = f"${format_decimal(cost.total)}"
    if cost.unpriced_attempts:
        plural = "s" if cost.unpriced_attempts != 1 else ""
        text += f" ({cost.unpriced_attempts} attempt{plural} unpriced)"
    return text


def total_cost(costs: Iterable[Decimal | None]) -> Cost | None:
    """The cost of some attempts, given each one's (``None``: unpriced); ``None`` without the
    ``rxturn[cost]`` extra."""
    if not cost_available():
        return None
    total = _ZERO
    unpriced = 0
    for cost in check_items(costs, "total_cost(costs=...)", "Decimal or None"):
        if cost is None:
            unpriced += 1
        elif type(cost) is Decimal or isinstance(cost, Decimal):
            total += cost
        else:
            raise ConfigError(
                f"total_cost(costs=...) holds {described(cost)}, where a Decimal (or None: "
                "unpriced) belongs"
            )
    return Cost(total=total, unpriced_attempts=unpriced)
