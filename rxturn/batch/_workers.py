"""``--workers N``: rows run in N worker processes; this process stays the one writer.

Each worker is ``python -m rxturn.batch._worker``, talking lines over its stdin/stdout. The
per-row traffic is framed so that neither side encodes or decodes more than it must:

* ``r<number> <input line>`` (parent → worker): a row, its input line as read from the file;
* ``d<head>\t<output line>`` (worker → parent): a finished row, where ``<head>`` is the small
  JSON array the writer counts (:class:`Head`: line number, key, status, tokens, error) and
  the output line follows as the worker encoded it, written to the output as it arrives;

every other message is one msgspec-encoded :class:`Message` JSON object:

* parent → worker: ``config`` (once, first), ``grant`` (a budget grant answering an
  ``acquire``), ``pause`` (a Retry-After some worker met: every worker holds its new requests
  until it expires);
* worker → parent: ``acquire`` (wait for budget), ``cancel`` (an ``acquire`` no longer
  wanted: its attempt gave up; a grant already made for it is given back), ``restamp`` (the
  granted request has been sent), ``release`` (the granted request will not be sent),
  ``correct`` (reported usage), ``pause`` (a provider's Retry-After), ``wait`` (a row sleeps
  after a rate limit before its retry: the progress line counts it), ``failed`` (a row the
  worker could not run at all), ``fatal`` (the worker could not set up: its client refused
  the settings; the run ends with that error and no worker is restarted), ``alive`` (a
  heartbeat, for the watchdog).

Both sides read their pipe in chunks and split the lines themselves (one wake-up per chunk,
not one per line; a partial line at the end of a pipe, left by a process killed mid-write, is
dropped). This process writes the rows one turn of its event loop handed a worker in one
``write``; a worker holds its finished lines up to 5 ms (at most 64, and not at all when no
other row runs there) so that several go in one ``write`` and wake this process once: it
shares the cores with the workers, and each wake-up takes one from them. Nothing is lost by
the wait: a row is in flight here until its line arrives. (A worker's budget messages go out
at once, with whatever waits: a ``restamp`` that waited would have the budget count its grant
from too early.) The file run hands rows out with :meth:`WorkerPool.relay`, a callback per
row for its end, not a future: no future and no loop callback per row in this process.

The budget lives here, in one :class:`~._budget.LocalGate`, so ``--rpm``/``--tpm`` and a
Retry-After pause hold across all workers. Every grant made for a worker ends sent or released:
the worker says which; a grant made after the worker stopped waiting for it (its ask was
cancelled, or the worker died) is released here, and the grants a worker held when it died
count as sent at that moment (their requests may have left). Without ``--rpm``/``--tpm`` a
worker asks nothing before a request (no round trip per row); it only honours the pauses this
process broadcasts.
A worker that dies (killed, crashed) loses no row: its rows in flight are sent to another
worker, and a new worker takes its place. A worker that hangs (stopped, deadlocked, its loop
stuck in C) is made one that died: while it has rows its loop sends an ``alive`` message every
heartbeat (:func:`heartbeat_interval`), and a worker holding rows from which nothing at all
has come for :data:`SILENT_BEATS` heartbeats is killed (SIGKILL); its pipe closes and it is
handled as above. The API key never crosses the pipe: a worker reads
it from the environment variable the parent names.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from .._arguments import counted
from .._streams import write_quietly
from ..errors import ConfigError
from ._budget import Budget, LocalGate
from ._errors import BatchError
from ._file import Done
from ._runner import BatchConfig

__all__ = [
    "Head",
    "Message",
    "WorkerPool",
    "decode_message",
    "done_frame",
    "encode_message",
    "heartbeat_interval",
    "parse_done",
    "read_lines",
    "row_frame",
    "say",
]

#: bytes asked of a pipe per read (what one read returns is what is there, up to this)
_CHUNK = 1 << 18
_MAX_RESPAWNS_PER_WORKER = 5
#: seconds a worker has to end after its stdin closed, before it is killed
_STOP_GRACE_S = 10.0

#: the environment variable setting the heartbeat interval in seconds (an internal knob: the
#: tests make it small to see the watchdog act in seconds)
HEARTBEAT_ENV = "RXTURN_BATCH_HEARTBEAT_S"
_HEARTBEAT = 1.0
#: heartbeats a worker holding rows may miss before it is taken for hung and killed: 30 s by
#: default, far beyond the longest turn of a healthy worker's event loop (docs/batch.md)
SILENT_BEATS = 30
#: a worker not heard from since it started gets this many times longer (its interpreter
#: imports rxturn and aiohttp first, which a loaded machine can make slow)
_START_FACTOR = 4


def say(text: str) -> None:
    """A notice on stderr. Its reader going away (``2>&1 | head -1``) must not end what is
    being done (handing a dead worker's rows on): stderr is pointed at ``/dev/null`` then."""
    write_quietly(sys.stderr, text)


def heartbeat_interval() -> float:
    """The heartbeat interval of worker processes, in seconds.

    Raises:
        ConfigError: ``RXTURN_BATCH_HEARTBEAT_S`` is set to something not a positive number.
    """
    text = os.environ.get(HEARTBEAT_ENV, "").strip()
    if not text:
        return _HEARTBEAT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.001 <= value <= 3600):
        raise ConfigError(
            f"{HEARTBEAT_ENV} must be a number of seconds from 0.001 to 3600, got {text[:40]!r}"
        )
    return value


class Message(msgspec.Struct, frozen=True, omit_defaults=True):
    """One line on a worker pipe (``t`` says which; the other fields as that kind needs)."""

    t: str
    n: int = 0  # input line number (failed) or request id (acquire, cancel, grant, correct)
    raw: str = ""
    tokens: int = 0
    seconds: float = 0.0
    config: BatchConfig | None = None
    run: int = 0
    key_env: str = ""
    beat: float = 0.0  # config: the heartbeat interval (seconds)
    error: str = ""  # fatal: the error's class name (``raw`` holds its message)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Message)


def encode_message(message: Message) -> bytes:
    return _encoder.encode(message) + b"\n"


def decode_message(line: bytes) -> Message:
    return _decoder.decode(line)


class Head(msgspec.Struct, frozen=True, array_like=True):
    """What the writer needs of a finished row beside its output line (see :class:`Done`)."""

    n: int
    key: str
    status: str
    input_tokens: int
    output_tokens: int
    error: str = ""


_head_decoder = msgspec.json.Decoder(Head)


def row_frame(number: int, raw: bytes) -> bytes:
    """The line handing input line ``number`` (its bytes ``raw``) to a worker."""
    return b"r%d %s\n" % (number, raw.rstrip(b"\r\n"))


def done_frame(number: int, done: Done) -> bytes:
    """The line handing a finished row back: its head, a tab, its output line as encoded."""
    head = Head(number, done.key, done.status, done.input_tokens, done.output_tokens, done.error)
    # JSON escapes every tab and newline inside a string: the first tab ends the head, and
    # the output line (one JSON line) ends the frame
    return b"d" + _encoder.encode(head) + b"\t" + done.line


def parse_done(line: bytes) -> tuple[int, Done] | None:
    """A ``d`` frame without its newline; ``None`` if it is not one (a stray print)."""
    tab = line.find(b"\t")
    if tab < 0:
        return None
    try:
        head = _head_decoder.decode(line[1:tab])
    except msgspec.DecodeError:
        return None
    done = Done(
        line[tab + 1 :] + b"\n",
        head.key,
        head.status,
        head.input_tokens,
        head.output_tokens,
        head.error,
    )
    return head.n, done


async def read_lines(stream: asyncio.StreamReader) -> AsyncIterator[list[bytes]]:
    """The whole lines (without their newlines) of ``stream``, as each read brings them; what
    follows the last newline at the end of the stream (a line cut off by a kill) is dropped."""
    rest = bytearray()
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        if b"\n" not in chunk:
            rest += chunk
            continue
        if rest:  # a line began in an earlier read
            rest += chunk
            chunk = bytes(rest)
            rest.clear()
        lines = chunk.split(b"\n")
        rest += lines.pop()
        yield lines


_KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}


#: called with a row's line number and its finished row, or the error that ends it
Landed = Callable[[int, "Done | BaseException"], None]


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.inflight: dict[int, tuple[Landed, bytes]] = {}  # line number -> (landed, raw)
        self.tickets: dict[int, int] = {}  # the worker's request id -> the budget's ticket
        self.asking: dict[int, asyncio.Future[None]] = {}  # request id -> its grant, waiting
        self.alive = True
        self.heard = False  # something came from it since the watchdog last looked
        self.started = False  # something ever came from it
        self.silent = 0  # the watchdog's looks in a row that found nothing from it
        self.reader: asyncio.Task[None] | None = None
        self._queued: list[bytes] = []  # lines for the worker, written once per loop turn

    def send(self, message: Message) -> None:
        self.write(encode_message(message))

    def write(self, line: bytes) -> None:
        """Queue ``line``: what one turn of the event loop queued goes out in one write."""
        if not self.alive:
            return
        queued = self._queued
        if not queued:
            asyncio.get_running_loop().call_soon(self._flush)
        queued.append(line)

    def _flush(self) -> None:
        queued = self._queued
        data = b"".join(queued)
        queued.clear()
        stdin = self.process.stdin
        if self.alive and stdin is not None and not stdin.is_closing():
            stdin.write(data)


class WorkerPool:
    """N worker processes behind one gate (the ``Backend`` of ``--workers N``)."""

    def __init__(
        self, config: BatchConfig, run: int, *, workers: int, gate: LocalGate | None = None
    ) -> None:
        self.config = config
        self.run = run
        self.size = workers
        self.capacity = workers * config.concurrency
        self.gate: LocalGate = (
            gate if gate is not None else LocalGate(Budget(rpm=config.rpm, tpm=config.tpm))
        )
        self.workers: list[_Worker] = []
        self.respawns = 0
        self.closing = False
        #: what stopped a worker from setting up (then no worker is started again)
        self.fatal: BatchError | ConfigError | None = None
        self.beat = heartbeat_interval()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._watchdog: asyncio.Task[None] | None = None

    async def _spawn(self) -> _Worker:
        """A new worker process.

        Raises:
            BatchError: it cannot be started (the interpreter is gone, no process or file
                can be made).
        """
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "rxturn.batch._worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "RXTURN_BATCH_PARENT": str(os.getpid())},
            )
        except OSError as exc:
            raise BatchError(
                f"cannot start a batch worker process ({sys.executable}): {exc.strerror or exc}"
            ) from None
        worker = _Worker(process)
        worker.send(
            Message(
                t="config",
                config=self.config,
                run=self.run,
                key_env=_KEY_ENV.get(self.config.provider, ""),
                beat=self.beat,
            )
        )
        worker.reader = asyncio.ensure_future(self._read(worker))
        self.workers.append(worker)
        return worker

    async def start(self) -> None:
        for _ in range(self.size):
            await self._spawn()
        self._watchdog = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """Kill a worker that holds rows and has said nothing for :data:`SILENT_BEATS`
        heartbeats. Silence is counted in this loop's own looks, one per heartbeat: if this
        process is the slow one, it looks less often and kills later, never sooner."""
        while True:
            await asyncio.sleep(self.beat)
            for worker in self.workers:
                if not worker.alive:
                    continue
                if worker.heard or not worker.inflight:
                    worker.heard = False
                    worker.silent = 0
                    continue
                worker.silent += 1
                limit = SILENT_BEATS if worker.started else SILENT_BEATS * _START_FACTOR
                if worker.silent >= limit:
                    self._kill_hung(worker)

    def _kill_hung(self, worker: _Worker) -> None:
        """A hung worker is killed; its pipe's end hands its rows to the others
        (:meth:`_lost`)."""
        worker.alive = False  # no more rows, grants or pauses for it
        say(
            f"rxturn batch: worker {worker.process.pid} answered nothing for "
            f"{worker.silent * self.beat:.0f} s while holding "
            f"{counted(len(worker.inflight), 'row')}; killed\n"
        )
        with contextlib.suppress(ProcessLookupError):
            worker.process.send_signal(signal.SIGKILL)

    def _pick(self) -> _Worker:
        """The live worker with the fewest rows in flight."""
        best: _Worker | None = None
        fewest = 0
        for worker in self.workers:
            if worker.alive and (best is None or len(worker.inflight) < fewest):
                best, fewest = worker, len(worker.inflight)
        if self.fatal is not None:
            raise self.fatal
        if best is None:
            raise BatchError("every batch worker process has died; re-run to continue")
        return best

    def relay(self, number: int, raw: bytes, landed: Landed) -> None:
        """Hand input line ``number`` (its bytes ``raw``) to the least busy worker;
        ``landed`` is called with its finished row (or the error that ends it) as its frame
        is read: no future and no loop callback per row (the file run's way).

        Raises:
            BatchError: every worker has died, or none could set up.
            ConfigError: no worker could set up, refused by the client's settings.
        """
        worker = self._pick()
        worker.inflight[number] = (landed, raw)
        worker.write(row_frame(number, raw))

    def submit(self, number: int, raw: bytes) -> asyncio.Future[Done]:
        future: asyncio.Future[Done] = asyncio.get_running_loop().create_future()

        def landed(_: int, result: Done | BaseException) -> None:
            if future.done():  # cancelled: nobody waits for it
                return
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

        self.relay(number, raw, landed)
        return future

    def _spawn_later(self, task: Any) -> asyncio.Future[Any]:
        future = asyncio.ensure_future(task)
        self._tasks.add(future)
        future.add_done_callback(self._tasks.discard)
        return future

    async def _grant(self, worker: _Worker, request: int, tokens: int) -> None:
        try:
            ticket = await self.gate.acquire(tokens)
        finally:
            worker.asking.pop(request, None)
        if not worker.alive:  # it died while it waited: nobody will send this grant
            self.gate.release(ticket)
            return
        worker.tickets[request] = ticket
        worker.send(Message(t="grant", n=request))

    def _receive(self, worker: _Worker, line: bytes) -> None:
        """One line from ``worker``; one that is none of ours (a stray print) is skipped, and
        the row it may have been stays in flight."""
        if line[:1] == b"d":
            parsed = parse_done(line)
            if parsed is not None:
                entry = worker.inflight.pop(parsed[0], None)
                if entry is not None:
                    entry[0](*parsed)
            return
        try:
            message = decode_message(line)
        except msgspec.DecodeError:
            return
        self._handle(worker, message)

    def _handle(self, worker: _Worker, message: Message) -> None:
        kind = message.t
        if kind == "alive":  # a heartbeat: hearing it was the point
            return
        if kind == "failed":
            entry = worker.inflight.pop(message.n, None)
            if entry is not None:
                entry[0](
                    message.n, BatchError(f"a worker failed on line {message.n}: {message.raw}")
                )
        elif kind == "fatal":
            self._fatal(message)
        elif kind == "acquire":
            worker.asking[message.n] = self._spawn_later(
                self._grant(worker, message.n, message.tokens)
            )
        elif kind == "cancel":
            asking = worker.asking.pop(message.n, None)
            if asking is not None:
                asking.cancel()  # still waiting: nothing is granted
            else:  # granted while the worker stopped waiting: the grant goes back
                self._release(worker, message.n)
        elif kind == "release":
            self._release(worker, message.n)
        elif kind == "correct":
            ticket = worker.tickets.pop(message.n, None)
            if ticket is not None:
                self.gate.correct(ticket, message.tokens)
        elif kind == "restamp":
            ticket = worker.tickets.get(message.n)
            if ticket is not None:
                self.gate.restamp(ticket)
        elif kind == "pause":
            self.gate.pause(message.seconds)
            for other in self.workers:
                other.send(Message(t="pause", seconds=message.seconds))
        elif kind == "wait":
            self.gate.rate_limited(message.seconds)

    def _fatal(self, message: Message) -> None:
        """A worker could not set up (its client refused the settings): no worker can, so the
        run ends with that error, once; nothing is restarted."""
        if self.fatal is not None:
            return
        error: BatchError | ConfigError = (
            ConfigError(message.raw)
            if message.error == "ConfigError"
            else BatchError(f"a worker could not start: {message.error}: {message.raw}")
        )
        self.fatal = error
        for worker in self.workers:
            rows = list(worker.inflight.items())
            worker.inflight.clear()
            for number, (landed, _) in rows:
                landed(number, error)

    def _release(self, worker: _Worker, request: int) -> None:
        ticket = worker.tickets.pop(request, None)
        if ticket is not None:
            self.gate.release(ticket)  # a grant already sent stays counted

    async def _read(self, worker: _Worker) -> None:
        stdout = worker.process.stdout
        assert stdout is not None
        receive = self._receive
        try:
            async for lines in read_lines(stdout):
                worker.heard = worker.started = True
                for line in lines:
                    receive(worker, line)
        finally:
            worker.alive = False
            await self._lost(worker)

    async def _lost(self, worker: _Worker) -> None:
        """A worker's pipe closed: send its rows in flight to the others."""
        orphans = [(n, landed, raw) for n, (landed, raw) in worker.inflight.items()]
        worker.inflight.clear()
        for asking in list(worker.asking.values()):
            asking.cancel()
        worker.asking.clear()
        for ticket in worker.tickets.values():
            # its request may have left before the worker died: counted as sent now
            self.gate.restamp(ticket)
        worker.tickets.clear()
        if self.closing or self.fatal is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            await worker.process.wait()
        if self.respawns < _MAX_RESPAWNS_PER_WORKER * self.size:
            self.respawns += 1
            say(
                f"rxturn batch: worker {worker.process.pid} exited "
                f"({worker.process.returncode}); "
                + (
                    "its row in flight runs again\n"
                    if len(orphans) == 1
                    else f"its {len(orphans)} rows in flight run again\n"
                )
            )
            try:
                await self._spawn()
            except BatchError as exc:  # the live workers take the rows, if any is left
                say(f"rxturn batch: {exc}\n")
        for number, landed, raw in orphans:
            try:
                self.relay(number, raw, landed)
            except (BatchError, ConfigError) as exc:
                landed(number, exc)

    async def aclose(self) -> None:
        self.closing = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for future in list(self._tasks):
            future.cancel()
        for worker in self.workers:
            stdin = worker.process.stdin
            if stdin is not None and not stdin.is_closing():
                stdin.close()
        # every worker at once: N hung (stopped) workers take one grace period, not N
        await asyncio.gather(*(self._stop(worker) for worker in self.workers))

    @staticmethod
    async def _stop(worker: _Worker) -> None:
        """Wait for ``worker`` to end after its stdin closed; kill it after a grace period
        (it may be stopped or hung), and end its reader."""
        try:
            await asyncio.wait_for(worker.process.wait(), _STOP_GRACE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
            await worker.process.wait()
        if worker.reader is not None:
            worker.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker.reader
