"""ImageMeta/ImageMetaProps.from_dict: canonical values, legacy property names, traits; the
image as an instance's system_metadata keeps it."""
from minisched import exception
from minisched import objects
from minisched.objects import image_meta
from tests.unit import base as test_base
from tests.unit import fakes

uuids = test_base.uuids


def _props(**kw):
    return objects.ImageMetaProps.from_dict(kw)


class TestImageMetaProps(test_base.TestCase):

    def test_architecture_is_canonicalised(self):
        for given, canonical in (('x86_64', 'x86_64'), ('AMD64', 'x86_64'), ('i386', 'i686'),
                                 ('i586', 'i686'), ('x86_32', 'i686'), ('arm64', 'aarch64'),
                                 ('PPC64LE', 'ppc64le')):
            self.assertEqual(canonical, _props(hw_architecture=given).hw_architecture, given)

    def test_hypervisor_type_and_vm_mode_are_canonicalised(self):
        self.assertEqual('xen', _props(img_hv_type='xapi').img_hv_type)
        self.assertEqual('kvm', _props(img_hv_type='KVM').img_hv_type)
        for given, canonical in (('hv', 'hvm'), ('baremetal', 'hvm'), ('pv', 'xen'),
                                 ('HVM', 'hvm'), ('exe', 'exe')):
            self.assertEqual(canonical, _props(hw_vm_mode=given).hw_vm_mode, given)

    def test_legacy_names_map_to_current_ones(self):
        props = _props(architecture='amd64', hypervisor_type='xapi', vm_mode='hv',
                       hypervisor_version_requires='>=6.0')
        self.assertEqual(('x86_64', 'xen', 'hvm', '>=6.0'),
                         (props.hw_architecture, props.img_hv_type, props.hw_vm_mode,
                          props.img_hv_requested_version))
        self.assertNotIn('architecture', props.obj_to_primitive()['minisched_object.data'])

    def test_current_name_wins_over_legacy_name_in_any_order(self):
        for items in ((('hw_architecture', 'aarch64'), ('architecture', 'x86_64')),
                      (('architecture', 'x86_64'), ('hw_architecture', 'aarch64'))):
            self.assertEqual('aarch64', objects.ImageMetaProps.from_dict(
                dict(items)).hw_architecture)

    def test_values_are_coerced_to_field_types(self):
        props = _props(hw_cpu_cores='4', os_require_quiesce='yes', hw_qemu_guest_agent='no')
        self.assertEqual((4, True, False), (props.hw_cpu_cores, props.os_require_quiesce,
                                            props.hw_qemu_guest_agent))

    def test_required_traits_are_collected(self):
        props = _props(**{'trait:HW_CPU_X86_AVX': 'required', 'trait:CUSTOM_A': 'required',
                          'trait:CUSTOM_B': 'forbidden', 'traits:CUSTOM_C': 'required'})
        self.assertEqual(['CUSTOM_A', 'HW_CPU_X86_AVX'], sorted(props.traits_required))

    def test_unknown_properties_are_ignored(self):
        props = _props(not_a_property='x', hw_disk_bus='virtio')
        self.assertEqual({'hw_disk_bus': 'virtio'},
                         props.obj_to_primitive()['minisched_object.data'])

    def test_invalid_enum_value_is_rejected(self):
        for name, value in (('hw_architecture', 'z80'), ('img_hv_type', 'vmware-esx'),
                            ('hw_vm_mode', 'bogus'), ('hw_disk_bus', 'nvme'),
                            ('hw_video_model', 'svga'), ('os_type', 'beos'),
                            ('img_config_drive', 'always'),
                            ('img_hv_requested_version', 'newest')):
            with self.assertRaises(ValueError, msg=name):
                _props(**{name: value})

    def test_every_nova_architecture_and_hypervisor_type_is_accepted(self):
        props = _props(hw_architecture='SPARC64', img_hv_type='bhyve')
        self.assertEqual(('sparc64', 'bhyve'), (props.hw_architecture, props.img_hv_type))

    def test_enum_properties_take_novas_aliases(self):
        props = _props(os_type='Windows', hw_vif_model='VirtualE1000',
                       hw_scsi_model='lsiLogicSAS')
        self.assertEqual(('windows', 'e1000', 'lsisas1068'),
                         (props.os_type, props.hw_vif_model, props.hw_scsi_model))

    def test_vmware_adapter_type_sets_the_disk_bus_and_scsi_model(self):
        self.assertEqual(('ide', None), (_props(vmware_adaptertype='ide').hw_disk_bus,
                                         _props(vmware_adaptertype='ide').get('hw_scsi_model')))
        props = _props(vmware_adaptertype='paravirtual')
        self.assertEqual(('scsi', 'vmpvscsi'), (props.hw_disk_bus, props.hw_scsi_model))
        # The current name wins over what the legacy one implies.
        self.assertEqual('virtio', _props(hw_disk_bus='virtio',
                                          vmware_adaptertype='ide').hw_disk_bus)

    def test_legacy_names_of_nova_map_to_current_ones(self):
        props = _props(owner_id='p1', xenapi_device_id='2', mappings=[{'virtual': 'root'}],
                       bdm_v2='true', root_device_name='/dev/vda')
        self.assertEqual(('p1', 2, [{'virtual': 'root'}], True, '/dev/vda'),
                         (props.img_owner_id, props.hw_device_id, props.img_mappings,
                          props.img_bdm_v2, props.img_root_device_name))

    def test_get_returns_default_for_unset_and_rejects_unknown_names(self):
        props = _props(hw_disk_bus='scsi')
        self.assertEqual('scsi', props.get('hw_disk_bus'))
        self.assertEqual('ide', props.get('hw_scsi_model', 'ide'))
        with self.assertRaises(AttributeError):
            props.get('no_such_property')


class TestImageMeta(test_base.TestCase):

    def test_from_dict_sets_known_non_null_attributes(self):
        image = objects.ImageMeta.from_dict({'id': uuids.image, 'name': 'cirros',
                                             'min_ram': '128', 'size': None, 'bogus': 1,
                                             'properties': {'architecture': 'i386'}})
        self.assertEqual((uuids.image, 'cirros', 128), (image.id, image.name, image.min_ram))
        self.assertNotIn('size', image)
        self.assertEqual('i686', image.properties.hw_architecture)

    def test_missing_or_null_properties_give_empty_props(self):
        for value in ({}, {'properties': None}, None):
            image = objects.ImageMeta.from_dict(value)
            self.assertEqual({}, image.properties.obj_to_primitive()['minisched_object.data'])

    def test_unset_properties_lazy_load_as_empty(self):
        image = objects.ImageMeta(name='x')
        self.assertIsNone(image.properties.get('hw_architecture'))

    def test_to_dict_has_the_set_properties_as_plain_values(self):
        props = _props(hw_cpu_cores='2', architecture='amd64',
                       **{'trait:CUSTOM_A': 'required'})
        self.assertEqual({'hw_cpu_cores': 2, 'hw_architecture': 'x86_64',
                          'traits_required': ['CUSTOM_A']}, props.to_dict())


class TestImageInSystemMetadata(test_base.TestCase):
    """The ``image_`` keys an instance's system_metadata keeps of its image (Nova's)."""

    def test_properties_are_kept_as_prefixed_strings_and_image_attributes_as_given(self):
        image = {'id': uuids.image, 'name': 'cirros', 'min_ram': 256, 'min_disk': None,
                 'container_format': 'bare',
                 'properties': {'hw_cpu_cores': 2, 'os_distro': 'ubuntu', 'mappings': 'x',
                                'img_block_device_mapping': 'y'}}
        self.assertEqual({'image_hw_cpu_cores': '2', 'image_os_distro': 'ubuntu',
                          'image_min_ram': 256, 'image_container_format': 'bare'},
                         image_meta.get_system_metadata_from_image(image))

    def test_min_disk_is_at_least_the_flavor_root_disk_or_it_for_vhd(self):
        flavor = fakes.fake_flavor(root_gb=10)
        for image, min_disk in (({}, 10), ({'min_disk': 20}, 20), ({'min_disk': 5}, 10),
                                ({'min_disk': 20, 'disk_format': 'vhd'}, 10)):
            self.assertEqual(min_disk, image_meta.get_system_metadata_from_image(
                image, flavor)['image_min_disk'], image)

    def test_long_values_are_cut_to_255_bytes_between_characters(self):
        value = 'ab' + '\u00e9' * 200  # 402 bytes; byte 255 is the middle of an é
        kept = image_meta.get_system_metadata_from_image(
            {'properties': {'os_distro': value}})['image_os_distro']
        self.assertEqual('ab' + '\u00e9' * 126, kept)
        self.assertEqual(254, len(kept.encode('utf-8')))

    def test_read_back_drops_the_prefix_and_skips_none_and_big_keys(self):
        self.assertEqual(
            {'min_ram': '256', 'properties': {'os_distro': 'ubuntu', 'clean_attempts': '1'}},
            image_meta.get_image_from_system_metadata({
                'image_os_distro': 'ubuntu', 'image_min_ram': '256', 'image_hw_rng_model': None,
                'image_mappings': '[]', 'clean_attempts': '1'}))

    def test_from_instance_reads_system_metadata_and_takes_the_id_from_image_ref(self):
        instance = objects.Instance(image_ref=uuids.image, system_metadata={
            'image_os_distro': 'ubuntu', 'image_architecture': 'amd64',
            'image_min_disk': '10', 'clean_attempts': '1'})
        image = instance.image_meta
        self.assertEqual((uuids.image, 10), (image.id, image.min_disk))
        self.assertEqual({'os_distro': 'ubuntu', 'hw_architecture': 'x86_64'},
                         image.properties.to_dict())

    def test_from_instance_without_system_metadata_or_image_ref(self):
        image = objects.Instance(uuid=uuids.instance).image_meta
        self.assertNotIn('id', image)
        self.assertEqual({}, image.properties.to_dict())


class TestNUMAImageProperties(test_base.TestCase):

    def test_per_node_cpus_and_memory_up_to_the_first_gap(self):
        props = _props(**{'hw_numa_cpus.0': '0-1', 'hw_numa_cpus.1': '2,^2,3',
                          'hw_numa_cpus.3': '7', 'hw_numa_mem.0': '512',
                          'hw_numa_mem.1': '1024'})
        self.assertEqual([{0, 1}, {3}], props.hw_numa_cpus)
        self.assertEqual([512, 1024], props.hw_numa_mem)

    def test_plain_per_node_names_are_not_read(self):
        props = _props(hw_numa_cpus='0-1', hw_numa_mem='512')
        self.assertNotIn('hw_numa_cpus', props)
        self.assertNotIn('hw_numa_mem', props)

    def test_policies_are_checked_enums(self):
        props = _props(hw_cpu_policy='mixed', hw_cpu_thread_policy='isolate',
                       hw_pci_numa_affinity_policy='socket', hw_maxphysaddr_mode='emulate',
                       hw_maxphysaddr_bits='42', hw_locked_memory='yes')
        self.assertEqual(('mixed', 'isolate', 'socket', 'emulate', 42, True),
                         (props.hw_cpu_policy, props.hw_cpu_thread_policy,
                          props.hw_pci_numa_affinity_policy, props.hw_maxphysaddr_mode,
                          props.hw_maxphysaddr_bits, props.hw_locked_memory))
        for name in ('hw_cpu_policy', 'hw_cpu_thread_policy', 'hw_pci_numa_affinity_policy',
                     'hw_maxphysaddr_mode'):
            self.assertRaises(ValueError, _props, **{name: 'bogus'})

    def test_backports_drop_or_refuse_what_older_versions_lack(self):
        props = _props(hw_maxphysaddr_mode='emulate', hw_maxphysaddr_bits='42',
                       hw_locked_memory='true', hw_pci_numa_affinity_policy='required',
                       hw_cpu_realtime_mask='^0', hw_cpu_thread_policy='prefer')
        for version, gone, kept in (('1.35', 'hw_maxphysaddr_bits', 'hw_locked_memory'),
                                    ('1.32', 'hw_locked_memory', 'hw_pci_numa_affinity_policy'),
                                    ('1.24', 'hw_pci_numa_affinity_policy',
                                     'hw_cpu_realtime_mask'),
                                    ('1.9', 'hw_cpu_realtime_mask', 'hw_cpu_thread_policy'),
                                    ('1.8', 'hw_cpu_thread_policy', None)):
            data = props.obj_to_primitive(target_version=version)['minisched_object.data']
            self.assertNotIn(gone, data, version)
            if kept:
                self.assertIn(kept, data, version)
        for name, value, version in (('hw_cpu_policy', 'mixed', '1.25'),
                                     ('hw_pci_numa_affinity_policy', 'socket', '1.27'),
                                     ('hw_mem_encryption_model', 'intel-tdx', '1.43'),
                                     ('hw_mem_encryption_model', 'amd-sev-snp', '1.42'),
                                     ('hw_vif_model', 'igb', '1.38'),
                                     ('hw_video_model', 'bochs', '1.29'),
                                     ('hw_video_model', 'virtio', '1.21'),
                                     ('hw_disk_bus', 'lxc', '1.5')):
            self.assertRaises(exception.ObjectActionError,
                              _props(**{name: value}).obj_to_primitive, target_version=version)
            _props(**{name: value}).obj_to_primitive(  # the version that has the value
                target_version='1.%d' % (int(version.split('.')[1]) + 1))

    def test_backports_drop_the_properties_of_later_versions(self):
        props = _props(hw_mem_encryption_model='amd-sev', hw_usb_model='qemu-xhci',
                       hw_sound_model='ich9', hw_firmware_stateless='true',
                       hw_tpm_model='tpm-crb', hw_pointer_model='usbtablet',
                       os_admin_user='root', hw_vif_multiqueue_enabled='yes')
        for version, gone, kept in (('1.41', 'hw_mem_encryption_model', 'hw_usb_model'),
                                    ('1.40', 'hw_usb_model', 'hw_sound_model'),
                                    ('1.39', 'hw_sound_model', 'hw_firmware_stateless'),
                                    ('1.37', 'hw_firmware_stateless', 'hw_tpm_model'),
                                    ('1.26', 'hw_tpm_model', 'hw_pointer_model'),
                                    ('1.13', 'hw_pointer_model', 'os_admin_user'),
                                    ('1.4', 'os_admin_user', 'hw_vif_multiqueue_enabled'),
                                    ('1.3', 'hw_vif_multiqueue_enabled', None)):
            data = props.obj_to_primitive(target_version=version)['minisched_object.data']
            self.assertNotIn(gone, data, version)
            if kept:
                self.assertIn(kept, data, version)

    def test_disabled_watchdog_is_left_out_before_1_16(self):
        props = _props(hw_watchdog_action='disabled')
        self.assertNotIn('hw_watchdog_action', props.obj_to_primitive(
            target_version='1.15')['minisched_object.data'])
        self.assertEqual('disabled', props.obj_to_primitive(
            target_version='1.16')['minisched_object.data']['hw_watchdog_action'])
