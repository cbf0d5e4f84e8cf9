"""The API counts and times its requests by route and status class on ``/metrics``."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

NAME = "scheduler_api_request_duration_seconds"


def requests(api: ApiUnderTest) -> dict[tuple[str, str, str], float]:
    """``_count`` by (method, route, status class)."""
    text = api.client.get("/metrics").get_data(as_text=True)
    counts = {}
    for family in text_string_to_metric_families(text):
        if family.name == NAME:
            assert family.type == "histogram"  # the latency, beside the count
        for sample in family.samples:
            if sample.name == f"{NAME}_count":
                labels = sample.labels
                counts[(labels["method"], labels["route"], labels["status_class"])] = sample.value
    return counts


def test_requests_are_counted_and_timed_by_route_and_status_class(tmp_path: Path) -> None:
    with api_under_test(tmp_path) as api:
        before = requests(api)
        body = {
            "schedule": {"cron": "@hourly"},
            "payload": {"method": "GET", "url": "https://a.example/"},
        }
        assert api.client.post(f"{API}/schedule", json=body).status_code == 202
        assert api.client.post(f"{API}/schedule", json={}).status_code == 400
        # Refused before any view runs (a broken body), and unknown paths: counted too.
        broken = api.client.post(
            f"{API}/schedule", data="{", headers={"Content-Type": "application/json"}
        )
        assert broken.status_code == 400
        for number in range(3):
            assert api.client.get(f"{API}/schedule/missing-{number}").status_code == 404
        assert api.client.get("/no/such/path").status_code == 404
        after = requests(api)

    def grew(method: str, route: str, status_class: str) -> float:
        key = (method, route, status_class)
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew("POST", f"{API}/schedule", "2xx") == 1
    assert grew("POST", f"{API}/schedule", "4xx") == 2
    assert grew("GET", f"{API}/schedule/<schedule_id>", "4xx") == 3
    assert grew("GET", "unmatched", "4xx") == 1
    # One series per route, not per schedule id.
    assert not any("missing-" in route for _, route, _ in after)
