"""An API node of the multi-host test: creates instances from inside a lab host.

``python -m tests.functional.multihost_client --config-file F --flavor NAME --count N
[--interval S] [--one-by-one] [--hint KEY=VALUE]...`` (from the repository's root) does what
an API service does for ``N`` single-instance creates (``minisched.compute.api``), one every
``S`` seconds, or each once the one before is ACTIVE or ERROR (``--one-by-one``: every
scheduler then sees the previous claim). Once set up it prints ``{"ready": true}`` and waits
for a line on its standard input, so that clients on several hosts start at the same instant.
It prints one JSON line per create, ``{"uuid": ...}`` or ``{"refused": reason}`` (the bus
did not take it: BuildNotAccepted), then ``{"done": true}``; at most ``N`` creates and
``--max-seconds`` in all.
"""
import argparse
import json
import sys
import time

from minisched.compute import api as compute_api
from minisched import context as ms_context
from minisched.db import engines
from minisched import exception
from minisched import objects
from minisched.objects import flavor as flavor_obj
from minisched import rpc
from tests.functional import build_helpers


def _parser():
    parser = argparse.ArgumentParser(prog='multihost_client')
    parser.add_argument('--config-file', required=True)
    parser.add_argument('--flavor', required=True)
    parser.add_argument('--count', type=int, required=True)
    parser.add_argument('--interval', type=float, default=0.0)
    parser.add_argument('--one-by-one', action='store_true')
    parser.add_argument('--max-seconds', type=float, default=120.0)
    parser.add_argument('--hint', action='append', default=[], metavar='KEY=VALUE')
    return parser


def _say(record):
    sys.stdout.write(json.dumps(record) + '\n')
    sys.stdout.flush()


def main(argv=None):
    args = _parser().parse_args(argv)
    hints = dict(hint.split('=', 1) for hint in args.hint) or None
    objects.register_all()
    conf = build_helpers.make_conf(args.config_file)
    engines.configure(conf)
    rpc.set_defaults()
    rpc.init(conf)
    try:
        api = compute_api.API(conf)
        context = ms_context.RequestContext(user_id=build_helpers.OWNER,
                                            project_id=build_helpers.OWNER, is_admin=True)
        flavor = flavor_obj.Flavor.get_by_name(context, args.flavor)
        _say({'ready': True})
        sys.stdin.readline()
        start = time.time()
        for index in range(args.count):
            if time.time() - start > args.max_seconds:
                break
            time.sleep(max(0.0, start + index * args.interval - time.time()))
            context = ms_context.RequestContext(user_id=build_helpers.OWNER,
                                                project_id=build_helpers.OWNER, is_admin=True)
            try:
                uuid = api.create(context, flavor, scheduler_hints=hints)[0]
            except exception.BuildNotAccepted as exc:
                _say({'refused': str(exc)})
                continue
            _say({'uuid': uuid})
            if args.one_by_one:
                _wait_settled(api, context, uuid, start + args.max_seconds)
        _say({'done': True})
    finally:
        rpc.cleanup()
        engines.dispose_all()
    return 0


def _wait_settled(api, context, uuid, deadline):
    """Return once instance ``uuid`` is ACTIVE or ERROR with no task (or at ``deadline``)."""
    while time.time() < deadline:
        try:
            instance = api.get(context, uuid)
        except exception.InstanceNotFound:  # not in its cell yet
            instance = None
        if instance is not None and instance.vm_state in build_helpers.DONE_STATES \
                and instance.task_state is None:
            return
        time.sleep(0.2)


if __name__ == '__main__':
    sys.exit(main())
