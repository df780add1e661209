"""minisched-manage flavor, group, aggregate, server and scheduler: parsing and output.

Each test runs ``manage.main`` on SQLite files of its own (both schemas, migrated once per
session), with the categories added to ``EXTRA_CATEGORIES``; no broker: the scheduler casts,
the compute API and the SchedulerAPI are fakes put in the modules' factories.
"""
import datetime
import json
import shutil

import pytest
from oslo_config import cfg
from oslo_messaging import transport as messaging_transport
from oslo_messaging._drivers import common as rpc_common
from oslo_utils.fixture import uuidsentinel as uuids

from minisched import context, exception, objects
from minisched.conf import database as db_conf
from minisched.db import engines, migration
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action, instance_fault
from minisched.objects import request_spec, selection
from minisched.objects import service as service_obj
from tests.unit import base

objects.register_all()

CATEGORIES = ('flavor', 'group', 'aggregate', 'server', 'scheduler')


manage = base.import_without_eventlet('minisched.cmd.manage')
manage_aggregate = base.import_without_eventlet('minisched.cmd.manage_aggregate')
manage_scheduler = base.import_without_eventlet('minisched.cmd.manage_scheduler')
manage_server = base.import_without_eventlet('minisched.cmd.manage_server')


class FakeQueryClient:
    """Records the casts ``aggregate`` actions make to the schedulers."""

    def __init__(self):
        self.casts = []

    def update_aggregates(self, ctxt, aggregates):
        self.casts.append(('update_aggregates', [(a.name, sorted(a.hosts), dict(a.metadata))
                                                 for a in aggregates]))

    def delete_aggregate(self, ctxt, aggregate):
        self.casts.append(('delete_aggregate', aggregate.name))


@pytest.fixture(scope='session')
def templates(tmp_path_factory):
    root = tmp_path_factory.mktemp('manage_db')
    files = [root / db_conf.MAIN_SQLITE, root / db_conf.API_SQLITE]
    for path, name in zip(files, ('main', 'api')):
        migration.db_sync('sqlite:///%s' % path, name)
    engines.dispose_all()
    return files


@pytest.fixture
def run(tmp_path, templates, monkeypatch, capsys):
    """``run(*args)`` -> ``(exit code, stdout, stderr)`` of ``minisched-manage *args``."""
    state = tmp_path / 'state'
    state.mkdir()
    for path in templates:
        shutil.copy(path, state / path.name)
    conf_file = tmp_path / 'minisched.conf'
    conf_file.write_text('[DEFAULT]\nstate_path = %s\n' % state)
    # The URLs main() configures, set already for what tests write before running it.
    monkeypatch.setattr(engines, '_urls', {
        engines.MAIN: 'sqlite:///%s' % (state / db_conf.MAIN_SQLITE),
        engines.API: 'sqlite:///%s' % (state / db_conf.API_SQLITE)})
    monkeypatch.setattr(engines, '_engines', {})
    monkeypatch.setattr(manage, 'EXTRA_CATEGORIES', CATEGORIES)
    # main() sets oslo.messaging's control_exchange default (process-wide): undo it after.
    exchange = next(o for o in messaging_transport._transport_opts
                    if o.dest == 'control_exchange')
    monkeypatch.setattr(exchange, 'default', exchange.default)
    capsys.readouterr()

    def run(*args):
        cfg.CONF.reset()  # main() registers its CLI option: not allowed once parsed
        code = manage.main(['minisched-manage', '--config-file', str(conf_file)] +
                           [str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err
    yield run
    engines.dispose_all()
    cfg.CONF.reset()
    cfg.CONF.unregister_opt(manage.CATEGORY_OPT)


@pytest.fixture
def casts(monkeypatch):
    fake = FakeQueryClient()
    monkeypatch.setattr(manage_aggregate, 'query_client_factory', lambda conf: fake)
    return fake.casts


def rows(text):
    """Rows of the first table of ``text`` as dicts (none for an empty list, which prints no
    table, as ``openstack`` does)."""
    lines = [line for line in text.splitlines() if line.startswith('|')]
    if not lines:
        return []
    split = lambda line: [cell.strip() for cell in line.strip('|').split('|')]
    headers = split(lines[0])
    return [dict(zip(headers, split(line))) for line in lines[1:]]


def fields(text):
    return {row['Field']: row['Value'] for row in rows(text)}


# -- flavor ---------------------------------------------------------------------------------

def test_flavor_create_list_set_delete(run):
    code, out, _ = run('flavor', 'create', 'm1.small', '--ram', 512, '--vcpus', 1, '--disk',
                       1, '--swap', 256, '--id', 1, '--property', 'hw:cpu_policy=shared')
    assert code == 0
    assert fields(out) == {'id': '1', 'name': 'm1.small', 'ram': '512', 'disk': '1',
                           'ephemeral': '0', 'swap': '256', 'vcpus': '1', 'rxtx_factor': '1.0',
                           'is_public': 'True', 'properties': "hw:cpu_policy='shared'"}
    code, out, _ = run('flavor', 'create', 'm1.big', '--ram', 4096, '--vcpus', 4, '--disk', 40)
    big_id = fields(out)['id']
    assert len(big_id) == 36  # "auto": a new UUID

    assert run('flavor', 'set', 'm1.big', '--property', 'a=b', '--property', 'c=d=e')[0] == 0
    listed = rows(run('flavor', 'list')[1])
    assert [(r['ID'], r['Name'], r['RAM'], r['Properties']) for r in listed] == [
        ('1', 'm1.small', '512', "hw:cpu_policy='shared'"),
        (big_id, 'm1.big', '4096', "a='b', c='d=e'")]

    assert run('flavor', 'delete', '1') == (0, 'Flavor m1.small (1) deleted.\n', '')
    assert run('flavor', 'delete', 'm1.big')[0] == 0  # by name too
    assert rows(run('flavor', 'list')[1]) == []


def test_flavor_errors_are_one_line(run):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0, '--id', 'x')
    assert run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0) == \
        (1, '', 'Flavor with name f1 already exists.\n')
    assert run('flavor', 'create', 'f2', '--ram', 64, '--vcpus', 1, '--disk', 0, '--id', 'x') \
        == (1, '', 'Flavor with ID x already exists.\n')
    assert run('flavor', 'delete', 'nope') == (1, '', 'Flavor nope could not be found.\n')


@pytest.mark.parametrize('args', [
    ('flavor', 'create', 'f', '--ram', 0, '--vcpus', 1, '--disk', 1),
    ('flavor', 'create', 'f', '--ram', 'lots', '--vcpus', 1, '--disk', 1),
    ('flavor', 'create', 'f', '--vcpus', 1, '--disk', 1),
    ('flavor', 'set', 'f', '--property', 'novalue'),
    ('flavor', 'set', 'f'),
    ('group', 'create', 'g', '--policy', 'bogus'),
    ('server', 'create', '--num-instances', 0, '--flavor', 'f'),
    ('scheduler', 'select', '--hint', 'x'),
])
def test_bad_arguments_are_usage_errors(run, args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(*args)
    assert exit_info.value.code == 2
    assert ': error: ' in capsys.readouterr().err


# -- group ----------------------------------------------------------------------------------

def test_group_create_list_show_delete(run):
    code, out, _ = run('group', 'create', 'web', '--policy', 'anti-affinity',
                       '--max-server-per-host', 2, '--project', 'p1', '--user', 'u1')
    assert code == 0
    created = fields(out)
    assert created['policy'] == 'anti-affinity'
    assert created['rules'] == 'max_server_per_host=2'
    assert (created['project_id'], created['user_id']) == ('p1', 'u1')
    assert len(created['id']) == 36
    run('group', 'create', 'db', '--policy', 'affinity')

    listed = rows(run('group', 'list')[1])
    assert [(r['Name'], r['Policy'], r['Rules'], r['Members']) for r in listed] == [
        ('db', 'affinity', '', '0'), ('web', 'anti-affinity', 'max_server_per_host=2', '0')]

    ctxt = context.get_admin_context()
    objects.InstanceGroup.add_members(ctxt, created['id'], [uuids.member])
    shown = fields(run('group', 'show', created['id'])[1])
    assert shown['members'] == uuids.member
    assert shown['member_hosts'] == ''

    assert run('group', 'delete', 'web')[0] == 0
    assert run('group', 'show', 'web') == (1, '', 'Instance group web could not be found.\n')


def test_group_rules_only_with_anti_affinity(run):
    assert run('group', 'create', 'g', '--policy', 'affinity', '--max-server-per-host', 1) == \
        (1, '', 'Only anti-affinity policy supports rules.\n')


def test_group_name_shared_by_two_groups_is_refused_naming_both(run):
    ids = [run('group', 'create', 'g', '--policy', policy, '-f', 'value', '-c', 'id')[1].strip()
           for policy in ('affinity', 'soft-affinity')]
    error = ("More than one server group exists with the name 'g': %s, %s; use an ID.\n"
             % tuple(sorted(ids)))
    assert run('group', 'delete', 'g') == (1, '', error)
    assert run('group', 'show', 'g') == (1, '', error)
    assert run('group', 'show', ids[0], '-f', 'value', '-c', 'policy') == (0, 'affinity\n', '')


# -- aggregate ------------------------------------------------------------------------------

def _compute(host):
    service_obj.Service(context.get_admin_context(), host=host, binary='minisched-compute',
                        topic='compute', report_count=0, disabled=False,
                        forced_down=False).create()


def test_aggregate_changes_are_cast_to_the_schedulers(run, casts):
    code, out, _ = run('aggregate', 'create', 'agg1', '--zone', 'az1')
    assert code == 0
    assert fields(out)['availability_zone'] == 'az1'
    _compute('c1')
    assert run('aggregate', 'add-host', 'agg1', 'c1')[0] == 0
    assert run('aggregate', 'set', '1', '--property', 'ram_allocation_ratio=2.0')[0] == 0
    assert run('aggregate', 'remove-host', 'agg1', 'c1')[0] == 0
    listed = rows(run('aggregate', 'list')[1])
    assert [(r['ID'], r['Name'], r['Availability Zone'], r['Hosts'], r['Properties'])
            for r in listed] == [
        ('1', 'agg1', 'az1', '', "availability_zone='az1', ram_allocation_ratio='2.0'")]
    assert run('aggregate', 'delete', 'agg1')[0] == 0

    zone = {'availability_zone': 'az1'}
    assert casts == [
        ('update_aggregates', [('agg1', [], zone)]),
        ('update_aggregates', [('agg1', ['c1'], zone)]),
        ('update_aggregates', [('agg1', ['c1'], dict(zone, ram_allocation_ratio='2.0'))]),
        ('update_aggregates', [('agg1', [], dict(zone, ram_allocation_ratio='2.0'))]),
        ('delete_aggregate', 'agg1'),
    ]


def test_aggregate_refusals_change_nothing_and_cast_nothing(run, casts):
    _compute('c1')
    run('aggregate', 'create', 'a1', '--zone', 'az1')
    run('aggregate', 'create', 'a2', '--zone', 'az2')
    run('aggregate', 'add-host', 'a1', 'c1')
    del casts[:]
    assert run('aggregate', 'add-host', 'a2', 'c1') == (
        1, '', "Cannot add host to aggregate 2. Reason: One or more hosts already in "
               "availability zone(s) ['az1'].\n")
    assert run('aggregate', 'add-host', 'a2', 'nohost') == \
        (1, '', 'Compute host nohost could not be found.\n')
    assert run('aggregate', 'set', 'a1', '--property', 'availability_zone=')[0] == 1
    assert run('aggregate', 'delete', 'a1') == \
        (1, '', 'Cannot remove aggregate 1. Reason: Host aggregate is not empty.\n')
    assert run('aggregate', 'delete', 'nope') == \
        (1, '', 'Aggregate nope could not be found.\n')
    assert casts == []


def test_aggregate_broker_failure_is_one_line_after_the_change(run, monkeypatch):
    class Unreachable:
        def update_aggregates(self, ctxt, aggregates):
            raise ConnectionRefusedError(111, 'ECONNREFUSED')
    monkeypatch.setattr(manage_aggregate, 'query_client_factory', lambda conf: Unreachable())
    code, out, err = run('aggregate', 'create', 'a1')
    assert code == 1
    assert fields(out)['name'] == 'a1'
    assert err.startswith('Saved, but the schedulers could not be told')
    assert err.count('\n') == 1 and 'ECONNREFUSED' in err


# -- scheduler select -----------------------------------------------------------------------

def _selection(host, limits=None):
    return selection.Selection(
        compute_node_uuid=getattr(uuids, 'cn_' + host), service_host=host, nodename=host,
        cell_uuid=uuids.cell, limits=request_spec.SchedulerLimits.from_dict(limits or {}),
        allocation_request=None, allocation_request_version=None, availability_zone=None)


class FakeSchedulerAPI:
    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def select_destinations(self, ctxt, spec, instance_uuids, return_objects,
                            return_alternates, dry_run=False):
        self.calls.append((spec, instance_uuids, return_objects, return_alternates))
        self.dry_runs = getattr(self, 'dry_runs', []) + [dry_run]
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def scheduler(monkeypatch):
    fake = FakeSchedulerAPI([[_selection('c1', {'memory_mb': 12288, 'vcpu': 64}),
                              _selection('c2')]])
    monkeypatch.setattr(manage_scheduler, 'scheduler_api_factory', lambda conf: fake)
    return fake


def test_select_builds_the_request_spec_from_the_options(run, scheduler):
    run('flavor', 'create', 'f1', '--ram', 256, '--vcpus', 2, '--disk', 5, '--property', 'k=v')
    code, out, _ = run('scheduler', 'select', '--flavor', 'f1', '--ram', 1024,
                       '--image-property', 'hw_architecture=x86_64', '--hint', 'h=1',
                       '--hint', 'h=2', '--availability-zone', 'az1', '--force-host', 'c1',
                       '--ignore-host', 'c9', '--num-instances', 1, '--project', 'p1')
    assert code == 0
    spec, instance_uuids, return_objects, return_alternates = scheduler.calls[0]
    assert (instance_uuids, return_objects, return_alternates) == (None, True, False)
    assert scheduler.dry_runs == [True]  # the scheduler keeps nothing of it
    flavor = spec.flavor
    assert (flavor.memory_mb, flavor.vcpus, flavor.root_gb, flavor.extra_specs) == \
        (1024, 2, 5, {'k': 'v'})
    assert spec.image.properties.hw_architecture == 'x86_64'
    assert spec.scheduler_hints == {'h': ['1', '2']}
    assert (spec.availability_zone, spec.force_hosts, spec.ignore_hosts) == \
        ('az1', ['c1'], ['c9'])
    assert (spec.project_id, spec.num_instances) == ('p1', 1)
    assert rows(out) == [{'Instance #': '1', 'Host': 'c1', 'Node': 'c1', 'Cell': uuids.cell,
                          'Limits': 'memory_mb=12288, vcpu=64'}]


def test_select_alternates_and_json(run, scheduler):
    code, out, _ = run('scheduler', 'select', '--ram', 64, '--vcpus', 1, '--disk', 0,
                       '--alternates')
    assert code == 0
    assert scheduler.calls[0][3] is True
    assert [(r['Choice'], r['Host'], r['Limits']) for r in rows(out)] == [
        ('selected', 'c1', 'memory_mb=12288, vcpu=64'), ('alternate 1', 'c2', '-')]
    code, out, _ = run('scheduler', 'select', '--ram', 64, '--vcpus', 1, '--disk', 0, '--json')
    assert json.loads(out) == [{'host': 'c1', 'nodename': 'c1',
                                'limits': {'memory_mb': 12288, 'vcpu': 64}}]
    # -f json: the rows of the table, as any list.
    code, out, _ = run('scheduler', 'select', '--ram', 64, '--vcpus', 1, '--disk', 0, '-f',
                       'json')
    assert json.loads(out) == [{'Instance #': 1, 'Host': 'c1', 'Node': 'c1',
                                'Cell': uuids.cell, 'Limits': 'memory_mb=12288, vcpu=64'}]
    assert run('scheduler', 'select', '--ram', 64, '--vcpus', 1, '--disk', 0, '--alternates',
               '-f', 'value', '-c', 'Host') == (0, 'c1\nc2\n', '')


def test_select_no_valid_host_prints_the_explanation_without_remote_trace(run, scheduler):
    reason = ('There are not enough hosts available. Filters rejected hosts: '
              'RamFilter rejected 2 of 2.')
    try:
        raise exception.NoValidHost(reason=reason)
    except exception.NoValidHost:
        import sys
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    remote = rpc_common.deserialize_remote_exception(data, ['minisched.exception'])
    assert 'Traceback' in str(remote)  # what str() would have printed
    scheduler.answer = remote
    code, out, err = run('scheduler', 'select', '--ram', 99999, '--vcpus', 1, '--disk', 0)
    assert (code, out) == (1, '')
    assert err == 'No valid host was found. %s\n' % reason


def test_select_without_flavor_needs_the_sizes(run, scheduler):
    assert run('scheduler', 'select', '--ram', 64) == \
        (1, '', '--vcpus, --disk is required without --flavor\n')
    assert scheduler.calls == []


# -- server ---------------------------------------------------------------------------------

NOW = datetime.datetime(2024, 5, 2, 10, 11, 12)


def _instance(uuid, vm_state=instance_obj.ACTIVE, host='c1', **kw):
    flavor = objects.Flavor(name='f1', flavorid='1', memory_mb=64, vcpus=1, root_gb=0)
    values = dict(uuid=uuid, display_name='server', host=host, node=host, vm_state=vm_state,
                  task_state=None, power_state=instance_obj.RUNNING, flavor=flavor,
                  project_id='admin', user_id='admin', image_ref=None, availability_zone=None,
                  created_at=NOW, launched_at=NOW)
    values.update(kw)
    return instance_obj.Instance(**values)


class FakeComputeAPI:
    def __init__(self, instances):
        self.instances = {i.uuid: i for i in instances}
        self.calls = []

    def create(self, ctxt, flavor, **kw):
        self.calls.append(('create', ctxt.project_id, flavor.name, kw))
        return list(self.instances)

    def get(self, ctxt, uuid):
        if uuid not in self.instances:
            raise exception.InstanceMappingNotFound(uuid=uuid)
        return self.instances[uuid]

    def get_all(self, ctxt, filters=None):
        self.calls.append(('get_all', filters))
        return list(self.instances.values())

    def get_faults(self, ctxt, uuid):
        return [instance_fault.InstanceFault(
            code=500, message='Exceeded maximum number of retries.', host=None,
            created_at=NOW, details='Traceback (most recent call last):\n  File '
            '"/x/minisched/conductor/compute_task.py", line 61, in schedule\n    x()\n')]

    def get_actions(self, ctxt, uuid):
        action = instance_action.InstanceAction(
            id=1, action='create', request_id='req-1', start_time=NOW, finish_time=None,
            message=None)
        event = instance_action.InstanceActionEvent(
            id=1, event='compute_build_and_run_instance', host='c1', start_time=NOW,
            finish_time=NOW, result='Error', details='boom',
            traceback='  File "/x/minisched/compute/build.py", line 48, in build\n    y()\n')
        return [(action, [event])]

    def delete(self, ctxt, uuid):
        self.calls.append(('delete', uuid))
        self.get(ctxt, uuid)
        del self.instances[uuid]


@pytest.fixture
def compute(monkeypatch):
    fake = FakeComputeAPI([_instance(uuids.a), _instance(uuids.b, host='c2')])
    monkeypatch.setattr(manage_server, 'compute_api_factory', lambda conf: fake)
    monkeypatch.setattr(manage_server, 'POLL_INTERVAL', 0)
    return fake


def test_server_create_passes_the_request_and_waits(run, compute):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)
    run('group', 'create', 'g1', '--policy', 'anti-affinity')
    code, out, _ = run('server', 'create', '--flavor', 'f1', '--num-instances', 2,
                       '--image-property', 'os_type=linux', '--hint', 'same_host=x',
                       '--group', 'g1', '--availability-zone', 'az1', '--name', 'web',
                       '--project', 'p1', '--wait')
    assert code == 0
    _, project, flavor, kw = compute.calls[0]
    assert (project, flavor, kw['num_instances'], kw['availability_zone']) == \
        ('p1', 'f1', 2, 'az1')
    assert kw['image'] == {'properties': {'os_type': 'linux'}}
    assert kw['scheduler_hints'] == {'same_host': ['x']}
    assert (kw['group'].name, kw['display_name']) == ('g1', 'web')
    assert out.splitlines()[:2] == [uuids.a, uuids.b]
    assert [(r['ID'], r['Host'], r['Status'], r['Power State'], r['Flavor'])
            for r in rows(out)] == [(uuids.a, 'c1', 'ACTIVE', 'Running', 'f1'),
                                    (uuids.b, 'c2', 'ACTIVE', 'Running', 'f1')]
    # Task State as server list shows it (the openstack client's "None"), not blank
    assert [r['Task State'] for r in rows(out)] == ['None', 'None']
    assert [r['Task State'] for r in rows(run('server', 'list')[1])] == ['None', 'None']


def test_server_create_takes_the_name_as_openstack_does(run, compute):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)
    assert run('server', 'create', '--flavor', 'f1', 'web-1')[0] == 0
    assert run('server', 'create', 'web-2', '--flavor', 'f1', '--name', 'web-2')[0] == 0
    assert [call[3]['display_name'] for call in compute.calls] == ['web-1', 'web-2']
    code, _, err = run('server', 'create', '--flavor', 'f1', '--name', 'a', 'b')
    assert (code, err) == (1, "Two names given: 'b' and --name 'a'; give one.\n")
    assert len(compute.calls) == 2


def test_server_create_wait_fails_when_an_instance_is_in_error(run, compute):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)
    compute.instances[uuids.b] = _instance(uuids.b, vm_state=instance_obj.ERROR, host=None)
    code, out, err = run('server', 'create', '--flavor', 'f1', '--wait')
    assert code == 1
    assert err == '1 of 2 instance(s) went to ERROR (see server show %s)\n' % uuids.b


def test_server_create_wait_times_out(run, compute):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)
    compute.instances[uuids.a] = _instance(uuids.a, vm_state=instance_obj.BUILDING)
    code, out, err = run('server', 'create', '--flavor', 'f1', '--wait', '--timeout', 1)
    assert code == 1
    assert err == 'Timed out after 1s waiting for 1 of 2 instance(s)\n'
    assert rows(out)[0]['Status'] == 'BUILD'


def test_a_build_left_scheduling_says_what_to_check(run, compute):
    run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0)
    compute.instances[uuids.a] = _instance(uuids.a, vm_state=instance_obj.BUILDING,
                                           task_state='scheduling')
    code, out, err = run('server', 'create', '--flavor', 'f1', '--wait', '--timeout', 1)
    assert code == 1
    assert err.startswith('Timed out after 1s waiting for 1 of 2 instance(s) (still '
                          'scheduling: ') and 'minisched-cluster status' in err, err


def test_server_list_long_adds_openstacks_long_columns(run, compute):
    code, out, err = run('server', 'list', '--long', '-f', 'json')
    assert (code, err) == (0, '')
    listed = json.loads(out)
    assert list(listed[0])[-5:] == ['Flavor ID', 'Image ID', 'Availability Zone',
                                    'Properties', 'Created At']


def test_server_list_filters_on_project_unless_all_projects(run, compute):
    assert run('server', 'list', '--host', 'c1', '--project', 'p1')[0] == 0
    assert run('server', 'list', '--all-projects')[0] == 0
    code, out, err = run('server', 'list', '--all')  # the deprecated spelling still works
    assert (code, err) == (0, '--all is deprecated: use --all-projects.\n')
    assert [c[1] for c in compute.calls] == [{'project_id': 'p1', 'host': 'c1'}, {}, {}]


def test_server_show_has_faults_actions_and_events(run, compute):
    code, out, _ = run('server', 'show', uuids.a)
    assert code == 0
    assert fields(out)['flavor'] == 'f1 (1)'
    sections = out.split('Faults:\n')[1].split('Actions:\n')
    faults = rows(sections[0])
    assert faults[0]['Traceback'] == 'compute_task.py:61 in schedule'
    actions, events = sections[1].split('Events:\n')
    assert rows(actions) == [{'Action': 'create', 'Request ID': 'req-1',
                              'Start': '2024-05-02 10:11:12', 'Finish': '-', 'Message': ''}]
    assert rows(events)[0] == {
        'Action': 'create', 'Event': 'compute_build_and_run_instance', 'Host': 'c1',
        'Start': '2024-05-02 10:11:12', 'Finish': '2024-05-02 10:11:12', 'Result': 'Error',
        'Details': 'boom', 'Traceback': 'build.py:48 in build'}
    assert run('server', 'show', uuids.nope) == \
        (1, '', 'Instance %s could not be found.\n' % uuids.nope)


def test_server_delete_reports_each_and_waits(run, compute):
    code, out, err = run('server', 'delete', uuids.a, uuids.nope, '--wait')
    assert code == 1
    assert out == ('Request to delete server %s has been accepted.\nDeleted 1 server(s).\n'
                   % uuids.a)
    assert err == 'Instance %s could not be found.\n' % uuids.nope


# -- database errors ------------------------------------------------------------------------

@pytest.mark.parametrize('args', [('service', 'list'), ('flavor', 'list'), ('cell', 'list'),
                                  ('server', 'list')])
def test_a_database_without_schema_is_one_line_naming_the_sync(run, tmp_path, monkeypatch,
                                                               args):
    monkeypatch.setattr(manage, 'EXTRA_CATEGORIES', CATEGORIES + ('cell',))
    for name in (db_conf.MAIN_SQLITE, db_conf.API_SQLITE):  # files there, tables not
        (tmp_path / 'state' / name).write_bytes(b'')
    code, out, err = run(*args)
    assert (code, out, err.count('\n')) == (1, '', 1), err
    assert err.startswith('Database error: (sqlite3.OperationalError) no such table: ')
    assert "'minisched-manage api_db sync'" in err and "'minisched-manage db sync'" in err


def test_a_database_that_cannot_be_opened_is_one_line_without_the_sync_hint(run, tmp_path):
    (tmp_path / 'minisched.conf').write_text(
        '[database]\nconnection = sqlite:///%s\n' % (tmp_path / 'no' / 'such' / 'dir.db'))
    code, out, err = run('service', 'list')
    assert (code, out, err.count('\n')) == (1, '', 1), err
    assert err.startswith('Database error: ') and 'unable to open database file' in err
    assert 'sync' not in err


def test_a_database_url_sqlalchemy_cannot_use_exits_1_naming_the_option(run, tmp_path,
                                                                         capsys):
    (tmp_path / 'minisched.conf').write_text(
        '[api_database]\nconnection = nosuchdb://u:secret@host/db\n')
    with pytest.raises(SystemExit) as caught:
        run('flavor', 'list')
    err = capsys.readouterr().err
    assert caught.value.code == 1 and err.count('\n') == 1, err
    assert err == ("minisched-manage: error: invalid value for [api_database] connection: "
                   "Can't load plugin: sqlalchemy.dialects:nosuchdb\n")


# -- OpenStack CLI conventions (issue 37) ---------------------------------------------------

def test_server_list_as_json_value_csv_and_sorted(run, compute):
    compute.instances[uuids.b] = _instance(uuids.b, display_name='b-web', host='c2',
                                           vm_state=instance_obj.BUILDING,
                                           task_state='spawning')
    code, out, err = run('server', 'list', '-f', 'json')
    assert (code, err) == (0, '')
    listed = json.loads(out)
    assert [(r['ID'], r['Status'], r['Task State'], r['Power State']) for r in listed] == [
        (uuids.a, 'ACTIVE', None, 'Running'), (uuids.b, 'BUILD', 'spawning', 'Running')]
    assert run('server', 'list', '-f', 'value', '-c', 'ID') == \
        (0, '%s\n%s\n' % (uuids.a, uuids.b), '')
    assert run('server', 'list', '-f', 'value', '-c', 'Name', '--sort-column', 'Name',
               '--sort-ascending')[1] == 'b-web\nserver\n'
    assert run('server', 'list', '-f', 'value', '-c', 'host', '--sort-column', 'host',
               '--sort-descending')[1] == 'c2\nc1\n'  # column names as openstack takes them
    assert run('server', 'list', '-f', 'csv', '-c', 'ID', '-c', 'Status')[1].splitlines() == [
        '"ID","Status"', '"%s","ACTIVE"' % uuids.a, '"%s","BUILD"' % uuids.b]


def test_an_unknown_column_is_one_line_naming_the_columns(run, compute):
    assert run('server', 'list', '-c', 'Nope') == (1, '', (
        'No column named Nope; the columns are: ID, Name, Status, Task State, Power State, '
        'Host, Node, Flavor.\n'))


@pytest.mark.parametrize('vm_state, task_state, status', [
    ('active', None, 'ACTIVE'), ('building', 'scheduling', 'BUILD'), ('error', None, 'ERROR'),
    ('active', 'rebooting_hard', 'HARD_REBOOT'), ('stopped', None, 'SHUTOFF'),
    ('error', 'rebuilding', 'REBUILD'), ('soft-delete', None, 'SOFT_DELETED'),
    ('no-such-state', None, 'UNKNOWN')])
def test_status_is_the_compute_apis(vm_state, task_state, status):
    assert manage_server.status(_instance(uuids.a, vm_state=vm_state,
                                          task_state=task_state)) == status


def test_server_show_and_delete_take_a_name(run, compute):
    compute.instances[uuids.b] = _instance(uuids.b, display_name='web-1', host='c2')
    code, out, err = run('server', 'show', 'web-1', '-f', 'json')
    assert (code, err) == (0, '')
    shown = json.loads(out)  # one object: the history tables are for the table format
    assert (shown['id'], shown['status'], shown['host']) == (uuids.b, 'ACTIVE', 'c2')
    assert shown['fault'] == {'code': 500, 'message': 'Exceeded maximum number of retries.',
                              'created': '2024-05-02 10:11:12'}
    assert run('server', 'show', 'web-1', '-f', 'value', '-c', 'id') == (0, uuids.b + '\n', '')
    assert run('server', 'show', 'web-1', '--project', 'other') == \
        (1, '', 'Instance web-1 could not be found.\n')
    assert run('server', 'delete', 'web-1') == \
        (0, 'Request to delete server web-1 has been accepted.\n', '')
    assert ('delete', uuids.b) in compute.calls


def test_an_ambiguous_server_name_is_refused_listing_the_matches(run, compute):
    compute.instances[uuids.b] = _instance(uuids.b, display_name='server')
    error = ("More than one server exists with the name 'server': %s; use an ID.\n"
             % ', '.join(sorted([uuids.a, uuids.b])))
    assert run('server', 'show', 'server') == (1, '', error)
    code, out, err = run('server', 'delete', 'server')
    assert (code, out, err) == (1, '', error)
    assert not [c for c in compute.calls if c[0] == 'delete']


def test_service_list_formats(run):
    _compute('c1')
    code, out, err = run('service', 'list', '-f', 'json')
    assert (code, err) == (0, '')
    [listed] = json.loads(out)
    assert (listed['Binary'], listed['Host'], listed['Status'], listed['State'],
            listed['Disabled Reason']) == ('minisched-compute', 'c1', 'enabled', 'up', None)
    assert run('service', 'list', '--host', 'c2', '-f', 'value') == (0, '', '')


def test_flavor_and_aggregate_show_properties_as_objects(run, casts):
    code, out, _ = run('flavor', 'create', 'f1', '--ram', 64, '--vcpus', 1, '--disk', 0,
                       '--property', 'hw:cpu_policy=shared', '-f', 'json')
    assert json.loads(out)['properties'] == {'hw:cpu_policy': 'shared'}
    assert json.loads(run('flavor', 'list', '-f', 'json')[1])[0]['Properties'] == \
        {'hw:cpu_policy': 'shared'}
    code, out, _ = run('aggregate', 'create', 'a1', '--zone', 'az1', '-f', 'yaml')
    assert code == 0 and 'availability_zone: az1' in out.splitlines()
    _compute('c1')
    code, out, _ = run('aggregate', 'add-host', 'a1', 'c1', '-f', 'json')
    assert json.loads(out)['hosts'] == ['c1']
    code, out, _ = run('group', 'create', 'g', '--policy', 'affinity', '-f', 'json')
    assert (json.loads(out)['members'], json.loads(out)['member_hosts']) == ([], [])


def test_action_options_do_not_override_configuration_options(run):
    # --host of service list is not [DEFAULT] host, which oslo.config would read from its
    # command-line namespace if the action's arguments were left there.
    configured = cfg.CONF.host
    assert run('service', 'list', '--host', 'elsewhere', '-f', 'value') == (0, '', '')
    assert cfg.CONF.host == configured != 'elsewhere'
