"""Legal-move generation (RULES.md §2-§3): `Legality`, a layer of `MatchState`.

Which moves the seat to move has now, in canonical order (plays sorted by
tile then parent node, then DRAW or PASS), and why a move is not among them.
A mixin over `StateFields` (see `state_fields.py` for how `MatchState` is put
together): it reads the state's fields and caches the legal moves in
`_legal`/`_legal_keys` until the next move; it changes nothing else.
"""

from __future__ import annotations

from cfarena.engine.moves import DRAW, PASS, Move
from cfarena.engine.rules import Draw, PlayDrawn
from cfarena.engine.state_fields import NO_NODE, NO_TILE, StateFields
from cfarena.engine.tile_codes import END_A, END_B, code_of, play_key, play_move


class Legality(StateFields):
    """The legal moves of `current_seat`, and why a move is illegal."""

    __slots__ = ()

    def legal(self) -> tuple[Move, ...]:
        """Legal moves of `current_seat` in canonical order (cached until the next move)."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal

    def _compute_legal(self) -> tuple[Move, ...]:
        seat = self.current_seat
        self._legal_keys = []
        if seat is None:
            return ()
        nopen = self._nopen
        drawn = self._drawn
        if drawn != NO_TILE:
            keys = self._plays_of(drawn)
            if keys:
                keys.sort()
                self._legal_keys = keys
                moves = [play_move(k) for k in keys]
                if self.rules.play_drawn is PlayDrawn.MAY:
                    moves.append(PASS)
                return tuple(moves)
            if self.rules.draw is Draw.UNTIL_PLAYABLE and self._can_draw():
                return (DRAW,)
            return (PASS,)
        hand = self._hands[seat]
        keys = []
        pending = self._pending
        if pending != NO_NODE:
            v = nopen[pending]
            if self._vcount[seat][v]:
                keys = [play_key(c, pending) for c in hand if END_A[c] == v or END_B[c] == v]
        else:
            obv = self._obv
            for c in hand:
                a = END_A[c]
                for node in obv[a]:
                    keys.append(c << 8 | node)
                b = END_B[c]
                if b != a:
                    for node in obv[b]:
                        keys.append(c << 8 | node)
        if keys:
            keys.sort()
            self._legal_keys = keys
            return tuple([play_move(k) for k in keys])
        return (DRAW,) if self._can_draw() else (PASS,)

    def _plays_of(self, code: int) -> list[int]:
        pending = self._pending
        a = END_A[code]
        b = END_B[code]
        if pending != NO_NODE:
            v = self._nopen[pending]
            return [play_key(code, pending)] if (a == v or b == v) else []
        keys = [play_key(code, node) for node in self._obv[a]]
        if b != a:
            keys += [play_key(code, node) for node in self._obv[b]]
        return keys

    def _can_draw(self) -> bool:
        return len(self._bone) > self.rules.boneyard_reserve

    def why_illegal(self, move: Move) -> str:
        """Why `move` is not among the legal moves (public facts and the mover's hand)."""
        seat = self.current_seat
        if seat is None:
            return "the match is over" if self.is_over else "the round is over"
        legal = self.legal()
        who = f"seat {seat}"
        if move.tile is None:
            if legal and legal[0].tile is not None:
                return f"{who} has a legal play and must play"
            return f"{who} must {legal[0].key}, not {move.kind.value}"
        tile, parent = move.tile, move.parent
        if self._drawn != NO_TILE and code_of(tile) != self._drawn:
            return f"{who} drew a tile this turn and may only play that tile or pass"
        if code_of(tile) not in self._hands[seat]:
            return f"{tile} is not in the hand of {who}"
        if parent is None or not (0 <= parent < len(self._ntile)):
            return f"there is no node #{parent} on the layout"
        if self._nkids[parent] >= self._ncap[parent]:
            return f"node #{parent} has no free end"
        if self._pending != NO_NODE and parent != self._pending:
            return f"the double at #{self._pending} is pending: only plays on it are legal"
        return f"{tile} does not contain the open end {self._nopen[parent]} of #{parent}"
