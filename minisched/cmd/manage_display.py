"""cliff commands inside ``minisched-manage``'s oslo.config sub-command tree.

The resource categories (server, flavor, aggregate, group, service, scheduler) print through
cliff's ``Lister`` and ``ShowOne``, as the ``openstack`` client does: ``-f table|json|yaml|
value|csv`` (``shell`` too for one object), ``-c COLUMN`` (repeatable), and for lists
``--sort-column`` with ``--sort-ascending``/``--sort-descending``. The categories stay
oslo.config sub-commands, as in nova-manage: :func:`add_command` adds a cliff command as an
action whose arguments are the command's own parser's, and runs the command with what that
parser makes of them (no ``action_kwarg_`` destinations, so ``--help`` shows plain names).
"""
import argparse
import functools
import re
import sys

from cliff import columns
from cliff import lister
from cliff import show

from minisched import exception


class _App:
    """What a cliff command asks of its application: where to write."""

    @property
    def stdout(self):
        return sys.stdout  # looked up at each use, so that a replaced stdout is followed

    @property
    def stderr(self):
        return sys.stderr


class _Function:
    """A cliff display command that calls a function of a ``*Commands`` class.

    The function gets the arguments named in ``kwargs`` and returns ``(columns, rows)``
    (``(fields, values)`` for one object), with the action's exit code as an optional third
    item when it reports a partial failure on stderr; or only an exit code, when it printed
    what it had to say itself.
    """

    #: argparse's: the parser is copied into an oslo.config sub-parser, which knows no other.
    conflict_handler = 'error'

    def __init__(self, fn, kwargs=(), arguments=None, description=None):
        super().__init__(_App(), None)
        self.fn, self.kwargs, self.arguments = fn, tuple(kwargs), arguments
        self._description = description or ''

    def get_description(self):
        return self._description  # not the docstring of this class

    def get_epilog(self):
        return ''  # not cliff's sentence on the distribution that provides the command

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        if self.arguments:
            self.arguments(parser)
        return parser

    def take_action(self, parsed_args):
        return self.fn(**{name: getattr(parsed_args, name) for name in self.kwargs})

    def run(self, parsed_args):
        self.formatter = self._formatter_plugins[parsed_args.formatter].obj
        result = self.take_action(parsed_args)
        if isinstance(result, int):
            return result
        self.produce_output(parsed_args, result[0], result[1])
        return result[2] if len(result) > 2 else 0

    def _generate_columns_and_selector(self, parsed_args, column_names):
        try:
            return super()._generate_columns_and_selector(parsed_args, column_names)
        except ValueError:  # -c naming no column
            raise exception.Invalid('No column named %s; the columns are: %s.'
                                    % (', '.join(parsed_args.columns), ', '.join(column_names)))


class Lister(_Function, lister.Lister):
    """A list: one row per item; ``--sort-column`` re-sorts the function's order."""


class ShowOne(_Function, show.ShowOne):
    """One object, field by field."""


def plain(text):
    """``text`` (a docstring) as help for a terminal and a man page: reStructuredText's
    inline literals and roles (````x````, ``:func:`x```) become their bare text."""
    if not text:
        return text
    text = re.sub(r':[a-z:]+:`~?([^`]+)`', r'\1', text)
    return re.sub(r'``([^`]+)``', r'\1', text)


def only_match(kind, name, matches):
    """The one item of ``matches`` (those named ``name``); several are an error naming them,
    as ``openstack`` refuses an ambiguous name."""
    if len(matches) > 1:
        raise exception.Invalid('More than one %s exists with the name %r: %s; use an ID.'
                                % (kind, name, ', '.join(sorted(m.uuid for m in matches))))
    return matches[0]


def fields(pairs):
    """``[(field, value), ...]`` as a :class:`ShowOne` function returns them."""
    pairs = list(pairs)
    return tuple(name for name, _ in pairs), tuple(value for _, value in pairs)


class _Properties(columns.FormattableColumn):
    """osc-lib's ``DictColumn`` as ``openstack`` prints it, without importing osc-lib (whose
    ``utils`` loads the OpenStack SDK: a second of every ``minisched-manage`` start)."""

    def human_readable(self):
        return ', '.join(_pairs(self._value))

    def machine_readable(self):
        return dict(self._value)


def _pairs(mapping, prefix=''):
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, dict):  # nested: dotted keys (an empty one an empty item),
            yield ', '.join(_pairs(value, prefix + key + '.'))  # as osc-lib's format_dict
        else:
            yield '%s%s=%s' % (prefix, key, '' if value is None else "'%s'" % value)


class _Items(columns.FormattableColumn):
    """osc-lib's ``ListColumn`` (see :class:`_Properties`)."""

    def human_readable(self):
        return ', '.join(self._value)

    def machine_readable(self):
        return list(self._value)


def properties(mapping):
    """Key-value properties as ``openstack`` shows them: ``a='1', b='2'`` in a table, an
    object in JSON or YAML."""
    return _Properties(dict(mapping or {}))


def items(values):
    """A list as ``openstack`` shows it: ``a, b`` (sorted) in a table, a list in JSON."""
    return _Items(sorted(values or []))


class _ActionSubParsersAction(argparse._SubParsersAction):
    """Sub-parsers of a category's actions that hand oslo.config only ``action*`` values.

    oslo.config answers an option from its command-line namespace first: an action's
    ``--host`` left there would become ``[DEFAULT] host``. Only ``action`` (the action's
    name), ``action_fn``, ``action_kwargs``, the ``action_kwarg_*`` arguments and
    ``action_kwarg_argv`` (the arguments after the action's name, which a cliff command
    parses again with its own parser) go through.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        parsed = argparse.Namespace()
        super().__call__(parser, parsed, values, option_string)
        unrecognized = vars(parsed).pop(argparse._UNRECOGNIZED_ARGS_ATTR, [])
        for key, value in vars(parsed).items():
            if key.startswith('action'):
                setattr(namespace, key, value)
        if unrecognized:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, [])
            getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR).extend(unrecognized)
        namespace.action_kwarg_argv = list(values[1:])


def add_actions(category_parser):
    """The sub-parsers of a category, which :func:`add_command` adds cliff commands to."""
    actions = category_parser.add_subparsers(dest='action', metavar='ACTION',
                                             action=_ActionSubParsersAction)
    actions.required = True
    return actions


def add_command(actions, name, command, help_text=None):
    """Add ``command`` (a :class:`Lister` or :class:`ShowOne`) as the action ``name``."""
    command._description = command._description or help_text or ''
    own = command.get_parser(name)
    parser = actions.add_parser(name, parents=[own], add_help=False, help=help_text,
                                description=own.description,
                                formatter_class=own.formatter_class)
    parser.set_defaults(action_fn=functools.partial(_run, command, parser.prog),
                        action_kwargs=['argv'])
    return parser


def _run(command, prog, argv):
    return command.run(command.get_parser(prog).parse_args(argv))
