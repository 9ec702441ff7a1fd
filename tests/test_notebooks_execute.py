"""The notebooks in ``notebooks/`` run top to bottom in a fresh kernel, offline, without errors,
and the outputs stored in them are what such a run produces.

Each notebook is executed by ``nbclient`` in a new ``python3`` kernel whose kernelspec is written
for *this* interpreter into a private directory placed first on ``JUPYTER_PATH`` (so the kernel
imports the rxturn under test, never whatever ``python`` is on ``PATH``), with a private IPython
profile directory (no user startup files) and a per-cell timeout (:mod:`jupyter_kernel`).

The stored notebooks carry their outputs, so a reader on GitHub sees the plots. To refresh them
after a change, run ``python tests/test_notebooks_execute.py`` from the repository root: it executes
every notebook the same way and writes it back (no timing metadata, so only what the cells print
and draw changes). :func:`test_stored_outputs_are_fresh` compares the stored outputs with a fresh
run: exactly, except images (compared by presence: their pixels follow real timing) and cells
tagged ``timing-dependent`` in their metadata (compared by the kind of each output only: what they
show depends on how a real network stream was cut into chunks or how long a real wait took). The
fake provider listens on a free port chosen per run; outputs show it as ``127.0.0.1:<port>``.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import nbclient
import nbformat
import pytest
from jupyter_kernel import JUPYTER_STACK, KERNEL, kernel_env

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 60  # seconds per cell; each notebook as a whole runs in a few seconds
TIMING_TAG = "timing-dependent"
PORT = re.compile(r"127\.0\.0\.1:\d+")


def test_the_notebooks_are_there() -> None:
    assert [p.name for p in NOTEBOOKS] == ["01_turn_pipeline.ipynb", "02_resilience_lab.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_notebooks_are_valid_and_executed_in_order(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "a notebook without code cells"
    # one top-to-bottom run: execution counts 1, 2, 3 ... (a hand-run notebook has gaps)
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert nb.metadata.kernelspec.name == KERNEL
    for cell in code:
        assert "execution" not in cell.metadata, f"{path.name}: timing metadata churns"
    stored = json.dumps(nb)
    for volatile in (str(Path.home()), "/tmp/"):  # absolute paths churn
        assert volatile not in stored, f"{path.name}: stored outputs contain {volatile!r}"
    assert PORT.search(stored) is None, f"{path.name}: a port number in the stored outputs"


@pytest.fixture(scope="module")
def fresh_kernel_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with kernel_env(tmp_path_factory.mktemp("jupyter")):
        yield


def execute(path: Path) -> Any:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    client = nbclient.NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name=KERNEL,
        record_timing=False,  # no per-cell timestamps in the stored copy
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    with warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning):
            warnings.filterwarnings("ignore", category=category, module=JUPYTER_STACK)
        client.execute()  # raises CellExecutionError, naming the cell, on the first error
    # the language_info of the kernel that ran it (its Python version) churns between machines
    nb.metadata.language_info = {"name": "python"}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    for out in outputs(nb):
        if "text" in out:
            out["text"] = mask_ports(out["text"])
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/"):
                out["data"][mime] = mask_ports(value)
    return nb


def merge_streams(cell_outputs: list[Any]) -> list[Any]:
    """Consecutive writes to one stream as one output: where the kernel cut a cell's printing
    into messages depends on when it flushed, which is timing, not content."""
    merged: list[Any] = []
    for out in cell_outputs:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and out["output_type"] == "stream"
            and previous["output_type"] == "stream"
            and previous["name"] == out["name"]
        ):
            previous["text"] = "".join(previous["text"]) + "".join(out["text"])
        else:
            merged.append(out)
    return merged


def mask_ports(text: str | list[str]) -> str:
    return PORT.sub("127.0.0.1:<port>", "".join(text))


@cache
def executed(name: str) -> Any:
    """One fresh run per notebook per test session (each run takes a few seconds)."""
    return execute(NOTEBOOK_DIR / name)


def outputs(nb: Any) -> list[Any]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def html_outputs(nb: Any) -> list[str]:
    return [
        "".join(out["data"]["text/html"])
        for out in outputs(nb)
        if out.get("output_type") in ("display_data", "execute_result")
        and "text/html" in out.get("data", {})
    ]


def png_count(nb: Any) -> int:
    return sum(1 for out in outputs(nb) if "image/png" in out.get("data", {}))


def errors(nb: Any) -> list[Any]:
    return [out for out in outputs(nb) if out.get("output_type") == "error"]


def stdout_text(nb: Any) -> str:
    return "\n".join(
        "".join(out.get("text", "")) for out in outputs(nb) if out.get("name") == "stdout"
    )


def comparable(nb: Any) -> list[list[Any]]:
    """Per code cell, what a fresh run must reproduce (see the module docstring)."""
    cells: list[list[Any]] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        exact = TIMING_TAG not in cell.metadata.get("tags", [])
        shown: list[Any] = []
        for out in merge_streams([dict(out) for out in cell.outputs]):
            kind = out["output_type"]
            if kind == "stream":
                shown.append((kind, out["name"], "".join(out["text"]) if exact else "…"))
            elif kind in ("display_data", "execute_result"):
                data = {
                    mime: "<image>" if mime.startswith("image/") or not exact else value
                    for mime, value in out["data"].items()
                }
                shown.append((kind, data))
            else:
                shown.append((kind, out.get("ename"), out.get("evalue")))
        cells.append(shown)
    return cells


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_kernel_env")
def test_turn_pipeline_notebook_runs() -> None:
    nb = executed("01_turn_pipeline.ipynb")
    assert errors(nb) == []
    assert png_count(nb) >= 1  # the turn's timeline
    # the live display ended showing the discarded attempt struck through, then the reply
    live = [page for page in html_outputs(nb) if "<del>" in page]
    assert live, "the live text display never showed a retraction"
    text = stdout_text(nb)
    assert "breaker tripped: primary → backup" in text
    assert "served by backup" in text
    # the batching cell says what a batch is instead of "13 events in 1 batches"
    assert "network chunk" in text and " 1 batches" not in text


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_kernel_env")
def test_resilience_lab_notebook_runs() -> None:
    nb = executed("02_resilience_lab.ipynb")
    assert errors(nb) == []
    assert png_count(nb) >= 2  # scenarios side by side, and the breaker over virtual time


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_kernel_env")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_stored_outputs_are_fresh(path: Path) -> None:
    stored = nbformat.read(path, as_version=4)
    assert any(cell.get("outputs") for cell in stored.cells), f"{path.name} has no outputs"
    fresh = comparable(executed(path.name))
    for index, (old, new) in enumerate(zip(comparable(stored), fresh, strict=True)):
        assert old == new, (
            f"{path.name}, code cell {index}: stored outputs differ from a fresh run; "
            "refresh them with `python tests/test_notebooks_execute.py`"
        )


def refresh(paths: list[Path]) -> None:
    """Execute each notebook in a fresh kernel and store it with its outputs."""
    with tempfile.TemporaryDirectory() as tmp, kernel_env(Path(tmp)):
        for path in paths:
            nb = execute(path)
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"refreshed {path.relative_to(NOTEBOOK_DIR.parent)}")


if __name__ == "__main__":
    refresh([Path(arg).resolve() for arg in sys.argv[1:]] or NOTEBOOKS)
