"""Setup shared by every test process."""
import compileall
import logging
import os

import pytest
from oslo_config import cfg

import minisched
from minisched import monkey_patch

# The test process embeds minisched: native threads here, whatever
# OS_MINISCHED_DISABLE_EVENTLET_PATCHING says. That variable still reaches the services and
# minisched-manage processes the tests start, which is how the suite runs them on eventlet.
monkey_patch.embed()

# minisched's rate-limited RPC reports (incoming_log.LogLimiter) count repeats and flush the
# count from a timer up to a minute later, when the test that caused them may be long over.
# With no handler anywhere, logging's last resort would print that line into the middle of
# the test run's output; tests that look at logs attach their own handlers (caplog,
# assertLogs) as before.
logging.getLogger('minisched').addHandler(logging.NullHandler())


def pytest_configure(config):
    """Byte-compile the package once, before the workers and services start.

    The functional tests start a few hundred service and ``minisched-manage`` processes. An
    editable install is not compiled by pip, and where ``PYTHONDONTWRITEBYTECODE`` is set (as
    on our CI machines) no process writes a ``.pyc``: each one would compile all of minisched
    from source again, about 0.15 s of CPU per process. ``compileall`` writes the cache
    whatever that variable says, and interpreters still read it. Run by the xdist controller
    (or a plain pytest) only, not by each worker.
    """
    if not hasattr(config, 'workerinput'):
        compileall.compile_dir(os.path.dirname(minisched.__file__), quiet=1)


@pytest.fixture(autouse=True)
def _no_stale_option_locations():
    """After each test, forget where an option's cleared override or default came from.

    oslo.config records ``set_override``/``set_default`` as the option's location and keeps
    that record after ``clear_override``, ``clear_default`` and ``reset`` (which drop the
    value only); and every ConfigOpts registering one of minisched's module-level OptGroups
    shares that group's option records (``register_group`` takes a shallow copy). A test
    that once overrode ``[filter_scheduler] enabled_filters`` would leave the option "set"
    for ``get_location`` in every later test of the process, and for the private ConfigOpts
    those tests parse (``conf.filter_scheduler.enabled_filters`` reads "unset" from it).
    """
    yield
    for info, _group in cfg.CONF._all_opt_infos():
        if 'override' not in info and 'default' not in info:
            info.pop('location', None)
