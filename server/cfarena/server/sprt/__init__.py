"""The statistics of `cfarena sprt`: is NEW better than OLD, with as few matches as possible.

Pure and synchronous: no storage, no processes, no clock. One job per module:

- `deal_group`: who sits where in a deal group (every rotation of one deal, and
  of its mirror with NEW and OLD swapped), each seat's placement or point result and the
  group's head-to-head score in [0, 1];
- `luck`: the luck of each seat's draws in points and its luck-adjusted result, from
  a match's moves (a `MatchRecord` or a game log), by a value estimate frozen in code;
- `match_results`: a finished match's seats and results: points, luck-adjusted
  points or placement (`ScoreKind`, what `--score` picks);
- `llr`: the generalized log-likelihood ratio of the group scores in the normal
  model (fishtest's `LLR_alt`; its normalized hypotheses exactly), batched with
  numpy so that thousands of simulated tests run in seconds;
- `sequential`: the test itself (`SprtBounds`, `SequentialTest`, `Verdict`) and
  what it reports (`Estimate`: Elo difference with its 95% interval, LOS);
- `simulation`: many tests at once on simulated group scores (error rates,
  test lengths).

docs/TESTING_BOTS.md says what the numbers mean and what they cost.
"""
