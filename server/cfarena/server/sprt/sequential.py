"""The sequential probability ratio test over deal-group scores, and what it reports.

    bounds = SprtBounds(elo0=0, elo1=5)          # normalized Elo, alpha = beta = 0.05
    test = SequentialTest(bounds, matches_per_group=4, max_matches=4000)
    for score in group_scores:                     # deal_group.group_score of each group
        test.add(score)
        if test.verdict() is not Verdict.CONTINUE:
            break
    test.status()                                  # llr, its bounds, Elo, LOS, verdict

H0 says the Elo difference of NEW over OLD is `elo0`, H1 that it is `elo1`.
The test stops when the log-likelihood ratio (`llr`) leaves
[log(beta / (1 - alpha)), log((1 - beta) / alpha)] (Wald's bounds): above, H1
is accepted (NEW is better), below, H0; it is inconclusive when `max_matches`
is reached first. With these bounds the chance of accepting H1 when the truth
is elo0 is at most about alpha, and of accepting H0 when it is elo1 at most
about beta (tests/sprt checks both by simulation).

Elo models (fishtest's and fastchess's): `normalized` Elo is a t-value
((mean score - 1/2) / its standard deviation per match, times 800 / ln 10):
the same bounds need about the same number of matches whatever the score's
noise, and a less noisy score (duplicate groups, luck adjustment) shows a real
difference as a larger normalized Elo. `logistic` Elo is the classic
-400 log10(1/mean - 1) of the mean score. Defaults as fastchess's and
fishtest's current ones: normalized, [0, 5] is a typical bound pair (fishtest
uses [0, 2] at short time control), alpha = beta = 0.05.

The estimate (`Estimate`) comes from the same scores: their mean and its
standard error (the groups are independent; the matches inside one are not, so
the error is never computed per match).
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from cfarena.server.sprt.llr import (
    NELO_PER_T,
    llr_logistic,
    llr_normalized,
)

# the standard normal from the standard library: importing scipy.stats would add a
# second of CPU to the start of every process that loads this module (serve, worker)
STANDARD_NORMAL = NormalDist()
Z95 = STANDARD_NORMAL.inv_cdf(0.975)


class EloModel(enum.StrEnum):
    """How `elo0` and `elo1` are measured."""

    NORMALIZED = "normalized"
    LOGISTIC = "logistic"


class Verdict(enum.StrEnum):
    """Where a test stands."""

    CONTINUE = "continue"
    H1 = "H1"  # accepted: NEW is better by about elo1 or more
    H0 = "H0"  # accepted: NEW is not better by elo1 (about elo0 or less)
    INCONCLUSIVE = "inconclusive"  # the match cap was reached first


@dataclass(frozen=True, slots=True)
class SprtBounds:
    """The hypotheses and error rates of a test."""

    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    model: EloModel = EloModel.NORMALIZED

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 must be below elo1, got {self.elo0} and {self.elo1}")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5, got {value}")

    def to_json(self) -> dict[str, Any]:
        """The bounds as a stored test's terms hold them (`from_json` reads them back)."""
        return {"elo0": self.elo0, "elo1": self.elo1, "alpha": self.alpha,
                "beta": self.beta, "elo_model": self.model.value}

    @classmethod
    def from_json(cls, terms: Mapping[str, Any]) -> SprtBounds:
        """The bounds of a stored test's terms (`to_json`)."""
        return cls(float(terms["elo0"]), float(terms["elo1"]), float(terms["alpha"]),
                   float(terms["beta"]), EloModel(terms["elo_model"]))

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)

    def verdict(self, llr: float, matches: int, max_matches: int | None) -> Verdict:
        """The verdict of a test at `llr` after `matches` matches."""
        if llr >= self.upper:
            return Verdict.H1
        if llr <= self.lower:
            return Verdict.H0
        if max_matches is not None and matches >= max_matches:
            return Verdict.INCONCLUSIVE
        return Verdict.CONTINUE


def llr(bounds: SprtBounds, values: np.ndarray, counts: np.ndarray,
        matches_per_group: int, score_range: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The LLR of `counts` (rows: tests, columns: `values`) under `bounds`, batched.
    The scores' spread is regularized with the lowest and highest possible scores of
    `score_range` (widened to the values each row has seen; `llr.regularized_moments`)."""
    values = np.asarray(values, dtype=np.float64)
    if bounds.model is EloModel.LOGISTIC:
        return llr_logistic(values, counts, bounds.elo0, bounds.elo1, score_range)
    return llr_normalized(values, counts, bounds.elo0, bounds.elo1, matches_per_group,
                          score_range)


@dataclass(frozen=True, slots=True)
class Estimate:
    """NEW's strength over OLD from the group scores so far, with 95% intervals.

    `score`: the mean group score (1/2: even); `elo`: its logistic Elo;
    `nelo`: normalized Elo per match; `los`: the likelihood of superiority, the
    probability (normal approximation) that the true mean score is above 1/2."""

    groups: int
    score: float
    score_low: float
    score_high: float
    elo: float
    elo_low: float
    elo_high: float
    nelo: float
    nelo_low: float
    nelo_high: float
    los: float


def logistic_elo(score: float) -> float:
    """-400 log10(1/score - 1), infinite at 0 and 1."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def estimate(scores: Iterable[float], matches_per_group: int) -> Estimate:
    """The estimate from group scores (`Estimate`); NaN figures for no groups."""
    x = np.asarray(list(scores), dtype=np.float64)
    n = x.size
    if n == 0:
        nan = math.nan
        return Estimate(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    mu = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    se = sd / math.sqrt(n)
    low, high = mu - Z95 * se, mu + Z95 * se
    if se > 0:
        los = STANDARD_NORMAL.cdf((mu - 0.5) / se)
        per_match_sd = sd * math.sqrt(matches_per_group)
        nelo, nelo_low, nelo_high = (NELO_PER_T * (m - 0.5) / per_match_sd
                                     for m in (mu, low, high))
    else:
        los = 1.0 if mu > 0.5 else 0.0 if mu < 0.5 else 0.5
        nelo = nelo_low = nelo_high = math.copysign(math.inf, mu - 0.5) if mu != 0.5 else 0.0
    return Estimate(n, mu, low, high, logistic_elo(mu), logistic_elo(low), logistic_elo(high),
                    nelo, nelo_low, nelo_high, los)


@dataclass(frozen=True, slots=True)
class SprtStatus:
    """A test's state at one moment: what progress lines and `--json` show."""

    groups: int
    matches: int
    llr: float
    lower: float
    upper: float
    verdict: Verdict
    estimate: Estimate


@dataclass
class SequentialTest:
    """One SPRT, fed one group score at a time (`add`). Rebuild a stored test by
    adding its stored group scores again: the state is only the scores."""

    bounds: SprtBounds
    matches_per_group: int
    max_matches: int | None = None
    score_range: tuple[float, float] = (0.0, 1.0)
    scores: list[float] = field(default_factory=list)
    _llr: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.matches_per_group < 1:
            raise ValueError("matches_per_group must be at least 1")
        if self.max_matches is not None and self.max_matches < self.matches_per_group:
            raise ValueError("max_matches must allow at least one deal group")

    def add(self, score: float) -> None:
        if not math.isfinite(score):
            raise ValueError(f"a group score must be finite, got {score}")
        self.scores.append(float(score))
        self._llr = None

    @property
    def groups(self) -> int:
        return len(self.scores)

    @property
    def matches(self) -> int:
        return len(self.scores) * self.matches_per_group

    @property
    def llr(self) -> float:
        if self._llr is None:
            if not self.scores:
                self._llr = 0.0
            else:
                seen = Counter(self.scores)
                values = np.array(sorted(seen), dtype=np.float64)
                counts = np.array([seen[v] for v in sorted(seen)], dtype=np.float64)
                self._llr = float(llr(self.bounds, values, counts, self.matches_per_group,
                                      self.score_range))
        return self._llr

    def verdict(self) -> Verdict:
        return self.bounds.verdict(self.llr, self.matches, self.max_matches)

    def status(self) -> SprtStatus:
        return SprtStatus(self.groups, self.matches, self.llr, self.bounds.lower,
                          self.bounds.upper, self.verdict(),
                          estimate(self.scores, self.matches_per_group))
