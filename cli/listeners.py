"""Who holds a TCP port on this machine: the CLI sends its key only to a server its own user (or root)
started.

A TCP port on loopback belongs to whichever process binds it first, so a port the stack's gateway
usually holds can be taken by another local user while the stack is down, or before it starts. The
kernel records the owner of every socket: ``/proc/net/tcp`` and ``/proc/net/tcp6`` list each
listening socket's address, port and user id (the documented ``proc(5)`` format). A listener that
belongs to another user is refused before a single byte (an API key, a question) is sent to it.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from shared.hosts import is_loopback

PROC_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
LISTEN = "0A"


class UntrustedListenerError(RuntimeError):
    """The port is held by another user's process: nothing is sent to it."""


@dataclass(frozen=True)
class Listener:
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    port: int
    uid: int


def kernel_address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """An address as ``/proc/net/tcp*`` writes it: the bytes of each 32-bit word in host (little
    endian) order."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def listeners(port: int) -> list[Listener]:
    """Every socket listening on TCP ``port``, with its owner's user id."""
    found = []
    for table in PROC_TABLES:
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.append(Listener(kernel_address(address), port, int(fields[7])))
    return found


def serves(listener: Listener, host: str) -> bool:
    """Whether a connection to ``host`` could reach ``listener`` (its address, an IPv4 address
    written as IPv6, or a wildcard)."""
    address = listener.address
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified:
        return True
    return address.is_loopback if host == "localhost" else str(address) == host


def foreign_listener(host: str, port: int) -> Listener | None:
    """A listener on ``host:port`` (a loopback address) owned by neither this user nor root."""
    trusted = {os.geteuid(), 0}
    for listener in listeners(port):
        if serves(listener, host) and listener.uid not in trusted:
            return listener
    return None


def refuse_foreign_listener(host: str, port: int, what: str) -> None:
    """Raise :class:`UntrustedListenerError` when another user holds ``host:port`` on this machine;
    hosts elsewhere are not this machine's to check (TLS and the API key protect those)."""
    if not is_loopback(host):
        return
    listener = foreign_listener(host, port)
    if listener is not None:
        raise UntrustedListenerError(
            f"port {port} on {host} is held by another user's process (uid {listener.uid}), not by "
            f"{what}: nothing was sent to it. Stop that process, or set HINDSIGHT_GATEWAY_PORT to a "
            "free port and run `hindsight up`"
        )
