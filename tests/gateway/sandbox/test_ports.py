import socket
from pathlib import Path

from gateway.sandbox.ports import free_port


def _ephemeral_range() -> range:
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    return range(low, high + 1)


def test_a_free_port_is_never_one_an_outgoing_connection_may_be_given_meanwhile() -> None:
    # Every outgoing connection on the machine takes its local port from the ephemeral range; a
    # port picked there and bound a moment later by gunicorn or redis-server can be gone by then.
    ephemeral = _ephemeral_range()
    ports = {free_port() for _ in range(50)}
    assert not ports & set(ephemeral)
    assert all(port >= 1024 for port in ports)


def test_a_free_port_can_be_bound() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port()))
