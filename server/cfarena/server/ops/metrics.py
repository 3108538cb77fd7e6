"""Prometheus metrics of a referee: `ArenaMetrics`, a `RefereeObserver` that counts.

The referee calls it on its event loop, so it keeps plain counters and turns them
into metric families only when /metrics is scraped, on the same loop (no locks
needed). A match's decisions and faults are counted when it ends, from its record,
never while it is played: how many decisions a running match has taken is what the
public events hide (under play_drawn = "may", keeping a drawn tile that fits is a
decision; a forced pass is not), and /metrics is readable by anyone who can reach
the HTTP port.

| name | type | what |
| --- | --- | --- |
| cfarena_decisions_total | counter | Turns asked in ended matches (answered or timed out) |
| cfarena_decision_seconds | histogram | Turn written to Action read (ended matches) |
| cfarena_faults_total{kind} | counter | faults recorded in ended matches, by kind |
| cfarena_bots_connected | gauge | distinct bots with at least one live stream |
| cfarena_bot_connections | gauge | live bot streams |
| cfarena_matches_running | gauge | matches being played |
| cfarena_matches_total{status} | counter | matches ended, finished or aborted |
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from cfarena.match.record import FaultKind, MatchRecord, MatchStatus

# decision latency buckets, in ms (exposed in seconds): a bot on the same machine
# answers in well under 1 ms, one across the world in ~100-300 ms, the default move
# timeout is 1000 ms
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ArenaMetrics(Collector):
    """Counts what a referee reports (see the module docstring); `render()` is the
    /metrics page."""

    def __init__(self) -> None:
        self.decisions = 0
        self.latency_sum_ms = 0.0
        # one slot per bucket bound, and the last one for +Inf
        self.latency_counts = [0] * (len(LATENCY_BUCKETS_MS) + 1)
        self.faults: Counter[str] = Counter({kind.value: 0 for kind in FaultKind})
        self.connections: Counter[str] = Counter()  # bot -> live streams
        self.running = 0
        self.ended: Counter[str] = Counter({MatchStatus.FINISHED.value: 0,
                                            MatchStatus.ABORTED.value: 0})
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    # ------------------------------------------------------------ the observer
    def connected(self, bot: str) -> None:
        self.connections[bot] += 1

    def disconnected(self, bot: str) -> None:
        left = self.connections[bot] - 1
        if left > 0:
            self.connections[bot] = left
        else:
            del self.connections[bot]

    def match_started(self, match_id: str) -> None:
        self.running += 1

    def match_ended(self, record: MatchRecord) -> None:
        self.running -= 1
        self.ended[record.status.value] += 1
        for action in record.actions:
            if action.decided and action.elapsed_ms is not None:  # an answer, in time or not
                self.decisions += 1
                self.latency_sum_ms += action.elapsed_ms
                self.latency_counts[bisect_left(LATENCY_BUCKETS_MS, action.elapsed_ms)] += 1
        for fault in record.faults:
            self.faults[fault.kind.value] += 1

    # -------------------------------------------------------------- exposition
    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("cfarena_decisions", "Turns answered by bots",
                                  value=self.decisions)
        buckets: list[tuple[str, float]] = []
        cumulative = 0
        for bound, count in zip((*LATENCY_BUCKETS_MS, float("inf")), self.latency_counts,
                                strict=True):
            cumulative += count
            buckets.append((_le(bound), cumulative))
        yield HistogramMetricFamily(
            "cfarena_decision_seconds",
            "Time from a Turn written to its Action read, at the referee",
            buckets=buckets, sum_value=self.latency_sum_ms / 1000.0)
        faults = CounterMetricFamily("cfarena_faults", "Faults recorded, by kind",
                                     labels=["kind"])
        for kind, count in sorted(self.faults.items()):
            faults.add_metric([kind], count)
        yield faults
        yield GaugeMetricFamily("cfarena_bots_connected",
                                "Distinct bots with at least one live stream",
                                value=len(self.connections))
        yield GaugeMetricFamily("cfarena_bot_connections", "Live bot streams",
                                value=sum(self.connections.values()))
        yield GaugeMetricFamily("cfarena_matches_running", "Matches being played",
                                value=self.running)
        ended = CounterMetricFamily("cfarena_matches", "Matches ended, by status",
                                    labels=["status"])
        for status, count in sorted(self.ended.items()):
            ended.add_metric([status], count)
        yield ended

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


def _le(bound_ms: float) -> str:
    return "+Inf" if bound_ms == float("inf") else repr(bound_ms / 1000.0)
