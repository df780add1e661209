"""Security properties that need no broker: no unsafe deserialization anywhere in minisched,
only registered minisched classes load from the wire, and TLS to RabbitMQ is configurable."""
import os
import pathlib
import re
import tempfile
import time

import oslo_messaging as messaging
from oslo_config import cfg

from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from minisched import rpc
from tests.unit import base

SOURCE = pathlib.Path(objects.__file__).resolve().parents[1]

#: (what, pattern): constructs that can run code or build arbitrary objects from data.
UNSAFE = [
    ('pickle', re.compile(r'^\s*(import|from)\s+(c?pickle|_pickle|dill|shelve)\b|\bc?pickle\.')),
    ('marshal', re.compile(r'^\s*(import|from)\s+marshal\b|\bmarshal\.')),
    ('yaml.load without SafeLoader',
     re.compile(r'\byaml\.(load|load_all)\((?![^)]*Loader\s*=\s*(yaml\.)?C?SafeLoader)')),
    ('yaml unsafe loader', re.compile(r'\byaml\.(unsafe_load|full_load|UnsafeLoader)')),
    ('eval', re.compile(r'(?<![\w.])eval\(')),
    ('exec', re.compile(r'(?<![\w.])exec\(')),
    ('jsonpickle', re.compile(r'\bjsonpickle\b')),
]


def _source_lines():
    for path in sorted(SOURCE.joinpath('minisched').rglob('*.py')):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split('#', 1)[0]
            if code.strip():
                yield path.relative_to(SOURCE), number, code


class TestNoUnsafeDeserialization(base.TestCase):
    def test_no_pickle_marshal_unsafe_yaml_or_eval_in_minisched(self):
        found = ['%s:%d: %s: %s' % (path, number, what, code.strip())
                 for path, number, code in _source_lines()
                 for what, pattern in UNSAFE if pattern.search(code)]
        self.assertEqual([], found)

    def test_the_scan_finds_what_it_looks_for(self):
        # The patterns are live: each catches its construct (and not a safe look-alike).
        caught = {what for what, pattern in UNSAFE for sample in (
            'import pickle', 'x = pickle.loads(b)', 'import marshal', 'yaml.load(f)',
            'yaml.full_load(f)', 'eval(text)', 'exec(code)', 'import jsonpickle')
            if pattern.search(sample)}
        self.assertEqual({what for what, _ in UNSAFE}, caught)
        safe = ('yaml.load(f, Loader=yaml.SafeLoader)', 'df.eval(expr)', 'conn.exec_driver_sql(q)',
                'literal_eval(x)', 'self.evaluate(x)')
        self.assertEqual([], [s for s in safe for _, p in UNSAFE if p.search(s)])


def _service_primitive(**envelope):
    primitive = objects.Service(host='h', binary='minisched-compute').obj_to_primitive()
    primitive.update({'minisched_object.' + k: v for k, v in envelope.items()})
    return primitive


class TestOnlyRegisteredMinischedClassesLoad(base.TestCase):
    def setUp(self):
        super().setUp()
        self.serializer = objects_base.MinischedObjectSerializer()

    def load(self, primitive):
        return self.serializer.deserialize_entity(None, primitive)

    def test_a_registered_class_loads(self):
        self.assertIsInstance(self.load(_service_primitive()), objects.Service)

    def test_another_namespace_is_rejected_naming_it(self):
        for namespace in ('nova', 'oslo', 'os', ''):
            with self.assertRaises(exception.UnsupportedObjectError) as caught:
                self.load(_service_primitive(namespace=namespace))
            self.assertIn('Unsupported object type %s.Service' % namespace,
                          caught.exception.format_message())

    def test_unregistered_classes_are_rejected_naming_them(self):
        for name in ('Popen', 'os.system', 'subprocess.Popen', 'builtins.eval',
                     'VersionedObject', 'MinischedObject', 'ObjectListBase', '__class__'):
            with self.assertRaises(exception.UnsupportedObjectError) as caught:
                self.load(_service_primitive(name=name))
            self.assertIn('Unsupported object type %s' % name,
                          caught.exception.format_message())

    def test_another_projects_envelope_stays_plain_data(self):
        nova = {'nova_object.name': 'Service', 'nova_object.namespace': 'nova',
                'nova_object.version': '1.22', 'nova_object.data': {'host': 'h'}}
        self.assertEqual(nova, self.load(nova))

    def test_nested_foreign_object_is_rejected(self):
        spec = objects.RequestSpec(num_instances=1).obj_to_primitive()
        spec['minisched_object.data']['flavor'] = _service_primitive(namespace='nova')
        with self.assertRaises(exception.UnsupportedObjectError):
            self.load(spec)

    def test_rpc_servers_answer_the_error_instead_of_raising_it_as_their_own(self):
        server_side = rpc.get_serializer(server_side=True)
        with self.assertRaises(messaging.ExpectedException) as caught:
            server_side.deserialize_entity(None, _service_primitive(namespace='nova'))
        self.assertIsInstance(caught.exception.exc_info[1], exception.UnsupportedObjectError)


class TestRabbitSSLOptions(base.TestCase):
    def test_ssl_options_are_accepted_and_the_transport_builds_without_connecting(self):
        tmp = tempfile.mkdtemp()
        files = {}
        for name in ('ca.pem', 'cert.pem', 'key.pem'):
            files[name] = os.path.join(tmp, name)
            with open(files[name], 'w') as f:
                f.write('-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n')
        conf_path = os.path.join(tmp, 'minisched.conf')
        with open(conf_path, 'w') as f:
            # Port 1: nothing listens there, so a connection attempt would fail loudly.
            f.write('[DEFAULT]\ntransport_url = rabbit://u:p@127.0.0.1:1/\n'
                    '[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = %s\n'
                    'ssl_cert_file = %s\nssl_key_file = %s\nssl_version = TLSv1_2\n'
                    'ssl_enforce_hostname_verification = true\n'
                    % (files['ca.pem'], files['cert.pem'], files['key.pem']))
        conf = cfg.ConfigOpts()
        conf(['--config-file', conf_path], project='minisched', default_config_files=[],
             default_config_dirs=[])
        self.addCleanup(rpc.cleanup)
        started = time.monotonic()
        rpc.init(conf)  # what every service does at start-up, after parsing its config
        self.assertLess(time.monotonic() - started, 5)  # no connection attempt, no retries
        self.assertTrue(rpc.initialized())
        rabbit = conf.oslo_messaging_rabbit
        self.assertTrue(rabbit.ssl)
        self.assertEqual((files['ca.pem'], files['cert.pem'], files['key.pem'], 'TLSv1_2'),
                         (rabbit.ssl_ca_file, rabbit.ssl_cert_file, rabbit.ssl_key_file,
                          rabbit.ssl_version))
        driver = rpc.TRANSPORT._driver
        self.assertEqual('rabbit', rpc.TRANSPORT.conf.transport_url.split(':')[0])
        self.assertTrue(driver.conf.oslo_messaging_rabbit.ssl)
