"""After a broker outage longer than ``service_down_time``, the computes are not dead.

The services reach RabbitMQ through a ``TcpProxy``, the conductor through one of its own. A
client reaching RabbitMQ directly asks the scheduler for a host while the proxies are cut,
so the request waits in the scheduler's queue and is the first thing the scheduler reads
when it is back. The conductor stays cut off a little longer, as a conductor draining the
builds queued meanwhile is late with the computes' reports: the computes' last reports are
older than ``service_down_time`` when the scheduler answers. With Nova's rule ComputeFilter
then rejects every host (NoValidHost). The scheduler was cut off too: its own outage does
not count as the computes' silence (``minisched.servicegroup.outages``), so both hosts pass.
"""
import threading
import time

import pytest

from tests.functional import base
from tests.functional import resilience
from tests.functional import tcp_proxy
from tests.functional.test_faults import clients, proxied, select  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

HOSTS = {'c1', 'c2'}


def test_a_broker_outage_is_not_the_computes_silence(request, proxied, clients):  # noqa: F811
    cluster, proxy, direct_url = proxied
    conductor_proxy = tcp_proxy.TcpProxy(resilience.rabbit_port(direct_url))
    request.addfinalizer(conductor_proxy.close)
    cluster.start_conductor(conf={'DEFAULT': {'transport_url': resilience.with_port(
        direct_url, conductor_proxy.port)}})
    cluster.start_scheduler(workers=1, wait=False)
    for host in sorted(HOSTS):
        cluster.start_compute(host, wait=False)
    cluster.wait_ready('scheduler', *sorted(HOSTS))
    client = clients(cluster, url=direct_url, timeout=90).client('scheduler', '4.5')
    base.wait_for(lambda: _answer(client) in HOSTS, 60, interval=0.5,
                  message='the scheduler to choose a compute')

    proxy.cut()
    conductor_proxy.cut()
    time.sleep(cluster.service_down_time + 5)  # every compute report is older than that
    answers = []
    asking = threading.Thread(target=lambda: answers.append(_answer(client)))
    asking.start()                              # queued while the scheduler is cut off
    time.sleep(1)
    proxy.restore()                             # the conductor (the reports) still away
    asking.join(60)
    conductor_proxy.restore()
    assert answers and answers[0] in HOSTS, answers
    assert 'has not been heard from in a while' not in cluster.log('scheduler')


def _answer(client):
    try:
        return select(client)[0]['host']
    except Exception as exc:
        return '%s: %s' % (type(exc).__name__, str(exc).splitlines()[0][:300])
