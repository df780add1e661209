"""Compare run_nova.py and run_ms.py results; print disagreements grouped by filter/weigher."""
import collections
import json
import math
import sys

nova = {r['seed']: r for r in json.load(open(sys.argv[1]))}
ms = {r['seed']: r for r in json.load(open(sys.argv[2]))}
verbose = len(sys.argv) > 3 and sys.argv[3] == 'v'
only = set(sys.argv[4].split(',')) if len(sys.argv) > 4 else None
diffs = collections.defaultdict(list)
checked = collections.Counter()


def norm_limits(lim):
    return {k: round(float(v), 9) if isinstance(v, (int, float)) else v for k, v in lim.items()}


def same_filter(a, b, limits=True):
    if 'error' in a or 'error' in b:
        return a.get('error') == b.get('error')
    if not limits:  # the vectorised path sets limits later, for the chosen hosts only
        return [x[:3] for x in a['ok']] == [x[:3] for x in b['ok']]
    return [(h, n, p, norm_limits(lim)) for h, n, p, lim in a['ok']] == \
        [(h, n, p, norm_limits(lim)) for h, n, p, lim in b['ok']]


def same_weights(a, b):
    if 'error' in a or 'error' in b:
        return a.get('error') == b.get('error')
    if [x[:2] for x in a['ok']] != [x[:2] for x in b['ok']]:
        # order may differ only among exact ties
        wa = {(h, n): w for h, n, w in a['ok']}
        wb = {(h, n): w for h, n, w in b['ok']}
        if wa.keys() != wb.keys():
            return False
        if any(not math.isclose(wa[k], wb[k], rel_tol=1e-9, abs_tol=1e-9) for k in wa):
            return False
        return 'order'
    return all(math.isclose(x[2], y[2], rel_tol=1e-9, abs_tol=1e-9)
               for x, y in zip(a['ok'], b['ok']))


for seed, n in nova.items():
    m = ms.get(seed)
    if 'crash' in n or m is None or 'crash' in m:
        diffs['CRASH'].append((seed, (n.get('crash') or '')[-300:],
                               (m or {}).get('crash', '')[-300:]))
        continue
    for section, kinds in (('filters', ('filters', 'rows')), ('weighers', ('weighers', 'wrows'))):
        for name, res in n[section].items():
            if only is not None and name not in only:
                continue
            for kind in kinds:
                mine = m[kind].get(name)
                if mine is None:
                    diffs['missing ' + name].append(seed)
                    continue
                checked[kind + ':' + name] += 1
                if section == 'filters':
                    same = same_filter(res, mine, kind == 'filters')
                else:
                    same = same_weights(res, mine)
                if same is not True:
                    label = ' (tie order)' if same == 'order' else ''
                    diffs['%s:%s%s' % (kind, name, label)].append((seed, res, mine))

print('checked', sum(checked.values()), 'comparisons over', len(nova), 'scenarios')
for key, items in sorted(diffs.items()):
    seeds = [i[0] if isinstance(i, tuple) else i for i in items][:12]
    print('DIFF %s: %d scenario(s), seeds %s' % (key, len(items), seeds))
    if verbose:
        for item in items[:2]:
            if isinstance(item, tuple):
                print('   nova:', json.dumps(item[1])[:900])
                print('   ms  :', json.dumps(item[2])[:900])
