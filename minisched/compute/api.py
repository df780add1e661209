"""The compute API: what an API service does for create, list, show and delete.

minisched has no REST API; ``minisched-manage server`` (and tests) call this module, which
does what nova-api does before and after the conductor: build requests, request specs and
instance mappings in the API database, then a cast to the conductor; reads and deletes go to
the instance's cell through its mapping.
"""
import datetime
import logging
import threading

import oslo_messaging as messaging
from oslo_utils import uuidutils

from minisched.api.validation import images as images_validation
from minisched.api.validation import servers as servers_validation
from minisched.compute import create_bounds
from minisched.compute import rpcapi as compute_rpcapi
from minisched.compute import validation as compute_validation
from minisched.conductor import rpcapi as conductor_rpcapi
from minisched import context as ms_context
from minisched import exception
from minisched.objects import block_device
from minisched.objects import build_request as build_request_obj
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched.objects import instance_group as instance_group_obj
from minisched.objects import instance_mapping as instance_mapping_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import security_group as security_group_obj
from minisched.objects import tag as tag_obj
from minisched.pci import request as pci_request
from minisched.virt import hardware

LOG = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class API:
    """Instance lifecycle for callers with API database access."""

    def __init__(self, conf):
        self.conf = conf
        self.compute_task_api = conductor_rpcapi.ComputeTaskAPI(conf)
        self.compute_rpcapi = compute_rpcapi.ComputeAPI(conf)

    # -- create -------------------------------------------------------------------------

    def create(self, context, flavor, image=None, num_instances=1, availability_zone=None,
               scheduler_hints=None, group=None, display_name=None, metadata=None,
               min_count=None):
        """Ask for ``num_instances`` instances (Nova's ``max_count``; ``min_count``, by
        default the same, is the fewest the caller takes); returns their uuids (builds run
        async).

        Everything is checked before anything is written: the request as Nova's API schema
        checks it (``minisched.api.validation``: name, zone, hints, metadata, counts,
        image), the flavor and image's NUMA and PCI requests, then every value the build
        requests, specs and mappings would hold against its column (``compute.validation``).
        A refusal raises a ValidationError (or another Invalid) naming the field. The count
        is bounded by ``[api] max_instances_per_request`` (TooManyInstances) and by the size
        of the message to the conductor (RequestTooLarge): see ``create_bounds``.
        """
        request = servers_validation.validate_create(
            display_name, availability_zone, scheduler_hints, metadata, num_instances,
            min_count)
        request = request._replace(count=create_bounds.allowed_count(self.conf, request))
        image = dict(images_validation.check_image(image))
        image_meta = image_meta_obj.ImageMeta.from_dict(image)
        numa_topology, pci_requests = self._resource_constraints(flavor, image_meta)
        compute_validation.check_context(context)
        build_requests, specs = [], []
        for index in range(request.count):
            instance = self._new_instance(context, flavor, image, request, index)
            instance.numa_topology = numa_topology.obj_clone() if numa_topology else None
            instance.pci_requests = pci_requests.obj_clone()
            instance.pci_devices = None
            spec = request_spec_obj.RequestSpec(
                context, flavor=flavor, image=image_meta, num_instances=request.count,
                numa_topology=instance.numa_topology, pci_requests=instance.pci_requests,
                project_id=context.project_id, user_id=context.user_id,
                availability_zone=request.availability_zone,
                scheduler_hints=request.scheduler_hints, instance_uuid=instance.uuid,
                ignore_hosts=None, force_hosts=None, force_nodes=None, retry=None,
                limits=None, requested_destination=None, is_bfv=False,
                security_groups=security_group_obj.SecurityGroupList(objects=[]),
                instance_group=(instance_group_obj.InstanceGroup(uuid=group.uuid)
                                if group is not None else None))
            compute_validation.check_instance(instance)
            compute_validation.check_request_spec(spec)
            build_requests.append(build_request_obj.BuildRequest(
                context, instance_uuid=instance.uuid, project_id=instance.project_id,
                instance=instance, tags=tag_obj.TagList(objects=[]),
                block_device_mappings=block_device.BlockDeviceMappingList(objects=[])))
            specs.append(spec)
            if index == 0:
                create_bounds.check_message_size(self.conf, context, build_requests[0], spec,
                                                 request.count)
        # All or nothing (see build_request.create_batch): a create cut by the database
        # leaves no build request no conductor will ever see.
        build_request_obj.create_batch(
            context, build_requests, specs,
            [instance_mapping_obj.InstanceMapping(
                context, instance_uuid=spec.instance_uuid, project_id=context.project_id,
                user_id=context.user_id, cell_mapping=None) for spec in specs],
            group.uuid if group is not None else None)
        self._hand_over(context, build_requests, specs, image)
        return [spec.instance_uuid for spec in specs]

    def _resource_constraints(self, flavor, image_meta):
        """``(InstanceNUMATopology or None, InstancePCIRequests)`` the flavor's extra specs and
        the image's ``hw_*`` properties ask for, as Nova's API computes them before anything
        is written; a contradictory or unknown request raises an Invalid (or NotFound for an
        undefined PCI alias) naming the cause."""
        try:
            numa_topology = hardware.numa_get_constraints(flavor, image_meta)
            policy = hardware.get_pci_numa_policy_constraint(flavor, image_meta)
            pci_requests = pci_request.get_pci_requests_from_flavor(
                flavor, affinity_policy=policy, conf=self.conf)
        except ValueError as exc:  # a malformed extra spec value Nova's API schema refuses
            raise exception.Invalid(reason='flavor %s: %s' % (flavor.name, exc))
        return numa_topology, pci_requests

    def _hand_over(self, context, build_requests, specs, image):
        """Cast the build to the conductor; the broker must take it within
        ``rpc_response_timeout`` (oslo.messaging waits for its confirm).

        With the broker away a cast would wait for it indefinitely (reconnecting under the
        connection's lock, whatever retry it is given), so it runs in a thread of its own and
        the request is withdrawn when that thread has not returned in time: the caller gets
        BuildNotAccepted and nothing is left. A message that still goes out later finds its
        build requests gone and builds nothing.
        """
        failure = []
        done = threading.Event()

        def cast():
            try:
                self.compute_task_api.schedule_and_build_instances(
                    context, build_requests=build_requests, request_specs=specs, image=image,
                    admin_password=None, injected_files=[], requested_networks=None,
                    block_device_mapping=[], tags=[])
            except Exception as exc:
                failure.append(exc)
            finally:
                done.set()

        threading.Thread(target=cast, daemon=True, name='build-cast').start()
        timeout = self.conf.rpc_response_timeout
        if done.wait(timeout) and not failure:
            return
        reason = (failure[0] if failure else
                  'no confirm from the broker within %d s' % timeout)
        if not self._withdraw(context, build_requests):
            LOG.warning('The broker did not take the build of %s (%s), but the conductor has: '
                        'the request stands.',
                        ', '.join(spec.instance_uuid for spec in specs), reason)
            return
        if failure and not isinstance(failure[0], messaging.MessagingException):
            raise failure[0]
        raise exception.BuildNotAccepted(count=len(specs), reason=reason)

    def _withdraw(self, context, build_requests):
        """Take back build requests whose message the broker did not confirm; False when the
        conductor took one meanwhile (the message got through, only its confirm was lost).

        Deleting the build request is what the conductor checks before building (as for a
        user's delete during scheduling), so a message that still arrives later builds
        nothing. One transaction, as the create's (``build_batch_withdraw``): the rows go
        together, or all stay when a conductor took one of them.
        """
        return build_request_obj.withdraw_batch(context, build_requests)

    def _new_instance(self, context, flavor, image, request, index):
        uuid = uuidutils.generate_uuid()
        name = request.name or 'server'
        if request.count > 1:
            name = '%s-%d' % (name, index + 1)
        # The image as it was at boot, for those who cannot ask the image service (the
        # scheduler's ImagePropertiesWeigher reads it back through Instance.image_meta).
        system_metadata = image_meta_obj.get_system_metadata_from_image(image, flavor)
        system_metadata.setdefault('image_base_image_ref', image.get('id'))
        return instance_obj.Instance(
            context, uuid=uuid, project_id=context.project_id, user_id=context.user_id,
            flavor=flavor, memory_mb=flavor.memory_mb, vcpus=flavor.vcpus,
            root_gb=flavor.root_gb, ephemeral_gb=flavor.ephemeral_gb,
            instance_type_id=flavor.id if flavor.obj_attr_is_set('id') else None,
            image_ref=image.get('id'), os_type=(image.get('properties') or {}).get('os_type'),
            vm_state=instance_obj.BUILDING, task_state=instance_obj.SCHEDULING,
            power_state=instance_obj.NOSTATE, availability_zone=request.availability_zone,
            display_name=name, hostname=name, metadata=dict(request.metadata),
            system_metadata=system_metadata)

    # -- read ---------------------------------------------------------------------------

    def _cells(self, context):
        # Cell mappings are read by admin contexts only (they carry the cells' URLs).
        return list(cell_mapping_obj.CellMappingList.get_all(context.elevated())) or [None]

    def get(self, context, instance_uuid):
        """The instance wherever it is: its cell, or still a build request."""
        mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(context,
                                                                            instance_uuid)
        if mapping.cell_mapping is None:
            try:
                return build_request_obj.BuildRequest.get_by_instance_uuid(
                    context, instance_uuid).instance
            except exception.BuildRequestNotFound:
                # Placed meanwhile: the conductor maps the instance before it drops the
                # build request, so the mapping now names the cell (or, without cells,
                # the instance is in the local database).
                mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(
                    context, instance_uuid)
        with ms_context.target_cell(context, mapping.cell_mapping) as cctxt:
            return instance_obj.Instance.get_by_uuid(cctxt, instance_uuid)

    def get_all(self, context, filters=None):
        """Live instances of every cell plus those not scheduled yet, newest first."""
        result = []
        for cell in self._cells(context):
            with ms_context.target_cell(context, cell) as cctxt:
                result.extend(instance_obj.InstanceList.get_by_filters(
                    cctxt, dict(filters or {}, deleted=False)))
        placed = {inst.uuid for inst in result}
        result.extend(req.instance for req in
                      build_request_obj.BuildRequestList.get_all(context)
                      if req.instance_uuid not in placed
                      and _matches(req.instance, filters or {}))
        return sorted(result, key=lambda i: i.created_at or _EPOCH, reverse=True)

    def get_actions(self, context, instance_uuid):
        """``[(action, [events])]`` of an instance, newest action first."""
        cell = self._cell_of(context, instance_uuid)
        with ms_context.target_cell(context, cell) as cctxt:
            actions = instance_action.InstanceActionList.get_by_instance_uuid(cctxt,
                                                                              instance_uuid)
            return [(action, list(instance_action.InstanceActionEventList.get_by_action(
                cctxt, action.id))) for action in actions]

    def get_faults(self, context, instance_uuid):
        cell = self._cell_of(context, instance_uuid)
        with ms_context.target_cell(context, cell) as cctxt:
            return list(instance_fault.InstanceFaultList.get_by_instance_uuids(
                cctxt, [instance_uuid]))

    def _cell_of(self, context, instance_uuid):
        return instance_mapping_obj.InstanceMapping.get_by_instance_uuid(
            context, instance_uuid).cell_mapping

    # -- delete -------------------------------------------------------------------------

    def delete(self, context, instance_uuid):
        """Delete (or soft-delete when ``reclaim_instance_interval`` > 0) an instance."""
        mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(context,
                                                                            instance_uuid)
        if mapping.cell_mapping is None:
            try:
                build_request_obj.BuildRequest.get_by_instance_uuid(
                    context, instance_uuid).destroy()
                LOG.info('Deleted build request of %s before it was scheduled', instance_uuid)
                return
            except exception.BuildRequestNotFound:
                if self._cells(context) != [None]:
                    raise exception.InstanceNotFound(instance_id=instance_uuid)
        with ms_context.target_cell(context, mapping.cell_mapping) as cctxt:
            instance = instance_obj.Instance.get_by_uuid(cctxt, instance_uuid)
            instance_action.InstanceAction.action_start(cctxt, instance_uuid,
                                                        instance_action.DELETE,
                                                        want_result=False)
            if not instance.host:
                # Never reached a compute (ERROR, or buried in cell0): nothing to clean there,
                # but what the scheduler claimed for it in Placement (Nova's local delete).
                instance.destroy()
                self._delete_allocation(cctxt, instance_uuid)
            elif self.conf.reclaim_instance_interval > 0:
                self.compute_rpcapi.soft_delete_instance(cctxt, instance)
            else:
                instance.task_state = instance_obj.DELETING
                instance.save(expected_task_state=[None, instance_obj.DELETING,
                                                   instance_obj.SCHEDULING,
                                                   instance_obj.SPAWNING])
                self.compute_rpcapi.terminate_instance(cctxt, instance, bdms=[])
        mapping.queued_for_delete = True
        mapping.save()


    def _delete_allocation(self, context, instance_uuid):
        if not self.conf.placement.enabled:
            return
        from minisched.scheduler.client import report
        try:
            report.SchedulerReportClient(self.conf).delete_allocation_for_instance(
                context, instance_uuid, force=True)
        except exception.AllocationDeleteFailed as exc:
            LOG.warning('Could not delete the allocations of instance %s: %s', instance_uuid,
                        exc.format_message())


def _matches(instance, filters):
    """Whether an unplaced instance matches ``filters`` as the cells' query would (a value
    or a list of values per field); a field it cannot have yet (``host``) matches nothing."""
    for name, wanted in filters.items():
        if name == 'deleted':
            continue
        if name not in instance.fields or not instance.obj_attr_is_set(name):
            return False
        value = getattr(instance, name)
        if value not in (wanted if isinstance(wanted, (list, tuple, set)) else [wanted]):
            return False
    return True
