"""extra_specs_ops.match: every operator form, at its boundary, with Nova's quirks."""
import unittest

from minisched.scheduler.filters import extra_specs_ops

MATCHES = [
    # (value, requirement, expected) -- no operator: the whole requirement must equal
    ('1', '1', True),
    ('1', '2', False),
    ('', '', True),
    ('1', ' 1', False),               # the raw requirement is compared, spaces included
    (None, '1', False),
    ('true', 'True', False),          # case matters
    # '=' means "at least" (float)
    ('1', '= 1', True),
    ('2', '= 1', True),
    ('0.99', '= 1', False),
    ('1.0', '== 1', True),
    ('1.1', '== 1', False),
    ('2', '!= 1', True),
    ('1.0', '!= 1', False),
    ('2', '>= 2', True),
    ('1.9', '>= 2', False),
    ('2', '<= 2', True),
    ('2.1', '<= 2', False),
    # string comparisons
    ('abc', 's== abc', True),
    ('abd', 's== abc', False),
    ('abd', 's!= abc', True),
    ('abc', 's!= abc', False),
    ('abb', 's< abc', True),
    ('abc', 's< abc', False),
    ('abc', 's<= abc', True),
    ('abd', 's<= abc', False),
    ('abd', 's> abc', True),
    ('abc', 's> abc', False),
    ('abc', 's>= abc', True),
    ('abb', 's>= abc', False),
    ('10', 's< 9', True),             # strings, not numbers
    # substring forms
    ('avx sse4.2', '<in> sse4', True),
    ('avx', '<in> sse', False),
    ('avx sse4.2 aes', '<all-in> aes avx', True),
    ('avx sse4.2', '<all-in> aes avx', False),
    ('avx', '<all-in>', False),       # operator without argument
    # <or>
    ('b', '<or> a <or> b', True),
    ('a', '<or> a', True),
    ('c', '<or> a <or> b', False),
    ('b', '<or> a b', False),         # every other word is a separator, never compared
    ('b', '<or> a <or>', False),
    (None, '<or> a <or> b', False),
    # None value and operators without argument
    (None, '= 1', False),
    (None, 's== a', False),
    ('1', '=', False),
    ('a', 's==', False),
    ('a', '<in>', False),
]

RAISES = [
    ('abc', '= 1', ValueError),       # numeric operator on a non-number value
    ('1', '>= abc', ValueError),      # ... or a non-number argument
    ('x', '<or>', IndexError),        # bare <or> with a value
]


class TestMatch(unittest.TestCase):
    def test_match_table(self):
        for value, req, expected in MATCHES:
            with self.subTest(value=value, req=req):
                self.assertIs(expected, extra_specs_ops.match(value, req))

    def test_match_raises_like_nova_on_bad_values(self):
        for value, req, error in RAISES:
            with self.subTest(value=value, req=req):
                self.assertRaises(error, extra_specs_ops.match, value, req)
