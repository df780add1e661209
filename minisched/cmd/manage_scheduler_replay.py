"""``minisched-manage scheduler snapshot`` and ``scheduler replay``: "what if", offline.

``snapshot -o FILE [--anonymize]`` writes what the scheduler sees to one JSON file.
``replay SNAPSHOT [TRACE | --flavor NAME --count N | --mix FILE] [--config-file F ...]
[--compare A B] [--seed N] [--plot DIR]`` runs the requests through the real FilterScheduler
with each configuration (a file is read over the configuration files ``minisched-manage``
was given: it needs to hold only what changes) and prints, side by side, what each made of
them. No broker and no database are used by ``replay``.
"""
import argparse
import functools
import os
import sys

from oslo_config import cfg

from minisched.cmd import manage_display
from minisched.cmd import manage_flavor
from minisched import config
from minisched.conf import opts as conf_opts
from minisched import exception
from minisched.scheduler.replay import files
from minisched.scheduler.replay import offline
from minisched.scheduler.replay import run as replay_mod
from minisched.scheduler.replay import schema
from minisched.scheduler.replay import snapshot as snapshot_mod
from minisched.scheduler.replay import trace as trace_mod

CONF = config.CONF
RESOURCES = (('ram', 'RAM'), ('vcpu', 'vCPU'), ('disk', 'disk'))
#: How the utilization rows read: the share of total x allocation ratio in use.
USED = '%s used %% of allocatable'


def _escaped(fn):
    """``fn``, its errors' messages with what a file said escaped for the terminal."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except exception.MinischedException as exc:
            raise exception.Invalid(files.printable(exc.format_message())) from exc
    return wrapper


class ReplayCommands:
    """Snapshot a deployment; replay requests over a snapshot."""

    @_escaped
    def snapshot(self, output, anonymize=False):
        with offline.deprecations(CONF, chosen=False):  # no filter runs: none is news
            taken = snapshot_mod.take(CONF)
        if anonymize:
            taken = snapshot_mod.anonymize(taken)
        snapshot_mod.dump(taken, output)
        if output == '-':
            return 0
        hosts = taken['hosts']
        return manage_display.fields([
            ('File', files.printable(output)), ('Taken at', taken['taken_at']),
            ('Hosts', len(hosts)),
            ('Mapped hosts', sum(1 for h in hosts if h['mapped'])),
            ('Instances', len(taken['instances'])), ('Aggregates', len(taken['aggregates'])),
            ('Server groups', len(taken['server_groups'])),
            ('Flavors', len(taken['flavors'])), ('Anonymized', bool(anonymize))])

    @_escaped
    def replay(self, snapshot, trace=None, flavor=None, count=None, mix=None,
               config_files=None, compare=None, seed=0, plot=None, differences=20,
               per_host=False):
        if plot:
            _need_matplotlib()
        loaded = snapshot_mod.load(snapshot)
        requests = _requests(loaded, trace, flavor, count, mix, seed)
        configs = [(name, replay_mod.scheduler_for(conf, name), ratios)
                   for name, conf, ratios in configurations(config_files, compare)]
        try:
            outcomes = [replay_mod.replay(loaded, requests, scheduler, name, seed, ratios)
                        for name, scheduler, ratios in configs]
        except offline.HostNotHeld as exc:
            raise exception.InvalidSnapshot(path=snapshot, reason=exc)
        if plot:
            from minisched.scheduler.replay import plot as replay_plot
            sources = {'snapshot': snapshot, 'trace': trace,
                       'requests': trace or mix or '%s x%d' % (flavor, count or 1)}
            for path in replay_plot.write(outcomes, plot, requests, sources):
                print('Wrote %s' % files.printable(path), file=sys.stderr)
        return report(outcomes, requests, differences if len(outcomes) > 1 else 0, per_host)


def _requests(loaded, trace, flavor, count, mix, seed):
    given = [name for name, value in (('TRACE', trace), ('--flavor', flavor), ('--mix', mix))
             if value]
    if len(given) != 1:
        raise exception.Invalid(reason='give the requests one way: a TRACE, --flavor NAME '
                                '--count N, or --mix FILE (got %s)' % (
                                    ', '.join(given) or 'none'))
    if trace:
        skipped = []
        requests = trace_mod.load_trace(trace, skipped)
        for line in trace_mod.describe_skipped(skipped):
            print(files.printable(line), file=sys.stderr)
        return requests
    return trace_mod.described_requests(loaded, flavor=flavor, count=count or 1, mix=mix,
                                        seed=seed)


def configurations(config_files=None, compare=None):
    """``[(name, ConfigOpts, ratio overrides)]``: one per file of ``config_files`` and
    ``compare``, each read over ``minisched-manage``'s own configuration files; without
    any, that configuration alone (``current``)."""
    base_files = [('--config-file', path) for path in CONF.config_file or []] + \
        [('--config-dir', path) for path in CONF.config_dir or []]
    base = _conf(base_files)
    files = list(config_files or []) + list(compare or [])
    if not files:
        return [('current', base, {})]
    made = []
    for path in files:
        conf = _conf(base_files + [('--config-file', path)])
        # A ratio a compute reports wins over the scheduler's option; one the file changes
        # is replayed as if every compute had been restarted with it.
        ratios = {name: conf[name] for name in replay_mod.RATIO_NAMES
                  if conf[name] and conf[name] != base[name]}
        made.append((os.path.basename(path), conf, ratios))
    return made


def _conf(sources):
    """A ConfigOpts with every minisched option, read from ``sources`` (``(option, path)``
    pairs, in order: a later file wins)."""
    conf = cfg.ConfigOpts()
    for module in conf_opts._MODULES:
        module.register_opts(conf)
    args = [item for pair in sources for item in pair]
    try:
        conf(args, project='minisched', default_config_files=[], default_config_dirs=[])
    except cfg.Error as exc:
        raise exception.InvalidReplayConfig(name=sources[-1][1] if sources else '(none)',
                                            reason=exc)
    # The snapshot holds each host's instances: they are never read from a database.
    conf.set_override('track_instance_changes', True, group='filter_scheduler')
    # Nor is there a Placement offline: the path without it, whose filters gate resources
    # (Ocata's enabled_filters, unless the configuration names its own).
    conf.set_override('enabled', False, group='placement')
    return conf


def _need_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise exception.Invalid(reason='--plot needs matplotlib: pip install '
                                '"minisched[plot]" (or matplotlib)')


def report(outcomes, requests, differences=20, per_host=False):
    """``(columns, rows)``: a row per figure, a column per configuration (with
    ``per_host``, then a row per host: its RAM, vCPU and disk use)."""
    rows = [['requests'] + [len(requests)] * len(outcomes),
            ['instances placed'] + [sum(len(p) for p in o.placements if p) for o in outcomes],
            ['NoValidHost'] + [sum(1 for p in o.placements if p is None) for o in outcomes]]
    for name in _keys(o.emptied_by for o in outcomes):
        rows.append(['NoValidHost: emptied by %s' % name] +
                    [o.emptied_by.get(name, 0) for o in outcomes])
    for name in _keys(o.rejected for o in outcomes):
        if not any(o.rejected.get(name) for o in outcomes):
            continue  # a filter that rejected nothing anywhere (the funnel plot shows it)
        rows.append(['hosts rejected by %s' % name] + [o.rejected.get(name, 0)
                                                       for o in outcomes])
    rows.append(['hosts used (before -> after)'] +
                ['%d -> %d' % o.hosts_used for o in outcomes])
    for key, label in RESOURCES:
        rows.append([(USED + ' p10/p50/p90/max') % label] + [
            '/'.join('%.1f' % o.utilization[key]['p%d' % p] for p in replay_mod.PERCENTILES)
            for o in outcomes])
        rows.append([(USED + ' mean (stdev)') % label] + [
            '%.1f (%.1f)' % (o.utilization[key]['mean'], o.utilization[key]['stdev'])
            for o in outcomes])
    for name in _keys(o.fits for o in outcomes):
        rows.append(['%s that still fit (before -> after)' % name] +
                    ['%d -> %d' % o.fits[name] for o in outcomes])
    if any(o.reproduced for o in outcomes):
        rows.append(['recorded answers reproduced'] + [
            '%d/%d' % o.reproduced if o.reproduced else '-' for o in outcomes])
    if differences:
        count, shown = replay_mod.differences(outcomes, requests, differences)
        rows.append(['requests placed differently'] + [count] * len(outcomes))
        for number, label, placed in shown:
            rows.append(['request #%d (%s)' % (number, label)] +
                        [replay_mod.shown(p) for p in placed])
    if per_host:
        rows.extend(_per_host(outcomes))
    return ([files.printable(name) for name in ['Figure'] + [o.name for o in outcomes]],
            [[files.printable(v) if isinstance(v, str) else v for v in row] for row in rows])


def _per_host(outcomes):
    """``host NAME RAM/vCPU/disk used %`` rows (the snapshot's hosts: every outcome has
    them in the same order)."""
    for index, name in enumerate(outcomes[0].host_names):
        yield (['host %s %s' % (name, (USED % 'RAM/vCPU/disk'))] +
               ['/'.join('%.1f' % o.utilization[key]['hosts'][index] for key, _ in RESOURCES)
                for o in outcomes])


def _keys(counters):
    keys = []
    for counter in counters:
        keys.extend(key for key in counter if key not in keys)
    return keys


def _snapshot_arguments(parser):
    parser.add_argument('-o', '--output', required=True, metavar='FILE',
                        help='File to write the snapshot to (- for stdout).')
    parser.add_argument('--anonymize', action='store_true',
                        help='Replace host and node names, projects, users, names and UUIDs, '
                             'each consistently across the file.')


def _replay_arguments(parser):
    parser.add_argument('snapshot', metavar='SNAPSHOT',
                        help='A file written by "scheduler snapshot".')
    parser.add_argument('trace', nargs='?', metavar='TRACE',
                        help='Recorded requests: a [scheduler] record_requests_to directory '
                             'or one of its files.')
    parser.add_argument('--flavor', metavar='NAME',
                        help='Instead of a trace: requests for one instance of this flavor '
                             '(one of the snapshot\'s).')
    parser.add_argument('--count', type=_request_count, default=1, metavar='N',
                        help='How many --flavor requests (1; at most %d).'
                        % schema.MAX_REQUESTS)
    parser.add_argument('--mix', metavar='FILE',
                        help='Instead of a trace: a JSON list of {"flavor": NAME, "count": N} '
                             'requests, shuffled with --seed.')
    parser.add_argument('--config-file', action='append', dest='config_files', metavar='FILE',
                        help='Replay with this configuration, read over minisched-manage\'s '
                             'own files (repeatable: one report column each).')
    parser.add_argument('--compare', nargs=2, metavar=('A', 'B'),
                        help='Replay with both configurations side by side and list the '
                             'requests they place differently.')
    parser.add_argument('--seed', type=int, default=0, metavar='N',
                        help='Seed of the random choices among the best hosts (0).')
    parser.add_argument('--differences', type=manage_flavor.integer(0), default=20, metavar='N',
                        help='Requests placed differently to list, at most (20).')
    parser.add_argument('--per-host', action='store_true',
                        help='Also a row per host: the share of its RAM, vCPUs and disk in '
                             'use after the replay, per configuration.')
    parser.add_argument('--plot', metavar='DIR',
                        help='Also write capacity.png, utilization.png and funnel.png to DIR, '
                             'printing each path on stderr (needs matplotlib: '
                             'pip install "minisched[plot]").')


def _request_count(value):
    number = manage_flavor.integer(1)(value)
    if number > schema.MAX_REQUESTS:
        raise argparse.ArgumentTypeError('at most %d: %r' % (schema.MAX_REQUESTS, value))
    return number


def add_parsers(actions):
    """Add the ``snapshot`` and ``replay`` actions to the ``scheduler`` category."""
    commands = ReplayCommands()
    manage_display.add_command(actions, 'snapshot', manage_display.ShowOne(
        commands.snapshot, ['output', 'anonymize'], _snapshot_arguments),
        help_text='Write what the scheduler sees to a JSON file.')
    manage_display.add_command(actions, 'replay', manage_display.Lister(
        commands.replay, ['snapshot', 'trace', 'flavor', 'count', 'mix', 'config_files',
                          'compare', 'seed', 'plot', 'differences', 'per_host'],
        _replay_arguments),
        help_text='Replay requests over a snapshot, offline, per configuration.')
