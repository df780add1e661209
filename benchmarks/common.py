"""What every bench shares: the result rows, percentiles, in-process config, the machine's load."""
import configparser
import contextlib
import csv
import dataclasses
import logging
import os
import statistics


@dataclasses.dataclass
class Figure:
    """One printed figure: ``met`` is True/False against ``target``, None for information."""

    figure: str
    value: object
    unit: str = ''
    target: str = ''
    met: object = None
    note: str = ''

    def shown_value(self):
        if isinstance(self.value, float):
            return '%.3g %s' % (self.value, self.unit) if self.value < 100 else \
                '%.0f %s' % (self.value, self.unit)
        return ('%s %s' % (self.value, self.unit)).strip()

    def shown_met(self):
        return {True: 'yes', False: 'NO', None: '-'}[self.met]


def at_most(figure, value, limit, unit, note=''):
    return Figure(figure, value, unit, '<= %g %s' % (limit, unit), value <= limit, note)


def at_least(figure, value, limit, unit, note=''):
    return Figure(figure, value, unit, '>= %g %s' % (limit, unit), value >= limit, note)


def info(figure, value, unit='', note=''):
    return Figure(figure, value, unit, '', None, note)


def percentile(values, pct):
    """Nearest-rank percentile of ``values`` (pct in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float('nan')
    rank = max(0, min(len(ordered) - 1, int(round(pct / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[rank]


def median(values):
    return statistics.median(values) if values else float('nan')


def format_table(figures):
    """The figures as a plain-text table (figure, value, target, met?, note)."""
    rows = [('figure', 'value', 'target', 'met?', 'note')]
    rows += [(f.figure, f.shown_value(), f.target, f.shown_met(), f.note) for f in figures]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
        lines.append('  '.join(cells).rstrip())
        if index == 0:
            lines.append('  '.join('-' * w for w in widths) + '  ----')
    return '\n'.join(lines)


def format_side_by_side(figures, backends):
    """The figures measured on several backends (named ``<figure> [<backend>]``) as one
    row per figure and a column per backend."""
    values, order = {}, []
    for f in figures:
        for backend in backends:
            suffix = ' [%s]' % backend
            if f.figure.endswith(suffix):
                name = f.figure[:-len(suffix)]
                if name not in values:
                    order.append(name)
                values.setdefault(name, {})[backend] = f.shown_value()
    rows = [('figure',) + tuple(backends)]
    rows += [(name,) + tuple(values[name].get(b, '-') for b in backends) for name in order]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ['  '.join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in rows]
    lines.insert(1, '  '.join('-' * width for width in widths))
    return '\n'.join(lines)


@contextlib.contextmanager
def services_backend(backend):
    """Within the block, the minisched processes a bench starts run on ``backend``
    (through the environment they inherit; None: their default). This process keeps its
    own backend."""
    from minisched import monkey_patch
    saved = os.environ.get(monkey_patch.ENV)
    if backend is not None:
        os.environ[monkey_patch.ENV] = '1' if backend == 'threading' else '0'
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(monkey_patch.ENV, None)
        else:
            os.environ[monkey_patch.ENV] = saved


def write_csv(figures, path_or_file):
    """The figures as CSV (figure,value,unit,target,met,note) to a path or an open file."""
    handle = open(path_or_file, 'w', newline='') if isinstance(path_or_file, str) else \
        path_or_file
    try:
        writer = csv.writer(handle)
        writer.writerow(['figure', 'value', 'unit', 'target', 'met', 'note'])
        for f in figures:
            value = '%.6g' % f.value if isinstance(f.value, float) else f.value
            writer.writerow([f.figure, value, f.unit, f.target, f.shown_met(), f.note])
    finally:
        if handle is not path_or_file:
            handle.close()


def machine_note():
    """CPU count and load average, printed with the table (timings depend on both)."""
    load = os.getloadavg()
    return '%d CPU(s), load average %.2f %.2f %.2f' % (os.cpu_count() or 0, *load)


_parsed = []


def in_process_conf():
    """The global CONF parsed with no config file, objects registered (in-process benches).

    Safe to call repeatedly; returns the ConfigOpts.
    """
    from minisched import conf as ms_conf
    from minisched import objects
    conf = ms_conf.CONF
    if not _parsed:
        conf([], project='minisched', default_config_files=[], default_config_dirs=[])
        _parsed.append(True)
    objects.register_all()
    return conf


@contextlib.contextmanager
def overrides(conf, values):
    """Set ``{group or None: {option: value}}`` on ``conf`` for the duration of the block."""
    done = []
    try:
        for group, options in values.items():
            for name, value in options.items():
                conf.set_override(name, value, group=group)
                done.append((name, group))
        yield conf
    finally:
        for name, group in done:
            conf.clear_override(name, group=group)


@contextlib.contextmanager
def quiet_logs(name='minisched', level=logging.ERROR):
    """Raise ``name``'s log level for the block (the per-host reference path warns per host)."""
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def write_conf(path, sections):
    """Write an ini file from ``{section: {option: value}}``; returns ``path``."""
    parser = configparser.ConfigParser(interpolation=None)
    for section, options in sections.items():
        if section != 'DEFAULT':
            parser.add_section(section)
        for option, value in options.items():
            parser.set(section, option, str(value))
    with open(path, 'w') as handle:
        parser.write(handle)
    return path
