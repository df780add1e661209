"""Nobody let in, nothing given away: secrets stay out of logs; foreign objects never load.

The services run with password-bearing URLs: a RabbitMQ user made for the test (with a
distinctive password, on a vhost of its own) and a PostgreSQL role with a password (the local
server may trust 127.0.0.1, but the password is in the URL all the same, which is what could
leak). Logs are written at DEBUG (``debug = true``), where oslo.config dumps every option.
"""
import urllib.parse
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import pool

from minisched import context as ms_context
from minisched import exception
from minisched.objects import base as objects_base
from tests.functional import base
from tests.functional import db_fixtures
from tests.functional import fuzz_strategies as fs
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]


@pytest.fixture
def rabbit_user(request):
    """``(transport URL, password)`` of a RabbitMQ user made for this test on its own vhost."""
    url = resilience.own_vhost(request)
    user = 'minisched-sec-%s' % uuid.uuid4().hex[:8]
    password = 'Mq-S3cret-%s' % uuid.uuid4().hex
    resilience.rabbitmqctl('add_user', user, password)
    request.addfinalizer(lambda: resilience.rabbitmqctl('delete_user', user, check=False))
    resilience.rabbitmqctl('set_permissions', '-p', resilience.vhost_of(url), user,
                           '.*', '.*', '.*')
    return resilience.with_user(url, user, password), password


@pytest.fixture
def pg_with_password(request):
    """``(database URL, password)``: a throwaway PostgreSQL database owned by a role made for
    this test, with a password."""
    url, drop = db_fixtures.make_db('postgresql')
    role = 'minisched_sec_%s' % uuid.uuid4().hex[:8]
    password = 'Db-S3cret-%s' % uuid.uuid4().hex
    admin = sa.create_engine(db_fixtures.admin_url('postgresql'), isolation_level='AUTOCOMMIT',
                             poolclass=pool.NullPool)
    database = sa.engine.make_url(url).database

    def cleanup():
        drop()
        with admin.connect() as conn:
            conn.execute(sa.text('DROP ROLE IF EXISTS "%s"' % role))
        admin.dispose()
    request.addfinalizer(cleanup)
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE ROLE "%s" LOGIN PASSWORD \'%s\'' % (role, password)))
        conn.execute(sa.text('ALTER DATABASE "%s" OWNER TO "%s"' % (database, role)))
    return (sa.engine.make_url(url).set(username=role, password=password)
            .render_as_string(hide_password=False), password)


def _forms(secret):
    """The secret as it could appear: plain, URL-quoted, repr-escaped."""
    return {secret, urllib.parse.quote(secret, safe=''), repr(secret)[1:-1]}


def test_passwords_never_appear_in_service_logs_nor_in_cell_list(request, tmp_path,
                                                                  rabbit_user,
                                                                  pg_with_password):
    mq_url, mq_password = rabbit_user
    db_url, db_password = pg_with_password
    cluster = resilience.make_cluster(request, tmp_path, mq_url, db_url,
                                      conf={'DEFAULT': {'debug': 'true'}})
    cluster.start_conductor(wait=False)
    cluster.start_scheduler(workers=1, wait=False)
    cluster.start_compute('c1', wait=False)
    cluster.wait_ready('conductor', 'scheduler', 'c1')
    # The password-bearing URLs are really in use: the services logged in with them.
    assert mq_password in open(cluster.conf_file).read()

    # Some traffic: a remoted state report or two, a build, the cell commands.
    base.wait_for(lambda: cluster.query('SELECT report_count FROM services WHERE host = '
                                        "'c1'")[0]['report_count'] >= 2, 20,
                  message='two state reports of c1')
    cluster.run_manage('flavor', 'create', 'tiny', '--ram', 64, '--vcpus', 1, '--disk', 1)
    built = cluster.run_manage('server', 'create', '--flavor', 'tiny', '--wait',
                               '--timeout', 60)
    outputs = [built.stdout + built.stderr]
    for args in (('cell', 'map_cell0'), ('cell', 'create', '--name', 'cell1'),
                 ('cell', 'list'), ('service', 'list')):
        result = cluster.run_manage(*args, check=False)
        outputs.append(result.stdout + result.stderr)
    listing = outputs[-2]
    assert 'cell1' in listing, listing
    user = urllib.parse.urlsplit(mq_url).username
    assert '%s:****@' % user in listing, listing
    assert ':****@' in listing.split(user)[-1], 'the database URL is masked too'

    leaks = []
    for name in cluster.processes:
        text = cluster.log(name)
        assert 'log_opt_values' in text, 'DEBUG logging (with the option dump) is on'
        leaks += ['%s log: %s' % (name, form) for secret in (mq_password, db_password)
                  for form in _forms(secret) if form in text]
    leaks += ['manage output: %s' % form for out in outputs
              for secret in (mq_password, db_password) for form in _forms(secret)
              if form in out]
    assert not leaks, leaks


def test_objects_of_other_namespaces_or_unregistered_classes_are_refused(cluster):
    """On the wire, through the conductor: precise errors, nothing instantiated."""
    cluster.start_conductor()
    raw = resilience.RawClients(cluster)
    try:
        client = raw.client('conductor', '3.0')
        cases = [('nova', 'Service', 'Unsupported object type nova.Service'),
                 ('oslo', 'VersionedObject', 'Unsupported object type oslo.VersionedObject'),
                 ('minisched', 'Popen', 'Unsupported object type Popen'),
                 ('minisched', 'subprocess.Popen', 'Unsupported object type subprocess.Popen'),
                 ('minisched', 'MinischedObject', 'Unsupported object type MinischedObject')]
        for namespace, name, message in cases:
            primitive = dict(fs.service().obj_to_primitive(), **{
                'minisched_object.namespace': namespace, 'minisched_object.name': name})
            with pytest.raises(exception.UnsupportedObjectError) as caught:
                client.call(resilience.admin_context(), 'object_action', objinst=primitive,
                            objmethod='save', args=[], kwargs={})
            assert message in str(caught.value), (namespace, name, str(caught.value))
        # Another project's envelope is plain data to minisched, never an object.
        nova = {'nova_object.name': 'Service', 'nova_object.namespace': 'nova',
                'nova_object.version': '1.22', 'nova_object.data': {'host': 'h'}}
        with pytest.raises(exception.InvalidObjectRequest) as caught:
            client.call(resilience.admin_context(), 'object_action', objinst=nova,
                        objmethod='save', args=[], kwargs={})
        assert 'objinst must be a minisched object primitive' in str(caught.value)
        # ...and the conductor still answers a valid remoted call.
        services = raw.object_client('conductor', '3.0').call(
            ms_context.get_admin_context(), 'object_class_action_versions',
            objname='ServiceList', objmethod='get_all',
            object_versions=objects_base.obj_tree_get_versions('ServiceList'),
            args=[], kwargs={})
        assert [s.binary for s in services] == ['minisched-conductor']
    finally:
        raw.close()
    assert cluster.processes['conductor'].popen.poll() is None
