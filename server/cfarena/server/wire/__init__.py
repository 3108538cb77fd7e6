"""The referee's side of arena.proto: encoding what it sends to bots.

- `encode`: domain values -> protocol messages (`*_to_proto`, `turn_message`,
  `match_end_to_proto`, ...), the reference encoding;
- `turn_encoder.TurnEncoder`: a match's Turns as wire bytes, incrementally
  (the referee's hot path; the same bytes as `encode.turn_message_bytes`);
- `raw`: the hand-rolled protobuf wire bytes both of them write.

Bots only decode (`cfarena.sdk.convert`, in the `cfarena-sdk` distribution);
the enum numbers both directions use live there, once.
"""
