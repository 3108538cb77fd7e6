"""SmartBot plays clearly better than RandomBot; the public-event inference it uses is sound."""

from __future__ import annotations

from cfarena.bots._features import TableView, read_voids
from cfarena.bots.random_bot import RandomBot
from cfarena.bots.smart import SmartBot, SmartPolicy
from cfarena.engine import (
    EventKind,
    MatchState,
    Move,
    Rules,
    Tile,
    apply_move,
    fallback_move,
    full_set,
    legal_moves,
    new_match,
    observe,
    visible_events,
)
from cfarena.sdk import Bot
from cfarena.sdk.local import play_match


def test_smart_beats_random() -> None:
    """40 single-round 4-player matches, two SmartBots against two RandomBots, seats rotated."""
    rules = Rules.preset("standard").with_options(rounds="single")
    per_round: dict[str, list[int]] = {"smart": [], "random": []}
    for seed in range(40):
        names = ["smart", "random", "smart", "random"]
        if seed % 2:
            names = names[1:] + names[:1]
        bots: list[Bot] = [SmartBot() if n == "smart" else RandomBot() for n in names]
        played = play_match(bots, rules, seed=seed, match_id=f"strength-{seed}")
        for r in played.state.round_outcomes:
            for seat, name in enumerate(names):
                per_round[name].append(r.scores[seat])
    smart = sum(per_round["smart"]) / len(per_round["smart"])
    rand = sum(per_round["random"]) / len(per_round["random"])
    # measured about 18 vs 38 points per round; ask for a clear but generous gap
    assert smart < 0.75 * rand, f"smart {smart:.1f} vs random {rand:.1f} points per round"


def _first_draw_on_pending() -> tuple[int, int, int]:
    """(seed, event index, seat) of a DRAW made while a double was pending."""
    rules = Rules.preset("standard").with_options(rounds="single")
    for seed in range(50):
        state = new_match(rules, 4, seed)
        while not state.is_over:
            moves = legal_moves(state)
            pending = state.pending
            seat = state.current_seat
            if moves[0].kind.value == "draw" and pending is not None and pending != 0:
                return seed, len(state.events), seat if seat is not None else -1
            apply_move(state, fallback_move(moves))
    raise AssertionError("no draw on a pending double in 50 seeds")


def test_a_draw_on_a_pending_double_marks_the_value_as_lacking() -> None:
    seed, _, drawer = _first_draw_on_pending()
    rules = Rules.preset("standard").with_options(rounds="single")
    state = new_match(rules, 4, seed)
    while True:
        moves = legal_moves(state)
        if moves[0].kind.value == "draw" and state.pending not in (None, 0):
            break
        apply_move(state, fallback_move(moves))
    pending = state.pending
    assert pending is not None
    value = state.layout()[pending].open_value
    apply_move(state, moves[0])  # the draw
    # it really held no tile of that value before the draw
    assert state.current_seat == drawer or state.events[-1].kind is not EventKind.DRAW
    observer = (drawer + 1) % 4
    history = visible_events(state, observer)
    obs = observe(state, observer)
    voids = read_voids(obs, history)
    assert voids[drawer][value] == 1.0
    view = TableView(obs, history)
    assert view.p_has[drawer][value] == 0.0
    # a seat we know nothing about keeps a positive estimate if unseen tiles show the value
    others = [s for s in range(4) if s not in (drawer, observer)]
    if view.unseen_count[value]:
        assert any(view.p_has[s][value] > 0.0 for s in others)


def test_voids_need_history() -> None:
    state = new_match(Rules.preset("standard"), 4, 3)
    obs = observe(state, 0)
    assert all(v == 0.0 for row in read_voids(obs, []) for v in row)


def test_smart_opens_a_double_it_can_feed_when_the_others_lack_it() -> None:
    """Centre 9-9 with one spoke; seat 0 plays 9-3, the others draw and pass on the 3 end.

    Holding 3-3, 3-8 and 3-7, SmartBot plays the 3-3 (the others just showed they
    lack 3s and it can feed the toes itself), where GreedyBot plays the heavier 3-8.
    """
    rules = Rules.preset("standard").with_options(rounds="single", spokes=1)
    mine = [Tile(3, 9), Tile(3, 3), Tile(3, 8), Tile(3, 7), Tile(0, 1)]
    threes = [t for t in full_set(9) if t.has(3) and t not in mine]
    rest = [t for t in full_set(9) if not t.has(3) and t not in mine and t != Tile(9, 9)]
    hands = [mine, rest[0:5], rest[5:10], rest[10:15]]
    boneyard = rest[15:] + threes  # the first draws show no 3
    state = MatchState.from_deal(rules, 4, hands, boneyard, first_seat=0)
    apply_move(state, Move.play(Tile(3, 9), 0))
    while state.current_seat != 0:
        apply_move(state, legal_moves(state)[0])  # draw, then pass (the drawn tile has no 3)
    assert [e.kind for e in state.events[-2:]] == [EventKind.DRAW, EventKind.PASS]
    moves = legal_moves(state)
    history = visible_events(state, 0)
    turn_obs = observe(state, 0)
    assert all(read_voids(turn_obs, history)[s][3] == 1.0 for s in (1, 2, 3))
    assert fallback_move(moves).tile == Tile(3, 8)  # the greedy choice
    assert SmartPolicy(turn_obs, history).best(moves).tile == Tile(3, 3)
    # without the public record of their draws the double is less attractive but still legal
    assert SmartPolicy(turn_obs, ()).best(moves) in moves
