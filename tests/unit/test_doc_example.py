"""The user guide's RPC client example sends dry runs unless told to consume.

The example's docstring promises that nothing changes on the cluster; what it sends is
checked here by handing its ``main`` a client that records the calls (the functional test
``tests/functional/test_doc_examples.py`` runs it against a real cluster).
"""
import importlib.util
import os

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from minisched import exception

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'doc', 'source', 'user',
                       'examples', 'select_destinations.py')


@pytest.fixture
def example():
    spec = importlib.util.spec_from_file_location('select_destinations_example', EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    cfg.CONF.clear()  # main() parses the global CONF, as a client of oslo.messaging does


class _RecordingClient:
    """Answers like a scheduler with one host; records each call's keywords."""

    def __init__(self):
        self.calls = []

    def prepare(self, **kwargs):
        return self

    def call(self, ctxt, method, **kwargs):
        self.calls.append((method, kwargs))
        if kwargs['spec_obj'].flavor.memory_mb > 10 ** 6:
            raise exception.NoValidHost(reason='')
        from minisched.objects import selection
        return [[selection.Selection(service_host='h1', nodename='h1',
                                     cell_uuid='00000000-0000-0000-0000-00000000000c')]]


def _run(example, monkeypatch, *args):
    client = _RecordingClient()
    monkeypatch.setattr(messaging, 'get_rpc_transport', lambda *a, **k: _Transport())
    monkeypatch.setattr(messaging, 'get_rpc_client', lambda *a, **k: client)
    assert example.main(['fake://'] + list(args)) == 0
    return client.calls


class _Transport:
    def cleanup(self):
        pass


def test_both_calls_are_dry_runs_by_default(example, monkeypatch):
    calls = _run(example, monkeypatch)
    assert [method for method, _ in calls] == ['select_destinations'] * 2
    assert all(kwargs['dry_run'] is True for _, kwargs in calls)


def test_consume_sends_what_the_conductor_sends(example, monkeypatch):
    calls = _run(example, monkeypatch, '--consume')
    assert len(calls) == 2
    assert all('dry_run' not in kwargs for _, kwargs in calls)  # Nova's call on the wire
