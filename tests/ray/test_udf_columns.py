"""``TurnUDF`` called on a batch as Ray Data hands it over, without a cluster (no budget: no
actor is needed): a dataset's other columns (a category, a source: datasets carry them) are
not the row's business, and a batch whose columns differ in length is a typed error."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest
from test_ray_data import ThreadedFake

from rxturn.errors import ConfigError
from rxturn.ray import COLUMNS, TurnUDF
from rxturn.testing import FakeProvider, assert_no_secret

SECRET = "sk-ant-api03-udf-secret-0123456789"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    served = ThreadedFake({"models": {"*": [{"text": "an answer"}]}})
    try:
        yield served.fake
    finally:
        served.close()


def test_columns_beside_the_rows_fields_are_left_alone(fake: FakeProvider) -> None:
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url)
    try:
        out = udf(
            {
                "id": ["a", "b"],
                "prompt": ["one", "two"],
                "category": ["x", "y"],
                "source": [3, 4],
            }
        )
    finally:
        udf.close()
    assert out["status"] == ["ok", "ok"], out["error_message"]
    assert out["text"] == ["an answer", "an answer"]
    assert len(fake.requests) == 2


def test_columns_of_different_lengths_are_a_config_error(fake: FakeProvider) -> None:
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url)
    try:
        with pytest.raises(ConfigError, match=r"columns of different lengths \(id: 2, prompt: 1\)"):
            udf({"id": ["a", "b"], "prompt": ["one"]})
    finally:
        udf.close()
    assert fake.requests == []


@pytest.mark.parametrize(
    ("batch", "words"),
    [
        ({"id": "ab", "prompt": "hi"}, "column 'id' is of type str, not a column"),
        ({"id": ["a"], "prompt": b"x"}, "column 'prompt' is of type bytes, not a column"),
        ({"id": 5, "prompt": ["x"]}, "column 'id' is of type int, not a column"),
        ([{"id": "a", "prompt": "hi"}], "a batch is a mapping of columns .* got list"),
        (None, "a batch is a mapping of columns .* got NoneType"),
    ],
    ids=["one row as strings", "bytes", "a number", "a list of rows", "None"],
)
def test_a_batch_that_is_no_columns_is_a_config_error_and_nothing_is_sent(
    fake: FakeProvider, batch: object, words: str
) -> None:
    """One row written as a batch (``{"id": "ab", "prompt": "hi"}``) was two rows, one per
    character, asking ``h`` and ``i``; a list of rows or a number was a TypeError of the
    reading (``list indices must be integers``)."""
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url)
    try:
        with pytest.raises(ConfigError, match=f"^TurnUDF: .*{words}"):
            udf(batch)  # pyright: ignore[reportArgumentType]
    finally:
        udf.close()
    assert fake.requests == []


def _run(fake: FakeProvider, batch: object) -> dict[str, Sequence[object]]:
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url, concurrency=2)
    try:
        return udf(batch)  # pyright: ignore[reportArgumentType]  (Ray hands over any of these)
    finally:
        udf.close()


@pytest.mark.parametrize("kind", ["pandas", "pyarrow"])
def test_two_columns_of_one_name_are_a_config_error(fake: FakeProvider, kind: str) -> None:
    """A frame with two ``prompt`` columns sent the prompt ``"prompt"`` (the column labels,
    read as the column); a table with two was a KeyError of Arrow's."""
    names = ["id", "prompt", "prompt"]
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        batch: object = pd.DataFrame([["a", "x", "y"]], columns=names)
    else:
        pa = pytest.importorskip("pyarrow")
        batch = pa.Table.from_arrays([pa.array([v]) for v in ("a", "x", "y")], names=names)
    with pytest.raises(ConfigError, match=r"^TurnUDF: the batch has more than one column named"):
        _run(fake, batch)
    assert fake.requests == []


def test_a_served_rows_columns_hold_plain_str_and_int(fake: FakeProvider) -> None:
    """A string column holds ``str`` itself: the stop reason was the message's
    ``StopReason`` member (a ``str`` subclass, shown as ``<StopReason.END_TURN: 'end_turn'>``
    in the columns a direct call returns)."""
    out = _run(fake, {"id": ["a", "b"], "prompt": ["one", " "]})
    assert out["status"] == ["ok", "error"], out["error_message"]
    assert out["stop_reason"] == ["end_turn", ""]
    for name in COLUMNS:
        kind = int if name in ("input_tokens", "output_tokens", "attempts") else str
        assert {type(v) for v in out[name]} == {kind}, (name, out[name])


def test_a_pandas_batch_is_read_by_position_whatever_its_index(fake: FakeProvider) -> None:
    pd = pytest.importorskip("pandas")
    # batch_format="pandas"; a filtered frame keeps its original labels
    batch = pd.DataFrame({"id": ["a", "b"], "prompt": ["one", "two"]}, index=[5, 9])
    out = _run(fake, batch)
    assert out["id"] == ["a", "b"] and out["status"] == ["ok", "ok"], out["error_message"]


def test_a_pandas_batchs_missing_values_of_nullable_dtypes_are_nulls(fake: FakeProvider) -> None:
    """Ray's ``batch_format="pandas"`` gives string columns with ``pd.NA`` for a null: a null
    ``model`` made every row an error (``not JSON data: Encoding objects of type NAType``), a
    null id became the id ``"<NA>"`` (``"NaT"`` in a date column); each is a null now, as
    ``None`` in an object column is."""
    pd = pytest.importorskip("pandas")
    batch = pd.DataFrame(
        {
            "id": pd.array(["a", None, "c", "d"], dtype="string"),
            "prompt": pd.array(["one", "two", None, "four"], dtype="string"),
            "model": pd.array([None, None, None, "m"], dtype="string"),
        }
    )
    out = _run(fake, batch)
    plain = _run(fake, {"id": [None], "prompt": ["two"]})  # the id of a row with no id
    assert out["status"] == ["ok", "ok", "error", "ok"], out["error_message"]
    assert out["id"] == ["a", plain["id"][0], "c", "d"]
    assert "no 'prompt' or 'messages' value" in str(out["error_message"][2])
    dates = pd.DataFrame({"id": pd.to_datetime([None]), "prompt": ["two"]})
    numbers = pd.DataFrame({"id": pd.array([None], dtype="Int64"), "prompt": ["two"]})
    assert _run(fake, dates)["id"] == _run(fake, numbers)["id"] == plain["id"]


def test_an_integer_option_made_float_by_a_null_in_its_block_is_the_integer(
    fake: FakeProvider,
) -> None:
    """Ray's default numpy batches turn an int64 struct field with a null in the block into
    float (``{"max_tokens": 5}`` beside a row without it reads ``5.0``, as Ray 2.60's
    ``to_batch_format("numpy")`` gives it): the row failed (``Expected `int | null`, got
    `float```) only because of its neighbours, and had another content id than alone."""
    np = pytest.importorskip("numpy")
    options = np.array([{"max_tokens": 5.0, "temperature": None}, None], dtype=object)
    prompts = np.array(["one", "two"], dtype=object)
    out = _run(fake, {"prompt": prompts, "options": options})
    assert out["status"] == ["ok", "ok"], out["error_message"]
    assert 5 in [request["max_tokens"] for request in fake.requests]  # (either may go first)
    alone = _run(fake, {"prompt": ["one"], "options": [{"max_tokens": 5}]})
    assert out["id"][0] == alone["id"][0]


def test_an_arrow_table_batch_is_read(fake: FakeProvider) -> None:
    pa = pytest.importorskip("pyarrow")
    batch = pa.table({"id": ["a", "b"], "prompt": ["one", "two"], "n": [1, 2]})  # pyarrow
    out = _run(fake, batch)
    assert out["id"] == ["a", "b"] and out["status"] == ["ok", "ok"], out["error_message"]


def test_ids_of_odd_dtypes_come_back_as_the_users_keys(fake: FakeProvider) -> None:
    np = pytest.importorskip("numpy")
    # an integer column with a gap is float64 in numpy and pandas; Arrow binary is bytes
    out = _run(
        fake,
        {
            "id": np.array([7.0, 8.0, 2.5]),
            "prompt": np.array(["one", "two", "three"], dtype=object),
        },
    )
    assert out["id"] == ["7", "8", "2.5"], out["id"]
    out = _run(fake, {"id": np.array([b"k1", b"k2"]), "prompt": np.array(["one", "two"])})
    assert out["id"] == ["k1", "k2"], out["id"]


_EMPTY_BATCHES = {
    "numpy": lambda np, pa, pd: {"id": np.array([], dtype=object), "prompt": np.array([])},
    "pyarrow": lambda np, pa, pd: pa.table({"id": pa.array([], pa.string())}),
    "pandas": lambda np, pa, pd: pd.DataFrame({"id": [], "prompt": []}),
    "no columns": lambda np, pa, pd: {},
    "rows": lambda np, pa, pd: {"id": ["a", "b"], "prompt": ["one", " "]},
}


@pytest.mark.parametrize("kind", list(_EMPTY_BATCHES))
def test_every_batch_gives_the_same_column_types_even_with_no_rows(
    fake: FakeProvider, kind: str
) -> None:
    """The fixed types: strings, and int64 for the three counts, in a batch of rows (one ok,
    one error) and in a batch of none (a filtered block is one), so that Ray can concatenate
    the blocks (what it makes of an empty list is a null column)."""
    np = pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    counts = ("input_tokens", "output_tokens", "attempts")
    expected = pa.schema([(n, pa.int64() if n in counts else pa.string()) for n in COLUMNS])
    out = _run(fake, _EMPTY_BATCHES[kind](np, pa, pd))
    assert list(out) == list(COLUMNS)
    assert pa.table(out).schema == expected, pa.table(out).schema


@pytest.mark.parametrize(
    ("batch", "ids", "words"),
    [
        ({"id": [True, False], "prompt": ["x", "y"]}, ["", ""], "id must be a string or an"),
        ({"id": [["a", "b"]], "prompt": ["x"]}, [""], "id must be a string or an integer"),
        (
            {"custom_id": ["a"], "params": [{"messages": [{"role": "user", "content": "x"}]}]},
            None,
            "no 'prompt' or 'messages' value (TurnUDF reads the columns id, prompt, messages, "
            "system, model and options; this batch has custom_id, params)",
        ),
        ({"id": ["a"], "prompt": [None]}, ["a"], "no 'prompt' or 'messages' value"),
        (
            {"id": ["a"], "messages": ['[{"role": "user", "content": "hi"}]']},
            ["a"],
            "messages must be a non-empty list, got a string (JSON text must be decoded",
        ),
    ],
    ids=["a bool id", "a list id", "a provider shape's columns", "a null prompt", "JSON text"],
)
def test_a_row_the_udf_cannot_read_is_an_error_row_saying_why(
    fake: FakeProvider, batch: dict[str, list[Any]], ids: list[str] | None, words: str
) -> None:
    """An id of no key's type is refused as the CLI refuses it (not made ``"True"`` or
    ``"['a', 'b']"``); a row with no prompt nor messages is told which columns are read (not
    sent to the provider shapes, whose columns TurnUDF does not read)."""
    out = _run(fake, batch)
    assert set(out["status"]) == {"error"}, out
    assert all(str(m).startswith(words) for m in out["error_message"]), out["error_message"]
    if ids is not None:
        assert out["id"] == ids
    assert fake.requests == []


def _content_id(row: dict[str, Any]) -> str:
    """What docs/batch.md says a row without an id is given: ``row-`` and the first 16 hex
    digits of the sha256 of its canonical JSON."""
    canonical = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "row-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_a_row_without_an_id_gets_the_same_id_in_whatever_batch_it_comes(
    fake: FakeProvider,
) -> None:
    """The id of a row with none depends on its content alone, not on its place in the batch
    Ray happened to cut: ``b`` second of two, first of one, or in a pandas frame whose ``id``
    column has a gap, or with an Arrow struct's null fields in its options; a malformed one
    gets it too (its error row can be told apart)."""
    pd = pytest.importorskip("pandas")
    b = {"prompt": "b", "options": {"max_tokens": 5}}
    expected = _content_id(b)
    two = _run(fake, {"prompt": ["a", "b"], "options": [None, {"max_tokens": 5}]})
    one = _run(fake, {"prompt": ["b"], "options": [{"max_tokens": 5, "temperature": None}]})
    gap = _run(
        fake,
        pd.DataFrame({"id": ["k", None], "prompt": ["a", "b"], "options": [None, b["options"]]}),
    )
    assert two["id"] == [_content_id({"prompt": "a"}), expected], two["id"]
    assert one["id"] == [expected] and gap["id"] == ["k", expected], (one["id"], gap["id"])
    assert {*two["status"], *one["status"], *gap["status"]} == {"ok"}, two["error_message"]
    blank = _run(fake, {"prompt": ["a", "  "]})
    assert blank["status"] == ["ok", "error"], blank["error_message"]
    assert blank["id"] == [_content_id({"prompt": "a"}), _content_id({"prompt": "  "})]


def test_a_row_whose_column_holds_what_json_cannot_is_an_error_row(fake: FakeProvider) -> None:
    """An ``options`` column of Python objects (``batch_format`` numpy's object arrays hold
    anything), a string with half a UTF-16 pair: that row is an error row, and the batch's
    other rows are served."""
    out = _run(
        fake,
        {
            "id": ["a", "b", "c"],
            "prompt": ["one", "two", "three \ud800"],
            "options": [None, {"extra_body": {"tag": object()}}, None],
        },
    )
    assert out["status"] == ["ok", "error", "error"], out["error_message"]
    assert out["error_type"][1:] == ["BatchInputError"] * 2
    assert [str(m)[:15] for m in out["error_message"][1:]] == ["not JSON data: "] * 2
    assert "lone UTF-16 surrogate" in str(out["error_message"][2]), out["error_message"]
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"provider": "nope"}, "provider must be one of"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
        ({"concurrency": True}, "got `bool` - at `$.concurrency`"),
        ({"api_key": SECRET + " x"}, "api_key must be a non-empty string without whitespace"),
        ({"budget_name": "", "rpm": 5}, "the budget actor's name must be a non-empty string"),
        ({"budget_name": None}, "the budget actor's name must be a non-empty string"),
        ({"model": "m\nx"}, "model holds a control character"),
        ({"model": "m\x1b[31m"}, "model holds a control character"),
    ],
)
def test_bad_constructor_arguments_are_a_config_error_leaving_no_thread(
    arguments: dict[str, Any], words: str
) -> None:
    kwargs: dict[str, Any] = {
        "provider": "anthropic",
        "model": "m",
        "base_url": "http://127.0.0.1:9",
        "api_key": SECRET,
        **arguments,
    }
    before = {t for t in threading.enumerate() if t.name == "rxturn-turnudf"}
    with pytest.raises(ConfigError) as caught:
        TurnUDF(**kwargs)
    assert words in str(caught.value)
    assert_no_secret(caught.value, SECRET)
    assert {t for t in threading.enumerate() if t.name == "rxturn-turnudf"} == before


def test_a_call_after_close_is_a_config_error_leaving_no_coroutine(fake: FakeProvider) -> None:
    """It was ``RuntimeError: Event loop is closed``, with two ``coroutine ... was never
    awaited`` warnings; a second close() stays harmless."""
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url)
    udf.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine left unawaited fails the test
        with pytest.raises(ConfigError, match=r"^TurnUDF called after close\(\)$"):
            udf({"id": ["a"], "prompt": ["one"]})
        gc.collect()
    udf.close()
    assert fake.requests == []


class _NoCluster:
    """``ray`` as a process connected to no cluster sees it; anything that would start one
    (a remote actor) is recorded and refused."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def is_initialized(self) -> bool:
        return False

    def remote(self, *args: object, **kwargs: object) -> Any:
        self.started.append("remote")
        raise AssertionError("a Ray actor was made: Ray would start a local instance for it")


@pytest.mark.parametrize("limits", [{"rpm": 60}, {"tpm": 10_000}, {"rpm": 60, "tpm": 10_000}])
def test_a_budget_outside_a_ray_job_is_a_config_error_and_starts_no_ray(
    monkeypatch: pytest.MonkeyPatch, limits: dict[str, Any]
) -> None:
    """``TurnUDF(rpm=...)`` called directly, in a process connected to no Ray cluster (a
    notebook trying the UDF on a batch), asked for the named budget actor, and so silently
    started a local Ray instance, left running, for a budget no other process shared."""
    stub = _NoCluster()
    monkeypatch.setitem(sys.modules, "ray", stub)
    before = {t for t in threading.enumerate() if t.name == "rxturn-turnudf"}
    with pytest.raises(ConfigError, match=r"connected to no Ray cluster: call ray\.init\(\) first"):
        TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key=SECRET, **limits)
    assert stub.started == []
    assert {t for t in threading.enumerate() if t.name == "rxturn-turnudf"} == before
    # without a budget it runs on its own, as before: no actor is asked for
    TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key=SECRET).close()
    assert stub.started == []


def test_an_instance_sent_to_ray_is_a_config_error_naming_the_class_form() -> None:
    """``map_batches(TurnUDF(...))`` pickles the instance for Ray's workers: it was
    ``TypeError: cannot pickle '_contextvars.Context' object``; now the way to write it."""
    udf = TurnUDF("anthropic", "m", base_url="http://127.0.0.1:9", api_key=SECRET)
    try:
        with pytest.raises(ConfigError, match=r"give map_batches the class") as caught:
            pickle.dumps(udf)
    finally:
        udf.close()
    assert_no_secret(caught.value, SECRET)


class _Interrupted(Exception):
    pass


def _interrupt(*_: object) -> None:
    raise _Interrupted


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="a POSIX signal")
def test_an_interrupted_call_stops_its_rows_and_closes_their_connections() -> None:
    """Ctrl-C (here a signal whose handler raises) while a batch's rows wait on a provider
    that never answers: the call raises, and its rows end with it rather than run on, unowned,
    on the actor's loop (and be destroyed pending when it closes). A call another thread
    makes at the same time (an actor with ``max_concurrency`` > 1) goes on to its end."""
    served = ThreadedFake(
        {
            "models": {
                "*": [{"text": "never", "stall_after_events": 1}],
                "held": [{"text": "later", "stall_after_events": 1, "stall_seconds": 0.2}],
            }
        }
    )
    fake = served.fake
    udf = TurnUDF("anthropic", "m", base_url=fake.base_url, concurrency=4)
    previous = signal.signal(signal.SIGUSR1, _interrupt)
    other: list[object] = []

    def other_call() -> None:
        try:
            other.append(udf({"id": ["h"], "prompt": ["x"], "model": ["held"]}))
        except BaseException as exc:  # what the assertion below shows
            other.append(exc)

    def interrupt_once_all_are_sent() -> None:
        for _ in range(500):
            if len(fake.requests) == 4:
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)

    try:
        threads = [threading.Thread(target=f) for f in (other_call, interrupt_once_all_are_sent)]
        for thread in threads:
            thread.start()
        with pytest.raises(_Interrupted):
            udf({"id": ["a", "b", "c"], "prompt": ["one", "two", "three"]})
        for thread in threads:
            thread.join(30)
        for _ in range(500):
            if fake.disconnects == 3:
                break
            time.sleep(0.01)
        assert (len(fake.requests), fake.disconnects) == (4, 3)
        assert isinstance(other[0], dict), other
        assert cast("dict[str, list[object]]", other[0])["status"] == ["ok"], other
    finally:
        signal.signal(signal.SIGUSR1, previous)
        udf.close()
        served.close()
