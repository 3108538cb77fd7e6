"""Trivial clients for benchmarks/referee.py (run as a subprocess).

    referee SERVER TOKEN [TOKEN ...] --capacity C [--streams K]
        K streams per token (default 1), each of capacity C; answer index 0
    raw SERVER STREAMS REQUEST_HEX                  ping-pong: send, wait for the reply, repeat

Both parse each incoming message exactly like a minimal bot would and nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

import grpc

from cfarena.v1 import arena_pb2 as pb


async def referee_stream(server: str, token: str, capacity: int) -> None:
    async with grpc.aio.insecure_channel(server) as channel:
        play = channel.stream_stream(
            "/cfarena.v1.Arena/Play",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=pb.RefereeMessage.FromString,
        )
        call = play()
        await call.write(pb.BotMessage(hello=pb.Hello(token=token, protocol="cfarena.v1",
                                                      capacity=capacity)))
        async for msg in call:
            if msg.WhichOneof("kind") == "turn":
                t = msg.turn
                await call.write(pb.BotMessage(action=pb.Action(
                    match_id=t.match_id, turn_id=t.turn_id, move_index=0)))


async def raw_stream(server: str, request: bytes) -> None:
    async with grpc.aio.insecure_channel(server) as channel:
        echo = channel.stream_stream(
            "/bench.Echo/Ping",
            request_serializer=lambda b: b,
            response_deserializer=pb.RefereeMessage.FromString,
        )
        call = echo()
        while True:
            await call.write(request)
            msg = await call.read()
            if msg is grpc.aio.EOF:
                return
            _ = msg.turn.match_id, msg.turn.turn_id  # what a bot reads


async def main(argv: list[str]) -> None:
    mode, server = argv[0], argv[1]
    if mode == "referee":
        capacity = int(argv[argv.index("--capacity") + 1])
        streams = int(argv[argv.index("--streams") + 1]) if "--streams" in argv else 1
        tokens = [a for a in argv[2:argv.index("--capacity")] if not a.startswith("--")]
        await asyncio.gather(*(referee_stream(server, t, capacity)
                               for t in tokens for _ in range(streams)))
    else:
        streams, request = int(argv[2]), bytes.fromhex(argv[3])
        await asyncio.gather(*(raw_stream(server, request) for _ in range(streams)))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, grpc.aio.AioRpcError):
        asyncio.run(main(sys.argv[1:]))
