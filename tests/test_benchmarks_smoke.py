"""Smoke test of the benchmark harness (``benchmarks/run.py --tiny``): it runs, end to end.

The harness is run as the user runs it — a separate process — in its tiny mode (200-event
streams, one repeat, five concurrent turns), writing into a temporary directory. The test checks
the *shape* and sanity of what it wrote: every contender timed on both formats with a correct
reply, non-negative numbers, memory, fixed cost (with its ratio to the bare request), the
concurrency run on both formats with the official SDKs beside rxturn and the bare client
(zero errors), the objects per in-flight turn, the collector's default settings in the judged
phases, a verdict per target of the current table, and a PNG. It never asserts a timing:
benchmarks inform, they do not gate.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # runs the benchmark harness as a subprocess

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"

#: The contenders (LIMIT, replay, full turn, official SDK) plus the informational ones the README
#: explains the costs with.
EXPECTED = {
    "limit",
    "replay",
    "replay_events",
    "replay_message",
    "limit_http",
    "decode_fold_http",
    "client_stream",
    "client_batches",
    "turn_passthrough",
    "turn",
    "sdk",
}
FORMATS = {"anthropic", "openai"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, str(RUN), "--tiny", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, (
        f"run.py --tiny failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    assert (out / "ratios.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data: dict[str, Any] = json.loads((out / "latest.json").read_text())
    data["_stdout"] = proc.stdout
    return data


def _non_negative(value: Any) -> bool:
    return isinstance(value, int | float) and not math.isnan(value) and value >= 0


def test_every_contender_is_timed_on_both_formats(report: dict[str, Any]) -> None:
    assert {c["name"] for c in report["contenders"]} == EXPECTED
    seen = {(r["format"], r["contender"]) for r in report["results"]}
    assert seen == {(f, c) for f in FORMATS for c in EXPECTED}
    for row in report["results"]:
        where = f"{row['contender']} on {row['format']}"
        assert row["error"] is None, where
        assert row["skipped"] is None, where
        assert row["events"] == 200 and row["wire_events"] > 200, where
        assert row["runs"] >= 1, where
        for key in ("cpu_us_per_event", "wall_us_per_event", "ratio_to_limit"):
            assert _non_negative(row[key]["median"]), (where, key)
        for key in ("cpu_us_per_event", "wall_us_per_event"):
            assert row[key]["min"] <= row[key]["median"], (where, key)


def test_limit_is_its_own_unit(report: dict[str, Any]) -> None:
    for row in report["results"]:
        if row["contender"] == "limit":
            assert row["ratio_to_limit"]["median"] == pytest.approx(1.0)


def test_memory_fixed_cost_and_concurrency_are_reported(report: dict[str, Any]) -> None:
    weighed = {(m["format"], m["contender"]) for m in report["memory"]}
    assert weighed == {(f, c) for f in FORMATS for c in EXPECTED}
    for entry in report["memory"]:
        assert entry.get("error") is None, entry
        assert entry["peak_bytes"] > 0, entry

    fixed = report["fixed_cost"]
    for fmt in FORMATS:
        assert set(fixed[fmt]) == {
            "turn",
            "turn_passthrough",
            "limit_http",
            "sdk",
            "cold_turn",
            "limit_http_beside_sdk",
        }
        for figures in fixed[fmt].values():
            assert all(_non_negative(figures[k]) for k in ("cpu_us_median", "wall_us_median"))
        for name in ("turn", "turn_passthrough", "limit_http", "sdk"):
            assert _non_negative(fixed[fmt][name]["ratio_to_limit_http"]), (fmt, name)
        assert fixed[fmt]["limit_http"]["ratio_to_limit_http"] == pytest.approx(1.0)
    assert set(fixed["parts"]) == {"request_build", "token_estimate"}


CLIENTS = {"limit_http", "turn", "sdk"}


def test_concurrency_covers_both_formats_and_the_sdks(report: dict[str, Any]) -> None:
    conc = report["concurrency"]
    assert conc["turns"] == 5
    assert set(conc["formats"]) == FORMATS
    for fmt in FORMATS:
        per = conc["throughput"][fmt]
        assert set(per) - {"wire_events_per_turn", "turn_share", "turn_share_rounds"} == CLIENTS
        assert len(per["turn_share_rounds"]) == 2  # --tiny runs two interleaved rounds
        assert all(_non_negative(share) for share in per["turn_share_rounds"])
        assert min(per["turn_share_rounds"]) <= per["turn_share"] <= max(per["turn_share_rounds"])
        for name in CLIENTS:
            through = per[name]
            assert through["errors"] == 0, (fmt, name, through["first_error"])
            assert through["turns"] >= 1 and _non_negative(through["events_per_s"])
    points = conc["latency"]
    assert {p["format"] for p in points} == FORMATS
    for point in points:
        # the judged phases run with the interpreter's collector: default thresholds, nothing
        # frozen (run.py froze its warm-up heap earlier; the concurrency run unfreezes it)
        assert point["gc"]["default"] is True, point["gc"]
        assert point["gc"]["frozen_objects"] == 0
        for name in CLIENTS:
            steady = point[name]
            assert steady["errors"] == 0, (point["format"], name, steady["first_error"])
            assert steady["latency"]["samples"] > 0
            assert _non_negative(steady["latency"]["p99_us"])
            if name == "sdk":
                assert steady["added"] is None  # no chunk hand-over stamp inside an SDK
            else:
                assert steady["added"]["samples"] == steady["latency"]["samples"]
                assert _non_negative(steady["added"]["p99_us"])


def test_objects_per_in_flight_turn_are_counted(report: dict[str, Any]) -> None:
    entries = report["concurrency"]["in_flight"]
    assert {(e["format"], e["client"]) for e in entries} == {
        (f, c) for f in FORMATS for c in CLIENTS
    }
    for entry in entries:
        assert entry["errors"] == 0, entry["first_error"]
        assert entry["turns"] == 5
        assert _non_negative(entry["bytes_per_turn"]) and entry["bytes_per_turn"] > 0
        assert isinstance(entry["objects_per_turn"], float)
        assert entry["top_types"], entry
        if entry["client"] == "turn":
            assert entry["objects_per_turn"] > 0  # a turn in flight holds its engine and task


#: The current targets table, per format where it says "both wire formats" (or the run has both), as
#: substrings of the target names run.py prints.
TARGET_ROWS = (
    "fixed CPU cost of a turn",
    "concurrent turns, 20 deltas each, unpaced",
    "in a steady state at 100 events/s, default gc",
    "gc-tracked objects alive per in-flight turn",
    "full streaming turn per event",
    "replay, 200 events",
    "peak memory of a 200-event turn",
)


def test_every_current_target_has_a_verdict(report: dict[str, Any]) -> None:
    targets = report["targets"]
    names = [t["name"] for t in targets]
    for row in TARGET_ROWS:
        for fmt in FORMATS:
            matching = [t for t in targets if row in t["name"] and t["name"].startswith(fmt)]
            assert len(matching) == 1, (row, fmt, names)
            assert matching[0]["status"] in {"PASS", "MISS"}, matching[0]
    assert any("zero errors" in name for name in names)
    for target in targets:
        assert target["status"] in {"PASS", "MISS", "N/A", "INFO"}, target
        assert f"[{target['status']}] {target['name']}" in report["_stdout"]
        assert target["bound"] and target["detail"]
    assert "Targets" in report["_stdout"]


def test_ratios_are_judged_round_by_round() -> None:
    """The judged ratio is the median over rounds of contender / LIMIT in the same round.

    Three rounds: a load spike slowed both runs of round 2 threefold, and another one only the
    contender's run of round 3. The medians of the two lists are 1.0 and 3.6 (3.6x); two of
    the three rounds say 1.2x, and so does their median.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _report import paired_ratio
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    limit = [1.0, 3.0, 1.0]
    contender = [1.2, 3.6, 3.6]
    assert paired_ratio(contender, limit) == pytest.approx(1.2)
    assert paired_ratio([2.0, 6.0], [1.0, 3.0, 1.0]) == pytest.approx(2.0)  # rounds both ran
    assert math.isnan(paired_ratio([], [1.0]))


def test_the_hedge_phase_reports_both_runs_side_by_side(report: dict[str, Any]) -> None:
    hedge = report["hedge"]
    for name in ("plain", "hedged"):
        row = hedge[name]
        assert row["turns"] == 40
        for key in ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "extra_requests_per_turn"):
            assert _non_negative(row[key]), (name, key)
        assert row["p50_ms"] <= row["p90_ms"] <= row["p99_ms"]
    assert hedge["plain"]["extra_requests_per_turn"] == 0  # no hedge, no extra request
    assert "Hedged first token: time to first text" in report["_stdout"]


def test_every_benchmark_script_imports() -> None:
    """Each script of ``benchmarks/`` imports (the modules it names exist): a script that only a
    person runs, by hand, must not be the place a moved module is first noticed."""
    scripts = sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py"))
    assert "bench_batch" in scripts and "run" in scripts
    code = "\n".join(
        [
            "import importlib, sys",
            f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})",
            f"for name in {scripts!r}:",
            "    importlib.import_module(name)",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
