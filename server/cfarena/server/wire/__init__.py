"""The referee's side of arena.proto: encoding what it sends to bots.

- `encode`: domain values -> protocol messages (`*_to_proto`,
  `match_end_to_proto`, ...) and `turn_message_bytes`, the reference Turn
  encoding, with the checks every Turn encoding makes (`first_event_index`,
  `offered_moves`);
- `turn_encoder.TurnEncoder`: a match's Turns as wire bytes, incrementally
  (the referee's hot path; the same bytes as `encode.turn_message_bytes`);
- `raw`: the hand-rolled protobuf wire bytes both of them write.

Bots only decode (`cfarena.sdk.convert`, in the `cfarena-sdk` distribution);
the enum numbers both directions use live there, once.
"""
