"""Nova 34 builds an Instance and a BuildRequest as its API and compute fill them:
``python -m tests.nova_compat.nova_instance`` prints their primitives as JSON, or, given a
file of primitives, checks that Nova deserializes each and prints them again.

Run in a process of its own (Nova registers its objects and options process-wide). Every
field of Nova's Instance 2.8 is set, with the child objects a Nova client sends: info
cache, security groups, key pairs, tags, trusted certificates, device metadata, CPU model,
migration context, resources, flavors, fault, block device mappings.
"""
import datetime
import json
import sys
import warnings

UUID = '6e0b9f5a-1c2d-4e3f-8a9b-0c1d2e3f4a5b'
OTHER = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9'


def _flavor(objects, flavorid):
    return objects.Flavor(id=7, flavorid=flavorid, name='m1.' + flavorid, memory_mb=512,
                          vcpus=2, root_gb=1, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                          vcpu_weight=0, disabled=False, is_public=True,
                          extra_specs={'hw:cpu_policy': 'dedicated'}, description=None)


def build():
    from nova.network import model as network_model
    from nova import objects
    from nova.objects import fields
    objects.register_all()
    when = datetime.datetime(2026, 11, 28, 10, 0, 0, tzinfo=datetime.timezone.utc)
    vif = network_model.VIF(id=OTHER, address='fa:16:3e:00:00:01',
                            network=network_model.Network(id=OTHER, label='private'))
    topology = objects.InstanceNUMATopology(cells=[objects.InstanceNUMACell(
        id=0, cpuset=set(), pcpuset={0, 1}, memory=512, cpu_policy='dedicated',
        cpu_pinning={0: 2, 1: 3})], instance_uuid=UUID)
    pci = objects.InstancePCIRequests(instance_uuid=UUID, requests=[
        objects.InstancePCIRequest(count=1, spec=[{'vendor_id': '8086'}],
                                   alias_name='nic', request_id=OTHER)])
    instance = objects.Instance(
        id=42, uuid=UUID, user_id='user1', project_id='project1', image_ref=OTHER,
        kernel_id='k1', ramdisk_id='r1', hostname='vm1', launch_index=0, key_name='key1',
        key_data='ssh-ed25519 AAAA', power_state=1, vm_state='active', task_state=None,
        services=objects.ServiceList(objects=[objects.Service(id=1, host='host1',
                                                               binary='nova-compute')]),
        memory_mb=512, vcpus=2, root_gb=1, ephemeral_gb=0, ephemeral_key_uuid=None,
        host='host1', node='node1', compute_id=3, instance_type_id=7,
        user_data='I2Nsb3VkLWNvbmZpZw==', reservation_id='r-abc', launched_at=when,
        terminated_at=None, availability_zone='az1', display_name='vm1',
        display_description='a server', launched_on='host1', locked=True,
        locked_by='owner', os_type='linux', architecture='x86_64', vm_mode='hvm',
        root_device_name='/dev/vda', default_ephemeral_device=None,
        default_swap_device=None, config_drive='True', access_ip_v4='192.0.2.10',
        access_ip_v6='2001:db8::10', auto_disk_config=True, progress=100,
        shutdown_terminate=False, disable_terminate=True, cell_name=None,
        metadata={'role': 'web'}, system_metadata={'image_os_distro': 'ubuntu'},
        info_cache=objects.InstanceInfoCache(
            instance_uuid=UUID, network_info=network_model.NetworkInfo([vif])),
        security_groups=objects.SecurityGroupList(objects=[objects.SecurityGroup(
            name='default', uuid=OTHER)]),
        fault=objects.InstanceFault(id=5, instance_uuid=UUID, code=500, message='boom',
                                    details='', host='host1'),
        cleaned=False, pci_devices=objects.PciDeviceList(objects=[]),
        numa_topology=topology, pci_requests=pci,
        device_metadata=objects.InstanceDeviceMetadata(devices=[
            objects.NetworkInterfaceMetadata(
                bus=objects.PCIDeviceBus(address='0000:00:03.0'), tags=['nic'],
                mac='fa:16:3e:00:00:01', vlan=100, vf_trusted=True),
            objects.DiskMetadata(bus=objects.SCSIDeviceBus(address='0:0:0:1'),
                                 tags=['db'], serial='disk1', path='/dev/sdb')]),
        tags=objects.TagList(objects=[objects.Tag(resource_id=UUID, tag='blue')]),
        flavor=_flavor(objects, 'small'), old_flavor=_flavor(objects, 'tiny'),
        new_flavor=None,
        vcpu_model=objects.VirtCPUModel(
            arch='x86_64', vendor='Intel', model='Skylake', mode='custom', match='exact',
            topology=objects.VirtCPUTopology(sockets=1, cores=2, threads=1),
            features=[objects.VirtCPUFeature(name='vmx', policy='require')]),
        ec2_ids=objects.EC2Ids(instance_id='i-0000002a', ami_id=None, kernel_id=None,
                               ramdisk_id=None),
        migration_context=objects.MigrationContext(
            instance_uuid=UUID, migration_id=9, new_numa_topology=None,
            old_numa_topology=topology, new_pci_devices=None, old_pci_devices=None,
            new_pci_requests=None, old_pci_requests=pci, new_resources=None,
            old_resources=None),
        keypairs=objects.KeyPairList(objects=[objects.KeyPair(
            id=1, name='key1', user_id='user1', fingerprint='aa:bb', public_key='ssh-ed25519',
            type='ssh')]),
        trusted_certs=objects.TrustedCerts(ids=['cert1', 'cert2']), hidden=False,
        resources=objects.ResourceList(objects=[objects.Resource(
            provider_uuid=OTHER, resource_class='CUSTOM_PMEM_NAMESPACE_4GB',
            identifier='ns_0', metadata=objects.LibvirtVPMEMDevice(
                label='4GB', name='ns_0', devpath='/dev/dax0.0', size=4096, align=2048))]),
        created_at=when, updated_at=when, deleted_at=None, deleted=False)
    bdms = objects.BlockDeviceMappingList(objects=[objects.BlockDeviceMapping(
        uuid=OTHER, instance_uuid=UUID, source_type='image', destination_type='local',
        device_type='disk', boot_index=0, image_id=OTHER, delete_on_termination=True,
        no_device=False, tag='root', volume_type=None, encrypted=False,
        encryption_format=fields.BlockDeviceEncryptionFormatType.LUKS)])
    request = objects.BuildRequest(instance_uuid=UUID, project_id='project1',
                                   instance=instance, block_device_mappings=bdms,
                                   tags=objects.TagList(objects=[objects.Tag(
                                       resource_id=UUID, tag='blue')]))
    return {'Instance': instance.obj_to_primitive(),
            'BuildRequest': request.obj_to_primitive()}


def load(primitives):
    """Nova's objects from the primitives, as primitives again."""
    from nova import objects
    objects.register_all()
    return {name: objects.base.NovaObject.obj_from_primitive(prim).obj_to_primitive()
            for name, prim in primitives.items()}


if __name__ == '__main__':
    warnings.simplefilter('ignore')
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            result = load(json.load(f))
    else:
        result = build()
    json.dump(result, sys.stdout, sort_keys=True)
