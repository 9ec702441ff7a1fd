"""``TurnUDF``: the callable class ``Dataset.map_batches`` runs on each actor of the pool."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from .._arguments import shown
from ..batch._budget import Budget, Gate, LocalGate
from ..batch._errors import BatchInputError
from ..batch._input import checked_sha, decode_row, input_sha
from ..batch._runner import BatchConfig, ErrorInfo, Provider, RowError, RowOk, RowResult, Runner
from ..errors import ConfigError
from ._budget import DEFAULT_NAME, RayGate, budget_actor, check_limits, check_name, ray_module

__all__ = ["COLUMNS", "TurnUDF"]

#: The output columns, in order, each of one type (``str`` or ``int``) in every row.
COLUMNS = (
    "id",
    "status",
    "text",
    "stop_reason",
    "model",
    "input_tokens",
    "output_tokens",
    "attempts",
    "error_type",
    "error_message",
)

#: the output columns that hold integers (every other one holds strings)
_INT_COLUMNS = frozenset({"input_tokens", "output_tokens", "attempts"})

#: how long an interrupted call waits for its batch's rows to be cancelled
_SETTLE_SECONDS = 10.0

#: the input columns a row is made of (the native row's fields); others are not read
_ROW_COLUMNS = frozenset({"id", "prompt", "messages", "system", "model", "options"})

_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}


#: the floats a whole number of an int64 column can become exactly (numpy's ``float64``)
_EXACT = 2.0**53


def _plain(value: object) -> object:
    """A numpy / Arrow value as plain Python (lists of dicts, str, int). A whole float is the
    integer it was: Ray's numpy batches make an integer field float when the block holds a
    null in it (``{"max_tokens": 5}`` beside a row without one reads ``5.0``, which no integer
    option takes), so the same row reads the same in whatever block it comes."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        value = tolist()
    if isinstance(value, list):
        return [_plain(item) for item in cast("list[object]", value)]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in cast("dict[object, object]", value).items()}
    if isinstance(value, float) and math.isnan(value):  # a missing value in a numpy column
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT:
        return int(value)
    pandas = sys.modules.get("pandas")  # (a batch can hold its values only once imported)
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None  # a missing value in a pandas column of a nullable or datetime type
    return value


def _row_columns(batch: Any) -> tuple[dict[str, list[object]], dict[str, int]]:
    """The row's columns of ``batch`` as lists read by position, and every column's length.

    ``batch`` is what ``map_batches`` hands over: a dict of numpy arrays (the default), a
    pandas DataFrame (whose index, after a filter, is no position) or a pyarrow Table.
    """
    names = getattr(batch, "column_names", None)
    if names is None and not callable(getattr(batch, "keys", None)):
        raise ConfigError(
            "TurnUDF: a batch is a mapping of columns (a dict of lists or numpy arrays, a "
            f"pandas DataFrame or a pyarrow Table), got {type(batch).__name__}"
        )
    seen: set[str] = set()
    for name in names if names is not None else batch:
        if name in seen and name in _ROW_COLUMNS:  # (a frame's or a table's, not a dict's)
            raise ConfigError(f"TurnUDF: the batch has more than one column named {name!r}")
        seen.add(name)
    if names is not None and callable(getattr(batch, "column", None)):  # a pyarrow Table
        rows = int(batch.num_rows)
        table_columns = {
            str(name): cast("list[object]", batch.column(name).to_pylist())
            for name in names
            if name in _ROW_COLUMNS
        }
        return table_columns, {str(name): rows for name in names}
    columns: dict[str, list[object]] = {}
    sizes: dict[str, int] = {}
    for name in batch:
        column = batch[name]
        sizes[str(name)] = _size(name, column)
        if name in _ROW_COLUMNS:
            tolist = getattr(column, "tolist", None)  # numpy, pandas: by position
            columns[str(name)] = (
                cast("list[object]", tolist()) if callable(tolist) else list(column)
            )
    return columns, sizes


def _size(name: object, column: object) -> int:
    """How many rows ``column`` holds; a ConfigError for a value that is no column (a string
    would be read as one row per character: ``{"id": "ab", "prompt": "hi"}`` is one row
    written as a batch, not two rows)."""
    if not isinstance(column, str | bytes):
        try:
            return len(cast("Sequence[object]", column))
        except TypeError:  # no len(), or a numpy scalar's "len() of unsized object"
            pass
    raise ConfigError(
        f"TurnUDF: the batch's column {shown(name, 100)} is of type {type(column).__name__}, not "
        "a column "
        "(a list or an array of one value per row)"
    )


def _key(value: object) -> object:
    """A row's ``id`` as the user wrote it: a whole float is an integer column with a gap
    (numpy and pandas make those float), bytes an Arrow binary column, another scalar (a
    date, a decimal) its text. A bool, a list or a mapping is left as it is, and the row's
    decoding refuses it, as the CLI refuses such an id (``str`` would make ``"True"`` or
    ``"['a', 'b']"`` of it)."""
    if isinstance(value, bool | list | dict | tuple):
        return cast(object, value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _without_nulls(value: object) -> object:
    """``value`` with every object's null fields left out: Arrow gives a struct column the
    fields of every row of its block (``null`` where a row has none), so the same row read in
    two blocks can differ by them."""
    if isinstance(value, dict):
        return {
            k: _without_nulls(v)
            for k, v in cast("dict[str, object]", value).items()
            if v is not None
        }
    if isinstance(value, list):
        return [_without_nulls(v) for v in cast("list[object]", value)]
    return value


def content_key(item: Mapping[str, object]) -> str:
    """The id of a row with none: ``row-`` and 16 hex digits of the sha256 of its content (its
    columns' values as canonical JSON, null fields left out). It depends on nothing but the
    row, so the same row has the same id in whatever batch (or run) it comes; two rows with
    the same content share it."""
    return f"row-{input_sha(_without_nulls(dict(item)))[:16]}"


def _in_ray() -> bool:
    """This process is connected to a Ray cluster (a Ray Data actor is; a plain call is not)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


class TurnUDF:
    """Run a batch's rows as turns on this actor's event loop; fixed-type result columns.

    Args:
        provider: ``anthropic``, ``openai``, ``openai-responses`` or ``ollama``.
        model: the default model (a row's ``model`` column wins).
        base_url: the endpoint (``None``: the provider's own).
        api_key: the key (default: ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` of the actor's
            environment, which a cluster sets through ``runtime_env``).
        system: the default system prompt.
        max_tokens: the reply budget.
        concurrency: turns in flight at once on this actor.
        rpm: requests per minute over every actor (the named budget actor): needs a Ray
            job (a ``ConfigError`` in a process connected to no cluster).
        tpm: tokens per minute over every actor (the same).
        budget_name: the budget actor's name (one per run). In a Ray job it is used with or
            without ``rpm``/``tpm``: a Retry-After any actor meets pauses every actor's
            requests (docs/batch.md, "Ray Data").

    Input columns: ``id`` and ``prompt``, or ``id`` and ``messages`` (Message JSON); optional
    ``system``, ``model`` and ``options``; other columns are not read. A row without an ``id``
    (no such column, or a null in it) gets ``row-`` and a hash of its content
    (:func:`content_key`), the same in whatever batch it comes. A row that is malformed or
    whose turn fails comes back with ``status`` ``"error"`` and its ``error_type`` /
    ``error_message``.
    """

    def __init__(
        self,
        provider: Provider,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        concurrency: int = 16,
        rpm: int | None = None,
        tpm: int | None = None,
        budget_name: str = DEFAULT_NAME,
    ) -> None:
        self.config = BatchConfig(
            provider=provider,
            model=model,
            base_url=base_url,
            system=system,
            max_tokens=max_tokens,
            concurrency=concurrency,
            rpm=rpm,
            tpm=tpm,
        ).check()
        check_name(budget_name)  # (refused here too when no actor is asked: outside Ray)
        if api_key is None and provider in _KEY_ENV:
            api_key = (os.environ.get(_KEY_ENV[provider]) or "").strip() or None
        # without rpm/tpm the named actor still carries the Retry-After pauses of every actor
        # of the job; a TurnUDF called outside Ray (no cluster connected) pauses only its own
        limited = rpm is not None or tpm is not None
        in_ray = _in_ray()
        if limited and not in_ray:
            ray_module()  # Ray not installed: the extra to install, not a call to make
            # the budget is a named Ray actor: asking for it here started a local Ray instance
            # (its processes left running) for a budget no other process would share
            raise ConfigError(
                "TurnUDF(rpm=..., tpm=...) shares its budget through a named Ray actor, and "
                "this process is connected to no Ray cluster: call ray.init() first (a Ray "
                "Data actor is connected), leave rpm/tpm out, or run the rows with "
                "rxturn.batch (BatchConfig(rpm=..., tpm=...)) instead"
            )
        self._gate: Gate = LocalGate(Budget())
        if limited or in_ray:
            actor = budget_actor(budget_name, rpm=rpm, tpm=tpm)
            if limited:  # an actor found running keeps its own limits: they must be these
                check_limits(actor, budget_name, rpm, tpm)
            self._gate = RayGate(  # a budget actor found dead is made again (same limits)
                actor, limited=limited, remake=lambda: budget_actor(budget_name, rpm=rpm, tpm=tpm)
            )
        self._budget_name = budget_name
        self._calls: set[asyncio.Task[Any]] = set()  # what runs on the loop for a caller
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rxturn-turnudf", daemon=True
        )
        self._thread.start()
        try:
            self._runner = self._call(self._make_runner(api_key))
        except BaseException:  # a key the client refuses: no loop or thread is left behind
            self._stop()
            raise

    def __repr__(self) -> str:
        return f"TurnUDF(provider={self.config.provider!r}, model={self.config.model!r})"

    def __reduce__(self) -> Any:
        # an instance holds its loop, thread and connections: what map_batches(TurnUDF(...))
        # would try to ship to Ray's workers ("cannot pickle '_contextvars.Context' object")
        raise ConfigError(
            "a TurnUDF instance cannot be sent to Ray's workers: give map_batches the class, "
            "map_batches(TurnUDF, fn_constructor_kwargs={...}, compute=ActorPoolStrategy(...))"
        )

    def _call(self, coroutine: Any) -> Any:
        if self._closed:  # nothing would run it
            coroutine.close()
            raise ConfigError("TurnUDF called after close()")
        mine: list[asyncio.Task[Any]] = []

        async def tracked() -> Any:
            task = cast("asyncio.Task[Any]", asyncio.current_task())
            mine.append(task)
            self._calls.add(task)
            try:
                return await coroutine
            finally:
                self._calls.discard(task)

        future = asyncio.run_coroutine_threadsafe(tracked(), self._loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():  # interrupted while it runs (Ctrl-C, a signal's exception)
                future.cancel()
                self._settle(mine)  # its rows stop too, their connections closed
                if inspect.getcoroutinestate(coroutine) == inspect.CORO_CREATED:
                    coroutine.close()  # cancelled before it began
            raise

    def _settle(self, calls: list[asyncio.Task[Any]] | None) -> None:
        """Cancel ``calls`` (``None``: every call running on the loop) and wait a while until
        they have ended."""
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._cancel(calls), self._loop).result(
                _SETTLE_SECONDS
            )

    async def _cancel(self, calls: list[asyncio.Task[Any]] | None) -> None:
        tasks = list(self._calls if calls is None else calls)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _make_runner(self, api_key: str | None) -> Runner:
        return Runner(self.config, api_key=api_key, gate=self._gate)

    async def _one(
        self, index: int, item: dict[str, object], names: str
    ) -> tuple[str, RowResult | BatchInputError]:
        """The row's id and its result (``index``: its place in this batch, which only the
        messages of a malformed row name, never its id; ``names``: the batch's columns)."""
        given = item.get("id")
        key = given if isinstance(given, str) else ""  # (a bad id: its error row has none)
        try:
            sha = checked_sha(item, index)  # a column can hold what JSON cannot
            if "id" not in item:
                key = content_key(item)
            if "prompt" not in item and "messages" not in item:
                # (decode_row would point to the provider shapes, whose columns are not read)
                raise BatchInputError(
                    f"row {index}: no 'prompt' or 'messages' value (TurnUDF reads the columns "
                    f"id, prompt, messages, system, model and options; this batch has {names})",
                    line=index,
                )
            row = decode_row(item, index)
        except BatchInputError as exc:
            return key, exc  # the row's error row; the batch's other rows run
        if row.key != key:  # (a row without an id: decode_row keys it by its place)
            row = msgspec.structs.replace(row, key=key)
        try:
            return key, await self._runner.run_row(row, sha)
        except Exception as exc:
            ray_error = getattr(getattr(sys.modules.get("ray"), "exceptions", None), "RayError", ())
            if not isinstance(exc, ray_error):
                raise
            # the budget actor cannot be asked, even made again: this row's error, not the
            # batch's (Ray's own message is many lines: actor ids, addresses)
            return key, RowError(
                id=key,
                error=ErrorInfo(
                    type(exc).__name__,
                    f"the budget actor {self._budget_name!r} cannot be asked (it died, and "
                    "the one made again did not answer either): no grant to send the row's request",
                ),
                attempts=0,
                billed_usage=None,
                input_sha=sha,
                run=1,
            )

    async def _all(
        self, items: list[dict[str, object]], names: str
    ) -> list[tuple[str, RowResult | BatchInputError]]:
        return list(
            await asyncio.gather(
                *(self._one(i, item, names) for i, item in enumerate(items, start=1))
            )
        )

    def __call__(self, batch: Mapping[str, Sequence[object]]) -> dict[str, Sequence[object]]:
        """One batch (columns) in, one row of results per input row out, in order: a list per
        column. A batch of no rows gives zero-length numpy arrays of the columns' types
        instead (an empty list has no type: Ray would make that block's columns null, and a
        dataset whose blocks' types differ fails to concatenate).

        Only the row's columns are read (``id``, ``prompt``, ``messages``, ``system``,
        ``model``, ``options``): a dataset's other columns are left alone.

        Raises:
            ConfigError: called after :meth:`close`; the batch is no mapping of columns, a
                column is no sequence (a string, a number), two of the row's columns have
                one name, or the columns differ in length.
        """
        columns, sizes = _row_columns(batch)
        if len(set(sizes.values())) > 1:
            shown = ", ".join(f"{name}: {size}" for name, size in sizes.items())
            raise ConfigError(f"TurnUDF: a batch with columns of different lengths ({shown})")
        size = next(iter(sizes.values()), 0)
        items: list[dict[str, object]] = []
        for i in range(size):
            item: dict[str, object] = {}
            for name, values in columns.items():
                value = _plain(values[i])
                if value is not None:
                    item[name] = value
            if "id" in item:
                item["id"] = _key(item["id"])
            items.append(item)
        if not items:
            return _empty_columns()
        shown = ", ".join(list(sizes)[:12]) or "no columns"
        results = self._call(self._all(items, shown))
        columns: dict[str, list[object]] = {name: [] for name in COLUMNS}
        for key, result in results:
            _append(columns, key, result)
        return cast("dict[str, Sequence[object]]", columns)

    def close(self) -> None:
        """Close the client and stop this actor's loop (Ray does it when the actor ends)."""
        if self._loop.is_running():
            self._settle(None)  # what an interrupted call left (its caller gone)
            self._call(self._runner.aclose())
        self._stop()

    def _stop(self) -> None:
        self._closed = True
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()  # its selector's sockets too (a ResourceWarning otherwise)


def _empty_columns() -> dict[str, Sequence[object]]:
    """The columns of a batch of no rows, each of its fixed type (Ray reads a numpy ``str_``
    array as an Arrow string column and ``int64`` as int64, the types it gives the lists of a
    batch with rows)."""
    import numpy as np  # (Ray Data's own dependency)

    return {  # (an array is no Sequence to a type checker, but is read as one)
        name: cast(
            "Sequence[object]", np.array([], dtype=np.int64 if name in _INT_COLUMNS else np.str_)
        )
        for name in COLUMNS
    }


def _append(columns: dict[str, list[object]], key: str, result: object) -> None:
    if isinstance(result, RowOk):
        usage = result.usage
        values: tuple[object, ...] = (
            result.id,
            "ok",
            result.message.text,
            str(result.message.stop_reason or ""),  # (a StrEnum member: its value)
            result.model,
            usage.input_tokens if usage is not None else 0,
            usage.output_tokens if usage is not None else 0,
            result.attempts,
            "",
            "",
        )
    elif isinstance(result, BatchInputError):
        what = str(result).split(": ", 1)[-1]  # the row's place in its block means nothing here
        values = (key, "error", "", "", "", 0, 0, 0, type(result).__name__, what)
    else:
        error = cast("Any", result)
        values = (
            error.id,
            "error",
            "",
            "",
            "",
            0,
            0,
            error.attempts,
            error.error.type,
            error.error.message,
        )
    for name, value in zip(COLUMNS, values, strict=True):
        columns[name].append(value)
