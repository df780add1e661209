"""The DevStack plugin (devstack/), run by bash against stand-ins for DevStack's functions.

Each run is one ``bash`` process, as DevStack runs them: stack.sh sources the plugin's
settings once and then ``plugin.sh`` for ``stack install``, ``stack post-config`` and
``stack extra``; unstack.sh and clean.sh are processes of their own. The stand-ins (a shell
prelude) record every call they get in a log file, one tab-separated record per line;
``iniset`` also writes a real ini file, and ``minisched-manage`` is a stand-in script on PATH
that records its arguments and answers ``service list`` with a table. No network, no
database, no systemd.
"""
import configparser
import getpass
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest
from oslo_config import cfg

from minisched.conf import placement as placement_conf
from minisched.db import engines
from minisched.scheduler.client import report

REPO = Path(__file__).resolve().parents[3]
DEVSTACK = REPO / 'devstack'
SCRIPTS = [DEVSTACK / 'plugin.sh', DEVSTACK / 'settings', DEVSTACK / 'lib' / 'minisched']

TRANSPORT = 'rabbit://stackrabbit:secretmq@10.0.0.5:5672/'

PRELUDE = r'''
# stack.sh runs with errexit; nounset and pipefail on top catch typos in the plugin.
set -o errexit -o nounset -o pipefail

_record() { local IFS=$'\t'; printf '%s\n' "$*" >> "$CALL_LOG"; }

# functions-common: services
is_service_enabled() {
    local s
    for s in "$@"; do
        [[ ",${ENABLED_SERVICES}," == *",$s,"* ]] && return 0
    done
    return 1
}
enable_service() {
    local s
    for s in "$@"; do
        if [[ ",${DISABLED_SERVICES:-}," == *",$s,"* ]]; then
            continue
        fi
        is_service_enabled "$s" || ENABLED_SERVICES="${ENABLED_SERVICES:+$ENABLED_SERVICES,}$s"
    done
}
run_process() {
    if is_service_enabled "$1"; then _record run_process "$@"
    else _record run_process_skipped "$1"; fi
}
stop_process() {
    if is_service_enabled "$1"; then _record stop_process "$1"
    else _record stop_process_skipped "$1"; fi
}

# functions-common: messages
die() { shift; _record die "$*"; echo "die: $*" >&2; exit 1; }
warn() { shift; _record warn "$*"; }
echo_summary() { _record echo_summary "$*"; }

# inc/python, functions, lib/database, lib/rpc_backend
get_python_exec_prefix() { echo "$FAKE_BIN"; }
setup_develop() { _record setup_develop "$@"; }
setup_logging() { _record setup_logging "$@"; }
recreate_database() { _record recreate_database "$@"; }
database_connection_url() {
    case "$DATABASE_TYPE" in
        mysql) echo "mysql+pymysql://root:secretdb@127.0.0.1/$1?charset=utf8" ;;
        postgresql) echo "postgresql://root:secretdb@127.0.0.1/$1?client_encoding=utf8" ;;
    esac
}
get_transport_url() {
    if [[ -z "${FAKE_NO_RABBIT:-}" ]]; then
        echo "rabbit://stackrabbit:secretmq@10.0.0.5:5672/${1:-}"
    fi
}
rpc_backend_add_vhost() { _record rpc_backend_add_vhost "$@"; }

# lib/keystone: configure_keystoneauth writes what DevStack's writes.
KEYSTONE_SERVICE_URI=http://10.0.0.5/identity
SERVICE_PASSWORD=secretsvc
SERVICE_DOMAIN_NAME=Default
SERVICE_PROJECT_NAME=service
configure_keystoneauth() {
    _record configure_keystoneauth "$@"
    local conf_file=$1 admin_user=$2 section=$3
    iniset $conf_file $section auth_type password
    iniset $conf_file $section interface public
    iniset $conf_file $section auth_url $KEYSTONE_SERVICE_URI
    iniset $conf_file $section username $admin_user
    iniset $conf_file $section password $SERVICE_PASSWORD
    iniset $conf_file $section user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset $conf_file $section project_name $SERVICE_PROJECT_NAME
    iniset $conf_file $section project_domain_name "$SERVICE_DOMAIN_NAME"
}
create_service_user() { _record create_service_user "$@"; }
# functions: wait_for_service TIMEOUT URL (FAKE_PLACEMENT_DOWN: it never answers)
wait_for_service() { _record wait_for_service "$@"; [[ -z "${FAKE_PLACEMENT_DOWN:-}" ]]; }

# the system
sudo() { _record sudo "$@"; "$@"; }
sleep() { _record sleep "$@"; }
hostname() { echo testnode; }

# iniset FILE SECTION OPTION VALUE: sets the option in a real ini file (pure bash).
iniset() {
    _record iniset "$@"
    local file=$1 section=$2 option=$3 value=${4:-}
    local line here=0 written=0
    local -a out=()
    if [[ -e "$file" ]]; then
        while IFS= read -r line || [[ -n "$line" ]]; do
            if [[ "$line" =~ ^\[.*\][[:space:]]*$ ]]; then
                if (( here && !written )); then out+=("$option = $value"); written=1; fi
                here=0
                if [[ "$line" == "[$section]" ]]; then here=1; fi
            elif (( here )) && [[ "$line" =~ ^${option}[[:space:]]*= ]]; then
                if (( !written )); then out+=("$option = $value"); written=1; fi
                continue
            fi
            out+=("$line")
        done < "$file"
    fi
    if (( here && !written )); then out+=("$option = $value"); written=1; fi
    if (( !written )); then
        if (( ${#out[@]} )); then out+=(""); fi
        out+=("[$section]" "$option = $value")
    fi
    printf '%s\n' "${out[@]}" > "$file"
}
'''

#: placement-manage: records its arguments.
PLACEMENT_MANAGE_STUB = r'''#!/bin/bash
(IFS=$'\t'; printf '%s\n' "placement-manage	$*") >> "$CALL_LOG"
'''

# Records its arguments; "service list --host H" prints a service table in which the
# compute of H is down until the FAKE_UP_AFTER-th poll for H (default: the first).
MANAGE_STUB = r'''#!/bin/bash
set -o errexit -o nounset
(IFS=$'\t'; printf '%s\n' "minisched-manage	$*") >> "$CALL_LOG"
host=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ "${args[i]}" == "--host" ]]; then host=${args[i + 1]}; fi
done
if [[ " $* " == *" service list "* ]]; then
    polls="$FAKE_STATE/polls-$host"
    n=$(( $(cat "$polls" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$polls"
    state=down
    if (( n >= ${FAKE_UP_AFTER:-1} )); then state=up; fi
    echo "+----+-------------------+------+---------+-------+"
    echo "| Id | Binary            | Host | Status  | State |"
    echo "+----+-------------------+------+---------+-------+"
    echo "| 3  | minisched-compute | $host | enabled | $state |"
    echo "+----+-------------------+------+---------+-------+"
fi
'''


class Devstack:
    """A fake DevStack host in ``tmp_path``: runs plugin phases, reads what they did."""

    def __init__(self, tmp_path):
        self.root = tmp_path
        self.log = tmp_path / 'calls.log'
        self.bin = tmp_path / 'bin'
        self.state = tmp_path / 'fake-state'
        self.conf_dir = tmp_path / 'etc' / 'minisched'
        self.data_dir = tmp_path / 'data'
        self.conf = self.conf_dir / 'minisched.conf'
        self.placement_conf = self.conf_dir / 'placement' / 'placement.conf'
        self.state_path = self.data_dir / 'minisched'
        for directory in (self.bin, self.state, self.data_dir):
            directory.mkdir()
        manage = self.bin / 'minisched-manage'
        manage.write_text(MANAGE_STUB)
        manage.chmod(0o755)
        placement_manage = self.bin / 'placement-manage'
        placement_manage.write_text(PLACEMENT_MANAGE_STUB)
        placement_manage.chmod(0o755)
        self.prelude = tmp_path / 'prelude.sh'
        self.prelude.write_text(PRELUDE)
        self.env = {
            'PATH': '%s:/usr/bin:/bin' % self.bin,
            'HOME': str(tmp_path),
            'LC_ALL': 'C',
            'CALL_LOG': str(self.log),
            'FAKE_BIN': str(self.bin),
            'FAKE_STATE': str(self.state),
            'DEST': str(tmp_path / 'opt-stack'),
            'DATA_DIR': str(self.data_dir),
            'STACK_USER': getpass.getuser(),
            'ENABLED_SERVICES': 'rabbit,mysql,key',
            'DATABASE_TYPE': 'mysql',
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'MINISCHED_CONF_DIR': str(self.conf_dir),
            'MINISCHED_COMPUTE_HOST_PREFIX': 'node-compute',
        }

    def run(self, *phases, check=True, xtrace=False, **env):
        """One bash process: prelude, settings, then ``plugin.sh`` per phase.

        Returns the records this run added, as tuples.
        """
        before = len(self.records())
        lines = ['source %s' % shlex.quote(str(self.prelude))]
        if xtrace:
            lines.append('set -o xtrace')
        lines.append('source %s' % shlex.quote(str(DEVSTACK / 'settings')))
        for phase in phases:
            lines.append('_record phase %s' % phase)
            lines.append('source %s %s' % (shlex.quote(str(DEVSTACK / 'plugin.sh')), phase))
        lines.append('_record xtrace "$(set +o | grep xtrace)"')
        run_env = dict(self.env)
        for key, value in env.items():
            if value is None:
                run_env.pop(key, None)
            else:
                run_env[key] = str(value)
        proc = subprocess.run(['bash', '-c', '\n'.join(lines)], env=run_env, cwd=self.root,
                              capture_output=True, text=True, timeout=30)
        if check:
            assert proc.returncode == 0, proc.stderr[-3000:]
        self.proc = proc
        return self.records()[before:]

    def records(self):
        if not self.log.exists():
            return []
        return [tuple(line.split('\t')) for line in self.log.read_text().splitlines()]

    def ini(self, path):
        # [DEFAULT] as a section of its own (not inherited by the others).
        parser = configparser.ConfigParser(interpolation=None, default_section='\0')
        assert parser.read(path), '%s was not written' % path
        return {section: dict(parser[section]) for section in parser.sections()}

    def compute_conf(self, host):
        return self.conf_dir / ('compute-%s.conf' % host)


def calls(records, name):
    return [r for r in records if r[0] == name]


def manage_args(ds, records):
    """The minisched-manage calls of ``records``, without the leading --config-file."""
    out = []
    for record in calls(records, 'minisched-manage'):
        assert record[1:3] == ('--config-file', str(ds.conf)), record
        out.append(' '.join(record[3:]))
    return out


def phase_of(records):
    """Each record paired with the phase that was running when it was made."""
    current = None
    for record in records:
        if record[0] == 'phase':
            current = ' '.join(record[1:])
        yield current, record


@pytest.fixture
def ds(tmp_path):
    return Devstack(tmp_path)


STACK = ('stack install', 'stack post-config', 'stack extra')


def test_scripts_pass_bash_syntax_check():
    for script in SCRIPTS:
        proc = subprocess.run(['bash', '-n', str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, '%s: %s' % (script, proc.stderr)


def test_stack_install_only_installs(ds):
    records = ds.run('stack install')
    # With the placement extra: the plugin runs its own Placement (no placement-api here).
    assert calls(records, 'setup_develop') == [('setup_develop', str(REPO), 'placement')]
    assert not calls(records, 'iniset')
    assert not calls(records, 'run_process')
    assert not calls(records, 'minisched-manage')
    assert not ds.conf.exists()


def test_post_config_writes_the_config_file(ds):
    records = ds.run('stack install', 'stack post-config')
    conf = ds.ini(ds.conf)
    assert conf['DEFAULT'] == {
        'transport_url': TRANSPORT + 'minisched',
        'state_path': str(ds.state_path),
        'report_interval': '10',
        'concurrency_backend': 'auto',
        'debug': 'True',
    }
    assert conf['database'] == {
        'connection': 'mysql+pymysql://root:secretdb@127.0.0.1/minisched_cell1?charset=utf8'}
    assert conf['api_database'] == {
        'connection': 'mysql+pymysql://root:secretdb@127.0.0.1/minisched_api?charset=utf8'}
    assert conf['conductor'] == {'workers': '2'}
    assert conf['scheduler'] == {'workers': '2'}
    assert conf['placement'] == {'enabled': 'True', 'auth_type': 'admin_token',
                                 'endpoint': 'http://127.0.0.1:8780', 'token': 'admin'}
    assert calls(records, 'setup_logging') == [('setup_logging', str(ds.conf)),
                                               ('setup_logging', str(ds.placement_conf))]
    # Its own RabbitMQ vhost: topic queue names are shared by the whole vhost.
    assert calls(records, 'rpc_backend_add_vhost') == [('rpc_backend_add_vhost', 'minisched')]
    assert ds.conf_dir.is_dir() and ds.state_path.is_dir()


def test_the_concurrency_backend_comes_from_local_conf(ds):
    ds.run('stack install', 'stack post-config', MINISCHED_CONCURRENCY_BACKEND='eventlet')
    assert ds.ini(ds.conf)['DEFAULT']['concurrency_backend'] == 'eventlet'


def test_post_config_writes_one_config_per_compute(ds):
    ds.run('stack install', 'stack post-config', MINISCHED_COMPUTE_COUNT=3,
           MINISCHED_FAKE_VCPUS=8, MINISCHED_FAKE_MEMORY_MB=4096)
    for i in (1, 2, 3):
        conf = ds.ini(ds.compute_conf('node-compute%d' % i))
        assert conf['DEFAULT'] == {'host': 'node-compute%d' % i}
        assert conf['fake_driver'] == {'vcpus': '8', 'memory_mb': '4096'}
    assert sorted(p.name for p in ds.conf_dir.iterdir()) == [
        'compute-node-compute1.conf', 'compute-node-compute2.conf',
        'compute-node-compute3.conf', 'minisched.conf', 'placement']


def test_post_config_creates_and_syncs_databases_and_cells(ds):
    records = ds.run('stack install', 'stack post-config')
    assert [r[1] for r in calls(records, 'recreate_database')] == [
        'minisched_placement', 'minisched_api', 'minisched_cell1']
    assert calls(records, 'placement-manage') == [
        ('placement-manage', '--config-file', str(ds.placement_conf), 'db', 'sync')]
    assert manage_args(ds, records) == ['api_db sync', 'db sync', 'cell simple_cell_setup']
    assert not calls(records, 'run_process')
    # The databases exist before the first minisched-manage call.
    names = [r[0] for r in records]
    assert names.index('recreate_database') < names.index('minisched-manage')


def test_cell_create_mode_maps_cell0_and_creates_the_cell(ds):
    records = ds.run('stack install', 'stack post-config', MINISCHED_CELL_SETUP='create')
    assert [r[1] for r in calls(records, 'recreate_database')] == [
        'minisched_placement', 'minisched_api', 'minisched_cell1', 'minisched_cell0']
    url = 'mysql+pymysql://root:secretdb@127.0.0.1/%s?charset=utf8'
    assert manage_args(ds, records) == [
        'api_db sync',
        'cell map_cell0 --database_connection ' + url % 'minisched_cell0',
        'db sync',
        'cell create --name cell1 --transport-url %sminisched --database_connection %s' % (
            TRANSPORT, url % 'minisched_cell1'),
    ]


def test_stack_starts_conductor_scheduler_computes_then_discovers(ds):
    records = ds.run(*STACK)
    bindir = ds.bin
    started = [(phase, r[1:]) for phase, r in phase_of(records) if r[0] == 'run_process']
    assert started == [
        ('stack extra', ('minisched-placement',
                         '%s/uwsgi --procname-prefix minisched-placement --ini %s' % (
                             bindir, ds.placement_conf.parent / 'placement-uwsgi.ini'),
                         '', '',
                         'OS_PLACEMENT_CONFIG_DIR=%s' % ds.placement_conf.parent)),
        ('stack extra', ('minisched-conductor',
                         '%s/minisched-conductor --config-file %s' % (bindir, ds.conf))),
        ('stack extra', ('minisched-scheduler',
                         '%s/minisched-scheduler --config-file %s' % (bindir, ds.conf))),
        ('stack extra', ('minisched-compute-1',
                         '%s/minisched-compute --config-file %s --config-file %s' % (
                             bindir, ds.conf, ds.compute_conf('node-compute1')))),
        ('stack extra', ('minisched-compute-2',
                         '%s/minisched-compute --config-file %s --config-file %s' % (
                             bindir, ds.conf, ds.compute_conf('node-compute2')))),
    ]
    extra = [r for phase, r in phase_of(records) if phase == 'stack extra']
    assert manage_args(ds, extra) == [
        'service list --host node-compute1',
        'service list --host node-compute2',
        'cell discover_hosts --verbose',
    ]
    # discover_hosts runs once, in "stack extra", after the last compute started.
    discover = [i for i, r in enumerate(records)
                if r[0] == 'minisched-manage' and 'discover_hosts' in r]
    assert len(discover) == 1
    last_start = max(i for i, r in enumerate(records) if r[0] == 'run_process')
    assert discover[0] > last_start
    assert not calls(records, 'die')


def test_discovery_waits_until_the_computes_report_up(ds):
    records = ds.run(*STACK, FAKE_UP_AFTER=3)
    extra = [r for phase, r in phase_of(records) if phase == 'stack extra']
    # Each compute answers "up" from its third poll on; one second between polls.
    assert manage_args(ds, extra) == (['service list --host node-compute1'] * 3
                                      + ['service list --host node-compute2'] * 3
                                      + ['cell discover_hosts --verbose'])
    assert calls(records, 'sleep') == [('sleep', '1')] * 4


def test_a_compute_that_never_comes_up_stops_the_stack(ds):
    records = ds.run(*STACK, FAKE_UP_AFTER=100, MINISCHED_READY_TIMEOUT=4, check=False)
    assert ds.proc.returncode != 0
    assert 'node-compute1 is not up after 4s' in calls(records, 'die')[0][1]
    assert len(calls(records, 'sleep')) == 4
    assert not [a for a in manage_args(ds, records) if 'discover_hosts' in a]


def test_unstack_stops_all_services(ds):
    ds.run(*STACK)
    records = ds.run('unstack')
    assert [r[1] for r in calls(records, 'stop_process')] == [
        'minisched-compute-2', 'minisched-compute-1', 'minisched-scheduler',
        'minisched-conductor', 'minisched-placement']
    assert not calls(records, 'run_process')
    assert not calls(records, 'minisched-manage')
    assert ds.conf.exists()  # unstack keeps the configuration


def test_clean_removes_config_and_state(ds):
    ds.run(*STACK)
    (ds.state_path / 'leftover.sqlite').write_text('')
    ds.run('unstack')  # clean.sh runs unstack.sh first
    records = ds.run('clean')
    assert not ds.conf_dir.exists()
    assert not ds.state_path.exists()
    assert ('sudo', 'rm', '-rf', str(ds.conf_dir)) in records
    assert ('sudo', 'rm', '-rf', str(ds.state_path)) in records
    assert not calls(records, 'stop_process')


def test_compute_only_node_gets_no_database(ds):
    # local.conf of a compute node: disable_service minisched-conductor minisched-scheduler
    # (enable_service in the plugin's settings then leaves them off); no database server.
    records = ds.run(*STACK, ENABLED_SERVICES='', DATABASE_TYPE=None,
                     DISABLED_SERVICES='minisched-conductor,minisched-scheduler')
    conf = ds.ini(ds.conf)
    assert set(conf) == {'DEFAULT', 'placement'}
    assert conf['DEFAULT']['transport_url'] == TRANSPORT + 'minisched'
    # The controller's own Placement (MINISCHED_PLACEMENT_HOST), not run here.
    assert conf['placement']['endpoint'] == 'http://127.0.0.1:8780'
    assert not ds.placement_conf.exists()
    assert calls(records, 'setup_develop') == [('setup_develop', str(REPO))]
    assert not calls(records, 'placement-manage')
    assert not calls(records, 'recreate_database')
    assert not calls(records, 'rpc_backend_add_vhost')  # the broker is elsewhere
    assert not calls(records, 'minisched-manage')  # no init, no wait, no discovery
    assert [r[1] for r in calls(records, 'run_process')] == [
        'minisched-compute-1', 'minisched-compute-2']
    assert [r[1] for r in calls(records, 'run_process_skipped')] == [
        'minisched-conductor', 'minisched-scheduler']


def test_disabled_computes_are_not_configured_or_started(ds):
    records = ds.run(*STACK, DISABLED_SERVICES='minisched-compute')
    assert [r[1] for r in calls(records, 'run_process')] == [
        'minisched-placement', 'minisched-conductor', 'minisched-scheduler']
    assert not list(ds.conf_dir.glob('compute-*.conf'))
    assert manage_args(ds, records)[-1] == 'cell discover_hosts --verbose'
    assert not [a for a in manage_args(ds, records) if a.startswith('service list')]


def test_sqlite_backend_needs_no_database_server(ds):
    records = ds.run(*STACK, MINISCHED_DB_BACKEND='sqlite', DATABASE_TYPE=None)
    conf = ds.ini(ds.conf)
    assert conf['database']['connection'] == 'sqlite:///%s/minisched_cell1.sqlite' % ds.state_path
    assert conf['api_database']['connection'] == (
        'sqlite:///%s/minisched_api.sqlite' % ds.state_path)
    assert conf['database']['connection'].startswith('sqlite:////')
    assert not calls(records, 'recreate_database')


def test_postgresql_backend(ds):
    ds.run('stack install', 'stack post-config', DATABASE_TYPE='postgresql')
    # DevStack's postgresql:// would mean psycopg 3 to SQLAlchemy 2.1: the driver is named.
    url = 'postgresql+psycopg2://root:secretdb@127.0.0.1/minisched_cell1?client_encoding=utf8'
    assert ds.ini(ds.conf)['database']['connection'] == url
    assert engines.url_problem(url) is None


@pytest.mark.parametrize('env, message', [
    ({'MINISCHED_DB_BACKEND': 'postgresql'}, "DevStack's database is 'mysql'"),
    ({'DATABASE_TYPE': None}, 'need a database'),
    ({'MINISCHED_DB_BACKEND': 'oracle'}, 'Unsupported MINISCHED_DB_BACKEND=oracle'),
    ({'FAKE_NO_RABBIT': '1'}, 'minisched needs RabbitMQ'),
    ({'MINISCHED_COMPUTE_COUNT': 'two'}, 'MINISCHED_COMPUTE_COUNT must be a number'),
    ({'MINISCHED_PLACEMENT': 'keystone'}, 'Unknown MINISCHED_PLACEMENT=keystone'),
])
def test_bad_settings_stop_post_config(ds, env, message):
    records = ds.run('stack install', 'stack post-config', check=False, **env)
    assert ds.proc.returncode != 0
    assert message in calls(records, 'die')[0][1]
    assert not calls(records, 'minisched-manage')


def test_default_vhost_when_isolation_is_turned_off(ds):
    records = ds.run('stack install', 'stack post-config', MINISCHED_RABBIT_VHOST='')
    assert ds.ini(ds.conf)['DEFAULT']['transport_url'] == TRANSPORT
    assert not calls(records, 'rpc_backend_add_vhost')


@pytest.mark.parametrize('xtrace', [False, True])
def test_plugin_restores_xtrace(ds, xtrace):
    records = ds.run(*STACK, 'unstack', xtrace=xtrace)
    expected = 'set -o xtrace' if xtrace else 'set +o xtrace'
    assert calls(records, 'xtrace') == [('xtrace', expected)]


def test_stand_in_iniset_replaces_values(ds):
    """The prelude's iniset behaves like DevStack's: one value per option."""
    path = ds.root / 'x.ini'
    script = textwrap.dedent('''
        source %s
        iniset %s DEFAULT a 1
        iniset %s s b 2
        iniset %s DEFAULT a 3
        iniset %s s c 'x = y'
    ''' % ((ds.prelude,) + (path,) * 4))
    subprocess.run(['bash', '-c', script], env=ds.env, check=True, timeout=10)
    assert ds.ini(path) == {'DEFAULT': {'a': '3'}, 's': {'b': '2', 'c': 'x = y'}}
    assert path.read_text().count('a = ') == 1


def test_settings_keep_local_conf_values(ds):
    script = 'source %s; source %s/settings; echo "$MINISCHED_CONF|$MINISCHED_STATE_PATH|' \
             '$MINISCHED_COMPUTE_COUNT|$MINISCHED_DB_BACKEND|$MINISCHED_DIR|$ENABLED_SERVICES"' % (
                 ds.prelude, DEVSTACK)
    env = dict(ds.env, MINISCHED_CONF='/x/y.conf', MINISCHED_COMPUTE_COUNT='1')
    out = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True,
                         check=True, timeout=10).stdout.strip()
    assert out.split('|') == [
        '/x/y.conf', '%s/minisched' % ds.data_dir, '1', 'mysql', str(REPO),
        'rabbit,mysql,key,minisched-conductor,minisched-scheduler,minisched-compute,'
        'minisched-placement,minisched-compute-1']


# -- Placement ------------------------------------------------------------------------------

def placement_adapter(path):
    """The keystoneauth1 Adapter minisched's services build from ``path``'s [placement].

    The options are minisched's, in a group object of this test's own: loading an auth
    plugin registers its options (``password``'s required ``auth_url``...) in the group
    object, which :mod:`minisched.conf.placement`'s is for every ConfigOpts of the process.
    """
    conf = cfg.ConfigOpts()
    conf.register_group(cfg.OptGroup(placement_conf.GROUP.name))
    conf.register_opt(placement_conf.ENABLED_OPT, group=placement_conf.GROUP.name)
    conf.register_opts(placement_conf.KSA_OPTS + placement_conf._IGNORED_OPTS,
                       group=placement_conf.GROUP.name)
    conf(['--config-file', str(path)], project='minisched', default_config_files=[],
         default_config_dirs=[])
    assert conf.placement.enabled
    return report.load_adapter(conf)


def test_own_placement_is_configured_synced_started_and_waited_for(ds):
    records = ds.run(*STACK)
    placement = ds.ini(ds.placement_conf)
    assert placement['api'] == {'auth_strategy': 'noauth2'}
    assert placement['placement_database'] == {
        'connection': 'mysql+pymysql://root:secretdb@127.0.0.1/minisched_placement'
                      '?charset=utf8'}
    uwsgi = ds.ini(ds.placement_conf.parent / 'placement-uwsgi.ini')['uwsgi']
    assert uwsgi['http-socket'] == '127.0.0.1:8780'
    assert uwsgi['module'] == 'placement.wsgi.api:application'
    assert (uwsgi['processes'], uwsgi['threads']) == ('2', '4')
    # Started first, and answering before the conductor (then the computes) start.
    names = [(r[0], r[1]) for r in records if r[0] in ('run_process', 'wait_for_service')]
    assert names[:3] == [('run_process', 'minisched-placement'),
                         ('wait_for_service', '60'), ('run_process', 'minisched-conductor')]
    assert calls(records, 'wait_for_service')[0][2] == 'http://127.0.0.1:8780'
    # The services' client reaches it with the noauth2 admin token.
    adapter = placement_adapter(ds.conf)
    assert adapter.get_endpoint() == 'http://127.0.0.1:8780'
    assert adapter.session.get_auth_headers(adapter.auth) == {'X-Auth-Token': 'admin'}
    assert not calls(records, 'create_service_user')


def test_own_placement_on_sqlite_serves_one_request_at_a_time(ds):
    ds.run('stack install', 'stack post-config', MINISCHED_DB_BACKEND='sqlite',
           DATABASE_TYPE=None, MINISCHED_PLACEMENT_HOST='10.0.0.5')
    assert ds.ini(ds.placement_conf)['placement_database']['connection'] == (
        'sqlite:///%s/minisched_placement.sqlite' % ds.state_path)
    uwsgi = ds.ini(ds.placement_conf.parent / 'placement-uwsgi.ini')['uwsgi']
    assert (uwsgi['http-socket'], uwsgi['threads']) == ('10.0.0.5:8780', '1')
    assert ds.ini(ds.conf)['placement']['endpoint'] == 'http://10.0.0.5:8780'


def test_own_placement_that_does_not_answer_stops_the_stack(ds):
    records = ds.run(*STACK, FAKE_PLACEMENT_DOWN='1', check=False)
    assert ds.proc.returncode != 0
    assert 'minisched-placement did not start on http://127.0.0.1:8780' in calls(
        records, 'die')[0][1]
    assert [r[1] for r in calls(records, 'run_process')] == ['minisched-placement']


def test_devstack_placement_through_keystone(ds):
    records = ds.run(*STACK, ENABLED_SERVICES='rabbit,mysql,key,placement-api')
    assert ds.ini(ds.conf)['placement'] == {
        'enabled': 'True', 'auth_type': 'password', 'interface': 'public',
        'auth_url': 'http://10.0.0.5/identity', 'username': 'minisched',
        'password': 'secretsvc', 'user_domain_name': 'Default', 'project_name': 'service',
        'project_domain_name': 'Default'}
    assert calls(records, 'create_service_user') == [
        ('create_service_user', 'minisched', 'admin')]
    # DevStack's placement stays as installed: no placement extra, nothing of ours runs.
    assert calls(records, 'setup_develop') == [('setup_develop', str(REPO))]
    assert not ds.placement_conf.exists()
    assert not calls(records, 'placement-manage')
    assert not calls(records, 'wait_for_service')
    assert 'minisched-placement' not in [r[1] for r in calls(records, 'run_process')]
    assert [r[1] for r in calls(records, 'recreate_database')] == [
        'minisched_api', 'minisched_cell1']
    auth = placement_adapter(ds.conf).auth
    assert (type(auth).__name__, auth._username) == ('Password', 'minisched')


def test_compute_node_with_a_remote_devstack_placement(ds):
    records = ds.run(*STACK, ENABLED_SERVICES='placement-client', DATABASE_TYPE=None,
                     DISABLED_SERVICES='minisched-conductor,minisched-scheduler')
    assert ds.ini(ds.conf)['placement']['auth_type'] == 'password'
    assert not calls(records, 'create_service_user')  # Keystone runs elsewhere


def test_placement_off(ds):
    records = ds.run(*STACK, MINISCHED_PLACEMENT='off')
    assert ds.ini(ds.conf)['placement'] == {'enabled': 'False'}
    assert not calls(records, 'placement-manage')
    assert 'minisched-placement' not in [r[1] for r in calls(records, 'run_process')]
