"""``TurnUDF`` called on a batch as Ray Data hands it over, without a cluster (no budget: no
actor is needed): a dataset's other columns (a category, a source: datasets carry them) are
not the row's business, and a batch whose columns differ in length is a typed error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_ray_data import ThreadedFake

from rxturn.errors import ConfigError
from rxturn.ray import TurnUDF
from rxturn.testing import FakeProvider


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
