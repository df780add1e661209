"""minisched.localcluster: what minisched-cluster writes is private from its creation."""
import io
import os
import stat

import pytest

from minisched import localcluster


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def _cluster(tmp_path, **kwargs):
    out = io.StringIO()
    cluster = localcluster.LocalCluster(str(tmp_path / 'state'), computes=2, out=out,
                                        transport_url='rabbit://u:secret@127.0.0.1:5672/',
                                        **kwargs)
    return cluster, out


def test_config_files_and_state_dir_are_private_from_their_creation(tmp_path, umask_022,
                                                                     monkeypatch):
    created = {}
    real_open = os.open

    def recording_open(path, flags, mode=0o777, **kwargs):
        if flags & os.O_CREAT:
            created[os.path.basename(path)] = mode
        return real_open(path, flags, mode, **kwargs)
    monkeypatch.setattr(localcluster.os, 'open', recording_open)
    cluster, out = _cluster(tmp_path)
    cluster.write_config()
    assert _mode(cluster.state_dir) == 0o700
    names = ['minisched.conf', 'compute1.conf', 'compute2.conf', 'generated.json']
    assert sorted(os.listdir(cluster.state_dir)) == sorted(names + ['minisched.conf.d'])
    assert _mode(cluster.conf_dir) == 0o700
    for name in names:
        assert _mode(os.path.join(cluster.state_dir, name)) == 0o600, name
        assert created[name] == 0o600, name  # never another mode, not even for a moment
    with open(cluster.config_file) as f:
        assert 'transport_url = rabbit://u:secret@127.0.0.1:5672/' in f.read()
    assert out.getvalue() == ''


def test_looser_existing_dir_and_files_are_tightened_with_a_note(tmp_path, umask_022):
    cluster, out = _cluster(tmp_path)
    os.makedirs(cluster.state_dir, mode=0o755)
    os.chmod(cluster.state_dir, 0o755)
    with open(cluster.config_file, 'w') as f:
        f.write('old\n')
    os.chmod(cluster.config_file, 0o644)
    cluster.write_config()
    assert _mode(cluster.state_dir) == 0o700
    assert _mode(cluster.config_file) == 0o600
    assert out.getvalue().splitlines() == [
        'Tightened the permissions of %s from %04o to %04o (the cluster config holds the '
        'broker password).' % (path, old, new)
        for path, old, new in ((cluster.state_dir, 0o755, 0o700),
                               (cluster.config_file, 0o644, 0o600))]
    cluster.write_config()  # nothing left to tighten: no note
    assert len(out.getvalue().splitlines()) == 2


def test_logs_and_pid_file_are_private_too(tmp_path, umask_022):
    cluster, _out = _cluster(tmp_path)
    cluster.make_state_dir()
    with cluster.open_private(os.path.join(cluster.state_dir, 'x.log'), 'ab') as handle:
        handle.write(b'line\n')
    cluster._save_pids()
    assert _mode(os.path.join(cluster.state_dir, 'x.log')) == 0o600
    assert _mode(os.path.join(cluster.state_dir, localcluster.SERVICES_FILE)) == 0o600


def test_the_in_process_config_logs_to_a_file_and_sizes_the_computes(tmp_path):
    cluster, _out = _cluster(tmp_path)
    cluster.write_config(fake=True)
    with open(cluster.config_file) as f:
        lines = f.read().splitlines()
    assert lines[2:5] == ['[DEFAULT]', 'log_file = %s' % os.path.join(cluster.state_dir,
                                                                     'services.log'),
                         'state_path = %s' % cluster.state_dir]
    assert 'transport_url = fake://' in lines
    assert lines[-2:] == ['[fake_driver]',
                          'host_sizes = compute1:4/16384/200,compute2:8/32768/400']


def test_the_sqlite_databases_are_private_from_their_creation(tmp_path, umask_022,
                                                              monkeypatch):
    """The API database holds the broker password (the cells' transport URLs)."""
    from minisched.conf import database
    cluster, out = _cluster(tmp_path)
    cluster.write_config()
    seen = {}

    def manage(*args, check=True):
        # What minisched-manage finds when it opens them (SQLite keeps an existing mode).
        seen[args] = {name: _mode(os.path.join(cluster.state_dir, name))
                      for name in localcluster.SQLITE_FILES}
    monkeypatch.setattr(cluster, 'manage', manage)
    cluster.sync_databases()
    assert seen[('api_db', 'sync')] == dict.fromkeys(localcluster.SQLITE_FILES, 0o600)
    assert sorted(localcluster.SQLITE_FILES) == sorted([database.MAIN_SQLITE,
                                                        database.API_SQLITE])
    # A file left 0644 by an older minisched-cluster is tightened, with a note.
    path = os.path.join(cluster.state_dir, database.API_SQLITE)
    os.chmod(path, 0o644)
    cluster.sync_databases()
    assert _mode(path) == 0o600
    assert 'Tightened the permissions of %s from 0644 to 0600' % path in out.getvalue()


def test_an_edit_of_the_generated_config_is_kept_and_said_when_up_replaces_it(tmp_path):
    cluster, out = _cluster(tmp_path)
    cluster.write_config()
    cluster.write_config()  # unchanged since: replaced without a word
    assert out.getvalue() == ''
    with open(cluster.config_file, 'a') as f:
        f.write('[scheduler]\nrecord_requests_to = /tmp/trace\n')

    cluster.write_config()

    said = out.getvalue()
    assert 'Replaced minisched.conf, which was edited since the last up' in said, said
    assert 'record_requests_to = /tmp/trace' in said
    assert cluster.conf_dir in said  # where lasting options go
    with open(cluster.config_file + '.edited') as f:
        assert 'record_requests_to = /tmp/trace' in f.read()
    with open(cluster.config_file) as f:
        assert 'record_requests_to' not in f.read()
    assert _mode(cluster.config_file + '.edited') == 0o600


def test_the_operator_files_are_read_after_the_generated_ones_and_kept(tmp_path):
    cluster, out = _cluster(tmp_path)
    cluster.write_config()
    with open(os.path.join(cluster.conf_dir, 'scheduler.conf'), 'w') as f:
        f.write('[filter_scheduler]\nram_weight_multiplier = -1.0\n')

    cluster.write_config()

    assert 'Layering 1 file(s) of %s over the generated config: scheduler.conf.' \
        % cluster.conf_dir in out.getvalue()
    assert os.listdir(cluster.conf_dir) == ['scheduler.conf']
    compute = cluster.compute_config('compute1')
    assert cluster.config_args(compute) == ['--config-file', cluster.config_file,
                                            '--config-file', compute,
                                            '--config-dir', cluster.conf_dir]
    from oslo_config import cfg
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.FloatOpt('ram_weight_multiplier', default=1.0),
                      group='filter_scheduler')
    conf(cluster.config_args(compute), project='minisched', use_env=False)
    assert conf.filter_scheduler.ram_weight_multiplier == -1.0
