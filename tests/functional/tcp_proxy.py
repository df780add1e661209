"""A TCP proxy a test can cut: "the broker" (or "the database") goes away for one cluster only.

The shared RabbitMQ and PostgreSQL keep running for every other test; only the connections
made through this proxy see the outage::

    proxy = TcpProxy(5672)          # listens on 127.0.0.1:<free port>
    url = 'rabbit://guest:guest@127.0.0.1:%d/vhost' % proxy.port
    proxy.cut()                     # every connection dropped, new ones refused
    proxy.restore()                 # listening again on the same port

Threads, not asyncio: the test process already runs oslo.messaging's threads, and a pair of
pump threads per connection is plenty for a handful of services.
"""
import socket
import threading

_BUFFER = 65536


class TcpProxy:
    """Forwards ``address:<port>`` (127.0.0.1 by default) to ``target_host:target_port``
    until ``cut()``. ``make_socket`` makes the listening socket: one of another network
    namespace puts the proxy's end there (``netns.NetnsProxy``)."""

    def __init__(self, target_port, target_host='127.0.0.1', port=0, address='127.0.0.1',
                 make_socket=None):
        self.target = (target_host, target_port)
        self._address = address
        self._make_socket = make_socket or (
            lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        self._lock = threading.Lock()
        self._sockets = set()   # both ends of every live connection
        self._listener = None
        self.connections_made = 0
        self.port = self._listen(port)

    # -- control ----------------------------------------------------------------------

    @property
    def is_cut(self):
        return self._listener is None

    def cut(self):
        """Drop every connection and stop listening: new connections are refused."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            _close(listener)
        for sock in sockets:
            _close(sock)

    def restore(self):
        """Listen again on the same port (connections are made afresh by the clients)."""
        if self.is_cut:
            self._listen(self.port)

    def close(self):
        self.cut()

    def live_connections(self):
        with self._lock:
            return len(self._sockets) // 2

    # -- internals ----------------------------------------------------------------------

    def _listen(self, port):
        listener = self._make_socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self._address, port))
        listener.listen(128)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept_loop, args=(listener,), daemon=True,
                         name='tcp-proxy-accept-%d' % listener.getsockname()[1]).start()
        return listener.getsockname()[1]

    def _accept_loop(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # cut while connecting
                    _close(client)
                    _close(upstream)
                    return
                self._sockets.update((client, upstream))
                self.connections_made += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True,
                                 name='tcp-proxy-pump').start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(_BUFFER)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._sockets.discard(source)
            self._sockets.discard(sink)
        _close(source)
        _close(sink)


def _close(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
