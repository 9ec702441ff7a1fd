"""The public surface: ``__all__`` is exact, every name resolves, imports stay light."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import rxturn


def test_all_is_sorted_and_resolves() -> None:
    assert rxturn.__all__ == sorted(rxturn.__all__)
    for name in rxturn.__all__:
        assert getattr(rxturn, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        rxturn.does_not_exist  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_import_rxturn_loads_neither_aiohttp_nor_tiktoken() -> None:
    code = (
        "import sys, rxturn, rxturn.cli; "
        "print(','.join(m for m in ('aiohttp', 'tiktoken') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_error_tree_has_one_root() -> None:
    from rxturn import errors

    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.RxturnError), name


def test_all_matches_the_lazy_export_table() -> None:
    table = rxturn._export_table()  # pyright: ignore[reportPrivateUsage]
    assert set(rxturn.__all__) == {*table, "__version__"}
    for name, module in table.items():
        assert name in vars(importlib.import_module(module)), (name, module)


@pytest.mark.parametrize("package", ["rxturn", "rxturn.clients", "rxturn.transport"])
def test_star_import_gives_the_table_spelled_once(package: str) -> None:
    """Each lazy package spells its public names once, in its TYPE_CHECKING table; the runtime
    ``__all__`` (what ``from package import *`` binds) is that table."""
    module = importlib.import_module(package)
    table = module._exports.table()
    eager = {"__version__"} if package == "rxturn" else set()
    assert set(module.__all__) == {*table, *eager}
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(module.__all__)
    for name, defining in table.items():
        assert name in vars(importlib.import_module(defining)), (name, defining)


def test_import_boundaries() -> None:
    """aiohttp only at the IO edges (transport, fake server); tiktoken only in tokens.py."""
    import ast
    from pathlib import Path

    package = Path(rxturn.__file__).parent
    importers: dict[str, set[str]] = {"aiohttp": set(), "tiktoken": set()}
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            for root in roots & importers.keys():
                importers[root].add(path.relative_to(package).as_posix())
    assert importers["aiohttp"] == {"transport/aiohttp.py", "testing/_server.py"}
    assert importers["tiktoken"] == {"engine/tokens.py"}


def test_moved_modules_keep_their_old_import_paths() -> None:
    """Modules that moved into ``resilience/`` and ``engine/`` import under their old names."""
    from rxturn._moved import MOVED

    for old, new in MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    from rxturn.handler import StreamHandler  # type: ignore[import-not-found]

    assert StreamHandler is rxturn.StreamHandler


def test_moved_errors_live_in_the_one_tree_and_keep_their_old_homes() -> None:
    from rxturn import errors
    from rxturn.engine import RetryAfterBeyondDeadline as from_engine
    from rxturn.engine import ToolTimeoutError as tool_timeout_from_engine
    from rxturn.engine.handler import RetryAfterBeyondDeadline as from_handler
    from rxturn.engine.tools import ToolTimeoutError as from_tools

    assert from_handler is from_engine is errors.RetryAfterBeyondDeadline
    assert from_tools is tool_timeout_from_engine is errors.ToolTimeoutError
    assert issubclass(errors.RetryAfterBeyondDeadline, errors.RateLimitEscalation)
    for name in (
        "DecompressionLimitError",
        "RetryAfterBeyondDeadline",
        "ToolTimeoutError",
        "UnexpectedResponseError",
    ):
        error = getattr(rxturn, name)
        assert error is getattr(errors, name) and name in errors.__all__, name
        assert name in (errors.__doc__ or ""), f"{name} is missing from the drawn tree"
    from rxturn.clients import BatchingModelClient, OpenAIResponsesClient

    assert rxturn.BatchingModelClient is BatchingModelClient
    assert rxturn.OpenAIResponsesClient is OpenAIResponsesClient


def test_fold_and_replay_work_from_rxturn_after_their_modules_were_imported() -> None:
    # The submodules rxturn.fold / rxturn.replay share their names with exported functions;
    # importing a submodule binds it on the package, which must not break the public name.
    code = (
        "from rxturn.replay import replay_message\n"
        "import rxturn.fold as module\n"
        "from rxturn import INITIAL_STATE, fold, replay\n"
        "from rxturn.events import MessageStart\n"
        "state = fold(INITIAL_STATE, MessageStart(id='m'))\n"
        "events = []\n"
        'body = b\'{"message":{"role":"assistant","content":"hi"},"done":true}\\n\'\n'
        "replay(body, 'ollama').subscribe(events.append)\n"
        "print(state.started, module.fold_batch.__name__, type(events[0]).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "fold_batch", "MessageStart"]
