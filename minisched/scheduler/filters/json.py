"""Keep hosts matching the JSON query of the ``query`` scheduler hint.

The query is a nested list ``[op, arg, ...]``: comparisons ``=``, ``<``, ``>``, ``<=``,
``>=`` and ``in`` test the first argument against all the others (fewer than two arguments
is False), ``not`` negates each argument, ``or``/``and`` combine them. A string ``$name.key``
reads ``host_state.name['key']``; arguments that resolve to None (or empty strings) are
dropped. A list result passes if any element is true.
"""
import operator

import numpy as np
from oslo_serialization import jsonutils

from minisched.scheduler import filters


def _compare(op):
    def compare(args):
        if len(args) < 2:
            return False
        if op is operator.contains:
            return args[0] in args[1:]
        # Every comparison is made, as in Nova, so a bad one raises even after a False.
        return all([op(args[0], arg) for arg in args[1:]])
    return compare


_COMMANDS = {
    '=': _compare(operator.eq), '<': _compare(operator.lt), '>': _compare(operator.gt),
    'in': _compare(operator.contains), '<=': _compare(operator.le),
    '>=': _compare(operator.ge), 'not': lambda args: [not arg for arg in args],
    'or': any, 'and': all,
}


def _resolve(text, host_state):
    if not text:
        return None
    if not text.startswith('$'):
        return text
    path = text[1:].split('.')
    value = getattr(host_state, path[0], None)
    for key in path[1:]:
        if value is None:
            return None
        value = value.get(key, None)
    return value


def _evaluate(query, host_state):
    if not query:
        return True
    command = _COMMANDS[query[0]]
    args = []
    for arg in query[1:]:
        if isinstance(arg, list):
            arg = _evaluate(arg, host_state)
        elif isinstance(arg, str):
            arg = _resolve(arg, host_state)
        if arg is not None:
            args.append(arg)
    return command(args)


def _passes(query, host_state):
    result = _evaluate(query, host_state)
    if isinstance(result, list):
        result = any(result)  # e.g. from "not": any element true
    return bool(result)


class JsonFilter(filters.BaseHostFilter):
    """Passes hosts for which the ``query`` hint evaluates true."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        query = spec_obj.get_scheduler_hint('query')
        if not query:
            return True
        return _passes(jsonutils.loads(query), host_state)

    def filter_rows(self, view, spec_obj):
        query = spec_obj.get_scheduler_hint('query')
        if not query:
            return np.ones(len(view), dtype=bool)
        query = jsonutils.loads(query)  # once, not once per host
        return np.array([_passes(query, state) for state in view.states()], dtype=bool)

    def is_noop(self, spec_obj):
        return not spec_obj.get_scheduler_hint('query')
