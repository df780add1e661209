"""Host mappings: which cell holds a compute host's records (API database)."""
from minisched.db import lazy
from minisched.objects import base, cell_mapping, fields

api_db = lazy.module('minisched.db.api.api')


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
    def save(self):
        """Write the changed ``host`` and ``cell_mapping`` (moving a host to another cell)."""
        changes = self.obj_get_changes()
        changes.pop('id', None)
        cell = changes.pop('cell_mapping', None)
        if cell is not None:
            changes['cell_id'] = cell.id
        db_mapping = api_db.host_mapping_update(self._context, self.id, changes,
                                                host=self.host)
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


def _cell_for_db_access(cm):
    """``cm``, or a copy whose templated ``database_connection`` is formatted for this host.

    Nova formats a template URL when it loads a CellMapping; minisched stores the template and
    formats it where a cell database is opened, against this process's ``[database]`` URL
    (:func:`minisched.objects.cell_mapping.format_url`).
    """
    url = cm.database_connection
    if not url or '{' not in url:
        return cm
    from minisched.db import engines
    formatted = cm.obj_clone()
    formatted.database_connection = cell_mapping.format_url(url, engines.configured_url('main'))
    return formatted


def _check_and_create_node_host_mappings(ctxt, cm, compute_nodes, status_fn):
    """Map the host of each node that has no mapping yet, then mark that node mapped.

    A node whose host is already mapped (the second node of a multi-node host) is not marked,
    as in Nova, so it is checked again on every run. A mapping created meanwhile by a parallel
    discovery raises ``HostMappingExists`` (Nova HEAD).
    """
    from minisched import exception
    host_mappings = []
    for compute in compute_nodes:
        status_fn("Checking host mapping for compute host '%s': %s"
                  % (compute.host, compute.uuid))
        try:
            HostMapping.get_by_host(ctxt, compute.host)
        except exception.HostMappingNotFound:
            status_fn("Creating host mapping for compute host '%s': %s"
                      % (compute.host, compute.uuid))
            host_mapping = HostMapping(ctxt, host=compute.host, cell_mapping=cm)
            host_mapping.create()
            host_mappings.append(host_mapping)
            compute.mapped = 1
            compute.save()
    return host_mappings


def _check_and_create_service_host_mappings(ctxt, cm, services, status_fn):
    """Map the host of each compute service (disabled ones included) that has no mapping."""
    from minisched import exception
    host_mappings = []
    for service in services:
        try:
            HostMapping.get_by_host(ctxt, service.host)
        except exception.HostMappingNotFound:
            status_fn('Creating host mapping for service %s' % service.host)
            host_mapping = HostMapping(ctxt, host=service.host, cell_mapping=cm)
            host_mapping.create()
            host_mappings.append(host_mapping)
    return host_mappings


def _check_and_create_host_mappings(ctxt, cm, status_fn, by_service):
    from minisched.objects import compute_node as compute_node_obj
    from minisched.objects import service as service_obj
    if by_service:
        services = service_obj.ServiceList.get_by_binary(ctxt, 'minisched-compute',
                                                         include_disabled=True)
        return _check_and_create_service_host_mappings(ctxt, cm, services, status_fn)
    compute_nodes = compute_node_obj.ComputeNodeList.get_all_by_not_mapped(ctxt, 1)
    return _check_and_create_node_host_mappings(ctxt, cm, compute_nodes, status_fn)


def discover_hosts(ctxt, cell_uuid=None, status_fn=None, by_service=False):
    """Map the unmapped compute hosts of every cell (or of cell ``cell_uuid``) to their cell.

    Nova's ``nova.objects.host_mapping.discover_hosts``, status lines included. By default the
    cell's compute nodes with ``mapped < 1`` are examined; ``by_service`` examines its
    ``minisched-compute`` services instead (and marks nothing). cell0 is skipped.

    :param status_fn: called with each status line (e.g. ``print`` for ``--verbose``)
    :returns: the HostMappings created (empty when there was nothing to map)
    :raises: ``CellMappingNotFound`` for an unknown ``cell_uuid``; ``HostMappingExists`` when
        a discovery running in parallel mapped a host between the check and the insert
    """
    from minisched import context as ms_context
    status_fn = status_fn or (lambda msg: None)
    if cell_uuid:
        cell_mappings = [cell_mapping.CellMapping.get_by_uuid(ctxt, cell_uuid)]
    else:
        cell_mappings = cell_mapping.CellMappingList.get_all(ctxt)
        status_fn('Found %s cell mappings.' % len(cell_mappings))
    host_mappings = []
    for cm in cell_mappings:
        if cm.is_cell0():
            status_fn('Skipping cell0 since it does not contain hosts.')
            continue
        if 'name' in cm and cm.name:
            status_fn("Getting computes from cell '%s': %s" % (cm.name, cm.uuid))
        else:
            status_fn('Getting computes from cell: %s' % cm.uuid)
        with ms_context.target_cell(ctxt, _cell_for_db_access(cm)) as cctxt:
            added = _check_and_create_host_mappings(cctxt, cm, status_fn, by_service)
            status_fn('Found %s unmapped computes in cell: %s' % (len(added), cm.uuid))
        host_mappings.extend(added)
    return host_mappings
