"""Health checking and server reflection on a real referee (what grpcurl would use)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from cfarena.engine import Rules
from cfarena.server.referee import RefereeServer, TimeControl, TokenRegistry

from ..referee.harness import table

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SHORT = Rules.preset("standard").with_options(rounds=1)


def _reflect(address: str) -> tuple[list[str], list[str], str]:
    """Through reflection only: the services, the Arena's methods, and a GetInfo call
    made with the descriptors fetched from the server (as grpcurl does)."""
    from google.protobuf import message_factory

    with grpc.insecure_channel(address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = list(database.get_services())
        pool = descriptor_pool.DescriptorPool(database)
        arena = pool.FindServiceByName("cfarena.v1.Arena")
        methods = [m.name for m in arena.methods]
        get_info = arena.methods_by_name["GetInfo"]
        request_cls = message_factory.GetMessageClass(get_info.input_type)
        reply_cls = message_factory.GetMessageClass(get_info.output_type)
        call = channel.unary_unary("/cfarena.v1.Arena/GetInfo",
                                   request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=reply_cls.FromString)
        reply = call(request_cls(), timeout=5)
        return services, methods, str(reply.server_version)


def test_reflection_lists_and_describes_the_services(tmp_path: Path) -> None:
    async def main() -> None:
        server = RefereeServer(TokenRegistry())
        await server.start()
        try:
            services, methods, version = await asyncio.to_thread(_reflect, server.address)
        finally:
            await server.stop(grace=0)
        assert set(services) == {"cfarena.v1.Arena", "grpc.health.v1.Health",
                                 "grpc.reflection.v1alpha.ServerReflection"}
        assert sorted(methods) == ["GetInfo", "Play"]
        assert version.startswith("cfarena ")

    asyncio.run(main())


def test_health_is_serving_while_running_and_not_serving_while_stopping(
        tmp_path: Path) -> None:
    async def main() -> None:
        async with table(tmp_path, ["slow1", "slow2"]) as t:
            for name in ("slow1", "slow2"):  # bots that never answer: the match runs on
                t.raw(name, "hang", "--after", "0")
            await t.server.wait_for_bots(["slow1", "slow2"], timeout=30)
            channel = grpc.aio.insecure_channel(t.server.address)
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                for service in ("", "cfarena.v1.Arena"):
                    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service),
                                             timeout=5)
                    assert reply.status == SERVING, service
                try:
                    await stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"),
                                     timeout=5)
                    raise AssertionError("an unknown service has no health")
                except grpc.aio.AioRpcError as err:
                    assert err.code() == grpc.StatusCode.NOT_FOUND
                watch = stub.Watch(health_pb2.HealthCheckRequest(service="cfarena.v1.Arena"))
                assert (await watch.read()).status == SERVING
                loop = asyncio.get_running_loop()
                match = loop.create_task(t.server.run_match(
                    "m", SHORT, 1, ["slow1", "slow2"], TimeControl(move_timeout_ms=30_000)))
                await asyncio.sleep(0.5)  # seated, waiting for an answer
                # the stop gives the match its grace: the watcher sees NOT_SERVING at once
                stopping = loop.create_task(t.server.stop(grace=3.0))
                changed = await asyncio.wait_for(watch.read(), 2.0)
                assert changed.status == NOT_SERVING
                assert not stopping.done() and not match.done()
                await stopping
                record = await asyncio.gather(match, return_exceptions=True)
                assert isinstance(record[0], asyncio.CancelledError)
            finally:
                await channel.close()

    asyncio.run(main())
