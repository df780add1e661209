"""RequestSpec 1.15 and its children: legacy dict forms (RPC 4.0, notifications), scheduler
hints, backports and what the API database keeps."""
from oslo_serialization import jsonutils

from minisched import context
from minisched.db.api import api as api_db
from minisched import exception
from minisched import objects
from minisched.objects import base
from minisched.objects import request_spec
from tests.unit import base as test_base
from tests.unit import fakes
from tests.unit import sqlite_databases

uuids = test_base.uuids


def _full_spec(ctxt):
    spec = fakes.fake_spec(
        memory_mb=2048, vcpus=2, root_gb=20, image_id=uuids.image,
        image_props={'hw_architecture': 'x86_64'}, availability_zone='az1',
        scheduler_hints={'group': [uuids.group], 'same_host': ['a', 'b']},
        ignore_hosts=['ignored'], force_hosts=['forced'], force_nodes=['forced-node'])
    spec.retry = request_spec.SchedulerRetries.from_dict(
        ctxt, {'num_attempts': 2, 'hosts': [['host3', 'node3']]})
    spec.limits = request_spec.SchedulerLimits.from_dict({'memory_mb': 3072, 'vcpu': 32})
    spec.instance_group = fakes.fake_group(policy='affinity', members=[uuids.member],
                                           hosts=['host4'])
    spec.requested_destination = objects.Destination(host='host5', node='node5')
    return spec


class TestLegacyDicts(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.get_admin_context()

    def test_filter_properties_have_nova_keys_and_forms(self):
        props = _full_spec(self.ctxt).to_legacy_filter_properties_dict()
        self.assertEqual(['ignored'], props['ignore_hosts'])
        self.assertEqual(['forced'], props['force_hosts'])
        self.assertEqual(['forced-node'], props['force_nodes'])
        self.assertEqual({'num_attempts': 2, 'hosts': [['host3', 'node3']]}, props['retry'])
        self.assertEqual({'memory_mb': 3072, 'vcpu': 32}, props['limits'])
        self.assertEqual((True, {'host4'}, {'affinity'}, {uuids.member}),
                         (props['group_updated'], props['group_hosts'],
                          props['group_policies'], props['group_members']))
        # one-element hint lists are unwrapped, as Nova's legacy dict has them
        self.assertEqual({'group': uuids.group, 'same_host': ['a', 'b']},
                         props['scheduler_hints'])
        self.assertEqual('host5', props['requested_destination'].host)

    def test_filter_properties_omit_unset_and_empty_values(self):
        spec = fakes.fake_spec(ignore_hosts=[], scheduler_hints={})
        self.assertEqual({}, spec.to_legacy_filter_properties_dict())

    def test_request_spec_dict(self):
        legacy = _full_spec(self.ctxt).to_legacy_request_spec_dict()
        self.assertEqual(1, legacy['num_instances'])
        self.assertEqual({'id': uuids.image, 'properties': {'hw_architecture': 'x86_64'}},
                         legacy['image'])
        self.assertEqual(2048, legacy['instance_type'].memory_mb)
        self.assertEqual({'project_id': 'project1', 'user_id': 'user1',
                          'availability_zone': 'az1', 'uuid': uuids.instance},
                         legacy['instance_properties'])

    def test_legacy_round_trip_keeps_what_the_scheduler_reads(self):
        spec = _full_spec(self.ctxt)
        back = request_spec.RequestSpec.from_primitives(
            self.ctxt, spec.to_legacy_request_spec_dict(),
            spec.to_legacy_filter_properties_dict())
        for name in ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap'):
            self.assertEqual(getattr(spec, name), getattr(back, name), name)
        for name in ('num_instances', 'project_id', 'user_id', 'availability_zone',
                     'instance_uuid', 'ignore_hosts', 'force_hosts', 'force_nodes',
                     'scheduler_hints'):
            self.assertEqual(getattr(spec, name), getattr(back, name), name)
        self.assertEqual('x86_64', back.image.properties.hw_architecture)
        self.assertEqual(uuids.image, back.image.id)
        self.assertEqual(spec.retry.to_dict(), back.retry.to_dict())
        self.assertEqual(spec.limits.to_dict(), back.limits.to_dict())
        self.assertEqual(('affinity', ['host4'], [uuids.member]),
                         (back.instance_group.policy, back.instance_group.hosts,
                          back.instance_group.members))
        self.assertEqual(['affinity'], back.instance_group.policies)
        self.assertEqual(('host5', 'node5'), (back.requested_destination.host,
                                              back.requested_destination.node))
        self.assertEqual(spec.to_legacy_filter_properties_dict(),
                         back.to_legacy_filter_properties_dict())

    def test_from_primitives_wraps_scalar_hints_and_reads_flavor_dicts(self):
        spec = request_spec.RequestSpec.from_primitives(
            self.ctxt,
            {'instance_type': {'memory_mb': 64, 'vcpus': 1, 'root_gb': 0, 'ephemeral_gb': 0,
                               'swap': 0, 'flavorid': 'tiny', 'unknown': 'x'},
             'image': {'properties': {'architecture': 'amd64'}}},
            {'scheduler_hints': {'group': uuids.group, 'query': ['a', 'b']},
             'limits': {'memory_mb': 96.9}})
        self.assertEqual({'group': [uuids.group], 'query': ['a', 'b']}, spec.scheduler_hints)
        self.assertEqual(uuids.group, spec.get_scheduler_hint('group'))
        self.assertEqual(64, spec.memory_mb)
        self.assertEqual(96, spec.limits.memory_mb)
        self.assertEqual('x86_64', spec.image.properties.hw_architecture)
        self.assertEqual(1, spec.num_instances)

    def test_from_primitives_with_empty_dicts_sets_no_flavor_group_retry_or_image(self):
        spec = request_spec.RequestSpec.from_primitives(self.ctxt, {}, {})
        self.assertNotIn('flavor', spec)
        self.assertIsNone(spec.instance_group)
        self.assertIsNone(spec.retry)
        self.assertIsNone(spec.image)
        self.assertIsNone(spec.requested_destination)
        self.assertEqual({}, spec.limits.to_dict())

    def test_retry_from_dict_without_attempts_is_none(self):
        self.assertIsNone(request_spec.SchedulerRetries.from_dict(self.ctxt, {}))
        self.assertIsNone(request_spec.SchedulerRetries.from_dict(self.ctxt, {'hosts': []}))


class TestSchedulerHint(test_base.TestCase):

    def test_single_element_list_is_unwrapped(self):
        spec = fakes.fake_spec(scheduler_hints={'group': [uuids.group]})
        self.assertEqual(uuids.group, spec.get_scheduler_hint('group'))

    def test_longer_list_is_returned_as_is(self):
        spec = fakes.fake_spec(scheduler_hints={'same_host': ['a', 'b']})
        self.assertEqual(['a', 'b'], spec.get_scheduler_hint('same_host'))

    def test_empty_list_is_returned_as_is(self):
        spec = fakes.fake_spec(scheduler_hints={'same_host': []})
        self.assertEqual([], spec.get_scheduler_hint('same_host', default='d'))

    def test_missing_hint_gives_the_default(self):
        spec = fakes.fake_spec(scheduler_hints={'a': ['1']})
        self.assertIsNone(spec.get_scheduler_hint('b'))
        self.assertEqual('d', spec.get_scheduler_hint('b', default='d'))

    def test_no_hints_at_all_gives_the_default(self):
        spec = fakes.fake_spec()
        spec.scheduler_hints = None
        self.assertEqual('d', spec.get_scheduler_hint('group', 'd'))
        del spec.scheduler_hints
        self.assertEqual('d', spec.get_scheduler_hint('group', 'd'))


class TestRequestSpecFields(test_base.TestCase):

    def test_size_properties_read_the_flavor(self):
        spec = fakes.fake_spec(memory_mb=1024, vcpus=3, root_gb=10, ephemeral_gb=5, swap=256)
        self.assertEqual((1024, 3, 10, 5, 256), (spec.memory_mb, spec.vcpus, spec.root_gb,
                                                  spec.ephemeral_gb, spec.swap))

    def test_unset_optional_fields_load_as_defaults(self):
        spec = objects.RequestSpec(flavor=fakes.fake_flavor())
        self.assertEqual((None, None, 1, False), (spec.retry, spec.force_hosts,
                                                  spec.num_instances, spec.is_bfv))
        self.assertEqual(set(), spec.obj_what_changed() - {'flavor'})

    def test_limits_to_dict_drops_none(self):
        limits = request_spec.SchedulerLimits.from_dict({'vcpu': 4})
        self.assertEqual({'vcpu': 4}, limits.to_dict())
        self.assertIsNone(limits.memory_mb)


def _data(obj, version, **manifest):
    """The fields ``obj`` sends to a peer at ``version`` (and its children at ``manifest``'s),
    as the backport (obj_make_compatible) leaves them."""
    manifest = dict(manifest, **{obj.obj_name(): version}) if manifest else None
    return obj.obj_to_primitive(target_version=version,
                                version_manifest=manifest)['minisched_object.data']


class TestRequestSpecChildren(test_base.TestCase):
    """Destination 1.4, RequestGroup, RequestLevelParams and NetworkRequest(List), as Nova's."""

    def test_destination_defaults_and_backports(self):
        dest = objects.Destination(host='host1', cell=objects.CellMapping(uuid=uuids.cell))
        self.assertEqual((None, False, None), (dest.aggregates, dest.allow_cross_cell_move,
                                               dest.forbidden_aggregates))
        dest.require_aggregates(['a', 'b'])
        dest.require_aggregates(['c'])
        dest.append_forbidden_aggregates({'x'})
        self.assertEqual((['a,b', 'c'], {'x'}), (dest.aggregates, dest.forbidden_aggregates))
        dest.allow_cross_cell_move = True
        for version, gone in (('1.3', 'forbidden_aggregates'), ('1.2', 'allow_cross_cell_move'),
                              ('1.1', 'aggregates'), ('1.0', 'cell')):
            self.assertNotIn(gone, _data(dest, version, CellMapping='1.1'), version)
        self.assertIn('cell', _data(dest, '1.1', CellMapping='1.1'))

    def test_request_group_has_its_defaults_from_creation(self):
        group = objects.RequestGroup(resources={'VCPU': 1, 'MEMORY_MB': 0},
                                     requester_id='port1')
        self.assertEqual((True, set(), [], set(), [], None),
                         (group.use_same_provider, group.required_traits, group.aggregates,
                          group.forbidden_aggregates, group.provider_uuids, group.in_tree))
        self.assertFalse(group.is_empty())
        group.strip_zeros()
        self.assertEqual({'VCPU': 1}, group.resources)
        self.assertTrue(objects.RequestGroup().is_empty())
        # The defaults are not shared between groups.
        other = objects.RequestGroup()
        other.required_traits.add('CUSTOM_X')
        self.assertEqual(set(), objects.RequestGroup().required_traits)

    def test_request_group_backports(self):
        group = objects.RequestGroup(in_tree=uuids.root, forbidden_aggregates={'a'})
        for version, gone in (('1.2', 'forbidden_aggregates'), ('1.1', 'in_tree'),
                              ('1.0', 'requester_id'), ('1.0', 'provider_uuids')):
            self.assertNotIn(gone, _data(group, version), version)
        self.assertIn('in_tree', _data(group, '1.2'))

    def test_request_group_survives_the_wire_whole(self):
        group = objects.RequestGroup(resources={'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
                                     required_traits={'CUSTOM_PHYSNET_2'},
                                     aggregates=[['a'], ['b', 'c']], requester_id=uuids.port,
                                     provider_uuids=[uuids.rp])
        back = objects.RequestGroup.obj_from_primitive(group.obj_to_primitive())
        # Every field and value (the change lists hold the same names, in set order).
        self.assertEqual(base.comparable_primitive(group), base.comparable_primitive(back))
        self.assertEqual(set(group.obj_what_changed()), set(back.obj_what_changed()))

    def test_request_level_params(self):
        params = objects.RequestLevelParams(root_required={'A'})
        self.assertEqual((set(), []), (params.root_forbidden, params.same_subtree))
        params.extend_with(objects.RequestLevelParams(root_required={'B'},
                                                      same_subtree=[['_1', '_2']]))
        self.assertEqual(({'A', 'B'}, [['_1', '_2']]), (params.root_required,
                                                       params.same_subtree))
        self.assertNotIn('same_subtree', _data(params, '1.0'))

    def test_network_requests_as_tuples(self):
        tuples = [('net1', '10.0.0.2', None, None, None, None),
                  (None, None, uuids.port, uuids.pci, uuids.arq, 'profile1')]
        requests = objects.NetworkRequestList.from_tuples(tuples)
        self.assertEqual(tuples, requests.as_tuples())
        self.assertFalse(requests.auto_allocate)
        self.assertTrue(objects.NetworkRequestList.from_tuples(
            [('auto', None, None, None, None, None)]).auto_allocate)
        self.assertTrue(objects.NetworkRequestList.from_tuples(
            [('none', None, None, None, None, None)]).no_allocate)
        self.assertIsNone(objects.NetworkRequest().tag)  # any unset field reads None
        request = requests[1]
        request.tag = 'nic1'
        for version, gone in (('1.2', 'arq_uuid'), ('1.2', 'device_profile'), ('1.1', 'tag'),
                              ('1.0', 'pci_request_id')):
            self.assertNotIn(gone, _data(request, version), version)
        self.assertIn('tag', _data(request, '1.2'))

    def test_network_request_address_must_be_an_ip(self):
        self.assertRaises(ValueError, objects.NetworkRequest, address='not-an-ip')

    def test_a_cross_cell_move_is_not_restricted_to_its_destination_cell(self):
        from minisched.scheduler import host_manager
        cell = objects.CellMapping(uuid=uuids.cell)
        spec = fakes.fake_spec()
        spec.requested_destination = objects.Destination(host='host1', cell=cell)
        self.assertIs(cell, host_manager.requested_cell(spec))
        spec.requested_destination.allow_cross_cell_move = True
        self.assertIsNone(host_manager.requested_cell(spec))


class TestRequestSpec115(test_base.TestCase):
    """The fields of 1.12 to 1.15 and security groups as an object list, as Nova's."""

    def test_optional_fields_load_as_novas_defaults(self):
        spec = objects.RequestSpec(flavor=fakes.fake_flavor())
        self.assertEqual([], spec.security_groups.objects)
        self.assertEqual([], spec.requested_networks.objects)
        self.assertIsNone(spec.requested_resources)
        self.assertEqual((set(), set(), []), (spec.root_required, spec.root_forbidden,
                                              spec.same_subtree))

    def test_a_nova_security_group_list_round_trips(self):
        spec = fakes.fake_spec()
        spec.security_groups = objects.SecurityGroupList.from_names(['default', 'web'])
        spec.requested_resources = [objects.RequestGroup(resources={'VCPU': 1},
                                                         requester_id='port1')]
        spec.request_level_params = objects.RequestLevelParams(root_required={'A'})
        spec.requested_networks = objects.NetworkRequestList.from_tuples(
            [('net1', None, None, None, None, None)])
        back = objects.RequestSpec.obj_from_primitive(spec.obj_to_primitive())
        self.assertEqual(['default', 'web'], back.security_groups.names())
        self.assertEqual(({'VCPU': 1}, {'A'}, 'net1'), (
            back.requested_resources[0].resources, back.root_required,
            back.requested_networks[0].network_id))

    def test_a_list_of_names_is_refused(self):
        spec = fakes.fake_spec()
        self.assertRaises(ValueError, setattr, spec, 'security_groups', ['default'])

    def test_backports_drop_what_each_older_version_lacks(self):
        spec = fakes.fake_spec(memory_mb=512)
        spec.user_id = 'user1'
        spec.is_bfv = False
        spec.security_groups = objects.SecurityGroupList.from_names(['default'])
        spec.network_metadata = objects.NetworkMetadata(physnets=set(), tunneled=False)
        spec.requested_resources = []
        spec.request_level_params = objects.RequestLevelParams()
        spec.requested_networks = objects.NetworkRequestList(objects=[])
        manifest = {'RequestSpec': '1.15', 'SecurityGroupList': '1.1', 'SecurityGroup': '1.2',
                    'RequestLevelParams': '1.1', 'NetworkRequestList': '1.1',
                    'NetworkRequest': '1.3', 'RequestGroup': '1.3', 'Flavor': '1.2',
                    'ImageMeta': '1.8', 'ImageMetaProps': '1.44', 'NetworkMetadata': '1.0'}
        added = [('1.14', 'requested_networks'), ('1.13', 'request_level_params'),
                 ('1.12', 'requested_resources'), ('1.11', 'is_bfv'),
                 ('1.10', 'network_metadata'), ('1.9', 'user_id'), ('1.8', 'security_groups')]
        for version in ('1.7', '1.8', '1.9', '1.10', '1.11', '1.12', '1.13', '1.14', '1.15'):
            manifest['RequestSpec'] = version
            data = spec.obj_to_primitive(target_version=version, version_manifest=manifest)[
                'minisched_object.data']
            for since, name in added:
                present = tuple(map(int, version.split('.'))) >= tuple(map(int, since.split('.')))
                self.assertEqual(present, name in data, '%s at %s' % (name, version))
            self.assertIn('flavor', data)

    def test_reset_forced_destinations_is_not_a_change(self):
        spec = fakes.fake_spec(force_hosts=['host1'], force_nodes=['node1'])
        spec.obj_reset_changes(recursive=True)
        spec.reset_forced_destinations()
        self.assertEqual((None, None, set()), (spec.force_hosts, spec.force_nodes,
                                               spec.obj_what_changed()))


class TestStoredRequestSpec(sqlite_databases.SqliteDatabases, test_base.TestCase):
    """What the API database keeps of a spec, and Nova's remotable methods over it."""

    def setUp(self):
        super().setUp()
        self.use_databases()

    def _spec(self, uuid, **values):
        spec = fakes.fake_spec(instance_uuid=uuid, **values)
        spec._context = self.ctxt
        return spec

    def test_create_get_destroy(self):
        spec = self._spec(uuids.one)
        spec.security_groups = objects.SecurityGroupList.from_names(['default'])
        spec.requested_networks = objects.NetworkRequestList.from_tuples(
            [('net1', None, None, None, None, None)])
        spec.requested_resources = [objects.RequestGroup(resources={'VCPU': 1})]
        spec.ignore_hosts = ['host1']
        spec.create()
        self.assertRaises(exception.ObjectActionError, spec.create)
        self._spec(uuids.two).create()
        got = objects.RequestSpec.get_by_instance_uuid(self.ctxt, uuids.one)
        self.assertEqual((spec.id, ['default']), (got.id, got.security_groups.names()))
        # Per request fields are not stored, and read back as their defaults.
        for name in ('requested_networks', 'requested_resources', 'ignore_hosts',
                     'request_level_params'):
            self.assertNotIn(name, got, name)
        self.assertEqual(([], None, None), (got.requested_networks.objects,
                                            got.requested_resources, got.ignore_hosts))
        several = objects.RequestSpec.get_by_instance_uuids(
            self.ctxt, [uuids.one, uuids.two, uuids.three])
        self.assertEqual({uuids.one, uuids.two}, {s.instance_uuid for s in several})
        self.assertEqual([], objects.RequestSpec.get_by_instance_uuids(self.ctxt, []))
        objects.RequestSpec(self.ctxt, instance_uuid=uuids.one).destroy()
        self.assertRaises(exception.RequestSpecNotFound,
                          objects.RequestSpec.get_by_instance_uuid, self.ctxt, uuids.one)
        self.assertRaises(exception.RequestSpecNotFound,
                          objects.RequestSpec(self.ctxt, instance_uuid=uuids.one).destroy)

    def test_a_spec_stored_with_group_names_reads_back_as_a_group_list(self):
        primitive = self._spec(uuids.old).obj_to_primitive(
            target_version='1.11', version_manifest=base.obj_tree_get_versions('RequestSpec'))
        primitive['minisched_object.data']['security_groups'] = ['default', 'web']
        api_db.request_spec_create(self.ctxt, uuids.old, jsonutils.dumps(primitive))
        got = objects.RequestSpec.get_by_instance_uuid(self.ctxt, uuids.old)
        self.assertEqual(['default', 'web'], got.security_groups.names())
