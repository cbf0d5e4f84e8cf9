"""``scheduler dev``'s ``/metrics``: two processes' metrics merged into one exposition."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from scheduler_service.routes.metrics import merged_metrics

OWN = b"""# HELP scheduler_retries_total Retries.
# TYPE scheduler_retries_total counter
scheduler_retries_total 0.0
scheduler_retries_created 200.0
# HELP scheduler_api_request_duration_seconds API requests.
# TYPE scheduler_api_request_duration_seconds histogram
scheduler_api_request_duration_seconds_bucket{le="0.1",method="GET"} 3.0
scheduler_api_request_duration_seconds_bucket{le="+Inf",method="GET"} 4.0
scheduler_api_request_duration_seconds_count{method="GET"} 4.0
scheduler_api_request_duration_seconds_sum{method="GET"} 0.5
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1000.0
"""
PEER = b"""# HELP scheduler_retries_total Retries.
# TYPE scheduler_retries_total counter
scheduler_retries_total 7.0
scheduler_retries_created 100.0
# HELP scheduler_api_request_duration_seconds API requests.
# TYPE scheduler_api_request_duration_seconds histogram
scheduler_api_request_duration_seconds_count{method="GET"} 0.0
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 5000.0
"""


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


def test_samples_of_both_processes_are_added_and_process_figures_are_the_servers() -> None:
    merged = merged_metrics(OWN, PEER)
    found = samples(merged)
    assert found[("scheduler_retries_total", ())] == 7.0
    assert found[("scheduler_retries_created", ())] == 100.0  # the earlier
    assert found[("scheduler_api_request_duration_seconds_count", (("method", "GET"),))] == 4.0
    assert found[("process_resident_memory_bytes", ())] == 1000.0
    assert merged.count(b"# TYPE scheduler_retries_total counter") == 1
