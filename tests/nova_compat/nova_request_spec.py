"""Prints, as JSON, the primitive of a RequestSpec built by Nova 34's own code.

``python -m tests.nova_compat.nova_request_spec`` (run by
:mod:`tests.nova_compat.test_request_spec_wire` in a process of its own: Nova registers its
objects and options there, minisched in the test's process). The spec is what Nova's API
builds for a boot (``RequestSpec.from_components``) with a NUMA topology from the flavor, a
PCI request, a server group, image properties of every kind, security groups, a port's
resource group, request level parameters, requested networks and a requested destination.
"""
import sys
import warnings

#: Values of the request, shared with the test that reads it back.
INSTANCE_UUID = '7a0d6a8e-59a4-4bd8-9a57-1b3f1b3f6a01'
GROUP_UUID = '2f0b8a52-8d6e-4b7e-9b0b-5d7f9a6f2c02'
PCI_REQUEST_UUID = 'c3d1b1a4-7a63-4a3e-8f7e-2b7b2d6c5e03'
PORT_UUID = '9e4c6a1f-4b1e-4c5d-9a3e-6f2d1c0b7a04'
SECRET_UUID = 'b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d05'
IMAGE_PROPERTIES = {
    'hw_architecture': 'x86_64', 'img_hv_type': 'kvm', 'hw_vm_mode': 'hvm',
    'img_hv_requested_version': '>=6.0', 'hw_disk_bus': 'virtio', 'hw_cdrom_bus': 'sata',
    'hw_vif_model': 'virtio', 'hw_video_model': 'bochs', 'hw_scsi_model': 'virtio-scsi',
    'hw_watchdog_action': 'reset', 'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35',
    'hw_mem_encryption_model': 'amd-sev-snp', 'hw_tpm_model': 'tpm-crb',
    'hw_tpm_version': '2.0', 'hw_input_bus': 'usb', 'hw_pointer_model': 'usbtablet',
    'hw_sound_model': 'ich9', 'hw_usb_model': 'qemu-xhci', 'hw_redirected_usb_ports': '2',
    'hw_viommu_model': 'auto', 'hw_rescue_device': 'cdrom', 'hw_rng_model': 'virtio',
    'hw_ephemeral_encryption': 'true', 'hw_ephemeral_encryption_format': 'luks',
    'hw_ephemeral_encryption_secret_uuid': SECRET_UUID, 'img_config_drive': 'mandatory',
    'img_signature_hash_method': 'SHA-256', 'img_signature_key_type': 'RSA-PSS',
    'os_type': 'linux', 'os_distro': 'ubuntu', 'os_secure_boot': 'required',
    'hw_pci_numa_affinity_policy': 'preferred', 'hw_maxphysaddr_mode': 'emulate',
    'hw_maxphysaddr_bits': '42', 'trait:CUSTOM_IMAGE': 'required',
    'img_block_device_mapping': [{'boot_index': '0', 'source_type': 'image'}],
}


def build():
    from nova import context
    from nova import objects
    from nova.virt import hardware

    objects.register_all()
    ctxt = context.RequestContext('user1', 'project1', is_admin=False)
    flavor = objects.Flavor(
        id=7, flavorid='numa.2', name='numa.2', memory_mb=2048, vcpus=4, root_gb=10,
        ephemeral_gb=0, swap=0, rxtx_factor=1.0, vcpu_weight=0, is_public=True,
        disabled=False, description=None,
        extra_specs={'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated',
                     'hw:mem_page_size': 'large'})
    image = {'id': 'a8f51b2e-6b42-4a4e-8f0a-8c3b7e6d9f06', 'name': 'ubuntu',
             'min_ram': 256, 'min_disk': 5, 'disk_format': 'qcow2',
             'container_format': 'bare', 'properties': IMAGE_PROPERTIES}
    image_meta = objects.ImageMeta.from_dict(image)
    numa_topology = hardware.numa_get_constraints(flavor, image_meta)
    pci_requests = objects.InstancePCIRequests(
        instance_uuid=INSTANCE_UUID, requests=[objects.InstancePCIRequest(
            count=1, spec=[{'vendor_id': '8086', 'product_id': '1520'}], alias_name='nic1',
            request_id=PCI_REQUEST_UUID, numa_policy='preferred')])
    group = objects.InstanceGroup(uuid=GROUP_UUID, name='web', policy='anti-affinity',
                                  rules={'max_server_per_host': 1}, members=[INSTANCE_UUID],
                                  hosts=[], project_id='project1', user_id='user1')
    port_group = objects.RequestGroup(
        requester_id=PORT_UUID, resources={'NET_BW_EGR_KILOBIT_PER_SEC': 1000},
        required_traits={'CUSTOM_PHYSNET_PUBLIC'})
    # As Nova's API fills it (the list's constructor drops any objects it is given).
    security_groups = objects.SecurityGroupList()
    security_groups.objects.extend([objects.SecurityGroup(name='default'),
                                    objects.SecurityGroup(name='web')])
    spec = objects.RequestSpec.from_components(
        ctxt, INSTANCE_UUID, image, flavor, numa_topology, pci_requests,
        {'scheduler_hints': {'group': GROUP_UUID, 'same_host': ['a', 'b']},
         'requested_destination': objects.Destination(
             host='compute1', node='compute1', aggregates=['agg1,agg2'],
             forbidden_aggregates={'agg3'}, allow_cross_cell_move=False)},
        group, 'az1',
        security_groups=security_groups,
        port_resource_requests=[port_group],
        request_level_params=objects.RequestLevelParams(root_required={'CUSTOM_ROOT'},
                                                        same_subtree=[[PORT_UUID]]))
    spec.requested_networks = objects.NetworkRequestList(objects=[
        objects.NetworkRequest(network_id='net1', address='10.0.0.5', tag='nic0'),
        objects.NetworkRequest(port_id=PORT_UUID, pci_request_id=PCI_REQUEST_UUID)])
    spec.network_metadata = objects.NetworkMetadata(physnets={'public'}, tunneled=True)
    spec.is_bfv = False
    return spec


def main():
    warnings.simplefilter('ignore')
    from oslo_serialization import jsonutils
    sys.stdout.write(jsonutils.dumps(build().obj_to_primitive()))


if __name__ == '__main__':
    main()
