"""A bot written against the generated protobuf code only (no cfarena SDK).

Used by the referee tests as a real subprocess, well-behaved or misbehaving:

    python rawbot.py MODE --server HOST:PORT --token T [--after N] [--other MATCH_ID]

MODE: good | keep | noisy | slow | hang | crash | garbage | illegal | disconnect |
wrong_token | other_match | oversized. `good` answers every Turn with move 0;
`slow` does too, but each answer only after --delay-ms (and it prints every
Turn's turn_id, bank_ms and deadline_ms on a TURN line);
`keep` does too but answers PASS whenever it is offered (it keeps a drawn tile
that fits under play_drawn = may: a hidden choice); `noisy` answers move 0
too, but first with a wrong turn_id and then a second time. Misbehaviour starts at the (N+1)-th Turn
(--after N, default 2). It prints one line per notable thing (WELCOME, NOTICE,
END, STATUS) so the tests can check what the bot saw.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import time

import grpc

from cfarena.v1 import arena_pb2 as pb


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("--server", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--after", type=int, default=2)
    ap.add_argument("--other", default="")
    ap.add_argument("--capacity", type=int, default=1)
    ap.add_argument("--delay-ms", type=int, default=0)
    ns = ap.parse_args()

    outbox: queue.Queue[bytes | None] = queue.Queue()

    def requests():  # type: ignore[no-untyped-def]
        while True:
            item = outbox.get()
            if item is None:
                return
            yield item

    channel = grpc.insecure_channel(ns.server)
    play = channel.stream_stream(
        "/cfarena.v1.Arena/Play",
        request_serializer=lambda raw: raw,  # we send bytes, so garbage is possible
        response_deserializer=pb.RefereeMessage.FromString,
    )
    token = ns.token if ns.mode != "wrong_token" else "not-a-real-token"
    hello = pb.BotMessage(hello=pb.Hello(token=token, protocol="cfarena.v1",
                                         capacity=ns.capacity, client="rawbot"))
    outbox.put(hello.SerializeToString())
    turns = 0
    call = play(requests())
    try:
        for msg in call:
            kind = msg.WhichOneof("kind")
            if kind == "welcome":
                print("WELCOME", msg.welcome.bot_name, flush=True)
            elif kind == "notice":
                print("NOTICE", msg.notice.text, flush=True)
            elif kind == "match_end":
                print("END", msg.match_end.match_id, list(msg.match_end.ranks), flush=True)
            elif kind == "turn":
                turn = msg.turn
                turns += 1
                misbehave = ns.mode not in ("good", "keep", "noisy", "slow") and turns > ns.after
                if ns.mode == "slow":
                    print("TURN", turn.turn_id, turn.bank_ms, turn.deadline_ms, flush=True)
                    time.sleep(ns.delay_ms / 1000.0)
                index = 0
                if ns.mode == "keep":
                    kinds = [m.kind for m in turn.legal_moves]
                    if pb.MOVE_KIND_PASS in kinds:
                        index = kinds.index(pb.MOVE_KIND_PASS)
                action = pb.BotMessage(action=pb.Action(
                    match_id=turn.match_id, turn_id=turn.turn_id, move_index=index))
                if misbehave and ns.mode == "hang":
                    continue  # never answer
                if misbehave and ns.mode == "crash":
                    os._exit(3)
                if misbehave and ns.mode == "garbage":
                    outbox.put(b"\xff\xff\xff\x0fthis is not a protobuf message")
                    continue
                if misbehave and ns.mode == "illegal":
                    action.action.move_index = len(turn.legal_moves) + 5
                if misbehave and ns.mode == "disconnect":
                    call.cancel()
                    print("DISCONNECTED", flush=True)
                    time.sleep(30)  # stay alive: only the stream goes
                    return 0
                if misbehave and ns.mode == "oversized":
                    big = pb.BotMessage(hello=pb.Hello(client="x" * 200_000))
                    outbox.put(big.SerializeToString())
                    continue
                if ns.mode == "noisy":
                    wrong = pb.BotMessage(action=pb.Action(
                        match_id=turn.match_id, turn_id=turn.turn_id + 1000, move_index=0))
                    outbox.put(wrong.SerializeToString())
                    outbox.put(action.SerializeToString())  # and once more below
                if ns.mode == "other_match" and ns.other:
                    rogue = pb.BotMessage(action=pb.Action(
                        match_id=ns.other, turn_id=turn.turn_id, move_index=0))
                    outbox.put(rogue.SerializeToString())
                outbox.put(action.SerializeToString())
    except grpc.RpcError as err:
        print("STATUS", err.code().name, err.details(), flush=True)  # type: ignore[attr-defined]
        return 1
    finally:
        outbox.put(None)
        channel.close()
    print("STATUS OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
