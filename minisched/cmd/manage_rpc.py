"""Watch RPC traffic.

``minisched-manage rpc tap [--topic T ...] [--json] [--count N] [--timeout S]`` prints each
RPC message of the deployment's control exchange as it passes (calls, casts, fanout casts,
and the replies to the calls with their round-trip time), one line each, without taking part:
the tap reads copies through a queue of its own (see ``minisched.messaging.tap``). Reply times need
the RabbitMQ firehose on the vhost (``rabbitmqctl trace_on -p <vhost>``), because oslo.messaging
publishes replies to the default exchange, which cannot be bound.
"""
import argparse
import logging
import signal
import sys

import oslo_messaging

from minisched import config
from minisched.messaging import tap as tap_lib
from minisched.messaging import tap_events

CONF = config.CONF

DESCRIPTION = """Print each RPC message of the control exchange as it passes: calls, casts,
fanout casts, and the replies to calls with their round-trip time. The tap reads copies
through an exclusive queue of its own and changes nothing. Reply times need the RabbitMQ
firehose on the vhost (rabbitmqctl trace_on -p VHOST): oslo.messaging publishes replies to the
default exchange, which cannot be bound. Ctrl-C or SIGTERM stops it (exit 0)."""


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError('not a number: %r' % text)
        if value <= 0:
            raise argparse.ArgumentTypeError('must be positive: %r' % text)
        return value
    return parse


def _note(text):
    sys.stderr.write('rpc tap: %s\n' % text)
    sys.stderr.flush()


def transport_settings(conf):
    """``(transport_url, control_exchange)`` from ``conf``.

    ``minisched-manage`` parses its options with ``init_rpc=False``, so oslo.messaging has
    not registered ``[DEFAULT] transport_url`` / ``control_exchange`` yet: ``TransportURL.parse``
    without a URL registers them (the same option objects ``get_transport`` registers, so no
    conflict) and reads the configured URL.
    """
    oslo_messaging.TransportURL.parse(conf)
    return conf.transport_url, conf.control_exchange


class RpcCommands:
    """Watch RPC traffic."""

    def tap(self, topics=None, json=False, count=None, timeout=None):
        """Print the RPC messages of ``topics`` until Ctrl-C, ``count`` or ``timeout``."""
        url, exchange = transport_settings(CONF)
        if not config.config_sources(CONF) and _default(CONF, 'transport_url'):
            # The default names the broker's root vhost, where no cluster lives: waiting
            # there would print nothing, forever.
            _note('no configuration: give --config-file (or source a cluster\'s '
                  'minisched.env, or set OS_DEFAULT__TRANSPORT_URL) to name the bus to tap; '
                  'not tapping the default %s' % tap_lib.describe_url(url or
                                                                      'rabbit://localhost/'))
            return 1
        # pika logs each expected refusal (an exchange not there yet) as a warning and each
        # lost connection as an error; the tap reports both itself.
        logging.getLogger('pika').setLevel(logging.CRITICAL)
        wanted = [t.strip() for value in (topics or []) for t in value.split(',') if t.strip()]
        formatter = tap_events.format_json if json else tap_events.format_text
        tap = tap_lib.Tap(url, exchange, wanted or None, note=_note)

        def emit(event):
            try:
                sys.stdout.write(formatter(event) + '\n')
                sys.stdout.flush()
            except BrokenPipeError:  # e.g. piped into head: stop quietly
                tap.stop()
                # Imported here: minisched-manage's module patches eventlet when imported,
                # and has been by now (the tap runs as one of its commands).
                from minisched.cmd import manage
                manage.discard_stdout()

        try:
            tap.open()
        except tap_lib.TapError as exc:
            _note(str(exc))
            return 1
        _note('tapping exchange %s at %s for %s (queue %s)'
              % (exchange, tap_lib.describe_url(url), ', '.join(tap.topics), tap.queue))
        missing = [b for b in tap.missing() if b[0] != tap_events.TRACE_EXCHANGE]
        if missing:
            _note('not there yet (retried every %ss): %s'
                  % (tap.retry_interval, ', '.join('%s(%s)' % b for b in missing)))
        if (tap_events.TRACE_EXCHANGE, tap_events.TRACE_DEFAULT_EXCHANGE_KEY) in tap.bound:
            _note('replies travel through the default exchange: reply times show only while '
                  'the firehose is on (rabbitmqctl trace_on -p %s)'
                  % tap_lib.connection_parameters(url)[0].virtual_host)
        _note('ready')
        previous = _install_signal_handlers(tap)
        try:
            tap.run(emit, count=count, timeout=timeout)
        except tap_lib.TapError as exc:
            _note(str(exc))
            return 1
        except KeyboardInterrupt:
            pass
        finally:
            _restore_signal_handlers(previous)
            tap.close()
        unanswered = len(tap.decoder.pending)
        if unanswered and not tap.decoder.replies_seen and count is None:
            _note('%d call(s) without an observed reply (is the firehose on? see above)'
                  % unanswered)
        return 0


def _default(conf, name):
    """True when ``[DEFAULT] name`` has the value no one set (no file, no environment)."""
    from oslo_config import cfg
    return conf.get_location(name).location in (cfg.Locations.opt_default,
                                                cfg.Locations.set_default)


def _install_signal_handlers(tap):
    """Ctrl-C and SIGTERM stop the tap cleanly (exit 0).

    Only the main thread may set handlers (``ValueError`` elsewhere; then none are set). Not
    checked with ``threading.main_thread()``: under eventlet's monkey-patching (which
    ``minisched.cmd`` applies) that names a green thread and the check would always fail.
    """
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, lambda *args: tap.stop())
        except ValueError:
            break
    return previous


def _restore_signal_handlers(previous):
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def add_parsers(actions):
    """Add the ``tap`` action to the ``rpc`` category's sub-parsers."""
    commands = RpcCommands()
    parser = actions.add_parser(
        'tap', help='Print RPC calls, casts, fanouts and reply times as they pass.',
        description=DESCRIPTION)
    parser.add_argument('--topic', action='append', dest='action_kwarg_topics', metavar='T',
                        help='Topic to watch (repeatable; comma lists too): T and its '
                             'directed T.<server>, and the T_fanout exchange; a pattern with '
                             '* or # as is ("#" for all). Default: scheduler, conductor, '
                             'compute.')
    parser.add_argument('--json', action='store_true', dest='action_kwarg_json',
                        help='One JSON object per message instead of a text line.')
    parser.add_argument('--count', type=_positive(int), dest='action_kwarg_count',
                        metavar='N', help='Stop after N messages.')
    parser.add_argument('--timeout', type=_positive(float), dest='action_kwarg_timeout',
                        metavar='S', help='Stop after S seconds.')
    parser.set_defaults(action_fn=commands.tap,
                        action_kwargs=['topics', 'json', 'count', 'timeout'])
