"""Loopback ports for tests."""
import socket


def closed_port():
    """A local TCP port nothing listens on: bound, then released when the socket closes
    (free for a server a test starts on it, refused for a client that connects to it)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]
