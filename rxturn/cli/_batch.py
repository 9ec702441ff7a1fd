"""``rxturn batch run | status | export``: many prompts, one command, nothing lost.

``run`` sends each input row as one turn and appends one line per row to the output, which is
the checkpoint: the same command again continues where the last run stopped (docs/batch.md).
``status`` counts an output's rows; ``export`` prints the last line of each input key in input
order.

Exit codes: 0 every row has an ``ok`` line, 3 some rows failed (or are still pending), 2 bad
input or arguments, or an output no run of these settings can continue (nothing was sent), 1
the system refused (a full disk, a read-only output: every line written before is kept) or the
run could not go on (every worker died), 130 interrupted (SIGINT/SIGTERM: no new row is sent,
the rows in flight are cancelled, what finished is written), 141 stdout closed early. Errors
are one line on stderr, ``rxturn batch: error: …``. Module-level imports are stdlib only
(``--help`` imports every command).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._arguments import shown
from ._console import (
    BATCH_FLAGS,
    KEY_VARIABLES,
    argument_shown,
    file_argument,
    hint_stdin,
    in_cli_words,
    model_names_problem,
    not_utf8_problem,
    number_argument,
    provider_argument,
)

if TYPE_CHECKING:
    from rxturn.batch._input import Spool

__all__ = ["add_parser", "run"]


def _whole(text: str, top: int, said: str, why: str = "") -> int:
    """``text`` as an integer from 1 to ``top`` (``said``: ``top`` as the error says it)."""
    try:
        value = int(text)
    except ValueError:  # not an integer (or one of more digits than Python converts)
        value = 0
    if not 1 <= value <= top:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 1 to {said}{why}, got {argument_shown(text)}"
        )
    return value


def _max_tokens(text: str) -> int:
    from rxturn.batch._runner import MAX_TOKENS

    return _whole(text, MAX_TOKENS, str(MAX_TOKENS))


def _per_minute(text: str) -> int:
    from rxturn.batch._budget import MAX_PER_MINUTE, MAX_PER_MINUTE_TEXT

    return _whole(text, MAX_PER_MINUTE, MAX_PER_MINUTE_TEXT)


def _concurrency(text: str) -> int:
    from rxturn.batch._runner import MAX_CONCURRENCY

    return _whole(text, MAX_CONCURRENCY, str(MAX_CONCURRENCY), " (turns in flight per worker)")


#: open files a batch process needs beside its sockets: stdio, the input, the output, its lock
#: and manifest, the event loop's own, a worker's pipes, and a worker being started (its pipes
#: while they are made)
_FILES_BESIDE_SOCKETS = 64
#: open files the parent holds for each worker process: its end of the worker's stdin and
#: stdout pipes, and the process descriptor some Pythons watch a child with
_FILES_PER_WORKER = 3


def _fit_open_files(concurrency: int, rows: int, workers: int = 1) -> tuple[int, int, int]:
    """``(concurrency, workers, limit)``: what the open-files limit holds, after raising this
    process's soft limit toward its hard one (worker processes inherit it).

    Each row in flight holds a socket in the process running it (this one, or a worker);
    with worker processes this one holds :data:`_FILES_PER_WORKER` files per worker instead.
    Whatever does not fit even the hard limit is lowered: the workers to what this process can
    hold pipes for, ``concurrency`` to the sockets one process can open."""
    import resource

    sockets = min(concurrency, rows)
    beside = _FILES_PER_WORKER * workers if workers > 1 else 0
    need = _FILES_BESIDE_SOCKETS + max(sockets, beside)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (OSError, ValueError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return concurrency, workers, soft
    room = max(soft - _FILES_BESIDE_SOCKETS, 1)
    if sockets > room:
        concurrency = room
    if beside > room:
        workers = max(1, room // _FILES_PER_WORKER)
    return concurrency, workers, soft


MAX_WORKERS = 256
"""The most worker processes ``--workers`` starts: each is an interpreter with rxturn and aiohttp
imported, and a worker runs many rows at once (``--concurrency``), so more processes than a
machine has cores buy nothing; a typo such as ``--workers 10000`` is refused, not obeyed."""


def _workers(text: str) -> int:
    if text == "auto":
        return min(os.cpu_count() or 1, MAX_WORKERS)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"expected auto or an integer from 1 to {MAX_WORKERS}, got {argument_shown(text)}"
        )
    return value


def output_argument(text: str) -> str:
    """An argparse ``type`` for OUT: a file name, and not ``-``. OUT is the checkpoint, read
    back by the next run, so stdout cannot be it; ``-o -`` wrote a file named ``-`` in the
    current directory (``./-`` still names that file)."""
    if text == "-":
        raise argparse.ArgumentTypeError(
            "OUT is the checkpoint file the next run reads back, so '-' (stdout) cannot be "
            "it: write to a file, then 'rxturn batch export' it"
        )
    if text.endswith("/") or (os.altsep is not None and text.endswith(os.altsep)):
        # (a path drops the slash: 'results/', a directory that does not exist yet, became
        # a file named 'results')
        raise argparse.ArgumentTypeError(
            f"{shown(text)} names a directory: OUT is a file (such as "
            f"{shown(text + 'answers.jsonl')})"
        )
    return file_argument(text)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="run many prompts from a JSONL file, resumably",
        description="Batch runs: each input row one turn; the output file is the checkpoint "
        "(re-run the same command to continue). See docs/batch.md.",
    )

    def usage(_args: argparse.Namespace) -> int:
        return _usage(parser)

    parser.set_defaults(run=usage)
    sub = parser.add_subparsers(dest="batch_command", metavar="COMMAND")

    run_p = sub.add_parser(
        "run",
        help="run every row of INPUT, appending to OUT",
        description="Run each row of INPUT (JSONL; '-' = stdin) as one turn and append one "
        "line per row to OUT. Rows with an ok line in OUT are skipped (resume): after a crash "
        "or Ctrl-C, the same command goes on where it stopped.",
        epilog="Exit codes: 0 every row has an ok line; 3 some rows failed (their error lines "
        "are in OUT; --retry-errors runs them again); 2 bad input or arguments (nothing was "
        "sent); 1 the system refused (a full disk, a read-only output); 130 interrupted. "
        "The input's row shapes, the output's lines and the budgets: docs/batch.md.",
    )
    run_p.add_argument(
        "input",
        type=file_argument,
        metavar="INPUT.jsonl",
        help="one row per line: {'id', 'prompt'}, {'id', 'messages'}, an OpenAI Batch line or "
        "an Anthropic Message Batches request; '-' reads stdin",
    )
    run_p.add_argument(
        "-o",
        "--output",
        required=True,
        type=output_argument,
        metavar="OUT.jsonl",
        help="the output, and the checkpoint: one line per row, appended",
    )
    provider_argument(run_p)
    run_p.add_argument("--model", required=True, help="the model of a row that names none")
    run_p.add_argument(
        "--fallback",
        action="append",
        default=[],
        metavar="MODEL",
        help="backup model (repeatable): a row fails over to it in the same turn",
    )
    run_p.add_argument("--base-url", default=None, help="endpoint (e.g. the fake server)")
    run_p.add_argument(
        "--system",
        default=None,
        metavar="TEXT",
        help="system prompt of every row (a row's own wins)",
    )
    run_p.add_argument(
        "--max-tokens",
        type=_max_tokens,
        default=None,
        metavar="N",
        help="the reply's token limit (default: the provider client's)",
    )
    run_p.add_argument(
        "--temperature",
        type=number_argument,
        default=None,
        metavar="T",
        help="sampling temperature",
    )
    run_p.add_argument(
        "--concurrency",
        type=_concurrency,
        default=64,
        metavar="N",
        help="turns in flight per worker (default 64)",
    )
    run_p.add_argument(
        "--rpm",
        type=_per_minute,
        default=None,
        metavar="N",
        help="requests per minute, over all workers",
    )
    run_p.add_argument(
        "--tpm",
        type=_per_minute,
        default=None,
        metavar="N",
        help="tokens per minute (input estimate plus max tokens), over all workers",
    )
    run_p.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="1|N|auto",
        help="worker processes on this machine (default 1; auto: one per core)",
    )
    run_p.add_argument(
        "--ray",
        default=None,
        metavar="auto|ADDRESS",
        help="run the rows on Ray actors (auto: RAY_ADDRESS, the running cluster, or a local one)",
    )
    run_p.add_argument("--retry-errors", action="store_true", help="run error rows again")
    run_p.add_argument(
        "--force",
        action="store_true",
        help="continue an output of other settings, and run rows edited since their line again",
    )
    run_p.add_argument(
        "--progress",
        choices=["auto", "bar", "json", "none"],
        default="auto",
        help="on stderr: a bar, or a JSON object a second (default auto: a bar on a terminal, "
        "nothing on a pipe)",
    )
    run_p.set_defaults(run=_run)

    status_p = sub.add_parser(
        "status",
        help="count the rows of an output",
        description="Count the rows of OUT by their last line: ok, error, and (with --input) "
        "pending, the rows of INPUT that have no line yet or were edited since theirs.",
    )
    status_p.add_argument(
        "output", type=output_argument, metavar="OUT.jsonl", help="the output of batch run"
    )
    status_p.add_argument(
        "--input",
        default=None,
        type=file_argument,
        metavar="INPUT.jsonl",
        help="count against this input ('-': stdin)",
    )
    status_p.add_argument(
        "--json", action="store_true", help='one object: {"ok", "error", "pending", "total"}'
    )
    status_p.set_defaults(run=_status)

    export_p = sub.add_parser(
        "export",
        help="the last line of each input key, in input order",
        description="Print the last line OUT holds for each row of INPUT, in input order "
        "(rows without a line are left out).",
    )
    export_p.add_argument(
        "output", type=output_argument, metavar="OUT.jsonl", help="the output of batch run"
    )
    export_p.add_argument(
        "--input",
        required=True,
        type=file_argument,
        metavar="INPUT.jsonl",
        help="the input, for its order ('-': stdin)",
    )
    export_p.set_defaults(run=_export)


def run(args: argparse.Namespace) -> int:
    return int(args.run(args))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_usage(sys.stderr)
    sys.stderr.write("rxturn batch: error: a command is required (run, status or export)\n")
    return 2


def _fail(message: str, code: int = 2) -> int:
    from ._console import one_line

    _to_stderr(f"rxturn batch: error: {one_line(message, 500)}\n")
    return code


def _notice(text: str) -> None:
    _to_stderr(f"rxturn batch: {text}\n")


def _to_stderr(text: str) -> None:
    """Write a line to stderr. Its reader going away (``2>&1 | head -1``) changes nothing of
    the run or of its exit code (the output file says how it went, not stderr): the stream
    is pointed at ``/dev/null`` and the command goes on."""
    from rxturn._streams import write_quietly

    write_quietly(sys.stderr, text)


#: said when a signal ends the command before (or after) the run's own summary line can
_INTERRUPTED = "interrupted; every line written so far is kept: the same command goes on"


def _run(args: argparse.Namespace) -> int:
    # Until the run's event loop takes SIGINT and SIGTERM over (and again after it), both are
    # Ctrl-C (rxturn.cli.main took them, and ignores them as the process exits): the command
    # ends with 130 and says so, a SIGTERM during the scan too.
    try:
        return _run_command(args)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before the run took over the signals
        _notice(_INTERRUPTED)
        return 130


def _exit_code(exc: BaseException) -> int:
    """2 for what the input, the output or the settings hold (nothing was sent), 1 for the
    rest."""
    from rxturn.batch import BatchInputError, BatchOutputError, BatchWriteError
    from rxturn.errors import ConfigError

    if isinstance(exc, BatchWriteError):
        return 1
    return 2 if isinstance(exc, BatchInputError | BatchOutputError | ConfigError) else 1


def _run_command(args: argparse.Namespace) -> int:
    from rxturn.batch import BatchConfig, BatchError, FileRun
    from rxturn.errors import ConfigError, RxturnError

    problem = not_utf8_problem(
        (
            ("--model", [args.model]),
            ("--system", [args.system]),
            ("--fallback", args.fallback),
            ("--base-url", [args.base_url]),
        )
    )
    if problem is not None:
        return _fail(problem)
    # named as the flags, as chat names them (BatchConfig's own words are the API's); the
    # names as checked are the names sent, stripped
    if problem := model_names_problem((("--model", [args.model]), ("--fallback", args.fallback))):
        return _fail(problem)
    args.model, args.fallback = args.model.strip(), [name.strip() for name in args.fallback]
    variable = KEY_VARIABLES.get(args.provider)
    key = (os.environ.get(variable) or "").strip() or None if variable else None
    if variable and not key and args.base_url is None:
        return _fail(f"{variable} is not set (needed for the {args.provider} API)")
    if args.ray is not None and args.workers != 1:
        return _fail("--ray and --workers are exclusive")
    try:
        config = BatchConfig(
            provider=args.provider,
            model=args.model,
            base_url=args.base_url,
            fallback=tuple(args.fallback),
            system=args.system,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            concurrency=args.concurrency,
            rpm=args.rpm,
            tpm=args.tpm,
        ).check()
        if args.workers != 1 or args.ray is not None:
            from rxturn.batch._workers import heartbeat_interval

            heartbeat_interval()  # its internal knob, if set, is checked before anything
        if key is not None and any(ch.isspace() or ord(ch) < 32 for ch in key):
            # said here, naming the variable, before anything starts (never echoing the value)
            raise ConfigError(f"{variable} holds whitespace or control characters")
        # the client every worker builds, built once here: what it refuses is refused before
        # the output is touched (it opens nothing until it sends)
        from rxturn._redact import without_secrets
        from rxturn.batch._runner import reply_budget
        from rxturn.clients._factory import client_for
        from rxturn.transport._base import display_url

        settings = {"base_url": args.base_url} if args.base_url is not None else {}
        client = client_for(config.provider, config.model, key, **settings)
        # the full URL requested (base URL plus path), which the summary names: a wrong base
        # path shows in it (a key, even one pasted into the path, does not)
        args.url = without_secrets(
            display_url(getattr(client, "url", client.base_url)), (key,) if key else ()
        )
        # the reply budget a request's --tpm estimate counts when neither --max-tokens nor the
        # row sets one (the runner's own)
        args.client_max_tokens = reply_budget(client)
    except ConfigError as exc:  # BatchConfig's and the client's words: the flags' here
        return _fail(in_cli_words(str(exc), args.provider, flags=BATCH_FLAGS))
    if args.ray is not None:
        from rxturn.ray._backend import check_address
        from rxturn.ray._budget import ray_module

        try:
            check_address(args.ray)  # before the output is touched
            ray_module()  # the extra, too: a run refused for want of it leaves no file
        except RxturnError as exc:
            return _fail(str(exc), _exit_code(exc))
    spooled: Spool | None = None
    from rxturn.batch._input import is_stream

    if args.input == "-" or is_stream(args.input):
        # read twice (the scan, then the run): what can be read once is copied first
        try:
            spooled = _spool(args.input)
        except BatchError as exc:
            return _fail(str(exc), _exit_code(exc))
        except OSError as exc:
            import tempfile

            source = "stdin" if args.input == "-" else repr(args.input)
            return _fail(
                f"cannot copy {source} to a temporary file in {tempfile.gettempdir()!r} "
                f"({exc.strerror or exc}); set TMPDIR to a place with room, or pass a file",
                1,
            )
        input_path = spooled.path
    else:
        input_path = Path(args.input)
    try:
        file_run = FileRun(
            input_path,
            Path(args.output),
            config,
            retry_errors=args.retry_errors,
            force=args.force,
            notice=_notice,
        )
        try:
            file_run.prepare()
        except BatchError as exc:
            return _fail(str(exc), _exit_code(exc))
        if file_run.pending.count(1):
            _tpm_notice(config.tpm, config.max_tokens, args.client_max_tokens)
        if args.ray is None:  # Ray's actors live under their own machines' limits
            config = file_run.config
            rows = file_run.pending.count(1)
            # no more worker processes than rows to run: a worker without a row is a process
            # for nothing
            asked = args.workers
            workers = min(asked, max(1, rows))
            fitted, args.workers, limit = _fit_open_files(config.concurrency, rows, workers)
            if args.workers < workers:
                _notice(
                    f"--workers {asked} lowered to {args.workers}: a process here may open "
                    f"{limit} files (ulimit -n) and each worker holds {_FILES_PER_WORKER} of "
                    "this one's"
                )
            if fitted < config.concurrency:
                import msgspec

                _notice(
                    f"--concurrency {config.concurrency} lowered to {fitted}: a process here "
                    f"may open {limit} files (ulimit -n) and each row in flight holds a socket"
                )
                file_run.config = msgspec.structs.replace(config, concurrency=fitted)
        code = 1
        try:
            code = _execute(args, file_run, key)
        finally:
            try:
                file_run.close()
            except BatchError as exc:
                if code != 1:  # the run's own failure was said already
                    code = _fail(str(exc), _exit_code(exc))
        return code
    finally:
        if spooled is not None:
            spooled.close()


def _tpm_notice(tpm: int | None, max_tokens: int | None, default: int) -> None:
    """Say at the start when ``--tpm`` is below one request's reply budget: a request's
    estimate counts its ``max_tokens``, so each such row runs alone in its minute (a run of
    hours, otherwise silent on a pipe)."""
    budget = max_tokens if max_tokens is not None else default
    if tpm is None or tpm > budget:
        return
    said = "--max-tokens" if max_tokens is not None else "the default max_tokens"
    _notice(
        f"--tpm {tpm} is at most {said} ({budget}), which each request's estimate counts: "
        "a row that asks for it runs alone in its minute; raise --tpm or lower --max-tokens"
    )


def _spool(name: str) -> Spool:
    """``name`` (``-``: stdin; a pipe, a device) copied to a temporary file.

    Raises:
        BatchInputError: a line longer than a row can be.
        OSError: the copy cannot be made (the source cannot be opened, the disk is full).
    """
    from rxturn.batch import BatchInputError
    from rxturn.batch._input import spool_input

    if name == "-":
        hint_stdin("the rows, one JSON object a line,")
        return spool_input()
    try:
        source = open(name, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise BatchInputError(f"cannot read {shown(name)}: {exc.strerror or exc}") from None
    with source:
        return spool_input(source)


def _execute(args: argparse.Namespace, file_run: Any, key: str | None) -> int:
    import asyncio

    from rxturn.errors import RxturnError

    from ._console import is_terminal

    mode = args.progress
    if mode == "auto":
        mode = "bar" if is_terminal(sys.stderr) else "none"
    try:
        summary = asyncio.run(_main(args, file_run, key, mode))
    except RxturnError as exc:  # the disk, a worker, Ray: not a row's failure
        return _fail(str(exc), _exit_code(exc))
    except KeyboardInterrupt:  # a second Ctrl-C while the run stops: it stops at once
        _notice(_INTERRUPTED)
        return 130
    from rxturn._arguments import counted

    _notice(
        f"{counted(summary.total, 'row')}: {summary.ok} ok, {summary.error} error, "
        f"{summary.pending} pending ({summary.skipped} done before) in "
        f"{summary.seconds:.1f}s -> {args.output}"
        + (" (interrupted)" if summary.interrupted else "")
        + _errors_seen(file_run, getattr(args, "url", ""), args.provider)
    )
    return summary.exit_code


def _errors_seen(file_run: Any, url: str = "", provider: str = "") -> str:
    """``; errors: 3 BadRequestError (first: …; requested URL)`` for the rows that failed in
    this run; ``url`` (the URL requested) is named unless the first error's message has it.
    The first error is said in the command's words (``--base-url``, not ``base_url``: the
    output's line keeps the library's message)."""
    from rxturn._arguments import counted

    from ._console import one_line

    errors = file_run.errors
    if not errors:
        return ""
    kinds = ", ".join(f"{count} {kind}" for kind, count in errors.most_common(3))
    more = len(errors) - 3
    first = one_line(in_cli_words(file_run.first_error, provider, flags=BATCH_FLAGS), 300)
    # (a ConfigError is a request that could not be made: a row's option its provider does not
    # take; no URL was requested)
    if first and url and url not in first and not first.startswith("ConfigError: "):
        first += f"; requested {url}"
    return (
        f"; errors: {kinds}"
        + (f" and {counted(more, 'more kind')}" if more > 0 else "")
        + (f" (first: {first})" if first else "")
    )


async def _main(args: argparse.Namespace, file_run: Any, key: str | None, mode: str) -> Any:
    import asyncio

    from rxturn._interrupt import give_back, take_signals
    from rxturn.batch._progress import Reporter

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # given back once the run ends, for the summary and the rest
    taken = take_signals(loop, lambda _signum: stop.set())
    backend = _backend(args, file_run, key)
    if mode == "none" and hasattr(backend.gate, "on_pause"):
        # no bar and no JSON lines show the wait: a long pause says so in one line
        backend.gate.on_pause = PauseNotice(backend.gate.now)
    reporter = Reporter(
        mode,
        file_run.tally,
        sys.stderr,
        waiting=lambda: backend.gate.waited,
        rpm=file_run.config.rpm,
        tpm=file_run.config.tpm,
    )
    reporter.start()
    from rxturn._heap import tune

    try:
        # once the backend has started (its set-up done), before the first row
        return await file_run.run(backend, stop, started=tune)
    finally:
        reporter.stop()
        give_back(loop, taken)


#: A Retry-After pause at least this long (seconds) is said on stderr when no progress is shown:
#: shorter ones are as long as a row's own reply, and a rate-limit storm has many of them.
LONG_PAUSE = 10.0


class PauseNotice:
    """The line a long Retry-After pause gets on stderr, once per pause: the rows that met the
    same rate limit (and lengthen the pause a little each) add no line; a new pause after it
    ends gets its own. ``now``: the gate's clock.

    Called with the seconds the pause holds from now and, where it is heard of late (the Ray
    driver looks once a heartbeat), its ``length`` from its start: a pause is long by its
    length, so a 10.5 s one first heard of a second in is still said."""

    def __init__(self, now: Any) -> None:
        self.now = now
        self.until = float("-inf")  # the end of the pause said last

    def __call__(self, seconds: float, length: float | None = None) -> None:
        now = self.now()
        if now < self.until:  # the pause said already, made longer
            self.until = max(self.until, now + seconds)
            return
        if max(seconds, length or 0.0) < LONG_PAUSE:
            return
        self.until = now + seconds
        _notice(
            f"the provider's rate limit (Retry-After) holds every new request for {seconds:.0f} "
            "s; the run goes on by itself"
        )


def _backend(args: argparse.Namespace, file_run: Any, key: str | None) -> Any:
    if args.ray is not None:
        from rxturn.ray._backend import RayBackend

        return RayBackend(file_run.config, key, file_run.run_number, address=args.ray)
    # no more worker processes than rows to run: a worker without a row is a process for nothing
    workers = min(args.workers, max(1, file_run.pending.count(1)))
    if workers > 1:
        from rxturn.batch._workers import WorkerPool

        return WorkerPool(file_run.config, file_run.run_number, workers=workers)
    from rxturn.batch import LocalBackend

    return LocalBackend(file_run.config, key, file_run.run_number)


def _stdout_failed(exc: OSError) -> int:
    return _fail(f"cannot write to stdout: {exc.strerror or exc}", 1)


def _scan_named(name: str, state: Any) -> tuple[Any, list[str]]:
    """The scan of ``--input`` for ``status`` and ``export``, whose line errors name the input
    file: beside the output's path, a bare ``line 2: …`` could be either file's. Returns the
    index and the keys of the rows changed since their line in ``state`` was written (another
    ``input_sha``: a line answering what the row no longer asks, which ``batch run`` refuses
    to go on from without ``--force``, and runs again with it).

    Raises:
        BatchInputError: as :func:`~rxturn.batch._input.scan_input`, the file's name first.
    """
    from rxturn.batch import BatchInputError
    from rxturn.batch._input import NO_ROWS, input_sha, scan_input

    last = state.last
    changed: list[str] = []  # in input order
    if name == "-":
        hint_stdin("the input's rows")

    def check(key: str, obj: object, line: int) -> None:
        seen = last.get(key)
        if seen is not None and seen[1] and seen[1] != input_sha(obj):
            changed.append(key)

    source = "stdin" if name == "-" else repr(name)
    try:
        index = scan_input(name, check)
    except BatchInputError as exc:
        if exc.line is None:
            raise
        raise BatchInputError(f"{source} {exc}", line=exc.line) from None
    if not index.keys:  # (as `batch run` refuses it: no rows is no input)
        raise BatchInputError(f"the input {source} {NO_ROWS}")
    return index, changed


def _changed_notice(changed: list[str], how_one: str, how_many: str) -> None:
    """Say on stderr that rows of ``--input`` changed since their output lines were written
    (stdout keeps its format: ``--json`` is the counts' object alone)."""
    from ._console import one_line

    first = one_line(repr(changed[0]), 80)
    if len(changed) == 1:
        what = f"row {first} of the input changed since its output line was written"
        how, them = how_one, "it"
    else:
        what = (
            f"{len(changed)} rows of the input (the first: {first}) changed since their output "
            "lines were written"
        )
        how, them = how_many, "them"
    _notice(f"{what}, {how}; 'rxturn batch run --force' runs {them} again")


def _status(args: argparse.Namespace) -> int:
    import msgspec

    from rxturn._arguments import counted
    from rxturn.batch import BatchError
    from rxturn.batch._file import blank_bytes, check_output
    from rxturn.batch._output import read_output

    changed: list[str] = []
    if args.input is None and not Path(args.output).exists():
        return _fail(
            f"{shown(args.output)} does not exist (with --input, every row counts as pending)"
        )
    try:
        check_output(Path(args.output))  # no run's output: said, not read as one
        state = read_output(Path(args.output))
        if args.input is not None:
            index, changed = _scan_named(args.input, state)
            stale = set(changed)
            ok = error = 0
            for key in index.keys:
                seen = state.last.get(key)
                if seen is not None and key not in stale:  # a changed row's line is stale
                    if seen[0] == "ok":
                        ok += 1
                    else:
                        error += 1
            total = index.total
        else:
            ok, error = state.counts()
            total = ok + error
    except BatchError as exc:
        return _fail(str(exc), _exit_code(exc))
    counts = {"ok": ok, "error": error, "pending": total - ok - error, "total": total}
    if changed:
        _changed_notice(changed, "counted as pending", "counted as pending")
    if args.json:
        text = msgspec.json.encode(counts).decode()
    else:
        from rxturn.batch._output import OutputLock

        torn = ""
        if OutputLock(Path(args.output)).taken():
            # its last line may be one being written, not a torn one: the counts are a moment's
            torn = " (a run is writing it now)"
        elif state.torn_bytes:
            torn = (
                f" ({blank_bytes(state.torn_bytes)} at its end)"
                if state.blank_tail
                else f" (a torn last line of {counted(state.torn_bytes, 'byte')})"
            )
        text = (
            f"{counted(total, 'row')}: {ok} ok, {error} error, {total - ok - error} pending{torn}"
        )
    return _emit(text + "\n") or 0


def _export(args: argparse.Namespace) -> int:
    from rxturn._arguments import counted
    from rxturn.batch import BatchError
    from rxturn.batch._file import check_output
    from rxturn.batch._output import read_line_at, read_output

    try:
        check_output(Path(args.output))  # no run's output: said, not read as one
        state = read_output(Path(args.output))
        index, changed = _scan_named(args.input, state)
    except BatchError as exc:
        return _fail(str(exc), _exit_code(exc))
    if changed:
        _changed_notice(
            changed,
            "exported as written (it answers the row as it was)",
            "exported as written (they answer the rows as they were)",
        )
    missing = sum(1 for key in index.keys if key not in state.last)
    if missing:  # said first: a closed stdout may end the export before its end
        _notice(
            f"{counted(missing, 'row')} of the input {'has' if missing == 1 else 'have'} no line "
            f"in {shown(args.output)} yet, left out (pending: the same 'rxturn batch run' runs "
            f"{'it' if missing == 1 else 'them'})"
        )
    try:
        file = open(args.output, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return 0  # no output yet: no row has a line
    except OSError as exc:
        return _fail(f"cannot read {shown(args.output)}: {exc.strerror or exc}", 1)
    with file:
        chunk: list[str] = []
        size = 0
        for key in index.keys:
            seen = state.last.get(key)
            if seen is None:
                continue
            try:
                line = read_line_at(file, seen[2]).decode("utf-8", "replace")
            except OSError as exc:
                return _fail(f"cannot read {shown(args.output)}: {exc.strerror or exc}", 1)
            chunk.append(line)
            size += len(line)
            if size >= 1 << 16:  # write in slices: a closed pipe stops it early
                code = _emit("".join(chunk))
                if code is not None:
                    return code
                chunk, size = [], 0
        if chunk:
            return _emit("".join(chunk)) or 0
    return 0


def _emit(text: str) -> int | None:
    """Write ``text`` to stdout: ``None`` to go on, else the exit code to end with."""
    from ._console import STATE, write

    try:
        if not write(sys.stdout, text) or STATE.closed:
            return 0  # the reader went away: main() ends with 141
    except OSError as exc:
        return _stdout_failed(exc)
    return None
