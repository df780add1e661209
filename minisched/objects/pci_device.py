"""PCI devices of a compute node and their claim/allocate/free state machine.

The state machine is what keeps a device from being handed out twice: only an
``available`` device can be claimed, and taking an SR-IOV PF blocks its VFs
(``unclaimable`` while claimed, ``unavailable`` once allocated) and taking a VF blocks its
PF. ``parent_device``/``child_devices`` are plain attributes the compute links up (they
would be circular as fields), so they are lost by copies and serialization.

Unlike Nova, minisched has no ``pci_devices`` table: the compute rebuilds its devices from
the hypervisor and the instances' stored ``PciDeviceList`` (see the 0003 migration). Of the
remotable database methods of Nova's objects, ``PciDeviceList.get_by_instance_uuid`` reads
the instance's devices; the others (``save``, ``get_by_*`` of a node's devices) answer
ObjectMethodNotSupported.
"""
import copy
import logging

from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_utils import versionutils

from minisched.db import lazy
from minisched import exception
from minisched.objects import base
from minisched.objects import fields

LOG = logging.getLogger(__name__)
db = lazy.module('minisched.db.main.api')

__all__ = ['PciDevice', 'PciDeviceList', 'compare_pci_device_attributes']

_STATUS = fields.PciDeviceStatus
_TYPE = fields.PciDeviceType

_NO_TABLE = ("minisched keeps no pci_devices table: a compute node's devices live in its "
             'resource tracker')


def _unsupported(objname, method):
    raise exception.ObjectMethodNotSupported(objname=objname, method=method, reason=_NO_TABLE)


#: Extra-info keys that mirror device_spec tags: dropped when the tag disappears.
_SPEC_TAGS_IN_EXTRA_INFO = ('managed', 'live_migratable')


def compare_pci_device_attributes(obj_a, obj_b):
    """Equal when both are PciDevices with the same fields set to the same values,
    bookkeeping timestamps aside."""
    if not isinstance(obj_b, PciDevice):
        return False
    ignored = base.MinischedPersistentObject.fields
    for name in obj_a.obj_fields:
        if name in ignored:
            continue
        is_set = obj_a.obj_attr_is_set(name)
        if is_set != obj_b.obj_attr_is_set(name):
            return False
        if is_set and getattr(obj_a, name) != getattr(obj_b, name):
            return False
    return True


def _raise_if_too_new(target_version, primitive, field, new_values):
    value = primitive.get(field)
    if value in new_values:
        raise exception.ObjectActionError(
            action='obj_make_compatible',
            reason='%s=%s not supported in version %s' % (field, value, target_version))


@base.MinischedObjectRegistry.register
class PciDevice(base.MinischedPersistentObject, base.MinischedObject):
    """One PCI device (a whole device, an SR-IOV PF or VF, or a vDPA device) of a node.

    ``extra_info`` holds what has no field: ``capabilities`` (JSON), ``parent_ifname``,
    ``mac_address``, the ``managed``/``live_migratable`` spec tags.

    Version history (Nova's): 1.2 ``request_id``, 1.3 ``numa_node``, 1.4
    ``parent_addr``, 1.5 statuses ``unclaimable`` and ``unavailable``, 1.6 ``uuid``, 1.7
    ``vdpa`` device type.
    """

    VERSION = '1.7'

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        # None until the compute node record exists.
        'compute_node_id': fields.IntegerField(nullable=True),
        'address': fields.StringField(),
        'vendor_id': fields.StringField(),
        'product_id': fields.StringField(),
        'dev_type': fields.PciDeviceTypeField(),
        'status': fields.PciDeviceStatusField(),
        'dev_id': fields.StringField(nullable=True),
        'label': fields.StringField(nullable=True),
        'instance_uuid': fields.StringField(nullable=True),
        'request_id': fields.StringField(nullable=True),
        'extra_info': fields.DictOfStringsField(default={}),
        'numa_node': fields.IntegerField(nullable=True),
        'parent_addr': fields.StringField(nullable=True),
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.parent_device = None
        self.child_devices = []

    def __repr__(self):
        return 'PciDevice(address=%s, compute_node_id=%s)' % (self.address,
                                                              self.compute_node_id)

    def __eq__(self, other):
        return compare_pci_device_attributes(self, other)

    def __ne__(self, other):
        return not self == other

    # Equality is by value and the objects are mutable, as in Nova: not hashable.
    __hash__ = None

    def obj_make_compatible(self, primitive, target_version):
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 2):
            primitive.pop('request_id', None)
        if target < (1, 4) and 'parent_addr' in primitive:
            # Before 1.4 the parent's address travelled in extra_info.
            if primitive['parent_addr'] is not None:
                primitive.setdefault('extra_info', {})['phys_function'] = \
                    primitive['parent_addr']
            del primitive['parent_addr']
        if target < (1, 5) and 'parent_addr' in primitive:
            # Nova's condition, kept: only reached when parent_addr is still present.
            _raise_if_too_new(target_version, primitive, 'status',
                              (_STATUS.UNCLAIMABLE, _STATUS.UNAVAILABLE))
        if target < (1, 6):
            primitive.pop('uuid', None)
        if target < (1, 7) and 'dev_type' in primitive:
            _raise_if_too_new(target_version, primitive, 'dev_type', (_TYPE.VDPA,))

    def obj_load_attr(self, attr):
        if attr == 'extra_info':
            # Older callers expect a bare object to have an empty extra_info.
            self.obj_set_defaults(attr)
        else:
            super().obj_load_attr(attr)

    @classmethod
    def create(cls, context, dev_dict):
        """A new ``available`` device from the hypervisor's description of it.

        Nothing is stored: the values stay marked as changed.
        """
        device = cls()
        device.obj_set_defaults('extra_info')
        device.update_device(dev_dict)
        device.status = _STATUS.AVAILABLE
        device.uuid = uuidutils.generate_uuid()
        device._context = context
        return device

    @base.remotable_classmethod
    def get_by_dev_addr(cls, context, compute_node_id, dev_addr):
        _unsupported('PciDevice', 'get_by_dev_addr')

    @base.remotable_classmethod
    def get_by_dev_id(cls, context, id):
        _unsupported('PciDevice', 'get_by_dev_id')

    @base.remotable
    def save(self):
        _unsupported('PciDevice', 'save')

    def update_device(self, dev_dict):
        """Take the hypervisor's new description of this device.

        Keys that are fields set the field; any other key goes to ``extra_info`` (as JSON
        unless it is a string). The status, owner, id and extra_info themselves are never
        taken from the hypervisor. ``dev_dict`` is modified, as in Nova.
        """
        for key in ('status', 'instance_uuid', 'id', 'extra_info'):
            dev_dict.pop(key, None)
        # Matching reads parent_addr, so it must be set even for a device without parent.
        dev_dict.setdefault('parent_addr')
        for key, value in dev_dict.items():
            if key in self.fields:
                setattr(self, key, value)
            else:
                # Reassigned (not updated in place) so the change is tracked.
                extra_info = self.extra_info
                extra_info[key] = value if isinstance(value, str) else jsonutils.dumps(value)
                self.extra_info = extra_info
        for tag in _SPEC_TAGS_IN_EXTRA_INFO:
            if tag not in dev_dict and tag in self.extra_info:
                extra_info = self.extra_info
                del extra_info[tag]
                self.extra_info = extra_info

    def is_available(self):
        return self.status == _STATUS.AVAILABLE

    def _is_vf_like(self):
        return self.dev_type in (_TYPE.SRIOV_VF, _TYPE.VDPA)

    def _log_missing_parent(self):
        LOG.debug('Physical function addr: %s parent of VF addr: %s was not found',
                  self.parent_addr, self.address)

    def _check_parent_usable(self, parent_ok):
        parent = self.parent_device
        if parent.status not in parent_ok:
            raise exception.PciDevicePFInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.parent_addr,
                status=self.status, vf_address=self.address, hopestatus=parent_ok)

    def claim(self, instance_uuid):
        """Reserve this available device for ``instance_uuid`` (status ``claimed``).

        A PF needs all its VFs free and makes them ``unclaimable``; a VF needs its PF
        free or already blocked by a sibling, and makes it ``unclaimable``.
        """
        if self.status != _STATUS.AVAILABLE:
            raise exception.PciDeviceInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.address,
                status=self.status, hopestatus=[_STATUS.AVAILABLE])
        if self.dev_type == _TYPE.SRIOV_PF:
            self._claim_children()
        elif self._is_vf_like():
            if self.parent_device:
                self._check_parent_usable(
                    (_STATUS.AVAILABLE, _STATUS.UNCLAIMABLE, _STATUS.UNAVAILABLE))
                if self.parent_device.status == _STATUS.AVAILABLE:
                    self.parent_device.status = _STATUS.UNCLAIMABLE
            else:
                self._log_missing_parent()
        self.status = _STATUS.CLAIMED
        self.instance_uuid = instance_uuid

    def _claim_children(self):
        busy = [vf for vf in self.child_devices if not vf.is_available()]
        busy_statuses = {vf.status for vf in busy}
        if busy_statuses - {_STATUS.UNCLAIMABLE, _STATUS.UNAVAILABLE}:
            raise exception.PciDeviceVFInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.address)
        if busy:
            # Children merely blocked while their parent is free is an inconsistency
            # (Nova bug 1969496): tolerated, as Nova does, with a warning.
            LOG.warning('Some child device of parent %s is in an inconsistent state: %s',
                        self.address,
                        ','.join('%s - %s' % (vf.address, vf.status) for vf in busy))
        for vf in self.child_devices:
            vf.status = _STATUS.UNCLAIMABLE

    def allocate(self, instance):
        """Give this device (available, or claimed by ``instance``) to ``instance``.

        A PF makes its VFs ``unavailable``, a VF its PF. A copy of the device is
        appended to ``instance``'s ``pci_devices`` (object or dict).
        """
        ok_statuses = (_STATUS.AVAILABLE, _STATUS.CLAIMED)
        if self.status not in ok_statuses:
            raise exception.PciDeviceInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.address,
                status=self.status, hopestatus=ok_statuses)
        if self.status == _STATUS.CLAIMED and self.instance_uuid != instance['uuid']:
            raise exception.PciDeviceInvalidOwner(
                compute_node_id=self.compute_node_id, address=self.address,
                owner=self.instance_uuid, hopeowner=instance['uuid'])
        if self.dev_type == _TYPE.SRIOV_PF:
            if any(vf.status not in (_STATUS.AVAILABLE, _STATUS.UNCLAIMABLE)
                   for vf in self.child_devices):
                raise exception.PciDeviceVFInvalidStatus(
                    compute_node_id=self.compute_node_id, address=self.address)
            for vf in self.child_devices:
                vf.status = _STATUS.UNAVAILABLE
        elif self._is_vf_like():
            if self.parent_device:
                self._check_parent_usable(
                    (_STATUS.AVAILABLE, _STATUS.UNCLAIMABLE, _STATUS.UNAVAILABLE))
                self.parent_device.status = _STATUS.UNAVAILABLE
            else:
                self._log_missing_parent()
        self.status = _STATUS.ALLOCATED
        self.instance_uuid = instance['uuid']
        if isinstance(instance, dict):
            instance.setdefault('pci_devices', []).append(copy.copy(self))
        else:
            instance.pci_devices.objects.append(copy.copy(self))

    def remove(self):
        """Mark an unused device ``removed`` (gone from the hypervisor)."""
        expected = [_STATUS.AVAILABLE, _STATUS.UNAVAILABLE, _STATUS.UNCLAIMABLE]
        if self.status not in expected:
            raise exception.PciDeviceInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.address,
                status=self.status, hopestatus=expected)
        # An owner despite a free-looking status: refuse all the same.
        if 'instance_uuid' in self and self.instance_uuid is not None:
            raise exception.PciDeviceInvalidOwner(
                compute_node_id=self.compute_node_id, address=self.address,
                owner=self.instance_uuid, hopeowner=None)
        self.status = _STATUS.REMOVED
        self.instance_uuid = None
        self.request_id = None

    def free(self, instance=None):
        """Release a claimed or allocated device; return every device that became free.

        Freeing a PF frees its VFs; freeing a VF frees its PF when no sibling is still
        in use. The returned devices are the ones to put back into the pools.
        """
        ok_statuses = (_STATUS.ALLOCATED, _STATUS.CLAIMED)
        if self.status not in ok_statuses:
            raise exception.PciDeviceInvalidStatus(
                compute_node_id=self.compute_node_id, address=self.address,
                status=self.status, hopestatus=ok_statuses)
        if instance and self.instance_uuid != instance['uuid']:
            raise exception.PciDeviceInvalidOwner(
                compute_node_id=self.compute_node_id, address=self.address,
                owner=self.instance_uuid, hopeowner=instance['uuid'])
        freed = []
        if self.dev_type == _TYPE.SRIOV_PF:
            for vf in self.child_devices:
                vf.status = _STATUS.AVAILABLE
            freed.extend(self.child_devices)
        if self._is_vf_like():
            parent = self.parent_device
            if not parent:
                self._log_missing_parent()
            elif all(vf.is_available() for vf in parent.child_devices if vf.id != self.id):
                parent.status = _STATUS.AVAILABLE
                freed.append(parent)
        was_allocated = self.status == _STATUS.ALLOCATED
        self.status = _STATUS.AVAILABLE
        freed.append(self)
        self.instance_uuid = None
        self.request_id = None
        if was_allocated and instance:
            self._drop_from_instance(instance)
        return freed

    def _drop_from_instance(self, instance):
        listed = next(dev for dev in instance['pci_devices'] if dev.id == self.id)
        if isinstance(instance, dict):
            instance['pci_devices'].remove(listed)
        else:
            instance.pci_devices.objects.remove(listed)

    def _capabilities(self):
        return jsonutils.loads(self.extra_info.get('capabilities', '{}'))

    @property
    def card_serial_number(self):
        return self._capabilities().get('vpd', {}).get('card_serial_number')

    @property
    def sriov_cap(self):
        return self._capabilities().get('sriov', {})

    @property
    def mac_address(self):
        """The PF's MAC address, or None (not a PF, or not reported)."""
        return self.extra_info.get('mac_address')

    @property
    def network_caps(self):
        return self._capabilities().get('network', [])


@base.MinischedObjectRegistry.register
class PciDeviceList(base.ObjectListBase, base.MinischedObject):
    """Version history (Nova's): 1.1-1.2 newer PciDevice, 1.3 ``get_by_parent_address``."""

    VERSION = '1.3'

    fields = {'objects': fields.ListOfObjectsField('PciDevice')}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if 'objects' not in kwargs:
            self.objects = []
            self.obj_reset_changes()

    def __repr__(self):
        return 'PciDeviceList(objects=%s)' % [repr(obj) for obj in self.objects]

    @base.remotable_classmethod
    def get_by_compute_node(cls, context, node_id):
        _unsupported('PciDeviceList', 'get_by_compute_node')

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, uuid):
        """The devices allocated to the instance (none when it does not exist)."""
        try:
            raw = db.instance_get_by_uuid(context, uuid)['pci_devices']
        except exception.InstanceNotFound:
            raw = None
        if not raw:
            return cls(context, objects=[])
        return cls.obj_from_primitive(jsonutils.loads(raw), context=context)

    @base.remotable_classmethod
    def get_by_parent_address(cls, context, node_id, parent_addr):
        _unsupported('PciDeviceList', 'get_by_parent_address')
