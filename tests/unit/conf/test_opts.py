"""Every option module is listed for the generator, and every option is documented."""
import importlib
import pkgutil

from oslo_config import cfg

from minisched import conf as ms_conf
from minisched.conf import opts
from tests.unit import base

_NOT_OPTION_MODULES = {'opts'}


def _option_module_names():
    return sorted(info.name for info in pkgutil.iter_modules(ms_conf.__path__)
                  if info.name not in _NOT_OPTION_MODULES)


def _group_name(group):
    return group if isinstance(group, str) else group.name


class TestOpts(base.TestCase):

    def test_every_option_module_is_in_modules(self):
        listed = sorted(module.__name__.rsplit('.', 1)[1] for module in opts._MODULES)
        missing = sorted(set(_option_module_names()) - set(listed))
        self.assertEqual([], missing, 'add these minisched/conf modules to '
                                      'minisched.conf.opts._MODULES: %s' % missing)
        self.assertEqual(len(listed), len(set(listed)), 'a module is listed twice')

    def test_every_module_registers_and_lists(self):
        for name in _option_module_names():
            module = importlib.import_module('minisched.conf.%s' % name)
            self.assertTrue(callable(getattr(module, 'register_opts', None)), name)
            self.assertTrue(callable(getattr(module, 'list_opts', None)), name)

    def test_every_option_has_help(self):
        undocumented = ['[%s] %s' % (_group_name(group), opt.dest)
                        for group, group_opts in opts.list_opts()
                        for opt in group_opts if not (opt.help or '').strip()]
        self.assertEqual([], undocumented, 'options without help text')

    def test_help_lines_fit_the_sample(self):
        # The generator wraps each help line on its own at 79 columns ('# ' included), so a
        # longer source line comes out as a long line plus a one-word stub.
        too_long = ['[%s] %s' % (_group_name(group), opt.dest)
                    for group, group_opts in opts.list_opts() for opt in group_opts
                    if any(len(line) > 77 for line in (opt.help or '').splitlines())]
        too_long += ['[%s] (group help)' % group.name for group, _opts in opts.list_opts()
                     if not isinstance(group, str)
                     and any(len(line) > 77 for line in (group.help or '').splitlines())]
        self.assertEqual([], too_long, 'wrap these help texts at 76 columns, then run '
                                       '`tox -e genconfig`')

    def test_every_group_object_has_help(self):
        for group, _opts in opts.list_opts():
            if not isinstance(group, str):
                self.assertTrue((group.help or '').strip(), group.name)

    def test_no_option_is_listed_twice_in_a_group(self):
        for group, group_opts in opts.list_opts():
            names = [opt.dest for opt in group_opts]
            self.assertEqual(sorted(set(names)), sorted(names), _group_name(group))

    def test_list_opts_is_sorted_with_default_as_a_string(self):
        names = [_group_name(group) for group, _opts in opts.list_opts()]
        self.assertEqual(sorted(names), names)
        self.assertIn('DEFAULT', names)
        self.assertIn('DEFAULT', [group for group, _opts in opts.list_opts()])

    def test_every_listed_option_is_registered_on_conf(self):
        for group, group_opts in opts.list_opts():
            name = _group_name(group)
            for opt in group_opts:
                registered = (self.conf._get_opt_info(opt.dest) if name == 'DEFAULT'
                              else self.conf._get_opt_info(opt.dest, name))
                self.assertIs(opt, registered['opt'], '[%s] %s' % (name, opt.dest))

    def test_machine_dependent_defaults_have_sample_defaults(self):
        by_name = {opt.dest: opt for group, group_opts in opts.list_opts()
                   if _group_name(group) == 'DEFAULT' for opt in group_opts}
        for name in ('host', 'my_ip', 'state_path'):
            self.assertIsNotNone(by_name[name].sample_default, name)

    def test_registration_on_a_fresh_conf_is_complete(self):
        conf = cfg.ConfigOpts()
        for module in opts._MODULES:
            module.register_opts(conf)
        conf([], project='minisched', default_config_files=[], default_config_dirs=[])
        self.assertEqual(10, conf.report_interval)
        self.assertEqual('filter_scheduler', conf.scheduler.driver)
        self.assertIsNone(conf.database.connection)
        conf.reset()
