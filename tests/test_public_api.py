"""The public surface: ``__all__`` is exact, every name resolves, imports stay light."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import rxturn


def test_all_is_sorted_and_resolves() -> None:
    names: object = vars(rxturn)["__all__"]  # set at run time only
    assert isinstance(names, list)
    assert names == sorted(names)
    for name in names:
        assert getattr(rxturn, name) is not None, name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        # the ignore is needed: a name that is not public is an error for type checkers too
        # (the lazy __getattr__ is hidden from them); were it visible, the ignore would be
        # unneeded, which the type check reports
        rxturn.does_not_exist  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]
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


def test_import_rxturn_imports_none_of_the_modules_behind_its_names() -> None:
    code = (
        "import sys, rxturn\n"
        "print(len(set(rxturn.__all__) - set(dir(rxturn))))\n"  # dir() lists unresolved names
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rxturn', 'reactivex', 'asyncio', 'msgspec'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "rxturn", "rxturn._exports", "rxturn._version"]


def test_error_tree_has_one_root() -> None:
    from rxturn import errors

    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, errors.RxturnError), name


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name -> defining module, read from the package's ``if TYPE_CHECKING:`` imports (what
    type checkers see)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    imports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                module = importlib.util.resolve_name(
                    "." * stmt.level + (stmt.module or ""), package
                )
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"{alias.name}: use the `A as A` form"
                    imports[alias.name] = module
    return imports


@pytest.mark.parametrize("package", ["rxturn", "rxturn.clients", "rxturn.transport"])
def test_all_is_the_exported_names_and_both_tables_agree(package: str) -> None:
    """``__all__`` is exactly the names the package exports: the run-time table (name -> module,
    resolved lazily) and the ``TYPE_CHECKING`` imports type checkers read list the same names
    with the same modules, and each module defines its name."""
    module = importlib.import_module(package)
    homes: dict[str, str] = {
        name: importlib.util.resolve_name(home, package) for name, home in module._HOMES.items()
    }
    eager = {"__version__"} if package == "rxturn" else set()
    assert set(module.__all__) == {*homes, *eager}
    assert len(module.__all__) == len(set(module.__all__))
    assert _type_checking_imports(package) == homes
    for name, defining in homes.items():
        assert getattr(module, name) is getattr(importlib.import_module(defining), name), name
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(module.__all__)


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
    assert importers["tiktoken"] == {"engine/context/tokens.py"}


def test_errors_live_in_the_one_tree_and_are_reexported() -> None:
    from rxturn import errors
    from rxturn.engine import RetryAfterBeyondDeadline as from_engine
    from rxturn.engine import ToolTimeoutError as tool_timeout_from_engine
    from rxturn.engine.agent.tools import ToolTimeoutError as from_tools
    from rxturn.engine.handler import RetryAfterBeyondDeadline as from_handler

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


def test_fold_is_a_module_and_replay_a_function() -> None:
    """``rxturn.fold`` is the fold's module (the function is ``rxturn.fold.fold``); ``from rxturn
    import replay`` is the function, whatever was imported before it."""
    code = (
        "import rxturn.fold\n"
        "from rxturn.cli import _replay\n"
        "from rxturn import INITIAL_STATE, replay\n"
        "from rxturn.events import MessageStart\n"
        "state = rxturn.fold.fold(INITIAL_STATE, MessageStart(id='m'))\n"
        "events = []\n"
        'body = b\'{"message":{"role":"assistant","content":"hi"},"done":true}\\n\'\n'
        "replay(body, 'ollama').subscribe(events.append)\n"
        "print(state.started, type(rxturn.fold).__name__, type(events[0]).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "module", "MessageStart"]


def test_the_operators_facade_exports_through_the_same_lazy_table() -> None:
    """``rxturn.operators`` defines its operators and names a few helpers by their modules, as
    the other packages do (``_HOMES``, :func:`rxturn._exports.lazy_exports`)."""
    import rxturn.operators as facade

    assert facade.__getattr__.__module__ == "rxturn._exports"
    for name, home in facade._HOMES.items():
        assert name in facade.__all__
        defining = importlib.import_module(importlib.util.resolve_name(home, "rxturn.operators"))
        assert getattr(facade, name) is getattr(defining, name), name
    namespace: dict[str, object] = {}
    exec("from rxturn.operators import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(facade.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        facade.nothing  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]


def test_a_name_that_is_not_public_fails_the_import_and_the_type_check() -> None:
    # for type checkers the packages have no module __getattr__: the ignores below are
    # needed (an unneeded ignore fails the type check), so a misspelt or private name is
    # reported where it is imported rather than typed as ``object``
    with pytest.raises(ImportError):
        from rxturn import TurnStream  # noqa: F401  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ImportError):
        from rxturn.clients import AnthropicDecoder  # noqa: F401  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ImportError):
        from rxturn.transport import aiohttp_session  # noqa: F401  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ImportError):
        from rxturn.operators import ladder  # noqa: F401  # pyright: ignore[reportAttributeAccessIssue]
