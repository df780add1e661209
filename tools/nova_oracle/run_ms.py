"""minisched's filters and weighers, per host and vectorised, over the scenarios on stdin."""
import json
import logging
import os
import sys
import types

import numpy as np
from oslo_config import cfg
from oslo_utils import timeutils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
logging.disable(logging.CRITICAL)

from minisched import conf as _conf  # noqa: E402,F401  (registers every option)
from minisched import objects  # noqa: E402
from minisched.objects import aggregate, compute_node, flavor, hv_spec  # noqa: E402
from minisched.objects import image_meta, instance, instance_group, request_spec  # noqa: E402
from minisched.scheduler import filters, host_state, weights  # noqa: E402

import scenario  # noqa: E402

objects.register_all()
CONF = cfg.CONF
CONF([], project='minisched', default_config_files=[], default_config_dirs=[])
FILTERS = {c.__name__: c for c in filters.all_filters()}
WEIGHERS = {c.__name__: c for c in weights.all_weighers()}
SKIP = {'PCIWeigher', 'ImagePropertiesWeigher', 'CrossCellWeigher'}
CLASSES = types.SimpleNamespace(
    Aggregate=aggregate.Aggregate, ComputeNode=compute_node.ComputeNode,
    ComputeNodeList=compute_node.ComputeNodeList, Flavor=flavor.Flavor, HVSpec=hv_spec.HVSpec,
    ImageMeta=image_meta.ImageMeta, Instance=instance.Instance,
    InstanceGroup=instance_group.InstanceGroup,
    RequestSpec=lambda **kw: request_spec.RequestSpec(limits=None, **kw),
    SchedulerRetries=request_spec.SchedulerRetries)


def _hosts(sc):
    """``(table, states)``: the scenario's hosts in a table of their own."""
    table = host_state.HostStateTable()
    return table, scenario.host_states(
        sc, CLASSES, lambda host, node: host_state.HostState(
            host, node, 'cccccccc-0000-4000-8000-000000000000', table=table),
        'minisched-compute')


def _rows(states):
    return np.array([s.row for s in states], dtype=np.intp)


def run(sc):
    timeutils.set_time_override(scenario.now_of(sc))
    scenario.apply_conf(CONF, sc, cfg.NoSuchOptError)
    out = {'seed': sc['seed'], 'filters': {}, 'rows': {}, 'weighers': {}, 'wrows': {}}
    for name, cls in sorted(FILTERS.items()):
        def passes(cls=cls):
            flt, spec = cls(CONF), scenario.request_spec(sc, CLASSES)
            return [[s.host, s.nodename, bool(flt.host_passes(s, spec)),
                     scenario.plain_limits(s.limits)] for s in _hosts(sc)[1]]

        def rows(cls=cls):
            table, states = _hosts(sc)
            result = filters.HostFilterHandler().run_rows(
                [cls(CONF)], table, _rows(states), scenario.request_spec(sc, CLASSES))
            kept = set(result.survivors.tolist())
            return [[s.host, s.nodename, s.row in kept, {}] for s in states]
        out['filters'][name] = scenario.outcome(passes)
        out['rows'][name] = scenario.outcome(rows)
    chosen = [n for n in sorted(WEIGHERS) if n not in SKIP]
    for name in chosen + ['ALL']:
        names = chosen if name == 'ALL' else [name]

        def weigh(names=names):
            weighed = weights.HostWeightHandler().get_weighed_objects(
                [WEIGHERS[n](CONF) for n in names], _hosts(sc)[1],
                scenario.request_spec(sc, CLASSES))
            return [[w.obj.host, w.obj.nodename, float(w.weight)] for w in weighed]

        def weigh_rows(names=names):
            table, states = _hosts(sc)
            order, totals = weights.HostWeightHandler().weigh_rows(
                [WEIGHERS[n](CONF) for n in names], filters.RowView(table, _rows(states)),
                scenario.request_spec(sc, CLASSES))
            by_row = {s.row: s for s in states}
            return [[by_row[r].host, by_row[r].nodename, float(t)]
                    for r, t in zip(order.tolist(), totals.tolist())]
        out['weighers'][name] = scenario.outcome(weigh)
        out['wrows'][name] = scenario.outcome(weigh_rows)
    return out


if __name__ == '__main__':
    json.dump(scenario.run_all(run, json.load(sys.stdin)), sys.stdout)
