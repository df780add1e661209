"""The e2e bench's yardstick: a bare oslo.messaging RPC server that echoes what it is sent.

Started like a minisched service (``python -m benchmarks.echo_server --config-file ...``):
eventlet-patched by ``minisched.cmd``, the same transport, RPC server factory and serializer
(``minisched.rpc.get_server``) as the scheduler, but no service record, manager or database.
Topic ``bench_echo``; logs "bench echo server ready" once listening.
"""
import sys
import time

import minisched.cmd  # noqa: F401  (eventlet monkey patching, as every minisched service)

import oslo_messaging as messaging  # noqa: E402

TOPIC = 'bench_echo'


class EchoEndpoint:
    target = messaging.Target(version='1.0')

    def echo(self, ctxt, payload=None):
        """Return ``payload`` as received (deserialized, then serialized again)."""
        return payload


def main(argv=None):
    from minisched.cmd import common as cmd_common
    from minisched import rpc
    conf = cmd_common.setup_service(argv)
    server = rpc.get_server(messaging.Target(topic=TOPIC, server=conf.host), [EchoEndpoint()])
    server.start()
    sys.stdout.write('bench echo server ready\n')
    sys.stdout.flush()
    while True:  # until SIGTERM (the bench stops it)
        time.sleep(3600)


if __name__ == '__main__':
    sys.exit(main())
