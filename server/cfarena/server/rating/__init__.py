"""Ratings from match ranks: the pairwise games of a match (`pairwise`), incremental
multiplayer Elo (`elo`), the order-free Bradley-Terry fit (`bradley_terry`) and the
online Weng-Lin rating of the arena's ladder (`online`).

The modules are imported by name; this package file loads none of them.
"""
