from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MoveKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MOVE_KIND_UNSPECIFIED: _ClassVar[MoveKind]
    MOVE_KIND_PLAY: _ClassVar[MoveKind]
    MOVE_KIND_DRAW: _ClassVar[MoveKind]
    MOVE_KIND_PASS: _ClassVar[MoveKind]

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_KIND_UNSPECIFIED: _ClassVar[EventKind]
    EVENT_KIND_ROUND_START: _ClassVar[EventKind]
    EVENT_KIND_DRAW_OFF: _ClassVar[EventKind]
    EVENT_KIND_CENTRE: _ClassVar[EventKind]
    EVENT_KIND_PLAY: _ClassVar[EventKind]
    EVENT_KIND_DRAW: _ClassVar[EventKind]
    EVENT_KIND_PASS: _ClassVar[EventKind]
    EVENT_KIND_ROUND_END: _ClassVar[EventKind]

class FaultKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAULT_KIND_UNSPECIFIED: _ClassVar[FaultKind]
    FAULT_KIND_TIMEOUT: _ClassVar[FaultKind]
    FAULT_KIND_ILLEGAL: _ClassVar[FaultKind]
    FAULT_KIND_PROTOCOL: _ClassVar[FaultKind]
    FAULT_KIND_DISCONNECT: _ClassVar[FaultKind]
    FAULT_KIND_LIMIT: _ClassVar[FaultKind]
MOVE_KIND_UNSPECIFIED: MoveKind
MOVE_KIND_PLAY: MoveKind
MOVE_KIND_DRAW: MoveKind
MOVE_KIND_PASS: MoveKind
EVENT_KIND_UNSPECIFIED: EventKind
EVENT_KIND_ROUND_START: EventKind
EVENT_KIND_DRAW_OFF: EventKind
EVENT_KIND_CENTRE: EventKind
EVENT_KIND_PLAY: EventKind
EVENT_KIND_DRAW: EventKind
EVENT_KIND_PASS: EventKind
EVENT_KIND_ROUND_END: EventKind
FAULT_KIND_UNSPECIFIED: FaultKind
FAULT_KIND_TIMEOUT: FaultKind
FAULT_KIND_ILLEGAL: FaultKind
FAULT_KIND_PROTOCOL: FaultKind
FAULT_KIND_DISCONNECT: FaultKind
FAULT_KIND_LIMIT: FaultKind

class Tile(_message.Message):
    __slots__ = ("a", "b")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    a: int
    b: int
    def __init__(self, a: _Optional[int] = ..., b: _Optional[int] = ...) -> None: ...

class Move(_message.Message):
    __slots__ = ("kind", "tile", "parent", "key")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TILE_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    kind: MoveKind
    tile: Tile
    parent: int
    key: str
    def __init__(self, kind: _Optional[_Union[MoveKind, str]] = ..., tile: _Optional[_Union[Tile, _Mapping]] = ..., parent: _Optional[int] = ..., key: _Optional[str] = ...) -> None: ...

class Rules(_message.Message):
    __slots__ = ("preset", "players", "set_size", "hand_size", "start", "spokes", "toes", "draw", "play_drawn", "boneyard_reserve", "double_blank", "rounds", "end_at_score", "tie_break")
    PRESET_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    SET_SIZE_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    SPOKES_FIELD_NUMBER: _ClassVar[int]
    TOES_FIELD_NUMBER: _ClassVar[int]
    DRAW_FIELD_NUMBER: _ClassVar[int]
    PLAY_DRAWN_FIELD_NUMBER: _ClassVar[int]
    BONEYARD_RESERVE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_BLANK_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    END_AT_SCORE_FIELD_NUMBER: _ClassVar[int]
    TIE_BREAK_FIELD_NUMBER: _ClassVar[int]
    preset: str
    players: int
    set_size: int
    hand_size: int
    start: str
    spokes: int
    toes: int
    draw: str
    play_drawn: str
    boneyard_reserve: int
    double_blank: int
    rounds: int
    end_at_score: int
    tie_break: str
    def __init__(self, preset: _Optional[str] = ..., players: _Optional[int] = ..., set_size: _Optional[int] = ..., hand_size: _Optional[int] = ..., start: _Optional[str] = ..., spokes: _Optional[int] = ..., toes: _Optional[int] = ..., draw: _Optional[str] = ..., play_drawn: _Optional[str] = ..., boneyard_reserve: _Optional[int] = ..., double_blank: _Optional[int] = ..., rounds: _Optional[int] = ..., end_at_score: _Optional[int] = ..., tie_break: _Optional[str] = ...) -> None: ...

class TimeControl(_message.Message):
    __slots__ = ("move_timeout_ms", "bank_ms", "increment_ms", "strikes")
    MOVE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    INCREMENT_MS_FIELD_NUMBER: _ClassVar[int]
    STRIKES_FIELD_NUMBER: _ClassVar[int]
    move_timeout_ms: int
    bank_ms: int
    increment_ms: int
    strikes: int
    def __init__(self, move_timeout_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ..., increment_ms: _Optional[int] = ..., strikes: _Optional[int] = ...) -> None: ...

class PlacedTile(_message.Message):
    __slots__ = ("node", "tile", "parent", "open_value", "capacity", "children")
    NODE_FIELD_NUMBER: _ClassVar[int]
    TILE_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    OPEN_VALUE_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    node: int
    tile: Tile
    parent: int
    open_value: int
    capacity: int
    children: int
    def __init__(self, node: _Optional[int] = ..., tile: _Optional[_Union[Tile, _Mapping]] = ..., parent: _Optional[int] = ..., open_value: _Optional[int] = ..., capacity: _Optional[int] = ..., children: _Optional[int] = ...) -> None: ...

class Observation(_message.Message):
    __slots__ = ("seat", "round_index", "round_double", "layout", "pending", "hand", "hand_sizes", "boneyard_size", "drawable", "drawn_tile", "round_scores", "totals", "event_count")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    ROUND_DOUBLE_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    HAND_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZES_FIELD_NUMBER: _ClassVar[int]
    BONEYARD_SIZE_FIELD_NUMBER: _ClassVar[int]
    DRAWABLE_FIELD_NUMBER: _ClassVar[int]
    DRAWN_TILE_FIELD_NUMBER: _ClassVar[int]
    ROUND_SCORES_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    round_index: int
    round_double: Tile
    layout: _containers.RepeatedCompositeFieldContainer[PlacedTile]
    pending: int
    hand: _containers.RepeatedCompositeFieldContainer[Tile]
    hand_sizes: _containers.RepeatedScalarFieldContainer[int]
    boneyard_size: int
    drawable: int
    drawn_tile: Tile
    round_scores: _containers.RepeatedCompositeFieldContainer[RoundScores]
    totals: _containers.RepeatedScalarFieldContainer[int]
    event_count: int
    def __init__(self, seat: _Optional[int] = ..., round_index: _Optional[int] = ..., round_double: _Optional[_Union[Tile, _Mapping]] = ..., layout: _Optional[_Iterable[_Union[PlacedTile, _Mapping]]] = ..., pending: _Optional[int] = ..., hand: _Optional[_Iterable[_Union[Tile, _Mapping]]] = ..., hand_sizes: _Optional[_Iterable[int]] = ..., boneyard_size: _Optional[int] = ..., drawable: _Optional[int] = ..., drawn_tile: _Optional[_Union[Tile, _Mapping]] = ..., round_scores: _Optional[_Iterable[_Union[RoundScores, _Mapping]]] = ..., totals: _Optional[_Iterable[int]] = ..., event_count: _Optional[int] = ...) -> None: ...

class RoundScores(_message.Message):
    __slots__ = ("scores",)
    SCORES_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, scores: _Optional[_Iterable[int]] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("index", "kind", "round_index", "seat", "tile", "node", "parent", "scores", "round_end")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ROUND_INDEX_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TILE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    ROUND_END_FIELD_NUMBER: _ClassVar[int]
    index: int
    kind: EventKind
    round_index: int
    seat: int
    tile: Tile
    node: int
    parent: int
    scores: _containers.RepeatedScalarFieldContainer[int]
    round_end: str
    def __init__(self, index: _Optional[int] = ..., kind: _Optional[_Union[EventKind, str]] = ..., round_index: _Optional[int] = ..., seat: _Optional[int] = ..., tile: _Optional[_Union[Tile, _Mapping]] = ..., node: _Optional[int] = ..., parent: _Optional[int] = ..., scores: _Optional[_Iterable[int]] = ..., round_end: _Optional[str] = ...) -> None: ...

class BotMessage(_message.Message):
    __slots__ = ("hello", "action")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    action: Action
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., action: _Optional[_Union[Action, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("token", "protocol", "capacity", "client", "version")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    token: str
    protocol: str
    capacity: int
    client: str
    version: str
    def __init__(self, token: _Optional[str] = ..., protocol: _Optional[str] = ..., capacity: _Optional[int] = ..., client: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ("match_id", "turn_id", "move_index")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MOVE_INDEX_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    turn_id: int
    move_index: int
    def __init__(self, match_id: _Optional[str] = ..., turn_id: _Optional[int] = ..., move_index: _Optional[int] = ...) -> None: ...

class RefereeMessage(_message.Message):
    __slots__ = ("welcome", "match_start", "turn", "match_end", "notice")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    MATCH_START_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    MATCH_END_FIELD_NUMBER: _ClassVar[int]
    NOTICE_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    match_start: MatchStart
    turn: Turn
    match_end: MatchEnd
    notice: Notice
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., match_start: _Optional[_Union[MatchStart, _Mapping]] = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., match_end: _Optional[_Union[MatchEnd, _Mapping]] = ..., notice: _Optional[_Union[Notice, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("bot_name", "server_version", "capacity")
    BOT_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    bot_name: str
    server_version: str
    capacity: int
    def __init__(self, bot_name: _Optional[str] = ..., server_version: _Optional[str] = ..., capacity: _Optional[int] = ...) -> None: ...

class MatchStart(_message.Message):
    __slots__ = ("match_id", "seat", "rules", "seat_names", "time_control", "tournament_id")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SEAT_NAMES_FIELD_NUMBER: _ClassVar[int]
    TIME_CONTROL_FIELD_NUMBER: _ClassVar[int]
    TOURNAMENT_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    seat: int
    rules: Rules
    seat_names: _containers.RepeatedScalarFieldContainer[str]
    time_control: TimeControl
    tournament_id: int
    def __init__(self, match_id: _Optional[str] = ..., seat: _Optional[int] = ..., rules: _Optional[_Union[Rules, _Mapping]] = ..., seat_names: _Optional[_Iterable[str]] = ..., time_control: _Optional[_Union[TimeControl, _Mapping]] = ..., tournament_id: _Optional[int] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("match_id", "turn_id", "observation", "legal_moves", "events", "deadline_ms", "bank_ms")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    LEGAL_MOVES_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    turn_id: int
    observation: Observation
    legal_moves: _containers.RepeatedCompositeFieldContainer[Move]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    deadline_ms: int
    bank_ms: int
    def __init__(self, match_id: _Optional[str] = ..., turn_id: _Optional[int] = ..., observation: _Optional[_Union[Observation, _Mapping]] = ..., legal_moves: _Optional[_Iterable[_Union[Move, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., deadline_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ...) -> None: ...

class Fault(_message.Message):
    __slots__ = ("seat", "kind", "detail", "turn_id")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    seat: int
    kind: FaultKind
    detail: str
    turn_id: int
    def __init__(self, seat: _Optional[int] = ..., kind: _Optional[_Union[FaultKind, str]] = ..., detail: _Optional[str] = ..., turn_id: _Optional[int] = ...) -> None: ...

class MatchEnd(_message.Message):
    __slots__ = ("match_id", "events", "totals", "ranks", "round_scores", "faults", "forfeited", "reason")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    ROUND_SCORES_FIELD_NUMBER: _ClassVar[int]
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    FORFEITED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    events: _containers.RepeatedCompositeFieldContainer[Event]
    totals: _containers.RepeatedScalarFieldContainer[int]
    ranks: _containers.RepeatedScalarFieldContainer[int]
    round_scores: _containers.RepeatedCompositeFieldContainer[RoundScores]
    faults: _containers.RepeatedCompositeFieldContainer[Fault]
    forfeited: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, match_id: _Optional[str] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., totals: _Optional[_Iterable[int]] = ..., ranks: _Optional[_Iterable[int]] = ..., round_scores: _Optional[_Iterable[_Union[RoundScores, _Mapping]]] = ..., faults: _Optional[_Iterable[_Union[Fault, _Mapping]]] = ..., forfeited: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class Notice(_message.Message):
    __slots__ = ("match_id", "text")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    text: str
    def __init__(self, match_id: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ServerInfo(_message.Message):
    __slots__ = ("server_version", "protocols", "presets", "max_message_bytes")
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOLS_FIELD_NUMBER: _ClassVar[int]
    PRESETS_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    server_version: str
    protocols: _containers.RepeatedScalarFieldContainer[str]
    presets: _containers.RepeatedScalarFieldContainer[str]
    max_message_bytes: int
    def __init__(self, server_version: _Optional[str] = ..., protocols: _Optional[_Iterable[str]] = ..., presets: _Optional[_Iterable[str]] = ..., max_message_bytes: _Optional[int] = ...) -> None: ...
