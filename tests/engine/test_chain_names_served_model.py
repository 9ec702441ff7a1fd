"""A chain that names the model the engine serves, when the manager leaves the primary unset.

``FallbackManager("a", ["a", "b"])`` is refused: a backup cannot be the primary. But
``FallbackManager(None, ["a", "b"])`` on a client of model ``a`` was accepted, and the engine
serves ``a`` as the primary: after three failures of ``a`` the breaker tripped with
``on_fallback("a", "a")`` and routed the next turns to ``a`` again, which failed twice more
before the breaker moved on to ``b``. The engine now refuses that chain when it is built.
"""

from __future__ import annotations

import pytest

from rxturn import AnthropicClient, FallbackManager, TurnEngine
from rxturn.errors import ConfigError
from rxturn.messages import RequestOptions


def _client(model: str) -> AnthropicClient:
    return AnthropicClient(model, api_key="k", base_url="http://127.0.0.1:9")


@pytest.mark.parametrize("failover", [False, True])
def test_the_clients_model_as_a_backup_is_refused(failover: bool) -> None:
    with pytest.raises(ConfigError, match=r"the chain lists 'a', the model the engine serves"):
        TurnEngine(_client("a"), fallback=FallbackManager(None, ["a", "b"]), failover=failover)


def test_the_requested_model_as_a_backup_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"the chain lists 'm'"):
        TurnEngine(
            _client("a"),
            fallback=FallbackManager(None, ["b", "m"]),
            request_options=RequestOptions(model="m"),
        )


def test_other_backups_are_taken() -> None:
    engine = TurnEngine(_client("a"), fallback=FallbackManager(None, ["b", "c"]), failover=True)
    assert engine.served_model() == "a"
    # the primary named explicitly overrides the client's model: the client's may be a backup
    TurnEngine(_client("a"), fallback=FallbackManager("p", ["a"]), failover=True)


# -- the same rule for a chain changed after construction ----------------------------------
#
# The constructor refused a backup that is the primary or is listed twice, but the mutators
# did not: ``add_fallback_model("b")`` twice made a chain whose second ``b`` no strike ever
# reached (strikes find an entry by name), so a failing ``b`` was routed to forever and the
# chain was never exhausted; ``switch_model("b")`` (``/model b`` in ``rxturn chat --fallback
# b``) made ``b`` the primary and its own backup.


def test_a_backup_added_twice_is_refused() -> None:
    manager = FallbackManager("a", ["b"])
    with pytest.raises(ConfigError, match=r"add_fallback_model\(\.\.\.\): 'b' is listed twice"):
        manager.add_fallback_model("b")
    with pytest.raises(ConfigError, match=r"insert_fallback_model\(\.\.\.\): 'a' is the primary"):
        manager.insert_fallback_model(0, "a")
    with pytest.raises(ConfigError, match=r"set_fallback_models\(\.\.\.\): 'c' is listed twice"):
        manager.set_fallback_models(["c", "c"])
    with pytest.raises(ConfigError, match=r"set_fallback_model\(\.\.\.\): 'a' is the primary"):
        manager.set_fallback_model("a")
    with pytest.raises(
        ConfigError, match=r"set_primary\(\.\.\.\): 'b' is a backup in the fallback"
    ):
        manager.set_primary("b")
    assert (manager.primary, manager.fallback_models()) == ("a", ["b"])  # nothing changed


def test_switching_the_engine_to_a_backup_is_refused_and_changes_nothing() -> None:
    engine = TurnEngine(_client("a"), fallback=FallbackManager("a", ["b"]), failover=True)
    with pytest.raises(ConfigError, match=r"'b' is a backup in the fallback chain; the primary"):
        engine.switch_model("b")
    assert engine.served_model() == "a"
    assert engine.request_options.model in (None, "a")
    assert engine.fallback is not None and engine.fallback.primary == "a"
    engine.switch_model("c")  # another model is taken
    assert engine.served_model() == "c"
