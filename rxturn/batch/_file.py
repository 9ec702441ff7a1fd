"""A batch run from an input file to an output file, resumable: what ``rxturn batch run`` does.

:class:`FileRun` does the set-up in this order, before any request: take the output's lock, read
the output back (repairing a torn tail), check the manifest's fingerprint, then scan the whole
input once (keys and line numbers only), comparing each row that already has an output line with
that line's ``input_sha``. Then it reads the input again, lazily, and hands each pending line to
a backend: this process's :class:`~._runner.Runner` (one asyncio process), a pool of worker
processes, or Ray actors. Every backend returns finished output lines to this process, the one
writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec

from .._arguments import counted, shown
from ..cost import cost_available, warm_up_prices
from ._api import BatchSummary, Tally
from ._budget import Budget, LocalGate
from ._errors import BatchInputError, BatchOutputError, BatchWriteError
from ._input import NO_ROWS, InputIndex, input_sha, iter_lines, parse_row, scan_input
from ._output import (
    Manifest,
    OutputLock,
    OutputState,
    OutputWriter,
    fingerprint,
    read_output,
    refuse_special,
    repair_tail,
    torn_key,
)
from ._runner import BatchConfig, RowOk, Runner, checked_config, encode_result

__all__ = ["Backend", "Done", "FileRun", "LocalBackend", "check_output"]


class Done(msgspec.Struct, frozen=True, array_like=True):
    """A finished row as the writer needs it: its output line and what to count (``error``:
    ``"Type: message"`` of a failed row, for the run's summary)."""

    line: bytes
    key: str
    status: str
    input_tokens: int
    output_tokens: int
    error: str = ""


class Waits(Protocol):
    """What is read of a backend's budget: how long its requests waited for it."""

    @property
    def waited(self) -> float:
        """Seconds the run's requests have waited for budget so far."""
        ...


class Backend(Protocol):
    """Where rows run: ``submit`` one input line, get its finished output line back.

    ``gate`` is only read, for the progress line's waits (the file run never touches it): a
    local or worker-pool backend's :class:`~._budget.LocalGate`, or a stand-in where the budget
    lives elsewhere (Ray).
    """

    @property
    def gate(self) -> Waits: ...

    async def start(self) -> None: ...

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Relays(Protocol):
    """A backend that also hands a row out with a callback for its end instead of a future
    (the worker pool): no future and no loop callback per row."""

    def relay(
        self, number: int, raw: bytes, landed: Callable[[int, Done | BaseException], None]
    ) -> None: ...


async def run_line(runner: Runner, number: int, raw: bytes, run: int) -> Done:
    """Decode one input line, run it, and encode its output line (every backend's unit)."""
    row, obj = parse_row(raw, number)
    result = await runner.run_row(row, input_sha(obj), run)
    if isinstance(result, RowOk):
        usage = result.usage
        return Done(
            encode_result(result),
            row.key,
            "ok",
            usage.input_tokens if usage is not None else 0,
            usage.output_tokens if usage is not None else 0,
        )
    return Done(
        encode_result(result),
        row.key,
        "error",
        0,
        0,
        f"{result.error.type}: {result.error.message}",
    )


class LocalBackend:
    """Rows run on this process's event loop, a task each.

    The file run hands rows out with :meth:`relay`: the row's task calls ``landed`` itself as
    it ends, so a row costs no future callback of the loop's, and :meth:`aclose` cancels the
    rows still running.
    """

    def __init__(self, config: BatchConfig, api_key: str | None, run: int) -> None:
        config = checked_config(config)
        self.gate = LocalGate(Budget(rpm=config.rpm, tpm=config.tpm))
        self.runner = Runner(config, api_key=api_key, gate=self.gate)
        self.run = run
        #: the tasks of the rows handed out with :meth:`relay` and not ended, by line number
        self._relayed: dict[int, asyncio.Task[None]] = {}

    async def start(self) -> None:
        self.runner.prepare()
        if cost_available():  # the price data its engine started loading, loaded now
            await warm_up_prices()

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        return asyncio.ensure_future(run_line(self.runner, number, raw, self.run))

    def relay(
        self, number: int, raw: bytes, landed: Callable[[int, Done | BaseException], None]
    ) -> None:
        """Run input line ``number``; ``landed`` is called with its finished row, or with the
        error it raised (a row cancelled by :meth:`aclose` lands nowhere)."""
        self._relayed[number] = asyncio.ensure_future(self._relay(number, raw, landed))

    async def _relay(
        self, number: int, raw: bytes, landed: Callable[[int, Done | BaseException], None]
    ) -> None:
        result: Done | BaseException
        try:
            result = await run_line(self.runner, number, raw, self.run)
        except Exception as exc:
            result = exc
        finally:
            del self._relayed[number]
        landed(number, result)

    async def aclose(self) -> None:
        running = list(self._relayed.values())
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        await self.runner.aclose()


class FileRun:
    """One ``rxturn batch run``: set-up (:meth:`prepare`), then :meth:`run`, then :meth:`close`.

    Args:
        input_path: the input JSONL (already spooled when it was stdin).
        output_path: the output JSONL (created if missing).
        config: the run's settings.
        retry_errors: run rows whose last line is an error again.
        force: accept a changed manifest (rewritten) and changed rows (run again).
        notice: called with one-line notices (the torn-tail repair).
    """

    def __init__(
        self,
        input_path: Path,
        output_path: Path,
        config: BatchConfig,
        *,
        retry_errors: bool = False,
        force: bool = False,
        notice: Callable[[str], object] = lambda _: None,
    ) -> None:
        self.input_path = input_path
        self.output_path = output_path
        self.config = checked_config(config)
        self.retry_errors = retry_errors
        self.force = force
        self.notice = notice
        self.lock: OutputLock | None = None  # taken by prepare()
        self.state = OutputState()
        self.index = InputIndex()
        self.pending = bytearray()
        self._torn: str | None = None  # the id a torn last line of the output begins with
        self._torn_runs: bool | None = None  # whether its row runs (None: not in the input)
        self.skipped = 0
        self.run_number = 1
        self.tally = Tally(0)
        self.writer: OutputWriter | None = None
        self.fatal: BaseException | None = None
        #: finished lines not written yet: they go out together at the end of the loop's turn
        self._queued: list[bytes] = []
        self._stop: asyncio.Event | None = None  # the run's, while it runs
        #: the error types of the rows that failed in this run, and the first one's error
        self.errors: Counter[str] = Counter()
        self.first_error = ""

    # ------------------------------------------------------------------ set-up

    def prepare(self) -> None:
        """Everything before the first request.

        Raises:
            BatchLockedError: another run holds the output.
            BatchOutputError: the output belongs to a run with other settings (without
                ``force``), holds a line that is not an output line, or is not a file path.
            BatchWriteError: the output, its lock or its manifest cannot be read or written.
            BatchInputError: a bad input line, or a row changed since its line (without
                ``force``).
        """
        check_paths(self.input_path, self.output_path)
        self.lock = lock = OutputLock(self.output_path)
        lock.acquire()
        try:
            lock.hold(self.output_path)
            self._prepare()
        except BaseException:
            # refused before it wrote anything: a lock file this run made is not left behind
            # (an output that exists keeps its lock file, as after any run)
            output = self.output_path
            lock.release(
                remove=lock.created
                and not output.exists()
                and not Manifest.path_for(output).exists()
            )
            raise

    def _prepare(self) -> None:
        output = self.output_path
        # --force rewrites a manifest that is no manifest (edited, say), as it adopts an
        # output without one
        manifest = Manifest.load(output, broken_ok=self.force)
        if manifest is None and not self.force and _holds_data(output):
            raise _not_an_output(output, "use another output, or --force to adopt it")
        self.state = state = read_output(output)
        config = self.config
        options = config.options()
        mark = fingerprint(config.provider, config.model, config.fallback, config.system, options)
        if manifest is not None and manifest.fingerprint != mark and not self.force:
            raise BatchOutputError(
                f"{str(output)!r} was written by a run with other settings "
                f"({_difference(manifest, config, options)}); use another output, or --force "
                "to continue it with these settings"
            )
        self._torn = torn = torn_key(output, state)  # the row whose line was cut short
        self._scan()
        # only now, with the file known to be a run's output (or adopted) and the input good,
        # is a torn end cut
        blank = state.blank_tail
        dropped = repair_tail(output, state)
        if dropped and blank:  # a blank line at the end: no row's line is lost
            self.notice(f"repaired {str(output)!r}: dropped {blank_bytes(dropped)} at its end")
        elif dropped:
            fate = {  # what becomes of that row, as the scan found it
                None: f"its row {shown(torn, 100)} is not in the input",
                True: f"its row {shown(torn, 100)} runs again",
                False: f"its row {shown(torn, 100)} has an earlier line, which stands",
            }[self._torn_runs]
            self.notice(
                f"repaired {str(output)!r}: dropped a torn last line "
                f"({counted(dropped, 'byte')})" + (f"; {fate}" if torn is not None else "")
            )
        # the manifest counts the runs; without one (adopted) or with a broken one, the lines
        # still say how many runs wrote them, and ``run`` only goes up on one output
        self.run_number = max(manifest.runs if manifest is not None else 0, state.max_run) + 1
        Manifest(
            fingerprint=mark,
            provider=config.provider,
            model=config.model,
            fallback=config.fallback,
            system=config.system,
            options=options,
            runs=self.run_number,
        ).save(output)
        writer = OutputWriter(output)
        try:
            assert self.lock is not None  # taken by prepare()
            self.lock.hold(output)  # made just now, if it was not there: locked from here on
        except BaseException:
            writer.close()
            raise
        self.writer = writer

    def _scan(self) -> None:
        last = self.state.last
        run_keys: list[int] = []
        ok = error = 0
        force, retry = self.force, self.retry_errors

        def check(key: str, obj: Any, line: int) -> None:
            runs = len(run_keys)
            decide(key, obj, line)
            if key == self._torn:  # (None never is a key)
                self._torn_runs = len(run_keys) > runs

        def decide(key: str, obj: Any, line: int) -> None:
            nonlocal ok, error
            seen = last.get(key)
            if seen is None:
                run_keys.append(line)
                return
            status, sha, _ = seen
            changed = bool(sha) and sha != input_sha(obj)
            if changed and not force:
                raise BatchInputError(
                    f"line {line}: row {shown(key, 100)} changed since its output line was written "
                    "(use --force to run it again)",
                    line=line,
                )
            if status == "ok":
                ok += 1
            else:
                error += 1
            if changed or (status != "ok" and retry):
                run_keys.append(line)
            else:
                self.skipped += 1
                del last[key]  # nothing of this run asks about it again: its memory goes

        self.index = index = scan_input(self.input_path, check, provider=self.config.provider)
        last.shrink()  # (a dict keeps its size when keys go)
        if not index.keys:
            raise BatchInputError(f"the input {NO_ROWS}")
        pending = bytearray(index.lines + 1)
        for line in run_keys:
            pending[line] = 1
        self.pending = pending
        self.tally = Tally(index.total, ok=ok, error=error)

    # ------------------------------------------------------------------ the run

    def lines(self) -> Generator[tuple[int, bytes]]:
        """The pending input lines, read lazily."""
        pending = self.pending
        with open(self.input_path, "rb") as file:
            for number, raw in iter_lines(file):
                if number < len(pending) and pending[number]:
                    yield number, raw

    def _write(self, done: Done, line: int) -> None:
        writer = self.writer
        assert writer is not None
        if self.index.keys.get(done.key) != line:  # the input changed under the run
            raise BatchInputError(
                f"line {line}: the input changed during the run (this line now holds row "
                f"{shown(done.key, 100)}, which the scan found "
                + (
                    f"on line {self.index.keys[done.key]})"
                    if done.key in self.index.keys
                    else "nowhere)"
                )
                + "; nothing of it was written",
                line=line,
            )
        previous = self.state.last.get(done.key)
        queued = self._queued
        if not queued:
            asyncio.get_running_loop().call_soon(self._flush)
        queued.append(done.line)
        self.tally.count(
            done.status,
            done.input_tokens,
            done.output_tokens,
            previous[0] if previous is not None else None,
        )
        if previous is not None:  # a later line of this run supersedes nothing more
            del self.state.last[done.key]
        if done.error:
            self.errors[done.error.partition(":")[0]] += 1
            if not self.first_error:
                self.first_error = done.error

    def _write_queued(self) -> None:
        """Write the lines finished in this turn of the loop, in one ``write``.

        Raises:
            BatchWriteError: the write failed (the file is as it was before these lines).
        """
        queued = self._queued
        if queued and self.writer is not None:
            lines = queued.copy()
            queued.clear()
            self.writer.write_lines(lines)

    def _flush(self) -> None:
        """:meth:`_write_queued` as a loop callback: a failure stops the run."""
        try:
            self._write_queued()
        except BatchWriteError as exc:
            if self.fatal is None:
                self.fatal = exc
            if self._stop is not None:
                self._stop.set()

    async def run(
        self, backend: Backend, stop: asyncio.Event, started: Callable[[], object] | None = None
    ) -> BatchSummary:
        """Send every pending row through ``backend``, writing each finished line.

        Rows are handed out as places free up: the callback that takes a finished row's line
        hands out the next input line, so the rows in memory are the rows in flight. Stops
        sending when ``stop`` is set (a signal), cancels the rows in flight, and returns with
        ``interrupted``. A write failure stops the run the same way and is raised.
        ``started`` is called once the backend has started, before the first row goes out.
        """
        self._stop = stop
        running: dict[asyncio.Future[Done], int] = {}  # a row in flight -> its line number
        relay = backend.relay if isinstance(backend, Relays) else None
        relayed = 0  # rows handed out through ``relay`` and not landed
        ended = False  # the run is over: a row landing now is not written (as if cancelled)
        exhausted = False  # every pending line was handed out
        limit = 0  # rows in flight at most: the backend's capacity, known once it started
        lines = self.lines()
        idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def fail(exc: BaseException) -> None:
            if self.fatal is None:
                self.fatal = exc
            stop.set()

        def feed() -> None:
            nonlocal relayed, exhausted
            try:
                while len(running) + relayed < limit and not stop.is_set():
                    job = next(lines, None)
                    if job is None:
                        exhausted = True
                        break
                    if relay is not None:
                        relay(job[0], job[1], landed)
                        relayed += 1
                        continue
                    future = backend.submit(*job)
                    running[future] = job[0]
                    future.add_done_callback(finished)
            except Exception as exc:  # the input (a line too long, a read error) or a backend
                fail(exc)
            if not running and not relayed and not idle.done():
                idle.set_result(None)  # nothing in flight and nothing more to send

        def take(line: int, result: Done | BaseException) -> None:
            if self.fatal is not None:
                return
            if isinstance(result, BaseException):
                fail(result)
                return
            try:
                self._write(result, line)
            except Exception as exc:  # a write error, or anything else: the run stops with
                fail(exc)  # it (raised below), never left waiting for a row nobody hands out
                return
            feed()

        def landed(line: int, result: Done | BaseException) -> None:
            nonlocal relayed
            if ended:
                return
            relayed -= 1
            take(line, result)

        def finished(future: asyncio.Future[Done]) -> None:
            line = running.pop(future, 0)
            if future.cancelled():
                return
            # every row's failure is looked at, the ones after the first too: one left unseen
            # is printed by asyncio at exit, with a traceback
            error = future.exception()
            take(line, error if error is not None else future.result())

        syncer = asyncio.ensure_future(self._sync_every_second(stop))
        stopper = asyncio.ensure_future(stop.wait())
        try:
            await backend.start()
            # (read after start: a Ray backend learns there how many actors the cluster runs)
            limit = _in_flight(backend, self.config)
            if started is not None:
                started()
            feed()
            await asyncio.wait({idle, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended = True
            # every row ran to its line: a signal now (as the run closes) interrupted nothing
            complete = exhausted and not running and not relayed
            in_flight = list(running)
            for future in in_flight:
                future.cancel()
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
            lines.close()
            stopper.cancel()
            syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await syncer
            await backend.aclose()
            self._flush()
        if self.fatal is not None:
            raise self.fatal
        interrupted = stop.is_set() and not complete
        return self.tally.summary(skipped=self.skipped, interrupted=interrupted)

    async def _sync_every_second(self, stop: asyncio.Event) -> None:
        writer = self.writer
        assert writer is not None
        while True:
            # a look every 0.2 s, and one at the moment the oldest unsynced line has waited
            # a second: an fsync a second after a line, not up to 1.2 s (overdue, while an
            # fsync still runs: the next look in 0.2 s)
            await asyncio.sleep(min(_SYNC_LOOK, writer.until_due()) or _SYNC_LOOK)
            if writer.due():
                try:
                    self._write_queued()
                    writer.sync()
                except BatchWriteError as exc:
                    if self.fatal is None:
                        self.fatal = exc
                    stop.set()
                    return

    def close(self) -> None:
        """Sync and close the output, release the lock (always, even when the sync fails).

        Raises:
            BatchWriteError: the last sync failed (the lines may not all be on disk; a later
                run sends the missing ones again).
        """
        try:
            if self.writer is not None:
                try:
                    self._write_queued()
                finally:
                    writer, self.writer = self.writer, None
                    writer.close()
        finally:
            if self.lock is not None:
                self.lock.release()


def check_output(output: Path) -> Manifest | None:
    """The manifest of ``output``, an existing run's output or none yet, for a reader
    (``batch status``, ``batch export``) that must not take for a torn tail what is no output;
    ``None`` for a missing or empty file. Reads nothing of the output itself.

    Raises:
        BatchOutputError: ``output`` is not a regular file, or holds data but no manifest
            (no run wrote it), in the words ``batch run`` refuses it with (but for the hint:
            a reader has no ``--force``).
        BatchWriteError: ``output`` or its manifest cannot be read.
    """
    if not refuse_special(output):
        return None
    manifest = Manifest.load(output)
    if manifest is None and _holds_data(output):
        # (the reader has no --force: it says which command adopts such a file)
        raise _not_an_output(output, "`batch run --force` would adopt it as an output")
    return manifest


def _not_an_output(output: Path, hint: str) -> BatchOutputError:
    # a run writes its manifest before its first line: without one, nothing says a run wrote
    # this file (a one-line document without a final newline would look torn, and be
    # truncated away by a run, or counted as a torn line by a reader); refused before it is
    # even read
    return BatchOutputError(
        f"{str(output)!r} holds data but no manifest ({str(Manifest.path_for(output))!r}), "
        f"so no batch run wrote it; {hint}"
    )


def _holds_data(path: Path) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:  # missing (a new output), or unreadable: read_output says which
        return False


#: seconds between the run's looks at whether its output is due an fsync
_SYNC_LOOK = 0.2


def _in_flight(backend: Backend, config: BatchConfig) -> int:
    return int(getattr(backend, "capacity", config.concurrency))


def _difference(manifest: Manifest, config: BatchConfig, options: dict[str, Any]) -> str:
    for name, before, now in (
        ("provider", manifest.provider, config.provider),
        ("model", manifest.model, config.model),
        ("fallback", list(manifest.fallback), list(config.fallback)),
        ("system", manifest.system, config.system),
        ("options", manifest.options, options),
    ):
        if before != now:
            return f"{name} {_show(before)}, now {_show(now)}"
    return "another fingerprint"


def blank_bytes(size: int) -> str:
    """``1 blank byte``, ``3 blank bytes``: what a blank tail of ``size`` bytes is called."""
    return counted(size, "blank byte")


def _show(value: object) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def check_paths(input_path: Path, output: Path) -> None:
    """A clear error up front for an output path no run can use: one naming no file, in a
    directory that does not exist, a directory, a device or a pipe, or the input file.

    Raises:
        BatchOutputError: as above (a read-only place is found when it is written to).
    """
    if not output.name or output.name in (".", ".."):
        raise BatchOutputError(f"the output {str(output)!r} names no file")
    directory = output.parent
    if directory.is_dir() and output.is_symlink():
        # the file a symlink leads to is the one written (and its lock and manifest beside
        # it): its directory must be there too
        directory = Path(os.path.realpath(output)).parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise BatchOutputError(
            f"cannot write {str(output)!r}: the directory {str(directory)!r} {what}"
        )
    refuse_special(output)  # a directory, a device, a pipe: before even the lock is made
    with contextlib.suppress(OSError):  # either missing: nothing to compare
        if os.path.samefile(input_path, output):
            raise BatchOutputError(
                f"the output {str(output)!r} is the input file: write to another file"
            )
