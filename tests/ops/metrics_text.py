"""Reading a /metrics page the way Prometheus would."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the page: (name, sorted labels) -> value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]
