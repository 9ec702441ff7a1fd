"""Batch runs: many rows, each one :class:`~rxturn.engine.TurnEngine` turn, nothing lost.

Two ways in (docs/batch.md):

* ``rxturn batch run INPUT.jsonl -o OUT.jsonl --provider P --model M`` — the output file is the
  checkpoint: re-running the same command continues where the last run stopped
  (:class:`FileRun` is what it runs);
* the Python API over any iterable of rows: ``await run_batch(rows, config)`` returns a
  :class:`BatchSummary`, and :func:`batch_results` is the same run as an ``Observable`` of
  :class:`RowOk` / :class:`RowError` results that composes with Rx operators.

Rows come in four shapes (native ``prompt`` or ``messages``, OpenAI Batch lines, Anthropic
Message Batches requests; :func:`decode_row`). ``--rpm`` / ``--tpm`` budgets are sliding
windows (:class:`Budget`) shared by every worker. Importing this package loads neither Ray nor
pyarrow (``rxturn.ray`` has the Ray Data integration).
"""

from __future__ import annotations

from ._api import BatchSummary, batch_results, run_batch
from ._budget import Budget, Gate, LocalGate
from ._errors import (
    BatchError,
    BatchInputError,
    BatchLockedError,
    BatchOutputError,
    BatchWriteError,
)
from ._file import FileRun, LocalBackend
from ._input import BatchRow, decode_row, input_sha, scan_input
from ._runner import BatchConfig, ErrorInfo, RowError, RowOk, RowResult, Runner

__all__ = [
    "BatchConfig",
    "BatchError",
    "BatchInputError",
    "BatchLockedError",
    "BatchOutputError",
    "BatchRow",
    "BatchSummary",
    "BatchWriteError",
    "Budget",
    "ErrorInfo",
    "FileRun",
    "Gate",
    "LocalBackend",
    "LocalGate",
    "RowError",
    "RowOk",
    "RowResult",
    "Runner",
    "batch_results",
    "decode_row",
    "input_sha",
    "run_batch",
    "scan_input",
]
