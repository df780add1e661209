"""Ask a running minisched cluster for hosts, as Nova's conductor asks its scheduler.

    python select_destinations.py [TRANSPORT_URL] [--config-file FILE] [--exchange NAME]
                                  [--instances N] [--consume]

The cluster's bus: TRANSPORT_URL when given, else ``[DEFAULT] transport_url`` (and
``control_exchange``) of its config file, ``--config-file`` or the ``MINISCHED_CONFIG_FILE``
that ``minisched-cluster up``'s ``minisched.env`` exports. A cluster lives on a vhost of its
own: a URL without that vhost reaches no scheduler.

Two calls of ``select_destinations`` (scheduler RPC API 4.5) on the ``scheduler`` topic:

1. a small flavor: prints, per instance, the selected host and its alternates
   (``[scheduler] max_attempts - 1`` of them, the hosts a reschedule would try);
2. a flavor no host can hold: the scheduler answers NoValidHost, saying how many hosts
   each filter rejected.

Nothing is built and nothing is written to a database, and both calls are dry runs
(``dry_run=True``): the scheduler gives back what it consumed, so the cluster's capacity is
the same afterwards. ``--consume`` sends them as the conductor does, and the first call's
placements then count on their hosts in the scheduler until the computes' next reports.
Exit status 0 when both answers came back as described, 1 otherwise.
"""
from minisched import monkey_patch  # first, as in minisched's own commands: native threads
monkey_patch.patch(backend='threading')  # (oslo.messaging's libraries would try eventlet)
import argparse
import os
import sys

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_utils import uuidutils

from minisched import context
from minisched import exception
from minisched import objects
from minisched import rpc
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import request_spec as request_spec_obj


def request_spec(ctxt, memory_mb, vcpus, root_gb, num_instances):
    """A RequestSpec as the conductor sends it: a flavor, an image and who asks."""
    flavor = flavor_obj.Flavor(
        id=0, flavorid='example', name='example', memory_mb=memory_mb, vcpus=vcpus,
        root_gb=root_gb, ephemeral_gb=0, swap=0, rxtx_factor=1.0, is_public=True,
        disabled=False, extra_specs={})
    return request_spec_obj.RequestSpec(
        ctxt, flavor=flavor, image=image_meta_obj.ImageMeta.from_dict({'properties': {}}),
        num_instances=num_instances, project_id=ctxt.project_id, user_id=ctxt.user_id,
        instance_uuid=uuidutils.generate_uuid(), availability_zone=None,
        scheduler_hints={}, ignore_hosts=None, force_hosts=None, force_nodes=None,
        retry=None, limits=None, requested_destination=None, instance_group=None,
        security_groups=objects.SecurityGroupList(objects=[]), is_bfv=False)


def select_destinations(client, ctxt, spec, dry_run=True):
    """One list of Selection objects per instance: the chosen host first, then the
    alternates. Raises minisched.exception.NoValidHost when no host fits.

    ``dry_run`` (minisched only; a Nova scheduler refuses the keyword): the scheduler gives
    back what the request consumed. Sent only when true, as minisched's own client does."""
    extra = {'dry_run': True} if dry_run else {}
    return client.call(ctxt, 'select_destinations', spec_obj=spec,
                       instance_uuids=[uuidutils.generate_uuid()
                                       for _ in range(spec.num_instances)],
                       return_objects=True, return_alternates=True, **extra)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('transport_url', nargs='?',
                        help='the cluster\'s [DEFAULT] transport_url, vhost included '
                             '(default: the one of its config file)')
    parser.add_argument('--config-file', default=os.environ.get('MINISCHED_CONFIG_FILE'),
                        help='the cluster\'s config, for its transport_url and '
                             'control_exchange (default: $MINISCHED_CONFIG_FILE)')
    parser.add_argument('--exchange',
                        help='the cluster\'s [DEFAULT] control_exchange (default: the config '
                             'file\'s, else minisched)')
    parser.add_argument('--instances', type=int, default=1, help='instances to place (1)')
    parser.add_argument('--timeout', type=int, default=60, help='seconds to wait (60)')
    parser.add_argument('--consume', action='store_true',
                        help='send real requests: the placements count on their hosts (by '
                             'default both calls are dry runs)')
    args = parser.parse_args(argv)
    if not args.transport_url and not args.config_file:
        parser.error('give the cluster\'s TRANSPORT_URL or --config-file (or source its '
                     'minisched.env, which exports MINISCHED_CONFIG_FILE)')

    objects.register_all()  # the classes the serializer may rebuild from the wire
    # oslo.messaging registers some of its options on the global CONF only: use that one,
    # with the cluster's config file if given (only its bus options are read).
    conf = cfg.CONF
    messaging.set_transport_defaults('minisched')
    conf(['--config-file', args.config_file] if args.config_file else [],
         project='minisched-example', default_config_files=[])
    # (parsing the URL registers transport_url and control_exchange on conf)
    vhost = messaging.TransportURL.parse(conf, args.transport_url).virtual_host or '/'
    if args.exchange:
        conf.set_override('control_exchange', args.exchange)
    exchange = conf.control_exchange
    # A remote NoValidHost comes back as minisched.exception.NoValidHost, not RemoteError.
    transport = messaging.get_rpc_transport(conf, url=args.transport_url,
                                            allowed_remote_exmods=['minisched.exception'])
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic='scheduler', version='4.5'),
        serializer=rpc.get_serializer()).prepare(timeout=args.timeout)
    ctxt = context.RequestContext(user_id='example', project_id='example', is_admin=True)
    ok = True
    try:
        spec = request_spec(ctxt, memory_mb=512, vcpus=1, root_gb=1,
                            num_instances=args.instances)
        dry_run = not args.consume
        answer = select_destinations(client, ctxt, spec, dry_run=dry_run)
        for number, selections in enumerate(answer, 1):
            chosen, alternates = selections[0], selections[1:]
            print('instance %d: %s (node %s, cell %s); alternates: %s' % (
                number, chosen.service_host, chosen.nodename, chosen.cell_uuid,
                ', '.join(s.service_host for s in alternates) or 'none'))

        too_big = request_spec(ctxt, memory_mb=10 ** 8, vcpus=1, root_gb=1, num_instances=1)
        try:
            select_destinations(client, ctxt, too_big, dry_run=dry_run)
        except exception.NoValidHost as exc:
            print('NoValidHost: %s' % exc.format_message())
        else:
            print('a request for 100 TB of RAM found a host', file=sys.stderr)
            ok = False
    except messaging.MessagingTimeout:
        print('no scheduler answered within %d s on exchange %s, vhost %s (is the '
              'cluster running, and is this its vhost? minisched-cluster status)'
              % (args.timeout, exchange, vhost), file=sys.stderr)
        ok = False
    finally:
        transport.cleanup()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
