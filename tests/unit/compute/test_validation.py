"""What the conductor checks of a build it is sent: argument types, values against columns."""
import warnings

from minisched.compute import validation
from minisched import context
from minisched import exception
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import selection as selection_obj
from tests.unit import base, fakes

uuids = base.uuids


def _instance(**kw):
    values = dict(uuid=uuids.instance, display_name='web', hostname='web', project_id='p',
                  user_id='u', availability_zone='az1', memory_mb=512, vcpus=1,
                  vm_state=instance_obj.BUILDING)
    values.update(kw)
    return instance_obj.Instance(**values)


def _build_request(**kw):
    instance = _instance(**kw)
    return build_request_obj.BuildRequest(instance_uuid=instance.uuid, project_id='p',
                                          instance=instance)


def _spec(**kw):
    values = dict(instance_uuid=uuids.instance, availability_zone='az1', project_id='p',
                  user_id='u', flavor=fakes.fake_flavor())
    values.update(kw)
    return request_spec_obj.RequestSpec(**values)


class ValidationTestCase(base.TestCase):

    def refusal(self, check, *args):
        with self.assertRaises(exception.ValidationError) as raised:
            check(*args)
        return raised.exception.kwargs['field'], raised.exception.format_message()


class TestColumns(ValidationTestCase):

    def test_values_that_fit_pass(self):
        validation.check_instance(_instance(display_name='n' * 255, availability_zone=None,
                                            memory_mb=2 ** 31 - 1, cleaned=True))
        validation.check_request_spec(_spec(availability_zone='z' * 255))
        validation.check_context(context.RequestContext(user_id='u' * 255, project_id='p'))

    def test_strings_longer_than_their_column_are_refused(self):
        for field in ('display_name', 'availability_zone', 'hostname', 'project_id',
                      'user_id', 'image_ref', 'os_type', 'host', 'node', 'vm_state'):
            with self.subTest(field=field):
                name, message = self.refusal(validation.check_instance,
                                             _instance(**{field: 'x' * 256}))
                self.assertEqual(field, name)
                self.assertIn('256 characters long, more than the 255 of column instances.%s'
                              % field, message)

    def test_characters_no_database_holds_are_refused(self):
        for text in ('a\x00b', 'a\U0001F600'):
            self.assertEqual('display_name', self.refusal(
                validation.check_instance, _instance(display_name=text))[0])

    def test_integers_out_of_32_bits_are_refused(self):
        name, message = self.refusal(validation.check_instance, _instance(memory_mb=2 ** 31))
        self.assertEqual('memory_mb', name)
        self.assertIn('32-bit range of column instances.memory_mb', message)

    def test_request_spec_and_context(self):
        self.assertEqual('request_spec.availability_zone', self.refusal(
            validation.check_request_spec, _spec(availability_zone='z' * 300))[0])
        self.assertEqual('request_spec.project_id', self.refusal(
            validation.check_request_spec, _spec(project_id='p' * 256))[0])
        ctxt = context.RequestContext(user_id='u', project_id='p' * 256)
        self.assertEqual('context.project_id', self.refusal(validation.check_context, ctxt)[0])


class TestFit(base.TestCase):

    def test_fit_instance_cuts_strings_drops_characters_and_bad_integers(self):
        instance = _instance(display_name='n' * 300, hostname='a\x00b\U0001F600c',
                             memory_mb=2 ** 40, availability_zone='az1')
        self.assertEqual({'hostname', 'display_name', 'memory_mb'},
                         set(validation.fit_instance(instance)))
        self.assertEqual(('n' * 255, 'abc', None, 'az1'), (
            instance.display_name, instance.hostname, instance.memory_mb,
            instance.availability_zone))
        validation.check_instance(instance)
        self.assertEqual([], validation.fit_instance(instance))

    def test_a_uuid_is_never_made_up(self):
        with warnings.catch_warnings():  # oslo.versionedobjects warns of a non-UUID uuid
            warnings.simplefilter('ignore', FutureWarning)
            instance = _instance(uuid='u' * 40)
        self.assertFalse(validation.recordable(instance))
        self.assertEqual([], validation.fit_instance(instance))
        self.assertTrue(validation.recordable(_instance()))

    def test_fit_context_copies_only_when_needed(self):
        ctxt = context.RequestContext(user_id='u', project_id='p')
        self.assertIs(ctxt, validation.fit_context(ctxt))
        long_ctxt = context.RequestContext(user_id='u', project_id='p' * 300)
        fitted = validation.fit_context(long_ctxt)
        self.assertEqual(('u', 'p' * 255, ctxt.request_id[:4]),
                         (fitted.user_id, fitted.project_id, fitted.request_id[:4]))
        self.assertEqual('p' * 300, long_ctxt.project_id)


class TestArguments(ValidationTestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.RequestContext(user_id='u', project_id='p')

    def test_build_requests_must_be_a_list_of_build_requests_with_an_instance(self):
        validation.check_build_requests([_build_request()])
        validation.check_build_requests([])
        for value, field in (('x', 'build_requests'), ({}, 'build_requests'),
                             ([{'instance_uuid': uuids.a}], 'build_requests[0]'),
                             ([build_request_obj.BuildRequest(instance_uuid=uuids.a)],
                              'build_requests[0].instance')):
            with self.subTest(field=field):
                self.assertEqual(field, self.refusal(validation.check_build_requests,
                                                     value)[0])

    def test_schedule_and_build_arguments(self):
        requests = [_build_request()]
        validation.check_schedule_and_build(self.ctxt, requests, [_spec()], {})
        for specs, image, field in (([], None, 'request_specs'),
                                    ('spec', None, 'request_specs'),
                                    ([{'flavor': {}}], None, 'request_specs[0]'),
                                    ([_spec()], ['image'], 'image'),
                                    ([_spec(availability_zone='z' * 300)], None,
                                     'request_spec.availability_zone')):
            with self.subTest(field=field):
                self.assertEqual(field, self.refusal(
                    validation.check_schedule_and_build, self.ctxt, requests, specs, image)[0])
        self.assertEqual('display_name', self.refusal(
            validation.check_schedule_and_build, self.ctxt,
            [_build_request(display_name='n' * 300)], [_spec()], None)[0])

    def test_build_instances_arguments(self):
        instances = [_instance()]
        validation.check_instances(instances)
        validation.check_build_instances(self.ctxt, instances, {}, {}, _spec(), None)
        validation.check_build_instances(self.ctxt, instances, None, None, None,
                                         [[selection_obj.Selection()]])
        self.assertEqual('instances', self.refusal(validation.check_instances, [])[0])
        self.assertEqual('instances[0]', self.refusal(validation.check_instances, ['x'])[0])
        for args, field in (((['x'], {}, _spec(), None), 'image'),
                            (({}, 'props', _spec(), None), 'filter_properties'),
                            (({}, {}, None, None), 'request_spec'),
                            (({}, {}, None, 'hosts'), 'host_lists'),
                            (({}, {}, None, [['host']]), 'host_lists[0][0]'),
                            (({}, {}, None, [[], []]), 'host_lists')):
            with self.subTest(field=field):
                self.assertEqual(field, self.refusal(
                    validation.check_build_instances, self.ctxt, instances, *args)[0])
        self.assertEqual('availability_zone', self.refusal(
            validation.check_build_instances, self.ctxt, [_instance(availability_zone='z' * 300)],
            {}, {}, _spec(), None)[0])
