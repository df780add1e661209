"""PNG figures of a replay (``--plot DIR``): host utilization per configuration, and the
filter funnel. Needs matplotlib (``pip install "minisched[plot]"``)."""
import os


def write(outcomes, directory):
    """Write ``utilization.png`` and ``funnel.png`` to ``directory``; returns their paths."""
    import matplotlib
    matplotlib.use('Agg')  # files only: no display
    from matplotlib import pyplot
    os.makedirs(directory, exist_ok=True)
    paths = [_utilization(pyplot, outcomes, os.path.join(directory, 'utilization.png')),
             _funnel(pyplot, outcomes, os.path.join(directory, 'funnel.png'))]
    return paths


def _utilization(pyplot, outcomes, path):
    """Per resource, the distribution of host utilization, one box per configuration."""
    resources = (('ram', 'RAM'), ('vcpu', 'vCPU'), ('disk', 'Disk'))
    figure, axes = pyplot.subplots(1, len(resources), figsize=(4 * len(resources), 4),
                                   squeeze=False)
    for axis, (key, label) in zip(axes[0], resources):
        axis.boxplot([o.utilization[key]['hosts'] for o in outcomes])
        axis.set_xticks(range(1, len(outcomes) + 1), [o.name for o in outcomes])
        axis.set_title('%s used per host' % label)
        axis.set_ylabel('% of allocatable (total x ratio)')
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return path


def _funnel(pyplot, outcomes, path):
    """Per configuration, the hosts each filter rejected over the whole replay."""
    names = []
    for outcome in outcomes:
        names.extend(n for n in outcome.rejected if n not in names)
    figure, axis = pyplot.subplots(figsize=(8, 1 + 0.4 * max(1, len(names)) * len(outcomes)))
    height = 0.8 / max(1, len(outcomes))
    for index, outcome in enumerate(outcomes):
        axis.barh([i + index * height for i in range(len(names))],
                  [outcome.rejected.get(n, 0) for n in names], height=height,
                  label=outcome.name)
    axis.set_yticks([i + height * (len(outcomes) - 1) / 2 for i in range(len(names))], names)
    axis.invert_yaxis()  # the first filter on top
    axis.set_xlabel('hosts rejected (all filter runs of the replay)')
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return path
