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
    return sample_of(generate_latest(registry).decode(), name, labels, **more)


def sample_of(
    exposition: str, name: str, labels: dict[str, str] | None = None, /, **more: str
) -> float:
    """The value of the sample ``name`` with exactly ``labels`` in ``exposition`` (0 when
    absent): what a process's ``/metrics`` answered."""
    labels = {**(labels or {}), **more}
    for family in text_string_to_metric_families(exposition):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return 0.0
