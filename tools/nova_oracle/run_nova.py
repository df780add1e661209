"""Real Nova's filters and weighers over the scenarios on stdin; results (JSON) on stdout.

    PYTHONPATH=/tmp/novashim:/tmp/nova/head /tmp/novaenv/bin/python run_nova.py < s.json
"""
import json
import logging
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
logging.disable(logging.CRITICAL)

import nova.conf  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import filters, host_manager, weights  # noqa: E402
from oslo_config import cfg  # noqa: E402
from oslo_utils import timeutils  # noqa: E402

import scenario  # noqa: E402

objects.register_all()
CONF = nova.conf.CONF
CONF([], project='nova', default_config_files=[])
CONF.set_override('servicegroup_driver', 'db')
FILTERS = {c.__name__: c for c in filters.HostFilterHandler().get_matching_classes(
    ['nova.scheduler.filters.all_filters'])}
WEIGHERS = {c.__name__: c for c in weights.HostWeightHandler().get_matching_classes(
    ['nova.scheduler.weights.all_weighers'])}
#: Need NUMA topologies, PCI pools, moves or a database, which scenarios do not have.
SKIP = {'NUMATopologyFilter', 'PciPassthroughFilter', 'PCIWeigher', 'ImagePropertiesWeigher',
        'CrossCellWeigher'}
CLASSES = types.SimpleNamespace(**{name: getattr(objects, name) for name in (
    'Aggregate', 'ComputeNode', 'ComputeNodeList', 'Flavor', 'HVSpec', 'ImageMeta', 'Instance',
    'InstanceGroup', 'RequestSpec', 'SchedulerRetries')})


def _hosts(sc):
    return scenario.host_states(
        sc, CLASSES, lambda host, node: host_manager.HostState(
            host, node, 'cccccccc-0000-4000-8000-000000000000'), 'nova-compute')


def _spec(sc):
    return scenario.request_spec(sc, CLASSES)


def run(sc):
    timeutils.set_time_override(scenario.now_of(sc))
    scenario.apply_conf(CONF, sc, cfg.NoSuchOptError)
    out = {'seed': sc['seed'], 'filters': {}, 'weighers': {}}
    for name, cls in sorted(FILTERS.items()):
        if name in SKIP:
            continue

        def passes(cls=cls):
            flt, spec = cls(), _spec(sc)
            return [[s.host, s.nodename, bool(flt.host_passes(s, spec)),
                     scenario.plain_limits(s.limits)] for s in _hosts(sc)]
        out['filters'][name] = scenario.outcome(passes)
    chosen = [n for n in sorted(WEIGHERS) if n not in SKIP]
    for name in chosen + ['ALL']:
        def weigh(names=chosen if name == 'ALL' else [name]):
            weighed = weights.HostWeightHandler().get_weighed_objects(
                [WEIGHERS[n]() for n in names], _hosts(sc), _spec(sc))
            return [[w.obj.host, w.obj.nodename, float(w.weight)] for w in weighed]
        out['weighers'][name] = scenario.outcome(weigh)
    return out


if __name__ == '__main__':
    json.dump(scenario.run_all(run, json.load(sys.stdin)), sys.stdout)
