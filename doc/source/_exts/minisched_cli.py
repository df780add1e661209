"""Sphinx directive ``.. minisched-cli:: COMMAND``: the help of a command and of each of its
sub-commands, taken from the command's own argparse parser at build time.

The reference cannot drift from the code: an action added to ``minisched-manage`` or an
option added to ``minisched-cluster`` appears in the next build, in the HTML and the man
pages alike. Each sub-command becomes a section titled with its full command line; the
section characters come from ``:levels:`` (one per nesting level, default ``~^``).
"""
import argparse
import os

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

import module_map
from minisched import monkey_patch

# The commands' parsers are read, not run: the build's process embeds minisched, so the
# command modules' own choice of a concurrency backend changes nothing in it.
monkey_patch.embed()

#: Width the help text is wrapped at (argparse reads COLUMNS).
HELP_WIDTH = 88


def _manage_parser():
    from minisched.cmd import manage
    parser = argparse.ArgumentParser(prog='minisched-manage')
    categories = parser.add_subparsers(dest='category', metavar='CATEGORY')
    manage.add_command_parsers(categories)
    return parser


def _cluster_parser():
    from minisched.cmd import cluster
    # Its defaults come from the environment and the working directory: show the ones a
    # reader gets, not the build machine's.
    saved = os.environ.pop('MINISCHED_TRANSPORT_URL', None)
    try:
        parser = cluster._parser()
    finally:
        if saved is not None:
            os.environ['MINISCHED_TRANSPORT_URL'] = saved
    _relative_defaults(parser, os.getcwd())
    return parser


def _relative_defaults(parser, cwd):
    """Show default paths under ``cwd`` as ``./...``, in ``parser`` and its sub-parsers."""
    for action in parser._actions:
        if isinstance(action.default, str) and action.default.startswith(cwd + os.sep):
            action.default = '.' + action.default[len(cwd):]
        for sub in getattr(action, 'choices', None) or {}:
            if isinstance(action.choices[sub], argparse.ArgumentParser):
                _relative_defaults(action.choices[sub], cwd)


#: The commands whose parsers the directive knows.
PARSERS = {
    'minisched-manage': _manage_parser,
    'minisched-cluster': _cluster_parser,
}


def _subcommands(parser):
    """``[(name, help, sub-parser)]`` of ``parser``'s sub-commands, aliases left out."""
    found = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        seen = set()
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            found.append((name, helps.get(name, ''), sub))
    return found


def help_text(parser):
    """``parser``'s help as argparse prints it, wrapped at HELP_WIDTH whatever the terminal."""
    old = os.environ.get('COLUMNS')
    os.environ['COLUMNS'] = str(HELP_WIDTH)
    try:
        return parser.format_help()
    finally:
        if old is None:
            del os.environ['COLUMNS']
        else:
            os.environ['COLUMNS'] = old


def render(parser, levels, prefix, depth=0):
    """reStructuredText lines: one section per sub-command of ``parser``, recursively."""
    lines = []
    for name, summary, sub in _subcommands(parser):
        command = '%s %s' % (prefix, name)
        title = '``%s``' % command
        lines += [title, levels[min(depth, len(levels) - 1)] * len(title), '']
        if summary:
            lines += [summary, '']
        if not _subcommands(sub):
            lines += ['.. code-block:: text', '']
            lines += ['   ' + line if line else '' for line in help_text(sub).splitlines()]
            lines.append('')
        lines += render(sub, levels, command, depth + 1)
    return lines


class MinischedCliDirective(SphinxDirective):
    """``.. minisched-cli:: minisched-manage``; ``:top:`` also shows the command's own help."""

    required_arguments = 1
    option_spec = {'levels': directives.unchanged, 'top': directives.flag}

    def run(self):
        command = self.arguments[0]
        if command not in PARSERS:
            raise self.error('minisched-cli: unknown command %r (known: %s)'
                             % (command, ', '.join(sorted(PARSERS))))
        parser = PARSERS[command]()
        lines = []
        if 'top' in self.options:
            lines += ['.. code-block:: text', '']
            lines += ['   ' + line if line else '' for line in help_text(parser).splitlines()]
            lines.append('')
        lines += render(parser, self.options.get('levels', '~^'), command)
        content = StringList(lines, source='<minisched-cli %s>' % command)
        container = nodes.container()
        nested_parse_with_titles(self.state, content, container)
        return container.children


def setup(app):
    app.add_directive('minisched-cli', MinischedCliDirective)
    app.add_directive('minisched-module-map', module_map.ModuleMapDirective)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
