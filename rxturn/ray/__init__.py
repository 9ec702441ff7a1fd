"""Ray Data and Ray actors for batch runs (the optional extra ``rxturn[ray]``).

* :class:`TurnUDF` — a callable class for ``Dataset.map_batches``: each batch's rows run as
  concurrent :class:`~rxturn.engine.TurnEngine` turns on the actor's own event loop, and come
  back as fixed-type columns (``id, status, text, stop_reason, model, input_tokens,
  output_tokens, attempts, error_type, error_message``); a failing row is a row with
  ``status`` ``"error"``, never a dropped block.
* :func:`budget_actor` — the named actor holding a run's ``rpm`` / ``tpm`` budget and its
  Retry-After pauses, shared by every actor of the pool (and by ``rxturn batch run --ray``).

Importing this module does not import Ray; using its classes does (docs/batch.md shows how to
run them on a cluster).

Examples:
    >>> import ray
    >>> from rxturn.ray import TurnUDF
    >>> ds = ray.data.from_items([{"id": "a", "prompt": "hi"}])  # doctest: +SKIP
    >>> out = ds.map_batches(TurnUDF, fn_constructor_kwargs={"provider": "anthropic",
    ...     "model": "claude-x"}, compute=ray.data.ActorPoolStrategy(size=2))  # doctest: +SKIP
"""

from __future__ import annotations

from ._budget import RayGate, budget_actor
from ._udf import COLUMNS, TurnUDF

__all__ = ["COLUMNS", "RayGate", "TurnUDF", "budget_actor"]
