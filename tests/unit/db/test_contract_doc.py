"""doc/source/contributor/db-contract.rst states the write retries the code makes."""
import pathlib
import re
from unittest import mock

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc

from minisched.db import utils
from tests.unit import base

DOC = (pathlib.Path(__file__).resolve().parents[3] / 'doc' / 'source' / 'contributor' /
       'db-contract.rst')


class TestContractDoc(base.TestCase):
    def _documented_retries(self):
        found = set(re.findall(r'wrap_db_retry\(max_retries=(\d+)', DOC.read_text()))
        self.assertEqual(1, len(found), found)
        return int(found.pop())

    def _attempts(self, decorator, error):
        calls = []

        @decorator
        def write():
            calls.append(1)
            raise error

        with mock.patch.object(oslo_db_api.time, 'sleep'):  # backoff pauses, not the rule
            self.assertRaises(type(error), write)
        return len(calls)

    def test_documented_retries_are_the_writers(self):
        retries = self._documented_retries()
        self.assertEqual(retries + 1, self._attempts(utils.writer, db_exc.DBDeadlock()))
        self.assertEqual(retries + 1, self._attempts(utils.upserter,
                                                     db_exc.DBDuplicateEntry()))
