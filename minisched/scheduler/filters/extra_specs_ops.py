"""Does a capability or aggregate value satisfy a flavor extra spec such as ``>= 4``?

The first word of the requirement may be an operator: numeric ``=`` (at least), ``==``,
``!=``, ``>=``, ``<=``; string ``s==``, ``s!=``, ``s<``, ``s<=``, ``s>``, ``s>=``;
``<in>`` (substring), ``<all-in>`` (every following word is a substring) and
``<or> a <or> b`` (equals one of them). Without an operator the whole requirement must
equal the value. Nova's quirks are kept on purpose, since flavors written for Nova must
select the same hosts: a numeric operator on a non-number raises ValueError, a bare
``<or>`` raises IndexError, and ``<or>`` compares every other word only.
"""
import operator

_OPERATORS = {
    '=': lambda value, arg: float(value) >= float(arg),
    '==': lambda value, arg: float(value) == float(arg),
    '!=': lambda value, arg: float(value) != float(arg),
    '>=': lambda value, arg: float(value) >= float(arg),
    '<=': lambda value, arg: float(value) <= float(arg),
    's==': operator.eq,
    's!=': operator.ne,
    's<': operator.lt,
    's<=': operator.le,
    's>': operator.gt,
    's>=': operator.ge,
    '<in>': lambda value, arg: arg in value,
}


def _match_or(value, words):
    # words: "a <or> b <or> c"; every second word is the separator and never compared.
    while True:
        if words.pop(0) == value:
            return True
        if not words:
            return False
        words.pop(0)
        if not words:
            return False


def match(value, req):
    """Return True if ``value`` (a string or None) satisfies the requirement ``req``."""
    words = req.split()
    op = words.pop(0) if words else None
    if op not in _OPERATORS and op not in ('<or>', '<all-in>'):
        return value == req
    if value is None:
        return False
    if op == '<or>':
        return _match_or(value, words)
    if not words:
        return False
    if op == '<all-in>':
        return all(word in value for word in words)
    return _OPERATORS[op](value, words[0])
