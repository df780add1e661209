"""The e2e bench's yardstick: a bare oslo.messaging RPC server that echoes what it is sent.

Started like a minisched service (``python -m benchmarks.echo_server --config-file ...``):
on the concurrency backend a service would choose (``minisched.monkey_patch``), the same
transport, RPC server factory and serializer
(``minisched.rpc.get_server``) as the scheduler, but no service record, manager or database.
Topic ``bench_echo``; logs "bench echo server ready" once listening.

It also answers ``select_destinations`` without scheduling (the wire floor; see
``benchmarks.echo_endpoints``).
"""
import sys
import time

from minisched import monkey_patch  # first: the backend a service would run with

monkey_patch.patch(backend='threading')

import oslo_messaging as messaging  # noqa: E402

from benchmarks import echo_endpoints  # noqa: E402


def main(argv=None):
    from minisched.cmd import common as cmd_common
    from minisched import rpc
    from minisched import service
    conf = cmd_common.setup_service(argv)
    service.set_switch_interval(conf)  # as a service does
    server = rpc.get_server(messaging.Target(topic=echo_endpoints.TOPIC, server=conf.host),
                            [echo_endpoints.EchoEndpoint(),
                             echo_endpoints.WireFloorEndpoint(conf)])
    server.start()
    sys.stdout.write('bench echo server ready\n')
    sys.stdout.flush()
    while True:  # until SIGTERM (the bench stops it)
        time.sleep(3600)


if __name__ == '__main__':
    sys.exit(main())
