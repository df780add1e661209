"""minisched-manage flavor and server: refusals are one line naming the field, exit 1, and
nothing is written (issue 26). In-process on SQLite, with the real compute API on
oslo.messaging's in-memory transport (a refused request is never cast)."""
import oslo_messaging as messaging
import pytest
import sqlalchemy as sa
from oslo_config import cfg

from minisched.compute import api as compute_api
from minisched.db import engines
from minisched import rpc
from tests.unit.cmd import test_manage_cli as cli

# test_manage_cli's fixtures (SQLite databases per test, main() in-process) and helpers.
run, templates, fields, manage_server = cli.run, cli.templates, cli.fields, cli.manage_server

TABLES = ('build_requests', 'request_specs', 'instance_mappings', 'instances', 'flavors',
          'flavor_extra_specs')


@pytest.fixture
def api(monkeypatch):
    """The real compute API; RPC on the in-memory driver."""
    transport = messaging.get_rpc_transport(cfg.CONF, url='fake:/')
    monkeypatch.setattr(rpc, 'TRANSPORT', transport)
    monkeypatch.setattr(manage_server, 'compute_api_factory', compute_api.API)
    yield
    transport.cleanup()


def counts():
    result = {}
    for engine, names in ((engines.api_engine(), TABLES[:3] + TABLES[4:]),
                          (engines.main_engine(), TABLES[3:4])):
        with engine.connect() as conn:
            for name in names:
                result[name] = conn.execute(sa.text('SELECT COUNT(*) FROM %s' % name)).scalar()
    return result


def refused(run, *args, field):
    """Run ``minisched-manage *args``: exit 1, one line on stderr naming ``field``."""
    code, out, err = run(*args)
    assert (code, out) == (1, ''), err
    shown = field + '. ' if len(field) <= 80 else field[:77] + '...'  # long names are cut
    assert err.startswith('Invalid input for field/attribute %s' % shown), err
    assert err.count('\n') == 1
    return err


# -- flavor ---------------------------------------------------------------------------------

FLAVOR = ('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)


@pytest.mark.parametrize('args, field', [
    (('flavor', 'create', 'n' * 300, '--ram', 64, '--vcpus', 1, '--disk', 0), 'name'),
    (('flavor', 'create', ' f1', '--ram', 64, '--vcpus', 1, '--disk', 0), 'name'),
    (FLAVOR + ('--ram', 2 ** 31), 'ram'),
    (FLAVOR + ('--swap', 2 ** 31), 'swap'),
    (FLAVOR + ('--id', 'a/b'), 'id'),
    (FLAVOR + ('--id', 'i' * 256), 'id'),
    (FLAVOR + ('--rxtx-factor', '0'), 'rxtx_factor'),
    (FLAVOR + ('--rxtx-factor', 'fast'), 'rxtx_factor'),
    (FLAVOR + ('--description', 'd' * 65536), 'description'),
    (FLAVOR + ('--property', 'hw:numa_nodes=two'), 'extra_specs.hw:numa_nodes'),
    (FLAVOR + ('--property', 'hw:cpu_policy=sometimes'), 'extra_specs.hw:cpu_policy'),
    (FLAVOR + ('--property', 'hw:no_such_key=1'), 'extra_specs.hw:no_such_key'),
    (FLAVOR + ('--property', 'k=' + 'v' * 256), 'extra_specs.k'),
    (FLAVOR + ('--property', 'bad/key=1'), 'extra_specs'),
])
def test_flavor_create_refusals_write_nothing(run, args, field):
    refused(run, *args, field=field)
    assert counts()['flavors'] == 0


def test_flavor_create_takes_the_new_options_at_their_limits(run):
    code, out, err = run('flavor', 'create', 'n' * 255, '--ram', 2 ** 31 - 1, '--vcpus', 1,
                         '--disk', 0, '--id', 'i' * 255, '--rxtx-factor', '2.5', '--private',
                         '--description', 'Small', '--property', 'hw:numa_nodes=1')
    assert code == 0, err
    shown = fields(out)
    assert (shown['rxtx_factor'], shown['is_public'], shown['description']) == \
        ('2.5', 'False', 'Small')


def test_flavor_set_refuses_unknown_and_bad_extra_specs(run):
    run(*FLAVOR)
    before = counts()
    refused(run, 'flavor', 'set', 'f1', '--property', 'a=b', '--property',
            'pci_passthrough:alias=nic', field='extra_specs.pci_passthrough:alias')
    refused(run, 'flavor', 'set', 'f1', '--property', 'capabilities:bogus=1',
            field='extra_specs.capabilities:bogus')
    assert counts() == before
    assert run('flavor', 'set', 'f1', '--property', 'hw:cpu_policy=dedicated')[0] == 0


# -- server ---------------------------------------------------------------------------------

@pytest.mark.parametrize('args, field', [
    (('--name', 'n' * 300), 'name'),
    (('--availability-zone', 'z' * 300), 'availability_zone'),
    (('--name', 'n' * 255, '--num-instances', 2), 'name'),
    (('--name', 'tab\there'), 'name'),
    (('--hint', 'same_host=not-a-uuid'), 'scheduler_hints.same_host'),
    (('--hint', 'different_host=x'), 'scheduler_hints.different_host'),
    (('--hint', 'group=g1'), 'scheduler_hints.group'),
    (('--hint', 'query=[">="'), 'scheduler_hints.query'),
    (('--hint', 'query=[]', '--hint', 'query=[]'), 'scheduler_hints.query'),
    (('--hint', 'build_near_host_ip=near'), 'scheduler_hints.build_near_host_ip'),
    (('--hint', 'cidr=24'), 'scheduler_hints.cidr'),
    (('--hint', 'target_cell= c1'), 'scheduler_hints.target_cell'),
    (('--image-property', 'hw_cpu_cores=four'), 'image.properties.hw_cpu_cores'),
    (('--image-property', 'hw_cpu_policy=sometimes'), 'image.properties.hw_cpu_policy'),
    (('--image-property', 'p' * 256 + '=1'), 'image.properties.' + 'p' * 256),
    (('--property', 'bad/key=v'), 'metadata'),
    (('--property', 'k=' + 'v' * 256), 'metadata.k'),
    (('--project', 'p' * 256), 'context.project_id'),
])
def test_server_create_refusals_write_nothing(run, api, args, field):
    run(*FLAVOR)
    before = counts()
    refused(run, 'server', 'create', '--flavor', 'f1', *args, field=field)
    assert counts() == before
    assert before['build_requests'] == before['instances'] == 0
