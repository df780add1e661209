"""Watch minisched's RPC traffic on RabbitMQ without taking part in it.

The tap declares one queue of its own (exclusive, auto-delete: it goes away with the tap's
connection) and binds it next to the services' queues, so the broker hands it a *copy* of
each message; it never consumes from a service queue, never publishes and never declares an
exchange (it only binds to exchanges that exist, checked with passive declares, and retries
the missing ones every few seconds, so a declare can never conflict with oslo.messaging's).

Bindings (``exchange`` is ``[DEFAULT] control_exchange``):

* a plain topic ``T``: ``exchange`` (topic) with routing key ``T.#`` (``T`` itself and every
  directed ``T.<server>``, dotted host names included), and the fanout exchange ``T_fanout``;
* a pattern (``*``/``#``, e.g. ``#`` for everything): ``exchange`` with that pattern; the
  ``<topic>_fanout`` exchanges of the topics then seen in traffic are bound as they appear;
* replies: the design notes (nova-reference 2.5) describe, as older oslo.messaging did, a
  reply sent to a *direct exchange* named after the call's ``_reply_q``. When the tap sees a
  call with a new ``_reply_q`` it binds to that exchange if it exists (routing key = the same
  name). The oslo.messaging in use here (18.x, see ``impl_rabbit.Connection.direct_send``)
  publishes replies to the *default exchange* (``''``) with routing key ``_reply_q`` instead,
  and RabbitMQ refuses bindings to the default exchange (403 ACCESS_REFUSED). Those replies
  are visible only through the RabbitMQ firehose: the tap binds ``amq.rabbitmq.trace`` with
  routing key ``publish.`` (copies of what is published to the default exchange), which
  carries messages only while tracing is on for the vhost (``rabbitmqctl trace_on -p
  <vhost>``; it costs broker throughput, turn it off with ``trace_off``). Without it calls
  show no reply time.

On a RabbitMQ cluster (a transport URL naming several nodes) the tap connects to one node; its
queue is an exclusive classic queue of that node whatever type the services' queues are
(quorum, or streams for fanout with ``rabbit_stream_fanout``: the tap binds next to them, it
never declares or consumes theirs). When that node goes away the tap connects to another one
and declares and binds its queue again: what was published in between is not seen, and a note
says so. The firehose is per node: ``rabbitmqctl trace_on`` on every node of the cluster.

Every message becomes an *event*: a JSON-able dict (see ``Decoder.handle``), printed one per
line by ``format_text`` or ``format_json``. The decoding and summary functions need no broker.
"""
import bz2
import collections
import datetime
import json
import lzma
import re
import time
import uuid
import zlib

import oslo_messaging
import pika
from oslo_config import cfg
from pika import exceptions as pika_exc

ENVELOPE_VERSION_KEY = 'oslo.version'
ENVELOPE_MESSAGE_KEY = 'oslo.message'
ENVELOPE_VERSION = '2.0'

DEFAULT_TOPICS = ('scheduler', 'conductor', 'compute')
#: The firehose exchange of every vhost, and the routing key of its copies of messages
#: published to the default exchange (``publish.<exchange name>`` with an empty name).
TRACE_EXCHANGE = 'amq.rabbitmq.trace'
TRACE_DEFAULT_EXCHANGE_KEY = 'publish.'

KINDS = ('call', 'cast', 'fanout', 'reply', 'notify', 'other')

#: Longest string shown as is in a summary; longer ones are cut.
MAX_STR = 32
#: Changed field names shown before ``+N``.
MAX_CHANGES = 4
#: Calls remembered while their reply is awaited.
MAX_PENDING = 10000

_UUID_RE = re.compile(r'^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
                      r'[0-9a-fA-F]{12}$')
_DECOMPRESS = {
    'application/x-gzip': zlib.decompress,  # kombu's "gzip" is a zlib stream
    'application/x-zlib': zlib.decompress,
    'application/x-bz2': bz2.decompress,
    'application/x-lzma': lzma.decompress,
    'application/x-xz': lzma.decompress,
}


class TapError(Exception):
    """The tap cannot run: broker unreachable, connection lost, unsupported URL."""


class UndecodableMessage(ValueError):
    """A message body that is not an oslo.messaging message."""


# --------------------------------------------------------------------------------------------
# Decoding


def decode_body(body, headers=None):
    """Return the message dict inside an AMQP ``body`` (bytes, str or an already loaded dict).

    Undoes kombu compression (``headers['compression']``) and the oslo.messaging 2.0 envelope
    (``{"oslo.version": "2.0", "oslo.message": "<JSON>"}``); a dict lacking either envelope key
    is an un-enveloped message, returned as is. Raises ``UndecodableMessage``.
    """
    if isinstance(body, (bytes, bytearray)):
        compression = (headers or {}).get('compression')
        if compression:
            decompress = _DECOMPRESS.get(compression)
            if decompress is None:
                raise UndecodableMessage('unknown compression %s' % compression)
            try:
                body = decompress(bytes(body))
            except Exception as exc:
                raise UndecodableMessage('cannot decompress (%s): %s' % (compression, exc))
        try:
            body = bytes(body).decode('utf-8')
        except UnicodeDecodeError as exc:
            raise UndecodableMessage('body is not UTF-8: %s' % exc)
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as exc:
            raise UndecodableMessage('body is not JSON: %s' % exc)
    if not isinstance(body, dict):
        raise UndecodableMessage('body is a JSON %s, not an object' % type(body).__name__)
    if ENVELOPE_VERSION_KEY not in body or ENVELOPE_MESSAGE_KEY not in body:
        return body
    version = str(body[ENVELOPE_VERSION_KEY])
    if not _envelope_compatible(version):
        raise UndecodableMessage('unsupported envelope version %s' % version)
    inner = body[ENVELOPE_MESSAGE_KEY]
    try:
        message = json.loads(inner) if isinstance(inner, (str, bytes)) else inner
    except ValueError as exc:
        raise UndecodableMessage('oslo.message is not JSON: %s' % exc)
    if not isinstance(message, dict):
        raise UndecodableMessage('oslo.message is a JSON %s, not an object'
                                 % type(message).__name__)
    return message


def _envelope_compatible(version):
    """oslo.messaging's rule: same major as 2.0, minor not above 0."""
    try:
        major, minor = (int(part) for part in version.split('.'))
    except ValueError:
        return False
    return major == 2 and minor <= 0


def parse_failure(failure):
    """``(class, module, message)`` of a reply's ``failure`` (a JSON string or a dict)."""
    if isinstance(failure, str):
        try:
            failure = json.loads(failure)
        except ValueError:
            return 'RemoteError', None, failure
    if not isinstance(failure, dict):
        return 'RemoteError', None, str(failure)
    message = str(failure.get('message') or '')
    return str(failure.get('class') or 'RemoteError'), failure.get('module'), message


# --------------------------------------------------------------------------------------------
# Summaries


def object_namespace(value):
    """The serial namespace (``minisched_object``, ``nova_object``...) of an object primitive.

    None when ``value`` is not one: a dict with ``<ns>.name``, ``<ns>.version`` and ``<ns>.data``.
    """
    if not isinstance(value, dict):
        return None
    for key, name in value.items():
        if isinstance(key, str) and key.endswith('.name') and isinstance(name, str):
            prefix = key[:-len('.name')]
            if prefix + '.data' in value and prefix + '.version' in value:
                return prefix
    return None


def _obj(value, field, default=None):
    return value.get('%s.%s' % (object_namespace(value), field), default)


def _obj_data(value):
    """The ``data`` dict of an object primitive, or {} when ``value`` is not one."""
    if object_namespace(value) is None:
        return {}
    data = _obj(value, 'data')
    return data if isinstance(data, dict) else {}


def summarize_str(text, limit=MAX_STR):
    text = str(text)
    if _UUID_RE.match(text):
        return text[:8] + '...'
    text = ' '.join(text.split()) if any(c in text for c in '\r\n\t') else text
    if text == '':
        return "''"
    if len(text) > limit:
        return text[:limit - 3] + '...'
    return text


def _flavor_size(data):
    if 'memory_mb' in data and 'vcpus' in data:
        return '%sMB/%svcpu' % (data['memory_mb'], data['vcpus'])
    return None


def _highlight_request_spec(data):
    flavor = _flavor_size(_obj_data(data.get('flavor')))
    items = [('flavor', flavor)] if flavor else []
    return items + _fields(data, 'num_instances')


def _highlight_flavor(data):
    return _fields(data, 'name') + ([('size', _flavor_size(data))] if _flavor_size(data) else [])


def _fields(data, *names, rename=None):
    rename = rename or {}
    return [(rename.get(name, name), data[name]) for name in names if name in data]


#: Per object name: the few fields that say what the object is about.
_HIGHLIGHTS = {
    'RequestSpec': _highlight_request_spec,
    'Flavor': _highlight_flavor,
    'Service': lambda d: _fields(d, 'host', 'binary'),
    'ComputeNode': lambda d: _fields(d, 'host', 'hypervisor_hostname',
                                     rename={'hypervisor_hostname': 'node'}),
    'Instance': lambda d: _fields(d, 'uuid', 'host', 'vm_state'),
    'Selection': lambda d: _fields(d, 'service_host', 'nodename',
                                   rename={'service_host': 'host', 'nodename': 'node'}),
    'Aggregate': lambda d: _fields(d, 'name', 'hosts'),
    'InstanceGroup': lambda d: _fields(d, 'policy'),
    'CellMapping': lambda d: _fields(d, 'name'),
    'HostMapping': lambda d: _fields(d, 'host'),
    'Destination': lambda d: _fields(d, 'host', 'node'),
}
_GENERIC_HIGHLIGHTS = ('uuid', 'host', 'name')


def summarize_object(value, depth=0):
    """``Name version`` and a few telling fields, e.g. ``Service 1.22 changes=[report_count]``."""
    name = _obj(value, 'name')
    version = _obj(value, 'version')
    data = _obj_data(value)
    if name in _HIGHLIGHTS:
        items = _HIGHLIGHTS[name](data)
    elif name.endswith('List') and 'objects' in data:
        items = [('objects', data['objects'])]
    else:
        items = _fields(data, *_GENERIC_HIGHLIGHTS)[:2]
    parts = ['%s %s' % (name, version)]
    for key, item in items:
        text = item if key in ('flavor', 'size') else summarize(item, depth + 1)
        parts.append('%s=%s' % (key, text))
    changes = _obj(value, 'changes')
    if isinstance(changes, list) and changes:
        names = [str(c) for c in changes]
        shown = ','.join(names[:MAX_CHANGES])
        if len(names) > MAX_CHANGES:
            shown += ',+%d' % (len(names) - MAX_CHANGES)
        parts.append('changes=[%s]' % shown)
    return ' '.join(parts)


def summarize(value, depth=0):
    """A short text for any argument or result value.

    Objects: ``Name version`` plus telling fields; lists: ``list(N)`` or, for uniform
    elements, ``list(N x <element>)``; dicts: their keys (``{a,b}``) or ``dict(N)``; strings
    cut to ``MAX_STR`` (UUIDs to 8 characters); other scalars as Python prints them.
    """
    if object_namespace(value) is not None:
        if depth > 2:
            return '%s %s' % (_obj(value, 'name'), _obj(value, 'version'))
        return summarize_object(value, depth)
    if isinstance(value, (list, tuple)):
        if not value:
            return '[]'
        if depth < 2 and all(isinstance(v, (dict, list, tuple)) for v in value):
            inner = {_element_kind(v, depth) for v in value}
            if len(inner) == 1:
                return 'list(%d x %s)' % (len(value), inner.pop())
        return 'list(%d)' % len(value)
    if isinstance(value, dict):
        if not value:
            return '{}'
        keys = [summarize_str(k, 16) for k in value]
        if len(keys) <= 4:
            return '{%s}' % ','.join(keys)
        return 'dict(%d)' % len(keys)
    if isinstance(value, str):
        return summarize_str(value)
    return summarize_str(repr(value))


def _element_kind(value, depth):
    """What a list element is, for ``list(N x ...)``: object name+version, list shape, dict."""
    if object_namespace(value) is not None:
        return '%s %s' % (_obj(value, 'name'), _obj(value, 'version'))
    if isinstance(value, (list, tuple)):
        return summarize(value, depth + 1)
    return 'dict'


def summarize_args(args):
    """``{name: summary}`` for a message's ``args`` (in their order)."""
    if not isinstance(args, dict):
        return {'args': summarize(args)}
    return {str(name): summarize(value) for name, value in args.items()}


# --------------------------------------------------------------------------------------------
# Events


def split_routing_key(routing_key, topics=()):
    """``(topic, server)`` of a routing key: ``compute.host1`` -> ``('compute', 'host1')``.

    A plain topic among ``topics`` wins (the longest), so dotted topics and host names split
    right; otherwise the first dot splits.
    """
    for topic in sorted((t for t in topics if not is_pattern(t)), key=len, reverse=True):
        if routing_key == topic:
            return topic, None
        if routing_key.startswith(topic + '.'):
            return topic, routing_key[len(topic) + 1:]
    topic, _, server = routing_key.partition('.')
    return topic, server or None


def is_pattern(topic):
    return any(part in ('*', '#') for part in topic.split('.'))


def _iso(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%S.%fZ')


def _short(ident, width=8):
    if not ident:
        return '-'
    ident = str(ident)
    if ident.startswith('reply_'):
        return 'reply_' + ident[6:6 + width]
    if ident.startswith('req-'):
        return 'req-' + ident[4:4 + width]
    return ident[:width]


def _blank_event(ts, kind, exchange, routing_key):
    return {'time': _iso(ts), 'kind': kind, 'exchange': exchange, 'routing_key': routing_key,
            'topic': None, 'server': None, 'namespace': None, 'method': None, 'version': None,
            'args': {}, 'msg_id': None, 'reply_q': None, 'unique_id': None, 'request_id': None,
            'timeout': None}


class Decoder:
    """Turns delivered messages into events and pairs replies with their calls.

    Broker-free: ``handle(exchange, routing_key, body, headers, now)`` takes what pika
    delivers (``exchange``/``routing_key`` of the delivery, the raw body, the AMQP headers).
    """

    def __init__(self, exchange, topics=DEFAULT_TOPICS):
        self.exchange = exchange
        self.topics = tuple(topics)
        self.pending = collections.OrderedDict()  # msg_id -> (time, method, reply_q)
        self.calls_seen = 0
        self.replies_seen = 0

    def handle(self, exchange, routing_key, body, headers=None, now=None):
        """The event for one delivered message, or None for an ignored one.

        Ignored: firehose copies that are not replies to a call seen by this tap (the default
        exchange carries other traffic too), and replies to unseen calls.
        """
        now = time.time() if now is None else now
        headers = headers or {}
        if exchange == TRACE_EXCHANGE:
            # A firehose copy: the real destination is in the headers.
            real_exchange = headers.get('exchange_name', '')
            keys = headers.get('routing_keys') or [routing_key]
            props = headers.get('properties') or {}
            try:
                message = decode_body(body, props.get('headers') or {})
            except UndecodableMessage:
                return None
            if not _is_reply(message):
                return None
            return self._reply(now, real_exchange, str(keys[0]), message)
        try:
            message = decode_body(body, headers)
        except UndecodableMessage as exc:
            event = _blank_event(now, 'other', exchange, routing_key)
            event['error'] = str(exc)
            return event
        if _is_reply(message):
            return self._reply(now, exchange, routing_key, message)
        if exchange.endswith('_fanout') and exchange != self.exchange:
            event = self._rpc(now, 'fanout', exchange, routing_key, message)
            event['topic'], event['server'] = exchange[:-len('_fanout')], None
            return event
        if 'event_type' in message and 'method' not in message:
            return self._notification(now, exchange, routing_key, message)
        if 'method' not in message:
            event = _blank_event(now, 'other', exchange, routing_key)
            event['error'] = 'no method in message (keys: %s)' % ','.join(sorted(message)[:6])
            return event
        kind = 'call' if message.get('_msg_id') else 'cast'
        return self._rpc(now, kind, exchange, routing_key, message)

    def _rpc(self, now, kind, exchange, routing_key, message):
        event = _blank_event(now, kind, exchange, routing_key)
        event['topic'], event['server'] = split_routing_key(routing_key, self.topics)
        event.update(namespace=message.get('namespace'), method=message.get('method'),
                     version=message.get('version'), args=summarize_args(message.get('args', {})),
                     msg_id=message.get('_msg_id'), reply_q=message.get('_reply_q'),
                     unique_id=message.get('_unique_id'),
                     request_id=message.get('_context_request_id'),
                     timeout=message.get('_timeout'))
        if kind == 'call' and event['msg_id']:
            self.calls_seen += 1
            self.pending[event['msg_id']] = (now, _qualified(event), event['reply_q'])
            while len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
        return event

    def _reply(self, now, exchange, routing_key, message):
        msg_id = message.get('_msg_id')
        call = self.pending.get(msg_id)
        if call is None:
            return None
        started, method, reply_q = call
        ending = message.get('ending', True)
        event = _blank_event(now, 'reply', exchange, routing_key)
        event.update(msg_id=msg_id, reply_q=reply_q or routing_key,
                     unique_id=message.get('_unique_id'), method=method,
                     elapsed_ms=round((now - started) * 1000.0, 3), ending=bool(ending),
                     result=None, failure=None)
        if message.get('failure'):
            cls, module, text = parse_failure(message['failure'])
            event['status'] = 'failure'
            event['failure'] = {'class': cls, 'module': module, 'message': text}
        elif not ending:
            event['status'] = 'heartbeat'
        else:
            event['status'] = 'ok'
            event['result'] = summarize(message.get('result'))
        if ending:
            self.pending.pop(msg_id, None)
            self.replies_seen += 1
        return event

    def _notification(self, now, exchange, routing_key, message):
        event = _blank_event(now, 'notify', exchange, routing_key)
        event['topic'], event['server'] = split_routing_key(routing_key, self.topics)
        payload = message.get('payload')
        event.update(method=message.get('event_type'), unique_id=message.get('message_id'),
                     request_id=message.get('_context_request_id'),
                     publisher_id=message.get('publisher_id'),
                     priority=message.get('priority'),
                     args={'payload': summarize(payload)})
        return event


def _is_reply(message):
    return '_msg_id' in message and 'method' not in message and (
        'result' in message or 'failure' in message or 'ending' in message)


def _qualified(event):
    if event.get('namespace'):
        return '%s.%s' % (event['namespace'], event['method'])
    return event.get('method')


def format_json(event):
    """One line of JSON for ``event``."""
    return json.dumps(event, default=str)


def format_text(event):
    """One human line for ``event``.

    ``HH:MM:SS.mmm kind  exchange/routing_key  namespace.method vX.Y arg=... #msgid [req]``
    and for replies ``... reply to <msg_id short> in 3.2 ms ok result=...``.
    """
    ts = datetime.datetime.strptime(event['time'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(
        tzinfo=datetime.timezone.utc).astimezone()
    clock = ts.strftime('%H:%M:%S.') + '%03d' % (ts.microsecond // 1000)
    kind = event['kind']
    if kind == 'reply':
        where = _short(event.get('reply_q') or event.get('routing_key'))
    elif kind == 'fanout':
        where = event['exchange']
    else:
        where = '%s/%s' % (event['exchange'], event['routing_key'])
    head = '%s %-6s %-24s' % (clock, kind, where)
    if kind == 'reply':
        text = 'reply to %s in %.1f ms' % (_short(event['msg_id']), event['elapsed_ms'])
        if event['status'] == 'failure':
            failure = event['failure']
            text += ' failure %s: %s' % (failure['class'],
                                         summarize_str(failure['message'], 80))
        elif event['status'] == 'heartbeat':
            text += ' heartbeat (still running)'
        else:
            text += ' ok result=%s' % event['result']
        return '%s %s (%s)' % (head, text, event.get('method') or '?')
    if kind == 'other':
        return '%s undecodable: %s' % (head, event.get('error'))
    parts = [_qualified(event) or '?']
    if kind != 'notify':
        parts.append('v%s' % event['version'] if event.get('version') else 'v-')
    else:
        parts.append('from %s' % (event.get('publisher_id') or '?'))
    parts.extend('%s=%s' % item for item in event['args'].items())
    if kind == 'call':
        parts.append('#%s' % _short(event['msg_id']))
    if event.get('request_id'):
        parts.append('[%s]' % _short(event['request_id']))
    return '%s %s' % (head, ' '.join(parts))


# --------------------------------------------------------------------------------------------
# The broker side


def connection_parameters(url, timeout=5):
    """pika ConnectionParameters for each host of an oslo.messaging transport URL."""
    parsed = oslo_messaging.TransportURL.parse(cfg.ConfigOpts(), url)
    if parsed.transport not in ('rabbit', 'kombu'):
        raise TapError('rpc tap needs a rabbit:// transport URL, not %s://' % parsed.transport)
    vhost = parsed.virtual_host or '/'
    hosts = parsed.hosts or [oslo_messaging.TransportHost(hostname='localhost')]
    params = []
    for host in hosts:
        credentials = pika.PlainCredentials(host.username or 'guest', host.password or 'guest')
        params.append(pika.ConnectionParameters(
            host=host.hostname or 'localhost', port=host.port or 5672, virtual_host=vhost,
            credentials=credentials, connection_attempts=1, socket_timeout=timeout,
            blocked_connection_timeout=timeout * 6))
    return params


def describe_error(exc):
    """``Class: text`` of an exception (pika's connection errors say it only in their repr)."""
    if str(exc):
        return '%s: %s' % (type(exc).__name__, exc)
    return repr(exc) if repr(exc) != '%s()' % type(exc).__name__ else type(exc).__name__


def describe_url(url):
    """``host:port vhost <name>`` of a transport URL, without credentials."""
    try:
        params = connection_parameters(url)
    except Exception:
        return '?'
    return '%s vhost %s' % (','.join('%s:%s' % (p.host, p.port) for p in params),
                            params[0].virtual_host)


class Tap:
    """A live copy of the RPC traffic of ``topics`` on control exchange ``exchange``.

    ``open()`` connects, declares the tap's queue and binds what exists; ``run(emit)`` calls
    ``emit(event)`` for each message until ``stop()``, ``count`` events or ``timeout`` seconds.
    ``note(text)`` receives progress lines (bindings made or awaited, a move to another node
    of a cluster), meant for stderr.
    """

    #: Seconds the tap tries the other nodes of a cluster URL after losing its connection.
    FAILOVER_SECONDS = 30.0

    def __init__(self, url, exchange, topics=None, firehose=True, retry_interval=2.0,
                 note=None):
        self.url = url
        self.exchange = exchange
        self.topics = tuple(topics or DEFAULT_TOPICS)
        self.firehose = firehose
        self.retry_interval = retry_interval
        self.note = note or (lambda text: None)
        self.decoder = Decoder(exchange, self.topics)
        self.queue = 'minisched-tap-%s' % uuid.uuid4().hex[:12]
        self.wanted = []            # (exchange, routing_key), in binding order
        self.bound = set()
        self.given_up = set()       # bindings refused for a reason other than "not there yet"
        self.reply_queues = {}      # _reply_q -> 'exchange' (bound) or 'default' (not bindable)
        self.emitted = 0
        self._fanouts_seen = set()
        self._patterns = any(is_pattern(t) for t in self.topics)
        self._connection = None
        self._channel = None
        self._control = None
        self._stopping = False
        self._emit = None
        self._count = None
        for topic in self.topics:
            if is_pattern(topic):
                self.wanted.append((exchange, topic))
            else:
                self.wanted.append((exchange, topic + '.#'))
                self.wanted.append((topic + '_fanout', topic))
                self._fanouts_seen.add(topic)
        if firehose:
            self.wanted.append((TRACE_EXCHANGE, TRACE_DEFAULT_EXCHANGE_KEY))

    # -- lifecycle

    def open(self):
        try:
            self._connect(connection_parameters(self.url))
        except pika_exc.AMQPError as exc:
            self.close()
            raise TapError('cannot reach RabbitMQ at %s: %s'
                           % (describe_url(self.url), describe_error(exc)))
        return self

    def _connect(self, params):
        """Connect to the first of ``params`` that answers; declare, consume, bind."""
        self._connection = pika.BlockingConnection(params)
        self._channel = self._connection.channel()
        self._control = None
        # Exclusive (hence classic, on the node we are connected to) and auto-delete: it
        # goes away with our connection, whatever queue types the services use.
        self._channel.queue_declare(self.queue, exclusive=True, auto_delete=True)
        self._channel.basic_consume(self.queue, self._on_message, auto_ack=True)
        self._bind_missing()

    def _fail_over(self, exc):
        """After the connection was lost: connect to another node of a cluster URL within
        :attr:`FAILOVER_SECONDS` (the lost one is tried last), declare and bind the queue
        again. Raises TapError with a single node, or when none answers."""
        lost = getattr(getattr(self._connection, '_impl', None), 'params', None)
        params = connection_parameters(self.url)
        if len(params) < 2:
            raise TapError('connection to RabbitMQ lost: %s' % describe_error(exc))
        params.sort(key=lambda p: lost is not None and (p.host, p.port) == (lost.host,
                                                                            lost.port))
        self.close()
        self.bound.clear()  # the new queue has no binding yet
        self.reply_queues.clear()
        deadline = time.monotonic() + self.FAILOVER_SECONDS
        while not self._stopping:
            try:
                self._connect(params)
                break
            except pika_exc.AMQPError as retry_exc:
                self.close()
                if time.monotonic() >= deadline:
                    raise TapError('connection to RabbitMQ lost (%s), and no node of %s '
                                   'answered within %d s: %s' % (
                                       describe_error(exc), describe_url(self.url),
                                       self.FAILOVER_SECONDS, describe_error(retry_exc)))
                time.sleep(1)
        if self._connection is None:  # stopped meanwhile
            return
        now = getattr(self._connection._impl, 'params', None)
        self.note('connection to %s lost (%s); tapping through %s now: messages published '
                  'in between were not seen' % (
                      '%s:%s' % (lost.host, lost.port) if lost else 'RabbitMQ',
                      describe_error(exc), '%s:%s' % (now.host, now.port) if now else '?'))

    def close(self):
        connection, self._connection = self._connection, None
        if connection is not None and connection.is_open:
            try:
                connection.close()  # the exclusive queue goes with the connection
            except Exception:  # closing a broken connection: nothing left to release
                pass

    def stop(self):
        """Make ``run`` return at its next turn (callable from a signal handler)."""
        self._stopping = True

    def missing(self):
        return [b for b in self.wanted if b not in self.bound and b not in self.given_up]

    def run(self, emit, count=None, timeout=None):
        """Deliver events to ``emit`` until stopped; returns the number of events emitted."""
        if self._connection is None:
            self.open()
        self._emit, self._count = emit, count
        deadline = None if timeout is None else time.monotonic() + timeout
        next_retry = time.monotonic() + self.retry_interval
        while not self._stopping:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            try:
                if now >= next_retry:
                    self._bind_missing()
                    next_retry = now + self.retry_interval
                limit = 0.2 if deadline is None else max(0.0, min(0.2, deadline - now))
                self._connection.process_data_events(time_limit=limit)
            except pika_exc.AMQPError as exc:
                if self._stopping:
                    break
                self._fail_over(exc)
        return self.emitted

    # -- bindings

    def _control_channel(self):
        if self._control is None or not self._control.is_open:
            self._control = self._connection.channel()
        return self._control

    def _try_bind(self, exchange, routing_key):
        """Bind if ``exchange`` exists: True, False (not there yet), None (refused)."""
        channel = self._control_channel()
        try:
            channel.exchange_declare(exchange, passive=True)
            channel.queue_bind(self.queue, exchange, routing_key=routing_key)
        except pika_exc.ChannelClosedByBroker as exc:
            self._control = None
            if exc.reply_code == 404:
                return False
            self.note('cannot bind to exchange %s (%s): %s' % (exchange, routing_key,
                                                               exc.reply_text))
            return None
        return True

    def _bind_missing(self):
        waiting = []
        for binding in self.missing():
            result = self._try_bind(*binding)
            if result:
                self.bound.add(binding)
            elif result is None:
                self.given_up.add(binding)
            else:
                waiting.append(binding)
        return waiting

    def _watch_fanout(self, topic):
        if topic and topic not in self._fanouts_seen:
            self._fanouts_seen.add(topic)
            binding = (topic + '_fanout', topic)
            self.wanted.append(binding)
            if self._try_bind(*binding):
                self.bound.add(binding)

    def _watch_reply_queue(self, reply_q):
        if not reply_q or reply_q in self.reply_queues:
            return
        if self._try_bind(reply_q, reply_q):
            self.reply_queues[reply_q] = 'exchange'
            self.bound.add((reply_q, reply_q))
        else:
            # Recent oslo.messaging (18.x here) replies through the default exchange, which
            # cannot be bound: only the firehose shows those replies.
            self.reply_queues[reply_q] = 'default'

    # -- messages

    def _on_message(self, channel, method, properties, body):
        if self._stopping:
            return
        event = self.decoder.handle(method.exchange, method.routing_key, body,
                                    properties.headers or {}, now=time.time())
        if event is None:
            return
        if event['kind'] in ('call', 'cast') and self._patterns:
            self._watch_fanout(event['topic'])
        if event['kind'] == 'call':
            self._watch_reply_queue(event['reply_q'])
        self.emitted += 1
        self._emit(event)
        if self._count is not None and self.emitted >= self._count:
            self._stopping = True
