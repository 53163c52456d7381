"""Status polls have a rate budget of their own: a page polling a job's status 60 times a minute
(the red team's case) no longer makes the same key's next question a 429."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.api_keys import KeyFile
from testing.processes import free_port
from tests.gateway.conftest import Gateway, hindsight_env, running_gateway

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp("data")
    library = tmp_path_factory.mktemp("library")
    env = hindsight_env(
        data_dir, redis_url, free_port(), HINDSIGHT_ROOTS=str(library),
        HINDSIGHT_RATE_LIMIT_PER_MINUTE="5", HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE="100",
    )  # fmt: skip
    with running_gateway(env, data_dir) as running:
        yield running


def test_sixty_status_polls_leave_the_keys_work_budget_whole(gateway: Gateway) -> None:
    key = KeyFile(gateway.data_dir / "api_keys.json").create("poller")[1]
    library = Path(gateway.env["HINDSIGHT_ROOTS"])
    with gateway.client(key) as api:
        job = api.post("/v1/index", json={"root": str(library)}).json()
        polls = [api.get(f"/v1/index/{job['job_id']}").status_code for _ in range(60)]
        assert 429 not in polls
        started = [api.post("/v1/index", json={"root": str(library)}).status_code for _ in range(4)]
        assert started == [202] * 4, "the work budget (5 a minute) was used up by status polls"
        refused = api.post("/v1/index", json={"root": str(library)})
        assert refused.status_code == 429 and "5 requests a minute" in refused.json()["detail"]


def test_reads_have_a_budget_too(gateway: Gateway) -> None:
    key = KeyFile(gateway.data_dir / "api_keys.json").create("flooder")[1]
    with gateway.client(key) as api:
        statuses = [api.get("/v1/questions/nope").status_code for _ in range(105)]
    assert statuses.count(429) >= 5
