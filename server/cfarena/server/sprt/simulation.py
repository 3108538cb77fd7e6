"""Many SPRTs at once on simulated group scores: error rates and test lengths.

`simulate_tests` runs `tests` independent sequential tests in lockstep, each
drawing its group scores from one discrete distribution (the values with their
probabilities: a parametric model, or a pool of played groups' scores, which
is resampling them with replacement), and applies after every group exactly the
LLR and verdict a `SequentialTest` would (`sequential.llr`, batched). The
suite checks alpha and beta with it; benchmarks/sprt.py measures how many
matches a test takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cfarena.server.sprt.sequential import SprtBounds, Verdict, llr


@dataclass(frozen=True, slots=True)
class SimulatedTests:
    """What the simulated tests did: per test, the matches it played and its verdict."""

    matches: npt.NDArray[np.int64]
    verdicts: tuple[Verdict, ...]

    def count(self, verdict: Verdict) -> int:
        return sum(1 for v in self.verdicts if v is verdict)

    def rate(self, verdict: Verdict) -> tuple[float, float, float]:
        """The share of tests with `verdict` and its exact (Clopper-Pearson) 95% interval."""
        from scipy.stats import binomtest  # ~1 s of imports: only where it is used

        k, n = self.count(verdict), len(self.verdicts)
        interval = binomtest(k, n).proportion_ci(0.95)
        return k / n, float(interval.low), float(interval.high)


def simulate_tests(values: npt.ArrayLike, probabilities: npt.ArrayLike, bounds: SprtBounds,
                   matches_per_group: int, tests: int, max_matches: int,
                   seed: int = 0) -> SimulatedTests:
    """`tests` SPRTs on group scores drawn from (`values`, `probabilities`), each until
    its verdict or `max_matches`."""
    vals = np.asarray(values, dtype=np.float64)
    probs = np.asarray(probabilities, dtype=np.float64)
    order = np.argsort(vals)
    vals, probs = vals[order], probs[order] / probs.sum()
    rng = np.random.default_rng(seed)
    counts = np.zeros((tests, vals.size))
    running = np.ones(tests, dtype=bool)
    matches = np.zeros(tests, dtype=np.int64)
    verdicts = [Verdict.INCONCLUSIVE] * tests
    for group in range(1, max_matches // matches_per_group + 1):
        active = np.flatnonzero(running)
        if active.size == 0:
            break
        drawn = rng.choice(vals.size, size=active.size, p=probs)
        counts[active, drawn] += 1
        ratio = llr(bounds, vals, counts[active], matches_per_group)
        played = group * matches_per_group
        matches[active] = played
        for verdict, hit in ((Verdict.H1, ratio >= bounds.upper),
                             (Verdict.H0, ratio <= bounds.lower)):
            for t in active[hit]:
                verdicts[t] = verdict
            running[active[hit]] = False
    return SimulatedTests(matches, tuple(verdicts))
