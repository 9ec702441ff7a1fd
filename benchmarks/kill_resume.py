"""Kill ``rxturn batch run`` at random moments, again and again, then finish it: is the output
complete and free of duplicates?

    python benchmarks/kill_resume.py                      # 10,000 rows, 8 interruptions
    python benchmarks/kill_resume.py --rows 1000 --kills 5 --workers 2 --json

One ``rxturn fake-server`` child process answers every row (a short reply, streamed in a few
paced deltas so a run lasts long enough to be interrupted anywhere). The loop:

1. start ``rxturn batch run`` on the same input and output as before;
2. once it has written a random number of new lines (from none to twice an equal share of
   the rows left, for each interruption to come and the final run), interrupt it: ``kill -9``
   most of the time, SIGINT or SIGTERM now and then (those must exit 130 and leave no torn
   line); one kill in five lands at a random moment of start-up instead (the interpreter, the
   scan);
3. check the output as a crash left it: every line before the last is a whole output line, no
   key has two lines, and no worker process outlived its parent;

then run it once more without interruption, and check the end state: exit 0, exactly one ``ok``
line per input key, ``rxturn batch status --json`` counting every row ok, ``rxturn batch
export`` giving one line per key in input order. The fake server's request count is reported
too: calls are at-least-once, so it may exceed the rows by the rows in flight at each kill.

The exit code is 0 when every check held, 1 otherwise (the failed check is printed). It asserts
nothing about time: the seconds it prints are information. ``tests/batch/test_kill_resume.py``
runs it with fewer rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

_SCRIPT = shutil.which("rxturn", path=str(Path(sys.executable).parent))
RXTURN = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "rxturn"]
#: every reply: 5 deltas 4 ms apart, so a row takes ~20 ms and rows overlap by the concurrency
SCENARIO = {
    "models": {"*": [{"text": "an answer in a few parts", "chunk_chars": 5, "delay_ms": 4}]}
}
TIMEOUT = 600.0


class Failed(Exception):
    """A check did not hold."""


def _env() -> dict[str, str]:
    # no key, and the streams a user's shell gives: block-buffered on a pipe, its own encoding
    dropped = ("PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONUTF8")
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in dropped}


class FakeServer:
    """``rxturn fake-server`` in a child process."""

    def __init__(self, directory: Path) -> None:
        scenario = directory / "scenario.json"
        scenario.write_text(json.dumps(SCENARIO))
        self.proc = subprocess.Popen(
            [*RXTURN, "fake-server", "--scenario", str(scenario)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("listening on "):
            self.stop()
            raise Failed(f"fake-server did not start: {line!r}")
        self.url = line.removeprefix("listening on ")

    def requests(self) -> int:
        with urllib.request.urlopen(f"{self.url}/_fake/requests", timeout=30) as response:
            return len(json.load(response))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _gone(pid: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":  # a zombie has exited
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def _wait_for_lock(proc: subprocess.Popen[str], out: Path) -> None:
    """Until ``proc`` holds the output's lock (``/proc/locks`` names its pid), or has ended.

    Before that the interpreter may still be starting, and a SIGINT there is Python's own
    (a KeyboardInterrupt traceback from an import), not rxturn's to handle.
    """
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            locks = Path("/proc/locks").read_text()
        except OSError:
            return
        if any(line.split()[4] == str(proc.pid) for line in locks.splitlines() if line.split()):
            return
        time.sleep(0.01)


def _wait_for_lines(proc: subprocess.Popen[str], out: Path, lines: int) -> None:
    """Until ``proc`` has appended ``lines`` more lines to ``out`` (counted from its size now),
    or has ended."""
    deadline = time.monotonic() + TIMEOUT
    offset = out.stat().st_size if out.exists() else 0
    while lines > 0 and time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(FileNotFoundError), out.open("rb") as file:  # (not made yet)
            file.seek(offset)
            chunk = file.read()
            offset += len(chunk)
            lines -= chunk.count(b"\n")
        if lines > 0:
            time.sleep(0.005)


def check_output(out: Path, *, torn_tail_ok: bool) -> dict[str, str]:
    """The output's keys (last status of each); raises Failed on a duplicate or a bad line."""
    if not out.exists():
        return {}
    data = out.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail and not torn_tail_ok:
        raise Failed(f"{out} ends with a torn line ({len(tail)} bytes)")
    seen: dict[str, str] = {}
    for number, raw in enumerate(lines, start=1):
        try:
            line = json.loads(raw)
        except ValueError:
            raise Failed(f"{out} line {number} is not JSON: {raw[:80]!r}") from None
        key = line["id"]
        if key in seen:
            raise Failed(f"{out}: key {key!r} has two lines (the second on line {number})")
        seen[key] = line["status"]
    return seen


def batch_command(inp: Path, out: Path, url: str, workers: int, concurrency: int) -> list[str]:
    return [
        *RXTURN,
        "batch",
        "run",
        str(inp),
        "-o",
        str(out),
        "--provider",
        "anthropic",
        "--model",
        "m",
        "--base-url",
        url,
        "--concurrency",
        str(concurrency),
        "--workers",
        str(workers),
        "--progress",
        "none",
    ]


def run(
    rows: int, kills: int, *, workers: int, concurrency: int, seed: int, directory: Path
) -> dict[str, Any]:
    rng = random.Random(seed)
    inp = directory / "in.jsonl"
    out = directory / "out.jsonl"
    keys = [f"row-{i}" for i in range(rows)]
    with inp.open("w") as file:
        for i, key in enumerate(keys):
            file.write(json.dumps({"id": key, "prompt": f"question number {i}"}) + "\n")
    server = FakeServer(directory)
    report: dict[str, Any] = {
        "rows": rows,
        "workers": workers,
        "concurrency": concurrency,
        "seed": seed,
        "interruptions": [],
    }
    try:
        command = batch_command(inp, out, server.url, workers, concurrency)
        # Kills land at random points of what is left of the run, measured in lines written,
        # not in seconds: a delay guessed from the pace so far overshoots when a
        # run goes faster than the last (a first run pays its warm-up), and an interruption
        # that finds the run finished tests nothing. One kill in five lands at a random moment
        # of start-up instead (the interpreter, the scan).
        for index in range(kills):
            how = rng.choices(["kill", "int", "term"], weights=[6, 1, 1])[0]
            early = how == "kill" and rng.random() < 0.2
            before = check_output(out, torn_tail_ok=True)
            # (about an equal share of what is left for each interruption to come and the
            # final run, so that the kills spread over the whole run)
            left = rows - len(before)
            new_lines = rng.randint(0, int(min(0.9 * left, 2 * left / (kills - index + 1))))
            started = time.monotonic()
            proc = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
                stdin=subprocess.DEVNULL,
            )
            if not early:  # a signal must find rxturn loaded: wait for its lock first
                _wait_for_lock(proc, out)
            if early:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=rng.uniform(0.0, 1.0))
            else:
                _wait_for_lines(proc, out, new_lines)
            waited = time.monotonic() - started
            children = _children(proc.pid)
            finished_first = proc.poll() is not None
            if not finished_first:
                proc.send_signal(
                    {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM}[how]
                )
            _, err = proc.communicate(timeout=TIMEOUT)
            code = proc.returncode
            if "Traceback" in err:
                raise Failed(f"interruption {index + 1} ({how}): a traceback:\n{err}")
            if not finished_first and how != "kill" and code not in (130, 0):
                raise Failed(f"interruption {index + 1} ({how}): exit {code}, not 130:\n{err}")
            for child in children:
                if not _gone(child):
                    raise Failed(f"worker {child} outlived its parent ({how})")
            after = check_output(out, torn_tail_ok=how == "kill")
            lost = [key for key in before if key not in after]
            if lost:
                raise Failed(f"interruption {index + 1}: rows {lost[:5]} lost their lines")
            report["interruptions"].append(
                {
                    "how": "finished first" if finished_first else how,
                    "after_s": round(time.monotonic() - started, 2),
                    "exit": code,
                    "lines": len(after),
                    "repaired": "dropped a torn last line" in err,
                }
            )
            what = "done" if finished_first else how
            moment = "before" if finished_first else "at start-up" if early else "running"
            print(
                f"  {index + 1}: {what:4} {moment} after "
                f"{waited:5.2f}s -> exit {code}, {len(after)} rows "
                "with a line" + (" (a torn tail was repaired first)" if "dropped" in err else ""),
                file=sys.stderr,
            )
        started = time.monotonic()
        final = subprocess.run(
            command, capture_output=True, text=True, timeout=TIMEOUT, env=_env(), check=False
        )
        report["final_s"] = round(time.monotonic() - started, 2)
        report["final_stderr"] = final.stderr.strip().splitlines()[-1:] if final.stderr else []
        if final.returncode != 0:
            raise Failed(f"the final run exited {final.returncode}:\n{final.stderr}")
        seen = check_output(out, torn_tail_ok=False)
        missing = [key for key in keys if key not in seen]
        if missing or len(seen) != rows:
            raise Failed(f"{len(missing)} rows have no line (e.g. {missing[:5]})")
        bad = [key for key, status in seen.items() if status != "ok"]
        if bad:
            raise Failed(f"{len(bad)} rows are not ok (e.g. {bad[:5]})")
        status = subprocess.run(
            [*RXTURN, "batch", "status", str(out), "--input", str(inp), "--json"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=_env(),
            check=False,
        )
        counts = json.loads(status.stdout)
        if counts != {"ok": rows, "error": 0, "pending": 0, "total": rows}:
            raise Failed(f"status says {counts}")
        export = subprocess.run(
            [*RXTURN, "batch", "export", str(out), "--input", str(inp)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=_env(),
            check=False,
        )
        exported = [json.loads(line)["id"] for line in export.stdout.splitlines()]
        if exported != keys:
            raise Failed("export is not one line per key in input order")
        report["lines"] = len(seen)
        report["requests"] = server.requests()
        report["resent"] = report["requests"] - rows
        report["complete"] = True
    finally:
        server.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None, help="keep the files here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="rxturn-kill-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(
        f"kill_resume: {args.rows} rows, {args.kills} interruptions, workers {args.workers}, "
        f"seed {seed}, files in {directory}",
        file=sys.stderr,
    )
    try:
        report = run(
            args.rows,
            args.kills,
            workers=args.workers,
            concurrency=args.concurrency,
            seed=seed,
            directory=directory,
        )
    except Failed as exc:
        print(f"kill_resume: FAILED: {exc}", file=sys.stderr)
        if args.json:
            print(json.dumps({"complete": False, "seed": seed, "failure": str(exc)}))
        return 1
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
    else:
        landed = sum(1 for i in report["interruptions"] if i["how"] != "finished first")
        print(
            f"complete: {report['lines']} rows, one ok line each, no duplicates; "
            f"{landed} of {len(report['interruptions'])} interruptions found it running; "
            f"{report['requests']} requests ({report['resent']} sent again after an "
            f"interruption); final run {report['final_s']}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
