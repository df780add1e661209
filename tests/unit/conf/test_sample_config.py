"""etc/minisched/minisched.conf.sample is what oslo-config-generator makes of today's options."""
import difflib
import os
import tempfile

from oslo_config import cfg
from oslo_config import generator

from tests.unit import base

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_GENERATOR_CONF = os.path.join(_ROOT, 'etc', 'minisched', 'minisched-config-generator.conf')
_SAMPLE = os.path.join(_ROOT, 'etc', 'minisched', 'minisched.conf.sample')

_HOW_TO_FIX = ('etc/minisched/minisched.conf.sample is out of date: an option, its default '
               'or its help changed. Run `tox -e genconfig` (or `oslo-config-generator '
               '--config-file etc/minisched/minisched-config-generator.conf`) and commit '
               'the regenerated sample.')


def _generator_conf(output_file=None):
    conf = cfg.ConfigOpts()
    generator.register_cli_opts(conf)
    args = ['--config-file', _GENERATOR_CONF]
    if output_file:
        args += ['--output-file', output_file]
    conf(args,
         project='minisched-config-generator', default_config_files=[],
         default_config_dirs=[])
    return conf


class TestSampleConfig(base.TestCase):

    def test_generator_config_names_the_namespaces(self):
        conf = _generator_conf()
        for namespace in ('minisched', 'oslo.messaging', 'oslo.db', 'oslo.log',
                          'oslo.service.service'):
            self.assertIn(namespace, conf.namespace)
        self.assertTrue(conf.summarize)
        self.assertEqual(79, conf.wrap_width)
        self.assertEqual('etc/minisched/minisched.conf.sample', conf.output_file)

    def test_sample_matches_generated_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, 'minisched.conf.sample')
            generator.generate(_generator_conf(output))
            with open(output) as f:
                generated = f.read()
        self.assertTrue(os.path.exists(_SAMPLE), _HOW_TO_FIX)
        with open(_SAMPLE) as f:
            committed = f.read()
        if generated != committed:
            diff = ''.join(list(difflib.unified_diff(
                committed.splitlines(True), generated.splitlines(True),
                'etc/minisched/minisched.conf.sample', 'generated'))[:60])
            self.fail('%s\n\nFirst differences:\n%s' % (_HOW_TO_FIX, diff))

    def test_sample_has_no_machine_specific_values(self):
        with open(_SAMPLE) as f:
            sample = f.read()
        self.assertIn('#host = <current_hostname>', sample)
        self.assertIn('#my_ip = <host_ipv4>', sample)
        self.assertIn('#state_path = $HOME/.local/state/minisched', sample)
        self.assertNotIn(os.path.expanduser('~') + os.sep, sample)
