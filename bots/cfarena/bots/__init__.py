"""Sample bots for cfarena, each runnable as `python -m cfarena.sdk run cfarena.bots.NAME`.

- `cfarena.bots.random_bot.RandomBot`: a uniformly random legal move, seeded per match.
- `cfarena.bots.greedy.GreedyBot`: the heaviest playable tile first.
"""

from __future__ import annotations
