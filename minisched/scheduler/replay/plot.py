"""PNG figures of a replay (``--plot DIR``). Needs matplotlib (``pip install
"minisched[plot]"``).

Each figure names the snapshot, the requests and the configurations it shows, and every
axis starts at zero:

- ``capacity.png``: per configuration, the hosts in use and, per flavor of the requests,
  how many more instances still fit, before and after the replay ("how many more m1.large
  fit?");
- ``utilization.png``: per resource, every host's share in use after the replay, hosts
  sorted from the fullest, one line per configuration (stacking shows as full hosts next to
  empty ones, spreading as a flat line);
- ``funnel.png``: the hosts each filter rejected over the replay, for the filters that
  rejected any.
"""
import os

from minisched import exception

RESOURCES = (('ram', 'RAM'), ('vcpu', 'vCPUs'), ('disk', 'disk'))


def write(outcomes, directory, requests=(), sources=None):
    """Write the figures to ``directory`` (made if missing); their paths.
    ``sources``: ``{'snapshot': path, 'requests': what they were}`` for the titles."""
    import matplotlib
    matplotlib.use('Agg')  # files only: no display
    from matplotlib import pyplot
    sources = sources or {}
    title = _title(outcomes, requests, sources)
    try:
        os.makedirs(directory, exist_ok=True)
        return [draw(pyplot, outcomes, title, os.path.join(directory, name))
                for name, draw in (('capacity.png', _capacity),
                                   ('utilization.png', _utilization),
                                   ('funnel.png', _funnel))]
    except OSError as exc:
        raise exception.FiguresNotWritten(path=directory, reason=exc.strerror or str(exc))


def _text(value):
    """``value`` as matplotlib shows it literally (a ``$`` would start mathtext)."""
    return str(value).replace('$', r'\$')


def _title(outcomes, requests, sources):
    snapshot = os.path.basename(str(sources.get('snapshot') or '?'))
    asked = sources.get('requests') or '?'
    asked = os.path.basename(asked.rstrip('/')) if os.path.sep in asked else asked
    return _text('snapshot %s, %d requests (%s); configurations: %s' % (
        snapshot, len(requests), asked, ', '.join(o.name for o in outcomes)))


def _save(pyplot, figure, title, path, heading, bottom=0.0):
    figure.suptitle('%s\n%s' % (heading, title), fontsize=10)
    figure.tight_layout(rect=(0, bottom, 1, 1))
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
    return path


def _capacity(pyplot, outcomes, title, path):
    flavors = []
    for outcome in outcomes:
        flavors.extend(name for name in outcome.fits if name not in flavors)
    panels = 1 + len(flavors)
    figure, axes = pyplot.subplots(1, panels, figsize=(3.2 * panels + 1, 4.2),
                                   squeeze=False)
    names = [_text(o.name) for o in outcomes]
    hosts = len(outcomes[0].host_names) if outcomes else 0
    _before_after(axes[0][0], names, [o.hosts_used for o in outcomes],
                  'hosts in use (of %d)' % hosts, limit=hosts)
    for axis, flavor in zip(axes[0][1:], flavors):
        _before_after(axis, names, [o.fits.get(flavor, (0, 0)) for o in outcomes],
                      'more %s that fit' % _text(flavor))
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc='lower center', ncol=2, fontsize=9)
    return _save(pyplot, figure, title, path,
                 'Hosts in use and room left per flavor, before and after the replay',
                 bottom=0.08)


def _before_after(axis, names, pairs, label, limit=None):
    """Per configuration, the value after the replay as a bar, the one before as an
    outline behind it, each written on top."""
    from matplotlib import ticker
    positions = range(len(names))
    befores = [before for before, _after in pairs]
    afters = [after for _before, after in pairs]
    axis.bar(positions, befores, width=0.7, fill=False, edgecolor='grey', linestyle='--',
             label='before')
    bars = axis.bar(positions, afters, width=0.5, color='C0', label='after')
    for bar, before, after in zip(bars, befores, afters):
        axis.annotate('%d' % after if before == after else '%d -> %d' % (before, after),
                      (bar.get_x() + bar.get_width() / 2, max(before, after)),
                      xytext=(0, 3), textcoords='offset points', ha='center', va='bottom',
                      fontsize=9,
                      bbox={'facecolor': 'white', 'edgecolor': 'none', 'pad': 1})
    top = max([limit or 0] + befores + afters + [1])
    axis.set_ylim(0, top * 1.15)
    if limit:
        axis.axhline(limit, color='grey', linewidth=0.8)
    axis.set_xticks(list(positions), names, rotation=20 if len(names) > 2 else 0)
    if len(names) == 1:
        axis.set_xlim(-1, 1)  # one bar, not one as wide as the panel
    axis.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))  # counts
    axis.set_title(label, fontsize=10)


def _utilization(pyplot, outcomes, title, path):
    from matplotlib import ticker
    figure, axes = pyplot.subplots(1, len(RESOURCES), figsize=(4.2 * len(RESOURCES), 4.2),
                                   squeeze=False)
    for axis, (key, label) in zip(axes[0], RESOURCES):
        for outcome in outcomes:
            shares = sorted(outcome.utilization[key]['hosts'], reverse=True)
            ranks = range(1, len(shares) + 1)
            axis.step(ranks, shares, where='mid', label=_text(outcome.name),
                      marker='o' if len(shares) <= 30 else None, markersize=4)
        axis.set_ylim(0, 105)
        axis.set_xlim(0.5, max([len(o.utilization[key]['hosts']) for o in outcomes] + [1])
                      + 0.5)
        axis.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        axis.set_title('%s in use per host' % label, fontsize=10)
        axis.set_xlabel('hosts, fullest first')
        axis.set_ylabel('% of allocatable (total x ratio)')
        axis.legend(fontsize=8, loc='lower left')
    return _save(pyplot, figure, title, path, 'Host utilization after the replay')


def _funnel(pyplot, outcomes, title, path):
    names = []
    for outcome in outcomes:
        names.extend(n for n, count in outcome.rejected.items()
                     if count and n not in names)
    figure, axis = pyplot.subplots(figsize=(8, 2.2 + 0.35 * max(1, len(names)) *
                                            max(1, len(outcomes))))
    if not names:
        axis.text(0.5, 0.5, 'No filter rejected any host.', ha='center', va='center')
        axis.set_axis_off()
        return _save(pyplot, figure, title, path, 'Hosts rejected per filter')
    height = 0.8 / max(1, len(outcomes))
    for index, outcome in enumerate(outcomes):
        values = [outcome.rejected.get(n, 0) for n in names]
        bars = axis.barh([i + index * height for i in range(len(names))], values,
                         height=height, label=_text(outcome.name))
        axis.bar_label(bars, fontsize=8, padding=2)
    axis.set_yticks([i + height * (len(outcomes) - 1) / 2 for i in range(len(names))],
                    [_text(n) for n in names])
    axis.invert_yaxis()  # the first filter on top
    axis.set_xlim(0, max(max(o.rejected.values() or [0]) for o in outcomes) * 1.15 + 1)
    axis.set_xlabel('hosts rejected, summed over every filter run of the replay')
    axis.legend(fontsize=8)
    return _save(pyplot, figure, title, path,
                 'Hosts rejected per filter (filters that rejected none left out)')
