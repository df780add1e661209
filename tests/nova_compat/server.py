"""Runs Nova's scheduler unit tests against minisched, one at a time, on request.

``python -m tests.nova_compat.server`` (started by :mod:`tests.nova_compat.client`): sets up
the process (Nova's eventlet patching, then :mod:`~tests.nova_compat.isolation` and
:mod:`~tests.nova_compat.redirect`), loads the test modules of :data:`MODULES`, writes one JSON
line ``{"ids": [...]}`` listing their tests, then reads test ids, one per line on stdin, and
answers each with a JSON line ``{"id", "outcome", "text"}`` (``outcome``: ``passed``,
``failed``, ``error`` or ``skipped``; ``text``: Nova's failure text or skip reason). It ends
when stdin closes. The answers travel on the process's original stdout; whatever the tests
print goes to stderr.
"""
import json
import os
import sys
import unittest

#: Nova's test modules, or ``module:Class`` for one class of a module.
MODULES = (
    'nova.tests.unit.scheduler.filters.test_affinity_filters',
    'nova.tests.unit.scheduler.filters.test_aggregate_image_properties_isolation_filters',
    'nova.tests.unit.scheduler.filters.test_aggregate_instance_extra_specs_filters',
    'nova.tests.unit.scheduler.filters.test_aggregate_multitenancy_isolation_filters',
    'nova.tests.unit.scheduler.filters.test_compute_capabilities_filters',
    'nova.tests.unit.scheduler.filters.test_compute_filters',
    'nova.tests.unit.scheduler.filters.test_extra_specs_ops',
    'nova.tests.unit.scheduler.filters.test_image_props_filters',
    'nova.tests.unit.scheduler.filters.test_io_ops_filters',
    'nova.tests.unit.scheduler.filters.test_isolated_hosts_filter',
    'nova.tests.unit.scheduler.filters.test_json_filters',
    'nova.tests.unit.scheduler.filters.test_metrics_filters',
    'nova.tests.unit.scheduler.filters.test_num_instances_filters',
    'nova.tests.unit.scheduler.filters.test_numa_topology_filters',
    'nova.tests.unit.scheduler.filters.test_pci_passthrough_filters',
    'nova.tests.unit.scheduler.filters.test_type_filters',
    'nova.tests.unit.scheduler.filters.test_utils',
    'nova.tests.unit.scheduler.weights.test_cross_cell',
    'nova.tests.unit.scheduler.weights.test_weights_affinity',
    'nova.tests.unit.scheduler.weights.test_weights_compute',
    'nova.tests.unit.scheduler.weights.test_weights_cpu',
    'nova.tests.unit.scheduler.weights.test_weights_disk',
    'nova.tests.unit.scheduler.weights.test_weights_hosts',
    'nova.tests.unit.scheduler.weights.test_weights_hypervisor_version',
    'nova.tests.unit.scheduler.weights.test_weights_image_props',
    'nova.tests.unit.scheduler.weights.test_weights_ioopsweight',
    'nova.tests.unit.scheduler.weights.test_weights_metrics',
    'nova.tests.unit.scheduler.weights.test_weights_num_instances',
    'nova.tests.unit.scheduler.weights.test_weights_pci',
    'nova.tests.unit.scheduler.weights.test_weights_ram',
    'nova.tests.unit.scheduler.test_filters',
    'nova.tests.unit.scheduler.test_host_filters',
    'nova.tests.unit.scheduler.test_host_manager:HostStateTestCase',
)


def _set_up():
    """Prepare the process in the only order that works; returns the test loader's names."""
    # Nova's test package patches eventlet first thing; do it before minisched loads too.
    from nova import monkey_patch
    monkey_patch.patch()

    from tests.nova_compat import isolation
    from tests.nova_compat import redirect
    options = isolation.install()
    redirect.Redirector(redirect.NovaOptions(_nova_conf(), options),
                        isolation.IMPORT_ERRORS).install()
    import nova.tests.unit  # noqa: F401  (registers Nova's objects)
    redirect.redirect_after_import()


def _nova_conf():
    from oslo_config import cfg
    return cfg.CONF


def load_tests():
    """``{test id: test case}`` for every test of :data:`MODULES`, in loader order."""
    loader = unittest.TestLoader()
    tests = {}
    for name in MODULES:
        module_name, _, class_name = name.partition(':')
        module = __import__(module_name, fromlist=['_'])
        suite = (loader.loadTestsFromTestCase(getattr(module, class_name)) if class_name
                 else loader.loadTestsFromModule(module))
        for test in _flatten(suite):
            tests[test.id()] = test
    return tests


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


class _Result(unittest.TestResult):
    """Keeps the outcome of one test and, for a failure, its text (traceback first)."""

    def __init__(self):
        super().__init__()
        self.outcome, self.text = 'passed', ''

    def _record(self, outcome, test, err=None, details=None):
        if self.outcome in ('failed', 'error'):
            return  # the first failure tells the story (cleanups may fail after it)
        self.outcome = outcome
        if details is not None:
            self.text = _details_text(details)
        elif err is not None:
            self.text = self._exc_info_to_string(err, test)

    def addFailure(self, test, err=None, details=None):
        self._record('failed', test, err, details)

    def addError(self, test, err=None, details=None):
        self._record('error', test, err, details)

    def addSkip(self, test, reason=None, details=None):
        self.outcome = 'skipped'
        self.text = reason or (_details_text(details) if details else '')

    def addUnexpectedSuccess(self, test, details=None):
        self._record('failed', test, details={'reason': 'unexpected success'})

    def addExpectedFailure(self, test, err=None, details=None):
        self.outcome = 'passed'

    def addSuccess(self, test, details=None):
        pass


def _details_text(details):
    """testtools' details of a failure: the traceback first, then the logs it captured."""
    parts = []
    for name in sorted(details, key=lambda n: (n != 'traceback', n)):
        content = details[name]
        text = content.as_text() if hasattr(content, 'as_text') else str(content)
        if text.strip():
            parts.append(text if name == 'traceback' else '--- %s ---\n%s' % (name, text))
    return '\n'.join(parts)


def run_one(test):
    result = _Result()
    test.run(result)
    return result.outcome, result.text


def main():
    answers = os.fdopen(os.dup(1), 'w', buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _set_up()
    tests = load_tests()
    answers.write(json.dumps({'ids': list(tests)}) + '\n')
    for line in sys.stdin:
        test_id = line.strip()
        if not test_id:
            continue
        test = tests.get(test_id)
        if test is None:
            outcome, text = 'error', 'no such Nova test: %s' % test_id
        else:
            outcome, text = run_one(test)
        answers.write(json.dumps({'id': test_id, 'outcome': outcome, 'text': text}) + '\n')


if __name__ == '__main__':
    main()
