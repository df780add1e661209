"""minisched.db.lazy: modules loaded on first use, and the compute's start-up that relies on it."""
import subprocess
import sys
import textwrap
import threading
import types

import pytest

from minisched.db import lazy


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``lazypkg`` whose submodule ``loud`` records each time its code runs."""
    root = tmp_path / 'lazypkg'
    root.mkdir()
    (root / '__init__.py').write_text('RUNS = []\n')
    (root / 'loud.py').write_text(textwrap.dedent('''\
        import lazypkg
        lazypkg.RUNS.append(__name__)
        VALUE = 42
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [n for n in sys.modules if n == 'lazypkg' or n.startswith('lazypkg.')]:
        del sys.modules[name]


def test_code_runs_at_the_first_attribute_access_and_once(package):
    import lazypkg
    loud = lazy.module('lazypkg.loud')
    assert lazypkg.RUNS == []
    assert loud.VALUE == 42
    assert lazypkg.RUNS == ['lazypkg.loud']
    from lazypkg import loud as imported
    assert imported is loud and imported.VALUE == 42
    assert lazypkg.RUNS == ['lazypkg.loud']


def test_an_imported_module_is_returned_as_it_is(package):
    import lazypkg.loud
    assert lazy.module('lazypkg.loud') is lazypkg.loud
    assert lazypkg.RUNS == ['lazypkg.loud']


def test_a_missing_module_fails_at_once(package):
    with pytest.raises(ImportError, match='lazypkg.absent'):
        lazy.module('lazypkg.absent')


def test_a_compute_starts_without_the_database_stack():
    # The compute reaches the database through the conductor only: importing its command
    # must not execute SQLAlchemy, oslo.db's engines nor alembic (a quarter of its start-up).
    code = textwrap.dedent('''\
        import sys, types
        import minisched.cmd.compute
        loaded = [name for name in ('sqlalchemy', 'sqlalchemy.orm', 'oslo_db.sqlalchemy.engines',
                                    'minisched.db.main.api', 'alembic')
                  if type(sys.modules.get(name)) is types.ModuleType]
        print(','.join(loaded))
    ''')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == ''


def test_threads_wait_for_the_module_to_be_complete(package):
    # The code takes a while, with a name defined only at its end: a thread arriving while
    # another runs it must not see the module half-executed.
    (package / 'slow.py').write_text(textwrap.dedent('''\
        import time
        import lazypkg
        lazypkg.RUNS.append(__name__)
        time.sleep(0.3)
        LAST = 'defined at the end'
    '''))
    import lazypkg
    slow = lazy.module('lazypkg.slow')
    seen, errors = [], []

    def read():
        try:
            seen.append(slow.LAST)
        except Exception as exc:  # AttributeError with importlib's LazyLoader on 3.11
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert seen == ['defined at the end'] * 8
    assert lazypkg.RUNS == ['lazypkg.slow']
    assert type(slow) is types.ModuleType


def test_the_module_sees_itself_while_its_code_runs(package):
    # A circular import: code run by the first access reads the module being executed.
    (package / 'circular.py').write_text(textwrap.dedent('''\
        FIRST = 1
        import lazypkg.circular as me
        SECOND = me.FIRST + 1
    '''))
    assert lazy.module('lazypkg.circular').SECOND == 2
