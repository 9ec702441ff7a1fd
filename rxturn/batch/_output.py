"""The output file, which is the checkpoint: reading it back, repairing it, writing to it.

* :func:`read_output` reads every line, keeps the **last** line of each key (status and
  ``input_sha`` only), and finds a torn tail (no final newline, or a last line that is not
  JSON), which :func:`repair_tail` truncates away.
* :class:`OutputLock` is the exclusive ``OUT.lock`` (``fcntl.flock``; released by the kernel
  when the process dies, even by ``kill -9``).
* :class:`Manifest` is ``OUT.manifest.json``: the run's fingerprint (provider, model,
  fallbacks, system prompt, request options) and the number of runs; replaced atomically.
* :class:`OutputWriter` is the one writer: each line goes out whole in one ``write`` (with the
  other lines finished in the same turn of the event loop) to a file opened for appending, and
  is fsynced at least every second and every 256 lines, on a thread of its own: an fsync waits
  for the disk (milliseconds, more on a busy one), and the event loop that relays the rows must
  not wait with it. A failed write (disk full, read-only) truncates the partial lines back and
  raises :class:`~._errors.BatchWriteError`; the lines before them stay. A failed fsync is
  raised by the writer's next call.

What the system refuses (a full disk, a read-only file system, a permission, an I/O error) is a
:class:`~._errors.BatchWriteError`; what the output *holds* that no run of these settings can
continue (a foreign line, another run's manifest, another run's lock) is a
:class:`~._errors.BatchOutputError`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import IO, Annotated, Any, Literal, cast

import msgspec

from ._errors import BatchLockedError, BatchOutputError, BatchWriteError

__all__ = [
    "FSYNC_LINES",
    "FSYNC_SECONDS",
    "MAX_OUTPUT_LINE",
    "LastLines",
    "Manifest",
    "OutputLock",
    "OutputState",
    "OutputWriter",
    "fingerprint",
    "read_output",
    "refuse_special",
    "repair_tail",
    "torn_key",
]

FSYNC_LINES = 256
FSYNC_SECONDS = 1.0
#: The longest line an output is read with: an output line is one row's reply (a few megabytes
#: at most), so a longer one is no output line, and reading stops there (a foreign file of one
#: huge line is never held whole).
MAX_OUTPUT_LINE = 64 << 20


class _Seen(msgspec.Struct, frozen=True):
    """The fields of an output line the resume reads."""

    id: str
    status: Literal["ok", "error"]
    input_sha: str = ""
    run: int = 0


_seen_decoder = msgspec.json.Decoder(_Seen)


#: what :class:`LastLines` gives for a key: (status, input_sha, byte offset of the line)
Seen = tuple[str, str, int]

_SHA = re.compile("[0-9a-f]{64}").fullmatch  # what hashlib's hexdigest writes, no other spelling
_SHA_SHIFT = 50  # below it: the offset (48 bits, 256 TiB), whether a sha is there, whether ok


class LastLines:
    """key -> ``(status, input_sha, offset)`` of the key's last output line, kept compact.

    A resume holds this for every key of the output: at 10^6 rows a tuple of a status, a
    64-character sha string and an offset would be ~210 bytes a key beside the key itself. Here
    the three are one integer (the sha's 256 bits, the offset and two flags: ~70 bytes), made
    back into the tuple when a key is looked up. A sha that is not 64 lowercase hex digits (an
    edited line) is kept as the tuple it was. docs/batch.md, "Resume".
    """

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        self._lines: dict[str, int | Seen] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def __contains__(self, key: object) -> bool:
        return key in self._lines

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __delitem__(self, key: str) -> None:
        del self._lines[key]

    def put(self, key: str, status: str, sha: str, offset: int) -> None:
        """Keep ``(status, sha, offset)`` as the last line of ``key``."""
        if not 0 <= offset < 1 << (_SHA_SHIFT - 2) or status not in ("ok", "error"):
            self._lines[key] = (status, sha, offset)
        elif not sha:
            self._lines[key] = offset << 2 | (status == "ok")
        elif _SHA(sha):
            self._lines[key] = int(sha, 16) << _SHA_SHIFT | offset << 2 | 2 | (status == "ok")
        else:
            self._lines[key] = (status, sha, offset)

    def get(self, key: str) -> Seen | None:
        packed = self._lines.get(key)
        if type(packed) is not int:
            return cast("Seen | None", packed)
        offset = packed >> 2 & ((1 << (_SHA_SHIFT - 2)) - 1)
        sha = format(packed >> _SHA_SHIFT, "064x") if packed & 2 else ""
        return ("ok" if packed & 1 else "error", sha, offset)

    def __getitem__(self, key: str) -> Seen:
        seen = self.get(key)
        if seen is None:
            raise KeyError(key)
        return seen

    def shrink(self) -> None:
        """Give back the memory of the keys deleted so far (a dict never shrinks by itself)."""
        self._lines = dict(self._lines)

    def ok_count(self) -> int:
        """Keys whose last line is ``ok``."""
        ok = 0
        for packed in self._lines.values():
            ok += packed & 1 if type(packed) is int else cast("Seen", packed)[0] == "ok"
        return ok


class OutputState:
    """The last line of each key in an output file."""

    __slots__ = ("blank_tail", "good_size", "last", "lines", "max_run", "size")

    def __init__(self) -> None:
        #: key -> (status, input_sha, byte offset of its last line)
        self.last = LastLines()
        self.lines = 0
        #: the highest ``run`` of its lines: an output whose manifest is lost (adopted with
        #: ``--force``) goes on counting its runs from there, not from 1 again
        self.max_run = 0
        self.size = 0  # bytes in the file
        self.good_size = 0  # bytes up to the end of the last whole, valid line
        #: the torn tail is blank (whitespace: an editor's or an ``echo >>``'s, no crash's),
        #: so no row's line is in it
        self.blank_tail = False

    @property
    def torn_bytes(self) -> int:
        return self.size - self.good_size

    def counts(self) -> tuple[int, int]:
        """(keys whose last line is ok, keys whose last line is error)."""
        ok = self.last.ok_count()
        return ok, len(self.last) - ok


def refuse_special(path: Path, what: str = "the output") -> bool:
    """Whether ``path`` exists; raises if it is there but is not a regular file.

    An output is read back whole and appended to, so it must be a file: a device never ends
    when read (``/dev/zero``, ``/dev/full``), and a pipe or a terminal (``/dev/stdout``) waits
    for a writer; ``stat`` tells without opening it (opening a named pipe waits too).

    Raises:
        BatchOutputError: ``path`` is a directory, a device, a pipe or a socket.
        BatchWriteError: ``path`` cannot be looked at (a permission, an I/O error).
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise BatchWriteError(f"cannot read {str(path)!r}: {_reason(exc)}") from None
    if stat.S_ISDIR(mode):
        if what == "the output":
            raise BatchOutputError(f"{str(path)!r} is a directory, not an output file")
        raise BatchOutputError(f"{what} {str(path)!r} is a directory, not a file")
    if not stat.S_ISREG(mode):
        kind = (
            "a named pipe"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
        )
        why = (
            "(it is the checkpoint, read back and appended to): name a file"
            if what == "the output"
            else "(it is read back, and replaced by each run): remove it"
        )
        raise BatchOutputError(f"{what} {str(path)!r} is {kind}, not a regular file {why}")
    return True


def read_output(path: Path) -> OutputState:
    """Read ``path`` (a missing file is an empty output).

    A torn tail is what a crash can leave: a last line without its newline, or one that is not
    JSON. A whole JSON line that is not an output line is no crash's doing, wherever it is.

    Raises:
        BatchOutputError: a line before the last is not an output line, or the last is JSON
            but not an output line (the file was edited, or is not an rxturn output).
        BatchWriteError: the file cannot be read.
    """
    state = OutputState()
    if not refuse_special(path):
        return state
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return state
    except IsADirectoryError:
        raise BatchOutputError(f"{str(path)!r} is a directory, not an output file") from None
    except OSError as exc:
        raise BatchWriteError(f"cannot read {str(path)!r}: {_reason(exc)}") from None
    with file:
        offset = 0
        pending_error: str | None = None
        readline = partial(file.readline, MAX_OUTPUT_LINE + 1)

        def read() -> bytes:
            try:
                return readline()
            except OSError as exc:  # opened, but the read fails (an I/O error)
                raise BatchWriteError(f"cannot read {str(path)!r}: {_reason(exc)}") from None

        blank: int | None = None  # the first of the blank lines read last
        for number, raw in enumerate(iter(read, b""), start=1):
            if pending_error is not None:  # a bad line that turned out not to be the last
                raise BatchOutputError(pending_error)
            length = len(raw)
            if not raw.strip():  # blank lines at the end are a blank end (several `echo >>`)
                blank = number if blank is None else blank
                state.blank_tail = True
                offset += length
                continue
            if blank is not None:  # blank lines before a line: an edit, not an end
                raise BatchOutputError(
                    f"{str(path)!r} line {blank} is not an rxturn batch output line (remove "
                    "it, or write to another output)"
                )
            if not raw.endswith(b"\n"):
                if length > MAX_OUTPUT_LINE:
                    rest = _newline_after(file)  # the line goes on: how far, without keeping it
                    if rest is not None:
                        raise BatchOutputError(
                            f"{str(path)!r} line {number} is longer than "
                            f"{MAX_OUTPUT_LINE >> 20} MiB: not an rxturn batch output line "
                            "(remove it, or write to another output)"
                        )
                    length = os.fstat(file.fileno()).st_size - offset
                state.blank_tail = False  # (a blank one was read above)
                offset += length
                break  # torn tail: no newline
            try:
                seen = _seen_decoder.decode(raw)
            except msgspec.DecodeError:
                pending_error = (
                    f"{str(path)!r} line {number} is not an rxturn batch output line (remove "
                    "it, or write to another output)"
                )
                if _is_json(raw):  # whole and JSON: not torn, foreign
                    raise BatchOutputError(pending_error) from None
                offset += length
                continue
            state.last.put(seen.id, seen.status, seen.input_sha, offset)
            state.max_run = max(state.max_run, seen.run)
            state.lines = number
            offset += length
            state.good_size = offset
        state.size = offset
    return state


def _newline_after(file: IO[bytes]) -> int | None:
    """The offset of the next newline in ``file`` from where it is, read in chunks (``None``:
    none before the end)."""
    while True:
        where = file.tell()
        chunk = file.read(1 << 20)
        if not chunk:
            return None
        found = chunk.find(b"\n")
        if found >= 0:
            return where + found


#: the start of an output line as a run writes it: its ``id`` first
_TORN_ID = re.compile(rb'\A\{\s*"id"\s*:\s*("(?:[^"\\]|\\.)*")')


def torn_key(path: Path, state: OutputState) -> str | None:
    """The ``id`` a torn last line begins with (``None``: none, too short to hold a whole
    one, or unreadable): the row whose line it was, for the notice of its repair."""
    if not state.torn_bytes or state.blank_tail:
        return None
    try:
        with open(path, "rb") as file:
            file.seek(state.good_size)
            head = file.read(4096)
        found = _TORN_ID.match(head)
        return msgspec.json.decode(found.group(1), type=str) if found else None
    except (OSError, msgspec.DecodeError):
        return None


def repair_tail(path: Path, state: OutputState) -> int:
    """Truncate a torn tail away; the number of bytes dropped (0 when there was none)."""
    dropped = state.torn_bytes
    if dropped:
        try:
            with open(path, "r+b") as file:
                file.truncate(state.good_size)
                os.fsync(file.fileno())
        except OSError as exc:
            raise BatchWriteError(
                f"cannot repair the torn end of {str(path)!r}: {_reason(exc)}"
            ) from None
        state.size = state.good_size
    return dropped


def beside(output: Path, suffix: str) -> Path:
    """The file beside an output that holds its lock or its manifest, named after the file
    the output's path leads to: a symlink to an output (``latest.jsonl -> run3.jsonl``, or a
    linked directory) shares the output's lock and manifest, so that a run through it and a
    run through the real name are two runs on one output (the second refused), not two runs
    writing every row twice, each under a manifest of its own."""
    real = Path(os.path.realpath(output))
    return real.with_name(real.name + suffix)


class OutputLock:
    """The exclusive lock of one output (``OUT.jsonl.lock``), held for the whole run.

    The file stays after a run (an empty file: the lock is the ``flock`` on it, which the
    kernel drops when the process ends, however it ends). Only a run that created it and was
    refused before it wrote anything removes it (:meth:`release` with ``remove``), so that a
    mistyped command leaves no file behind; the lock is taken on the file the path names
    *after* the lock is held, so a run that opened the file just before it was removed tries
    again rather than hold a lock on a file no one else can see.

    The output file itself is locked too, once it exists (:meth:`hold`): a hard link is a
    second name of the same file, whose lock file would be another."""

    def __init__(self, output: Path) -> None:
        self.path = beside(output, ".lock")
        self._fd: int | None = None
        self._held: int | None = None  # the output file's own descriptor, locked
        #: whether :meth:`acquire` created the file (no run had taken this output's lock)
        self.created = False

    def acquire(self) -> None:
        import fcntl

        while True:
            created = True
            try:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    created = False
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise BatchWriteError(
                    f"cannot create the lock {str(self.path)!r}: {_reason(exc)}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise BatchLockedError(
                    f"another run is writing {str(self.path.with_suffix(''))!r} (it holds "
                    f"{str(self.path)!r})"
                ) from None
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except OSError:  # removed by the run that held it, refused: take the new one
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        self.created = created

    def hold(self, output: Path) -> None:
        """Lock the output file itself, if it exists (a file that does not has no other name).

        Raises:
            BatchLockedError: another run holds it, under another name (a hard link).
        """
        import fcntl

        if self._held is not None:
            return
        try:
            fd = os.open(output, os.O_RDONLY)
        except OSError:  # none yet, or unreadable (reading it says so)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise BatchLockedError(
                f"another run is writing {str(output)!r} under another name (a hard link to it)"
            ) from None
        self._held = fd

    def taken(self) -> bool:
        """Whether a run holds this lock now, as far as can be told without touching it: the
        kernel's table of locks (Linux's ``/proc/locks``) lists the lock file's. Trying the
        lock instead would make a run that starts at that instant find it taken, and refuse.
        ``False`` where that cannot be told."""
        try:
            stat = os.stat(self.path)
            with open("/proc/locks", encoding="ascii", errors="replace") as table:
                rows = table.read()
        except OSError:  # no lock file (no run ever took it), or no such table here
            return False
        where = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
        return any(
            fields[1] == "FLOCK" and fields[5] == where
            for fields in (row.split() for row in rows.splitlines())
            if len(fields) > 5
        )

    def release(self, *, remove: bool = False) -> None:
        """Drop the lock; ``remove``: remove the file first, while it is still held."""
        if self._held is not None:
            os.close(self._held)
            self._held = None
        if self._fd is not None:
            if remove:
                with contextlib.suppress(OSError):
                    self.path.unlink()
            os.close(self._fd)  # closing drops the flock
            self._fd = None


#: The manifest format this rxturn writes and reads.
MANIFEST_VERSION = 1


class Manifest(msgspec.Struct, kw_only=True):
    """``OUT.jsonl.manifest.json``: what the output's rows were asked with."""

    fingerprint: str
    provider: str
    model: str
    fallback: tuple[str, ...] = ()
    system: str | None = None
    options: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    runs: Annotated[int, msgspec.Meta(ge=0)] = 0  # (an edited -5 made the next run -4)
    #: the manifest's format: no run wrote a 0, and a later one is a newer rxturn's
    version: Annotated[int, msgspec.Meta(ge=1)] = MANIFEST_VERSION

    @staticmethod
    def path_for(output: Path) -> Path:
        return beside(output, ".manifest.json")

    @classmethod
    def load(cls, output: Path, *, broken_ok: bool = False) -> Manifest | None:
        """The manifest of ``output`` (``None``: it has none, or with ``broken_ok`` one that
        is no manifest, which ``batch run --force`` then rewrites).

        Raises:
            BatchOutputError: the manifest is not one (without ``broken_ok``), or its path
                is a directory, a device or a pipe.
            BatchWriteError: it cannot be read.
        """
        path = cls.path_for(output)
        if not refuse_special(path, "the manifest"):
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BatchWriteError(f"cannot read {str(path)!r}: {_reason(exc)}") from None
        try:
            manifest = msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as exc:
            if broken_ok:
                return None
            raise BatchOutputError(
                f"{str(path)!r} is not a batch manifest ({exc}); `batch run --force` rewrites it"
            ) from None
        if manifest.version > MANIFEST_VERSION:
            # a newer rxturn's: its settings and lines may mean what this one cannot tell, and
            # a run here rewrote it as this version's (its fields dropped)
            if broken_ok:
                return None
            raise BatchOutputError(
                f"{str(path)!r} is a manifest of a newer rxturn (version {manifest.version}; "
                f"this one reads version {MANIFEST_VERSION}): continue the output with that "
                "rxturn, or write to another output (`batch run --force` rewrites it as "
                f"version {MANIFEST_VERSION})"
            )
        return manifest

    def save(self, output: Path) -> None:
        """Write atomically: a temporary file, fsync, rename over, fsync the directory.

        Raises:
            BatchWriteError: it could not be written (the manifest before stays as it was).
        """
        path = self.path_for(output)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as file:
                file.write(msgspec.json.encode(self) + b"\n")
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)
        except BaseException as exc:  # an interrupt too: leave no temporary file behind
            with contextlib.suppress(OSError):
                tmp.unlink()
            if isinstance(exc, OSError):
                raise BatchWriteError(
                    f"cannot write {str(path)!r}: {_reason(exc)}; nothing was sent"
                ) from None
            raise
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a directory be fsynced
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fingerprint(
    provider: str,
    model: str,
    fallback: tuple[str, ...],
    system: str | None,
    options: dict[str, Any],
) -> str:
    """What makes two runs' rows comparable: sha256 of their settings' canonical JSON."""
    canonical = msgspec.json.encode(
        {
            "provider": provider,
            "model": model,
            "fallback": list(fallback),
            "system": system,
            "options": options,
        },
        order="sorted",
    )
    return hashlib.sha256(canonical).hexdigest()


class OutputWriter:
    """Appends whole lines to the output, fsyncing at least every second and 256 lines.

    The fsync runs on the writer's own thread (one at a time) while the caller goes on
    appending: lines written after it started are covered by the next one. Its failure is
    raised by the next :meth:`write_lines`, :meth:`sync` or :meth:`close`; :meth:`close` waits
    for it and syncs what is left before closing.
    """

    def __init__(
        self,
        path: Path,
        *,
        fsync_lines: int = FSYNC_LINES,
        fsync_seconds: float = FSYNC_SECONDS,
        clock: Any = time.monotonic,
    ) -> None:
        self.path = path
        self.fsync_lines = fsync_lines
        self.fsync_seconds = fsync_seconds
        self._clock = clock
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BatchWriteError(_write_error(path, exc)) from None
        self._size = os.fstat(self._fd).st_size
        self._unsynced = 0
        self._first_unsynced = 0.0
        self.written = 0
        self._syncer: ThreadPoolExecutor | None = None
        self._syncing: Future[None] | None = None

    def write(self, line: bytes) -> None:
        """Append one line (``line`` ends with ``\\n``), whole or not at all.

        Raises:
            BatchWriteError: the write failed (disk full, read-only, I/O error); the file is
                truncated back to its last whole line.
        """
        self.write_lines((line,))

    def write_lines(self, lines: tuple[bytes, ...] | list[bytes]) -> None:
        """Append whole lines (each ends with ``\\n``) in one ``write``: all or none of them.

        Raises:
            BatchWriteError: the write failed (disk full, read-only, I/O error); the file is
                truncated back to its last whole line before them. Or the last fsync failed.
        """
        if not lines:
            return
        data = lines[0] if len(lines) == 1 else b"".join(lines)
        try:
            done = os.write(self._fd, data)
            while done < len(data):  # a short write: finish it or fail below
                more = os.write(self._fd, data[done:])
                if more <= 0:
                    raise OSError(errno.EIO, "short write")
                done += more
        except OSError as exc:
            self._undo()
            raise BatchWriteError(_write_error(self.path, exc)) from None
        self._size += len(data)
        self.written += len(lines)
        if self._unsynced == 0:
            self._first_unsynced = self._clock()
        self._unsynced += len(lines)
        if self._unsynced >= self.fsync_lines:
            self.sync()

    def due(self) -> bool:
        """Whether unsynced lines have waited a second (the caller's timer asks)."""
        return self._unsynced > 0 and self._clock() - self._first_unsynced >= self.fsync_seconds

    def until_due(self) -> float:
        """Seconds until the unsynced lines have waited a second (``fsync_seconds`` when there
        are none): how long the caller's timer may sleep before it asks :meth:`due` again."""
        if self._unsynced == 0:
            return self.fsync_seconds
        return max(0.0, self.fsync_seconds - (self._clock() - self._first_unsynced))

    def sync(self) -> None:
        """Start an fsync of what was written since the last one began, on the writer's thread.

        While one runs, nothing new starts: the lines stay counted as unsynced, and the next
        call after it ended starts theirs.

        Raises:
            BatchWriteError: the previous fsync failed (an I/O error, a full disk on some file
                systems); the lines may not be on disk, and a later run sends them again.
        """
        syncing = self._syncing
        if syncing is not None:
            if not syncing.done():
                return
            self._syncing = None
            self._raise_failed(syncing)
        if self._unsynced:
            if self._syncer is None:
                self._syncer = ThreadPoolExecutor(1, thread_name_prefix="rxturn-fsync")
            self._syncing = self._syncer.submit(os.fsync, self._fd)
            self._unsynced = 0

    def _raise_failed(self, syncing: Future[None]) -> None:
        exc = syncing.exception()  # waits, if it still runs
        if isinstance(exc, OSError):
            raise BatchWriteError(_write_error(self.path, exc)) from None
        if exc is not None:
            raise exc

    def _undo(self) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)

    def close(self) -> None:
        """Wait for a running fsync, sync what is left, close the file.

        Raises:
            BatchWriteError: an fsync failed (the file is closed all the same).
        """
        if self._fd < 0:
            return
        syncing, self._syncing = self._syncing, None
        try:
            if syncing is not None:
                self._raise_failed(syncing)  # waits for it to end
            if self._unsynced:
                try:
                    os.fsync(self._fd)
                except OSError as exc:
                    raise BatchWriteError(_write_error(self.path, exc)) from None
                self._unsynced = 0
        finally:
            if self._syncer is not None:
                self._syncer.shutdown(wait=True)
                self._syncer = None
            os.close(self._fd)
            self._fd = -1


def _reason(exc: OSError) -> str:
    """Why the system refused, in words."""
    return {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exceeded",
        errno.EROFS: "the file system is read-only",
        errno.EFBIG: "the file has reached its size limit",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
    }.get(exc.errno or 0, exc.strerror or str(exc))


def _write_error(path: Path, exc: OSError) -> str:
    return (
        f"cannot write {str(path)!r}: {_reason(exc)}; every line written before is kept, re-run "
        "the same command to continue"
    )


def _is_json(raw: bytes) -> bool:
    try:
        msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return False
    return True


def read_line_at(file: IO[bytes], offset: int) -> bytes:
    file.seek(offset)
    return file.readline()
