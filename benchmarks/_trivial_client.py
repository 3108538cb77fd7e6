"""Trivial clients for benchmarks/referee.py (run as a subprocess).

    referee SERVER TOKEN [TOKEN ...] --capacity C [--streams K]
        K streams per token (default 1), each of capacity C
    raw SERVER STREAMS                       ping-pong against the bare echo server

Both modes run the same per-message code (`_answer`): parse each incoming
RefereeMessage like a minimal bot would, answer a Turn with move 0 of that
Turn's match and turn_id, and write the answer. The only difference is the
server on the other end, so the ratio of the two rates is the referee's cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

import grpc

from cfarena.v1 import arena_pb2 as pb


def _answer(msg: pb.RefereeMessage) -> pb.BotMessage | None:
    if msg.WhichOneof("kind") != "turn":
        return None
    t = msg.turn
    return pb.BotMessage(action=pb.Action(match_id=t.match_id, turn_id=t.turn_id, move_index=0))


async def _serve(call: Any) -> None:
    async for msg in call:
        answer = _answer(msg)
        if answer is not None:
            await call.write(answer)


def _method(channel: grpc.aio.Channel, path: str) -> Any:
    return channel.stream_stream(
        path,
        request_serializer=pb.BotMessage.SerializeToString,
        response_deserializer=pb.RefereeMessage.FromString,
    )


async def referee_stream(server: str, token: str, capacity: int) -> None:
    async with grpc.aio.insecure_channel(server) as channel:
        call = _method(channel, "/cfarena.v1.Arena/Play")()
        await call.write(pb.BotMessage(hello=pb.Hello(token=token, protocol="cfarena.v1",
                                                      capacity=capacity)))
        await _serve(call)


async def raw_stream(server: str) -> None:
    async with grpc.aio.insecure_channel(server) as channel:
        call = _method(channel, "/bench.Echo/Ping")()
        await call.write(pb.BotMessage(action=pb.Action()))  # starts the ping-pong
        await _serve(call)


async def main(argv: list[str]) -> None:
    mode, server = argv[0], argv[1]
    if mode == "referee":
        capacity = int(argv[argv.index("--capacity") + 1])
        streams = int(argv[argv.index("--streams") + 1]) if "--streams" in argv else 1
        tokens = [a for a in argv[2:argv.index("--capacity")] if not a.startswith("--")]
        await asyncio.gather(*(referee_stream(server, t, capacity)
                               for t in tokens for _ in range(streams)))
    else:
        await asyncio.gather(*(raw_stream(server) for _ in range(int(argv[2]))))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, grpc.aio.AioRpcError):
        asyncio.run(main(sys.argv[1:]))
