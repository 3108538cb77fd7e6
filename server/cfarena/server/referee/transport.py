"""How the referee's gRPC port behaves on the network: keepalive and TLS.

Keepalive (docs/OPERATIONS.md): the referee pings every bot connection after
`time_ms` without a ping and drops it when the ping is not acknowledged within
`timeout_ms`, so a bot whose machine or process froze (its TCP connection still
open, nothing answering) is noticed within `time_ms + timeout_ms`, its seats
faulted as a `disconnect` and its slots freed. It accepts the bots' own pings
every `min_client_ping_ms` or slower (the Python SDK pings every 10 s); faster
ones earn GOAWAY "too_many_pings" after a few strikes, as gRPC does by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc


@dataclass(frozen=True, slots=True)
class Keepalive:
    time_ms: int = 5_000  # ping a connection this long after the last ping
    timeout_ms: int = 5_000  # drop it if the ping is not acknowledged within this
    min_client_ping_ms: int = 5_000  # the fastest client pings accepted

    def server_options(self) -> list[tuple[str, Any]]:
        return [
            ("grpc.keepalive_time_ms", self.time_ms),
            ("grpc.keepalive_timeout_ms", self.timeout_ms),
            # what actually bounds the wait for a ping's ack in this gRPC (1.85): without
            # it a frozen peer is dropped only after its default, 60 s
            ("grpc.http2.ping_timeout_ms", self.timeout_ms),
            # ping idle connections too: a bot waiting for a table is connected
            ("grpc.keepalive_permit_without_calls", 1),
            # keep pinging while no data flows (gRPC's default stops after 2 pings)
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", self.min_client_ping_ms),
        ]


DEFAULT_KEEPALIVE = Keepalive()


class TlsError(ValueError):
    """A certificate or key file that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The PEM certificate chain and private key the bots' port serves TLS with."""

    cert_chain: bytes
    private_key: bytes

    @classmethod
    def load(cls, cert: Path, key: Path) -> ServerTls:
        """Read both files; TlsError names the first one missing, unreadable or not PEM."""
        return cls(_read_pem(cert, "--tls-cert", b"CERTIFICATE"),
                   _read_pem(key, "--tls-key", b"PRIVATE KEY"))

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.private_key, self.cert_chain)])


def _read_pem(path: Path, option: str, label: bytes) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TlsError(f"{option} {path}: no such file") from None
    except IsADirectoryError:
        raise TlsError(f"{option} {path}: is a directory") from None
    except OSError as exc:
        raise TlsError(f"{option} {path}: cannot read it: "
                       f"{(exc.strerror or str(exc)).lower()}") from None
    if b"-----BEGIN " not in data or label not in data:
        raise TlsError(f"{option} {path}: not a PEM file with a {label.decode().lower()}")
    return data
