"""minisched.config: a bad value or an unusable TLS file stops the command, naming it."""
import contextlib
import datetime
import io
import os
import shutil
import tempfile

from oslo_config import cfg

from minisched import config
from tests.unit import base


class TestCheckValues(base.TestCase):

    def _check(self, conf):
        """Run check_values; return (exit code or None, stderr lines)."""
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            try:
                config.check_values(conf, 'minisched-test')
            except SystemExit as exc:
                return exc.code, stderr.getvalue().splitlines()
        return None, stderr.getvalue().splitlines()

    def test_good_config_passes(self):
        conf = self.private_conf('[DEFAULT]\nreport_interval = 5\nservice_down_time = 30\n'
                          '[scheduler]\nmax_attempts = 2\n'
                          '[notifications]\nnotification_format = versioned\n')
        self.assertEqual((None, []), self._check(conf))
        self.assertEqual((5, 2), (conf.report_interval, conf.scheduler.max_attempts))

    def test_empty_config_passes(self):
        self.assertEqual((None, []), self._check(self.private_conf('')))

    def test_bad_int_in_default_exits_1_naming_the_option(self):
        code, lines = self._check(self.private_conf('[DEFAULT]\nreport_interval = often\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith(
            'minisched-test: error: invalid value for [DEFAULT] report_interval: '), lines[0])
        self.assertIn('often', lines[0])

    def test_bad_int_in_a_group_names_the_group(self):
        code, lines = self._check(self.private_conf('[scheduler]\nmax_attempts = three\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertIn('invalid value for [scheduler] max_attempts', lines[0])

    def test_int_below_minimum_exits_1(self):
        code, lines = self._check(self.private_conf('[scheduler]\nmax_attempts = 0\n'))
        self.assertEqual(1, code)
        self.assertIn('[scheduler] max_attempts', lines[0])

    def test_bad_choice_exits_1_naming_the_option(self):
        code, lines = self._check(self.private_conf('[notifications]\nnotification_format = xml\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertIn('invalid value for [notifications] notification_format', lines[0])
        self.assertIn("'xml'", lines[0])

    def test_bad_choice_in_default_exits_1(self):
        code, lines = self._check(self.private_conf('[DEFAULT]\nservicegroup_driver = mc\n'))
        self.assertEqual(1, code)
        self.assertIn('[DEFAULT] servicegroup_driver', lines[0])

    def test_bad_bool_and_float_exit_1(self):
        for text, name in (('[DEFAULT]\nenable_new_services = maybe\n', 'enable_new_services'),
                           ('[filter_scheduler]\nram_weight_multiplier = lots\n',
                            '[filter_scheduler] ram_weight_multiplier')):
            code, lines = self._check(self.private_conf(text))
            self.assertEqual(1, code, text)
            self.assertIn(name, lines[0])

    def test_unknown_options_and_groups_are_ignored(self):
        conf = self.private_conf('[DEFAULT]\nno_such_option = 1\n[no_such_group]\nx = y\n')
        self.assertEqual((None, []), self._check(conf))


def _self_signed(directory, name='ca'):
    """A self-signed certificate (it is its own CA) and its key: ``(cert path, key path)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = (os.path.join(directory, name + suffix) for suffix in ('.pem', '.key'))
    with open(cert_path, 'wb') as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, 'wb') as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


class TestTLSFiles(base.TestCase):
    """config.tls_file_problems: what parse_args stops on, one line per problem."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.conf = cfg.ConfigOpts()
        self.conf.register_opts([cfg.BoolOpt('ssl', default=True)] +
                                [cfg.StrOpt(name, default='') for name in
                                 ('ssl_ca_file', 'ssl_cert_file', 'ssl_key_file')],
                                group='oslo_messaging_rabbit')
        self.conf([], default_config_files=[], default_config_dirs=[])

    def _problems(self, **files):
        for name, path in files.items():
            self.conf.set_override(name, path, group='oslo_messaging_rabbit')
        return config.tls_file_problems(self.conf)

    def test_usable_files_and_no_files_pass(self):
        cert, key = _self_signed(self.tmp)
        self.assertEqual([], self._problems())
        self.assertEqual([], self._problems(ssl_ca_file=cert, ssl_cert_file=cert,
                                            ssl_key_file=key))

    def test_a_missing_or_unreadable_file_is_named_with_its_option(self):
        missing = os.path.join(self.tmp, 'nope', 'ca.pem')
        self.assertEqual(['[oslo_messaging_rabbit] ssl_ca_file %s: No such file or directory'
                          % missing], self._problems(ssl_ca_file=missing))
        self.assertEqual(['[oslo_messaging_rabbit] ssl_cert_file %s: Is a directory'
                          % self.tmp], self._problems(ssl_ca_file='', ssl_cert_file=self.tmp))

    def test_nothing_is_checked_without_ssl(self):
        self.conf.set_override('ssl', False, group='oslo_messaging_rabbit')
        self.assertEqual([], self._problems(ssl_ca_file='/nonexistent/ca.pem'))
        self.assertEqual([], config.tls_file_problems(cfg.ConfigOpts()))  # no such group

    def test_files_openssl_cannot_load_are_named(self):
        garbage = os.path.join(self.tmp, 'garbage.pem')
        with open(garbage, 'w') as f:
            f.write('not a certificate\n')
        [problem] = self._problems(ssl_ca_file=garbage)
        self.assertTrue(problem.startswith('[oslo_messaging_rabbit] ssl_ca_file %s: no CA '
                                           'certificate loads from it: ' % garbage), problem)
        cert, _key = _self_signed(self.tmp)
        _other_cert, other_key = _self_signed(self.tmp, 'other')
        [problem] = self._problems(ssl_ca_file='', ssl_cert_file=cert, ssl_key_file=other_key)
        self.assertIn('ssl_cert_file %s with ssl_key_file %s: the certificate and its key do '
                      'not load' % (cert, other_key), problem)
