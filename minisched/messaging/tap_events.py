"""What the RPC tap (:mod:`minisched.messaging.tap`) makes of each message it sees: an event.

Every message becomes an *event*: a JSON-able dict (see ``Decoder.handle``), printed one per
line by ``format_text`` or ``format_json``. Nothing here needs a broker: the decoding of
oslo.messaging's envelope (and of kombu's compression), the summaries of arguments and
objects, and the pairing of replies with their calls.
"""
import bz2
import collections
import datetime
import json
import lzma
import re
import time
import zlib

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
