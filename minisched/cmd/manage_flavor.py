"""Flavors: the sizes instances are built with (API database).

``minisched-manage flavor create NAME --ram MB --vcpus N --disk GB [--ephemeral GB]
[--swap MB] [--id ID] [--rxtx-factor F] [--public|--private] [--description TEXT]
[--property k=v ...]``, ``flavor list``, ``flavor set NAME|ID --property k=v ...`` (extra
specs) and ``flavor delete NAME|ID``, as ``openstack flavor`` does them: the id defaults to a
new UUID ("auto"), and a NAME|ID argument is tried as a flavor id first, then as a name.
Deleting a flavor leaves its instances alone (each keeps a copy of its flavor). Fields and
extra specs are validated as Nova's API does (``minisched.api.validation.flavors``): a
refusal is one line on stderr, exit 1, and nothing is written.

Also the small helpers the other categories share: argument types (``key_value``,
``integer``), output (``error``, ``format_pairs``) and RPC set-up (``init_rpc``,
``bounded``, ``broker_errors``).
"""
import argparse
import contextlib
import sys

import oslo_messaging as messaging
from oslo_utils import uuidutils

from minisched.api.validation import extra_specs as extra_specs_validation
from minisched.api.validation import flavors as flavors_validation
from minisched import context, exception, rpc
from minisched.cmd import manage_display
from minisched.objects import flavor as flavor_obj

# -- helpers shared by the manage_<category> modules --------------------------------------

def key_value(text):
    """argparse type of ``k=v`` options (``--property``, ``--hint``, ``--image-property``)."""
    key, sep, value = text.partition('=')
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError('expected KEY=VALUE, got %r' % text)
    return key.strip(), value


def integer(minimum):
    """argparse type of an integer option that must be at least ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError('not an integer: %r' % text)
        if value < minimum:
            raise argparse.ArgumentTypeError('must be at least %d: %r' % (minimum, text))
        return value
    return parse


def error(message):
    """Print one line on stderr and return the exit code of an expected failure."""
    sys.stderr.write('%s\n' % message)
    return 1


#: Connection attempts of this command's RPC clients: fail after a few seconds rather than
#: wait forever for a broker (oslo.messaging's default, ``retry=None``, suits services).
RPC_RETRIES = 2


def init_rpc(conf):
    """Set up RPC once (``minisched-manage`` parses its options without it)."""
    if not rpc.initialized():
        rpc.init(conf)


def bounded(*clients):
    """Give oslo.messaging RPC clients at most ``RPC_RETRIES`` connection retries."""
    for client in clients:
        client.retry = RPC_RETRIES


@contextlib.contextmanager
def broker_errors():
    """Turn a broker failure (unreachable, refused vhost...) into one line, not a traceback.

    What fails depends on the driver: oslo.messaging's own exceptions, socket errors, or the
    AMQP client's (``amqp``/``kombu`` for the rabbit driver).
    """
    try:
        yield
    except messaging.MessagingTimeout:
        raise
    except Exception as exc:
        driver_error = type(exc).__module__.split('.')[0] in ('amqp', 'kombu')
        if not (driver_error or isinstance(exc, (messaging.MessagingException, OSError))):
            raise
        detail = (str(exc).strip().splitlines() or [''])[0]
        raise exception.MinischedException(
            'Message broker failure: %s: %s%s' % (type(exc).__name__, detail, _hint(detail)))


def _hint(detail):
    """What to check next, for the broker failures an operator meets most."""
    if 'NOT_ALLOWED' in detail and 'vhost' in detail:
        return (' (is the cluster running? minisched-cluster status; minisched-cluster '
                'deletes a cluster\'s vhost when it stops)')
    if 'refused' in detail.lower():
        return ' (is RabbitMQ running, and is [DEFAULT] transport_url its address?)'
    return ''


def format_pairs(mapping):
    """``{'b': 2, 'a': 1}`` as ``a='1', b='2'`` (sorted, as openstackclient shows them)."""
    return ', '.join("%s='%s'" % (key, mapping[key]) for key in sorted(mapping or {}))


# -- flavors ------------------------------------------------------------------------------

def find_flavor(ctxt, name_or_id):
    """The flavor whose flavor id, else whose name, is ``name_or_id``."""
    try:
        return flavor_obj.Flavor.get_by_flavor_id(ctxt, name_or_id)
    except exception.FlavorNotFound:
        pass
    try:
        return flavor_obj.Flavor.get_by_name(ctxt, name_or_id)
    except exception.FlavorNotFound:
        raise exception.FlavorNotFound(flavor_id=name_or_id)


def _fields(flavor):
    return manage_display.fields(
        [('id', flavor.flavorid), ('name', flavor.name), ('ram', flavor.memory_mb),
         ('disk', flavor.root_gb), ('ephemeral', flavor.ephemeral_gb), ('swap', flavor.swap),
         ('vcpus', flavor.vcpus), ('rxtx_factor', flavor.rxtx_factor),
         ('is_public', flavor.is_public),
         ('properties', manage_display.properties(flavor.extra_specs))] +
        ([('description', flavor.description)] if flavor.description is not None else []))


class FlavorCommands:
    """Flavors: the sizes instances are built with."""

    def create(self, name, ram, vcpus, disk, ephemeral=0, swap=0, flavorid=None,
               properties=None, rxtx_factor=1.0, is_public=True, description=None):
        values = flavors_validation.validate_create(
            name, ram, vcpus, disk, ephemeral or 0, swap or 0,
            None if flavorid in (None, 'auto') else flavorid, rxtx_factor, is_public,
            description, dict(properties or []))
        ctxt = context.get_admin_context()
        values['flavorid'] = values['flavorid'] or uuidutils.generate_uuid()
        try:
            flavor_obj.Flavor.get_by_flavor_id(ctxt, values['flavorid'])
            return error('Flavor with ID %s already exists.' % values['flavorid'])
        except exception.FlavorNotFound:
            pass
        flavor = flavor_obj.Flavor(ctxt, disabled=False, **values)
        flavor.create()
        return _fields(flavor)

    def list(self):
        flavors = flavor_obj.FlavorList.get_all(context.get_admin_context())
        rows = [(f.flavorid, f.name, f.memory_mb, f.root_gb, f.ephemeral_gb, f.swap, f.vcpus,
                 f.is_public, manage_display.properties(f.extra_specs))
                for f in sorted(flavors, key=lambda f: (f.memory_mb, f.vcpus, f.name))]
        return ('ID', 'Name', 'RAM', 'Disk', 'Ephemeral', 'Swap', 'VCPUs', 'Is Public',
                'Properties'), rows

    def set(self, flavor, properties):
        specs = extra_specs_validation.validate_extra_specs(dict(properties))
        found = find_flavor(context.get_admin_context(), flavor)
        found.save_extra_specs(to_add=specs)
        return _fields(found)

    def delete(self, flavor):
        found = find_flavor(context.get_admin_context(), flavor)
        found.destroy()
        print('Flavor %s (%s) deleted.' % (found.name, found.flavorid))
        return 0


def add_property_argument(parser, required=False, help_text='Extra spec (repeatable).',
                          dest='action_kwarg_properties'):
    parser.add_argument('--property', action='append', type=key_value, metavar='KEY=VALUE',
                        dest=dest, required=required, help=help_text)


def _create_arguments(create):
    create.add_argument('name', help='Flavor name (unique).')
    create.add_argument('--ram', type=integer(1), required=True, metavar='MB',
                        help='Memory in MB.')
    create.add_argument('--vcpus', type=integer(1), required=True, metavar='N',
                        help='Number of vCPUs.')
    create.add_argument('--disk', type=integer(0), required=True, metavar='GB',
                        help='Root disk in GB.')
    create.add_argument('--ephemeral', type=integer(0), default=0, metavar='GB',
                        help='Ephemeral disk in GB (0).')
    create.add_argument('--swap', type=integer(0), default=0, metavar='MB',
                        help='Swap in MB (0).')
    create.add_argument('--id', metavar='ID', dest='flavorid',
                        help='Flavor id (default "auto": a new UUID).')
    create.add_argument('--rxtx-factor', default='1.0', metavar='FACTOR',
                        help='RX/TX factor (1.0).')
    public = create.add_mutually_exclusive_group()
    public.add_argument('--public', action='store_true', default=True, dest='is_public',
                        help='Usable by every project (default).')
    public.add_argument('--private', action='store_false', dest='is_public',
                        help='Usable only by projects given access.')
    create.add_argument('--description', metavar='TEXT',
                        help='Description (at most 65535 printable characters).')
    add_property_argument(create, dest='properties')


def _set_arguments(setter):
    setter.add_argument('flavor', help='Flavor id or name.')
    add_property_argument(setter, required=True, dest='properties')


def add_parsers(actions):
    """Add the ``flavor`` category's actions."""
    commands = FlavorCommands()
    manage_display.add_command(actions, 'create', manage_display.ShowOne(
        commands.create, ['name', 'ram', 'vcpus', 'disk', 'ephemeral', 'swap', 'flavorid',
                          'properties', 'rxtx_factor', 'is_public', 'description'],
        _create_arguments), help_text='Create a flavor.')
    manage_display.add_command(actions, 'list', manage_display.Lister(commands.list),
                               help_text='List flavors, smallest first.')
    manage_display.add_command(actions, 'set', manage_display.ShowOne(
        commands.set, ['flavor', 'properties'], _set_arguments),
        help_text='Set extra specs of a flavor.')

    delete = actions.add_parser('delete', help='Delete a flavor.')
    delete.add_argument('action_kwarg_flavor', metavar='flavor', help='Flavor id or name.')
    delete.set_defaults(action_fn=commands.delete, action_kwargs=['flavor'])
