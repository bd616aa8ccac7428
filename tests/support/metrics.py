"""Read this process's Prometheus metrics as a scraper would: the exposition, parsed."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families


def sample(
    name: str,
    labels: dict[str, str] | None = None,
    /,
    registry: CollectorRegistry = REGISTRY,
    **more: str,
) -> float:
    """The value of the sample ``name`` with exactly ``labels`` (0 when absent) in
    ``registry``'s exposition."""
    labels = {**(labels or {}), **more}
    exposition = generate_latest(registry).decode()
    for family in text_string_to_metric_families(exposition):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return 0.0
