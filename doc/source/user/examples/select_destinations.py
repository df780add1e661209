"""Ask a running minisched cluster for hosts, as Nova's conductor asks its scheduler.

    python select_destinations.py TRANSPORT_URL [--exchange minisched] [--instances N]

Two calls of ``select_destinations`` (scheduler RPC API 4.5) on the ``scheduler`` topic:

1. a small flavor: prints, per instance, the selected host and its alternates
   (``[scheduler] max_attempts - 1`` of them, the hosts a reschedule would try);
2. a flavor no host can hold: the scheduler answers NoValidHost, saying how many hosts
   each filter rejected.

Nothing is built and nothing is written to a database. Exit status 0 when both answers came
back as described, 1 otherwise.
"""
import argparse
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


def select_destinations(client, ctxt, spec):
    """One list of Selection objects per instance: the chosen host first, then the
    alternates. Raises minisched.exception.NoValidHost when no host fits."""
    return client.call(ctxt, 'select_destinations', spec_obj=spec,
                       instance_uuids=[uuidutils.generate_uuid()
                                       for _ in range(spec.num_instances)],
                       return_objects=True, return_alternates=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('transport_url', help='the cluster\'s [DEFAULT] transport_url')
    parser.add_argument('--exchange', default='minisched',
                        help='the cluster\'s [DEFAULT] control_exchange (default: minisched)')
    parser.add_argument('--instances', type=int, default=1, help='instances to place (1)')
    parser.add_argument('--timeout', type=int, default=60, help='seconds to wait (60)')
    args = parser.parse_args(argv)

    objects.register_all()  # the classes the serializer may rebuild from the wire
    # oslo.messaging registers some of its options on the global CONF only: use that one,
    # with no config file (everything this client needs is given here).
    conf = cfg.CONF
    conf([], project='minisched-example', default_config_files=[])
    messaging.set_transport_defaults(args.exchange)
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
        for number, selections in enumerate(select_destinations(client, ctxt, spec), 1):
            chosen, alternates = selections[0], selections[1:]
            print('instance %d: %s (node %s, cell %s); alternates: %s' % (
                number, chosen.service_host, chosen.nodename, chosen.cell_uuid,
                ', '.join(s.service_host for s in alternates) or 'none'))

        too_big = request_spec(ctxt, memory_mb=10 ** 8, vcpus=1, root_gb=1, num_instances=1)
        try:
            select_destinations(client, ctxt, too_big)
        except exception.NoValidHost as exc:
            print('NoValidHost: %s' % exc.format_message())
        else:
            print('a request for 100 TB of RAM found a host', file=sys.stderr)
            ok = False
    except messaging.MessagingTimeout:
        print('no scheduler answered within %d s on exchange %s'
              % (args.timeout, args.exchange), file=sys.stderr)
        ok = False
    finally:
        transport.cleanup()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
