"""Host mappings: which cell holds a compute host's records (API database)."""
from minisched.db.api import api as api_db
from minisched.objects import base
from minisched.objects import cell_mapping
from minisched.objects import fields


@base.MinischedObjectRegistry.register
class HostMapping(base.MinischedTimestampObject, base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'host': fields.StringField(),
        'cell_mapping': fields.ObjectField('CellMapping'),
    }

    @staticmethod
    def _from_db_object(context, mapping, db_mapping):
        for name in ('id', 'host', 'created_at', 'updated_at'):
            setattr(mapping, name, db_mapping.get(name))
        mapping.cell_mapping = cell_mapping.CellMapping._from_db_object(
            context, cell_mapping.CellMapping(), db_mapping['cell_mapping'])
        mapping._context = context
        mapping.obj_reset_changes()
        return mapping

    @base.remotable_classmethod
    def get_by_host(cls, context, host):
        return cls._from_db_object(context, cls(), api_db.host_mapping_get_by_host(context, host))

    @base.remotable
    def create(self):
        db_mapping = api_db.host_mapping_create(self._context, self.host, self.cell_mapping.id)
        self._from_db_object(self._context, self, db_mapping)

    @base.remotable
    def destroy(self):
        api_db.host_mapping_destroy(self._context, self.host)


@base.MinischedObjectRegistry.register
class HostMappingList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('HostMapping')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), HostMapping,
                                  api_db.host_mapping_get_all(context))

    @base.remotable_classmethod
    def get_by_cell_id(cls, context, cell_id):
        return base.obj_make_list(context, cls(context), HostMapping,
                                  api_db.host_mapping_get_all(context, cell_id=cell_id))


def _check_and_create_host_mappings(ctxt, cell_mapping, compute_nodes, status_fn):
    """Map each node's host to ``cell_mapping``; mark the node mapped. Returns new mappings."""
    from minisched import exception
    added = []
    for node in compute_nodes:
        status_fn("Checking host mapping for compute host '%s': %s" % (node.host, node.uuid))
        try:
            HostMapping.get_by_host(ctxt, node.host)
        except exception.HostMappingNotFound:
            status_fn("Creating host mapping for compute host '%s': %s" % (node.host,
                                                                          node.uuid))
            mapping = HostMapping(ctxt, host=node.host, cell_mapping=cell_mapping)
            try:
                mapping.create()
            except exception.HostMappingExists:
                # A concurrent discovery mapped it first; that is the outcome we wanted.
                status_fn("Host '%s' was mapped concurrently" % node.host)
            else:
                added.append(mapping)
            node.mapped = 1
            node.save()
    return added


def _check_and_create_service_host_mappings(ctxt, cell_mapping, services, status_fn):
    from minisched import exception
    added = []
    for service in services:
        try:
            HostMapping.get_by_host(ctxt, service.host)
        except exception.HostMappingNotFound:
            status_fn("Creating host mapping for service '%s'" % service.host)
            mapping = HostMapping(ctxt, host=service.host, cell_mapping=cell_mapping)
            try:
                mapping.create()
            except exception.HostMappingExists:
                continue
            added.append(mapping)
    return added


def discover_hosts(ctxt, cell_uuid=None, status_fn=None, by_service=False):
    """Map unmapped compute hosts of every cell (or of ``cell_uuid``) to their cell.

    Nova's ``nova.objects.host_mapping.discover_hosts``: idempotent, and safe when two run at
    once (a duplicate mapping counts as done). Returns the new HostMappings.
    """
    from minisched import context as ms_context
    from minisched.objects import compute_node as compute_node_obj
    from minisched.objects import service as service_obj
    status_fn = status_fn or (lambda msg: None)
    if cell_uuid:
        cells = [cell_mapping.CellMapping.get_by_uuid(ctxt, cell_uuid)]
    else:
        cells = cell_mapping.CellMappingList.get_all(ctxt)
        status_fn('Found %s cell mappings.' % len(cells))
    added = []
    for cm in cells:
        if cm.is_cell0():
            status_fn('Skipping cell0 since it does not contain hosts.')
            continue
        if cm.name:
            status_fn("Getting computes from cell '%s': %s" % (cm.name, cm.uuid))
        else:
            status_fn('Getting computes from cell: %s' % cm.uuid)
        with ms_context.target_cell(ctxt, cm) as cctxt:
            if by_service:
                services = service_obj.ServiceList.get_by_binary(cctxt, 'minisched-compute',
                                                                 include_disabled=True)
                new = _check_and_create_service_host_mappings(ctxt, cm, services, status_fn)
            else:
                nodes = compute_node_obj.ComputeNodeList.get_all_by_not_mapped(cctxt, 1)
                new = _check_and_create_host_mappings(ctxt, cm, nodes, status_fn)
        status_fn('Found %s unmapped computes in cell: %s' % (len(new), cm.uuid))
        added.extend(new)
    return added
