"""The engine's attributes are read when a turn runs: assigning one after construction takes
effect on the next request (the engine's collaborators hold the engine, not copies)."""

from __future__ import annotations

from rxturn import AnthropicClient, Message, RequestOptions, TurnEngine


def test_assigned_system_and_options_reach_the_next_request() -> None:
    client = AnthropicClient("client-model", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client, system="first")
    engine.history.append(Message.user("hi"))
    assert engine.build_request().system == "first"
    assert engine.served_model() == "client-model"

    engine.system = "second"
    engine.request_options = RequestOptions(model="other-model")
    request = engine.build_request()
    assert request.system == "second"
    assert [m.text for m in request.messages] == ["hi"]
    assert engine.served_model() == "other-model"
    assert engine.routed_options().model == "other-model"


def test_reassigned_history_is_the_one_requests_read() -> None:
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    engine = TurnEngine(client)
    engine.history = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    assert [m.text for m in engine.build_request().messages] == ["a", "b", "c"]
