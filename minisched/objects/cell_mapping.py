"""Cell mappings: where each cell's database and message bus are (API database)."""
import logging
import urllib.parse

from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')

LOG = logging.getLogger(__name__)

CELL0_UUID = '00000000-0000-0000-0000-000000000000'


def mask_url(url):
    """``url`` with its password replaced by ``****`` (for logs and ``cell list``)."""
    if not url:
        return url
    masked = []
    for part in str(url).split(','):
        parsed = urllib.parse.urlsplit(part)
        if parsed.password:
            netloc = parsed.netloc.replace(':%s@' % parsed.password, ':****@', 1)
            part = urllib.parse.urlunsplit(parsed._replace(netloc=netloc))
        masked.append(part)
    return ','.join(masked)


def _parse_netloc(netloc):
    """``user:pass@host:port`` as the template keys of one host."""
    these = {'username': None, 'password': None, 'hostname': None, 'port': None}
    userpass, _, hostport = netloc.rpartition('@')
    if hostport.startswith('['):
        end = hostport.find(']')
        if end < 0:
            raise ValueError('Invalid IPv6 URL')
        these['hostname'], these['port'] = hostport[1:end], hostport[end + 1:]
    elif ':' in hostport:
        these['hostname'], these['port'] = hostport.split(':', 1)
    else:
        these['hostname'] = hostport
    if ':' in userpass:
        these['username'], these['password'] = userpass.split(':', 1)
    else:
        these['username'] = userpass
    return these


def format_url(template, conf_url):
    """``template`` with its ``{...}`` fields filled from the parts of ``conf_url``.

    Nova's ``CellMapping._format_url``: the keys are ``scheme``, ``username``, ``password``,
    ``hostname``, ``port``, ``path`` (without its leading slashes), ``query`` and ``fragment``
    of ``conf_url``; a multi-host URL (``rabbit://u:p@h1:5672,u:p@h2:5672/``) adds
    ``username1``/``password1``/``hostname1``/``port1``, ``...2`` and so on. A part
    ``conf_url`` lacks formats as ``None``, as in Nova. A URL without template fields comes back
    unchanged, and so does ``template`` when ``conf_url`` is empty or the formatting fails (an
    error is logged, as Nova does, but without a traceback).

    Database URLs are formatted against the local ``[database] connection`` (minisched: or its
    embedded default), transport URLs against ``[DEFAULT] transport_url``.
    """
    if not template or '{' not in template:
        return template
    if not conf_url:
        LOG.error('Cell mapping URL %s is a template, but the local URL to format it with '
                  'is not set', mask_url(template))
        return template
    try:
        parts = urllib.parse.urlparse(conf_url)
        subs = {'username': parts.username, 'password': parts.password,
                'hostname': parts.hostname, 'port': parts.port, 'scheme': parts.scheme,
                'query': parts.query, 'fragment': parts.fragment,
                'path': parts.path.lstrip('/')}
        if ',' in parts.netloc:
            for index, netloc in enumerate(parts.netloc.split(','), start=1):
                for key, value in _parse_netloc(netloc).items():
                    subs['%s%i' % (key, index)] = value
        return template.format(**subs)
    except Exception as exc:  # logged without a traceback: the CLI prints no traces
        LOG.error('Failed to format cell mapping URL %s: %r',
                  mask_url(template),
                  exc)
        return template


@base.MinischedObjectRegistry.register
class CellMapping(base.PlainRowMixin, base.MinischedTimestampObject,
                   base.MinischedObject):
    """Version 1.1 added ``disabled``."""

    VERSION = '1.1'

    CELL0_UUID = CELL0_UUID

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'transport_url': fields.StringField(),
        'database_connection': fields.StringField(),
        'disabled': fields.BooleanField(default=False),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        from oslo_utils import versionutils
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('disabled', None)

    @property
    def identity(self):
        if 'name' in self and self.name:
            return '%s(%s)' % (self.uuid, self.name)
        return self.uuid

    def is_cell0(self):
        return self.obj_attr_is_set('uuid') and self.uuid == CELL0_UUID

    @base.remotable_classmethod
    def get_by_uuid(cls, context, uuid):
        return cls._from_db_object(context, cls(), api_db.cell_mapping_get_by_uuid(context, uuid))

    @base.remotable
    def create(self):
        values = self.obj_get_changes()
        self._from_db_object(self._context, self, api_db.cell_mapping_create(self._context,
                                                                              values))

    @base.remotable
    def save(self):
        values = self.obj_get_changes()
        values.pop('id', None)
        self._from_db_object(self._context, self,
                             api_db.cell_mapping_update(self._context, self.uuid, values))

    @base.remotable
    def destroy(self):
        api_db.cell_mapping_destroy(self._context, self.uuid)


@base.MinischedObjectRegistry.register
class CellMappingList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('CellMapping')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), CellMapping,
                                  api_db.cell_mapping_get_all(context))

    @base.remotable_classmethod
    def get_by_disabled(cls, context, disabled):
        """The disabled cells (``disabled`` True) or the enabled ones, in id order."""
        return base.obj_make_list(context, cls(context), CellMapping,
                                  api_db.cell_mapping_get_all(context, disabled=disabled))
