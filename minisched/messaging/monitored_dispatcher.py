"""The dispatcher of minisched's RPC servers: malformed messages refused before any
endpoint runs.

Part of what a service does with the RPC messages that arrive
(:mod:`minisched.messaging.incoming`).
"""
import inspect
import logging
import threading
import types
import typing

import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

from minisched import exception
from minisched.messaging import call_monitor
from minisched.messaging import incoming_log
from minisched.messaging import large_messages
from minisched.messaging import trace

LOG = logging.getLogger(__name__)

#: Deepest nesting of lists and dicts accepted in a message's arguments. minisched's own
#: messages stay under 20 levels; decoding goes one Python stack frame per level or more.
MAX_ARGUMENT_DEPTH = 100


def _nesting_deeper_than(value, limit):
    """Whether ``value`` nests lists/tuples/dicts more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))
    return False


#: ``active`` while a dispatcher decodes arguments (per thread, or green thread).
_decoding = threading.local()


class _QuietWhileDecoding(logging.Filter):
    """Drops oslo.versionedobjects' "Unable to instantiate unregistered object type" ERROR
    while a dispatcher decodes arguments: the dispatcher reports the same error, once per
    kind, and the unfiltered line came once per message."""

    def filter(self, record):
        return not (getattr(_decoding, 'active', False) and str(record.msg).startswith(
            'Unable to instantiate unregistered object type'))


_OVO_LOGGER = logging.getLogger('object')  # oslo.versionedobjects.base's logger
if not any(isinstance(f, _QuietWhileDecoding) for f in _OVO_LOGGER.filters):
    _OVO_LOGGER.addFilter(_QuietWhileDecoding())


class _Malformed(Exception):
    """A message an endpoint cannot take: ``kind`` (bounded, for rate limiting), ``reason``
    (for the log) and ``error`` (what a caller gets back)."""

    def __init__(self, kind, reason, error):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.error = error
        self.endpoint = None  # the endpoint that has the method, once known


class _Parameters:
    """What an endpoint method takes after its context: names, required names, and the
    classes its annotations give (a value of another class is refused; None passes where
    the annotation allows it or the default is None)."""

    __slots__ = ('names', 'required', 'any_name', 'types')

    def __init__(self, method):
        self.names, self.required, self.any_name, self.types = set(), set(), True, {}
        try:
            parameters = list(inspect.signature(method).parameters.values())[1:]
        except (TypeError, ValueError):
            return  # not introspectable: anything goes, as before
        try:
            hints = typing.get_type_hints(method)
        except Exception:  # an annotation that does not resolve: checked by nobody
            hints = {}
        self.any_name = False
        for parameter in parameters:
            if parameter.kind == parameter.VAR_KEYWORD:
                self.any_name = True
            if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                continue
            self.names.add(parameter.name)
            if parameter.default is parameter.empty:
                self.required.add(parameter.name)
            classes = _classes_of(hints.get(parameter.name))
            if classes:
                if parameter.default is None:
                    classes = classes + (type(None),)
                self.types[parameter.name] = classes

    def problem(self, kwargs):
        """Why ``kwargs`` do not fit, or None."""
        if not self.any_name:
            unexpected = kwargs.keys() - self.names
            if unexpected:
                return 'unexpected argument(s) %s' % ', '.join(sorted(map(repr, unexpected)))
        missing = self.required - kwargs.keys()
        if missing:
            return 'missing argument(s) %s' % ', '.join(sorted(map(repr, missing)))
        for name, classes in self.types.items():
            value = kwargs.get(name)
            if name in kwargs and not isinstance(value, classes):
                return 'argument %r is %s, not %s' % (
                    name, type(value).__name__,
                    ' or '.join(c.__name__ for c in classes if c is not type(None)) or 'None')
        return None


def _classes_of(hint):
    """The classes an annotation allows, as a tuple; () when it is not a plain class, an
    Optional/Union of classes or a parametrized builtin (whose items are not checked)."""
    if hint is None:
        return ()
    if isinstance(hint, type):
        return () if hint is object else (hint,)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        classes = tuple(c for arg in typing.get_args(hint) for c in _classes_of(arg)
                        or ((type(None),) if arg is type(None) else (None,)))
        return () if None in classes else classes
    if isinstance(origin, type):
        return (origin,)
    return ()


class MonitoredDispatcher(dispatcher.RPCDispatcher):
    """oslo.messaging's RPCDispatcher, with call-monitor heartbeats sent by
    :data:`~minisched.messaging.call_monitor.CALL_MONITOR` and malformed messages refused before
    any endpoint runs.

    Checked, in this order: the message's shape (method a name, version and namespace
    strings, arguments an object nested at most :data:`MAX_ARGUMENT_DEPTH` levels: decoding
    recurses once per level, and a message close to the interpreter's recursion limit would
    fail wherever the limit happened to fall); an endpoint with that method at that version;
    the context and every argument load; the argument names and annotated types fit the
    method. A refused message gets one WARNING (rate-limited by
    :data:`~minisched.messaging.incoming_log.INCOMING_LOG`) naming ``topic``, the method, the
    request id and the reason; for a call, the error goes back to the caller (as an
    ExpectedException, which oslo.messaging does not log again).
    """

    def __init__(self, endpoints, serializer, access_policy=None, topic=None, outgoing=None):
        super().__init__(endpoints, serializer, access_policy)
        self.topic = topic
        #: What the wire profile sends back for an error's exc_info
        #: (:meth:`minisched.messaging.wire.Profile.outgoing`).
        self._outgoing = outgoing
        self._parameters = {}  # (endpoint class, method name) -> _Parameters

    def dispatch(self, incoming):
        token = call_monitor.CALL_MONITOR.watch(incoming) if incoming.client_timeout else None
        # After watch(): the monitor's thread, started by the first call, must not count as
        # working for this message.
        handling = trace.receive(self.topic, incoming) if trace.ENABLED else None
        try:
            try:
                endpoint, method, ctxt, kwargs = self._prepare(incoming)
            except _Malformed as exc:
                malformed = exc
            else:
                return self._invoke(incoming, endpoint, method, ctxt, kwargs)
            # Reported outside the except block: oslo.log would append the exception.
            self._clean_up(incoming, malformed)
            self._refuse(incoming, malformed)
        except messaging.ExpectedException as exc:
            if handling is not None:
                handling.failed = True
            if self._outgoing is not None:
                exc.exc_info = self._outgoing(exc.exc_info)
            raise
        except BaseException:
            if handling is not None:
                handling.failed = True
            raise
        finally:
            if handling is not None:
                handling.done()
            call_monitor.CALL_MONITOR.unwatch(token)
            if getattr(incoming.message, 'size', 0) >= large_messages.LARGE_MESSAGE_BYTES:
                # oslo.messaging's executor keeps its last message until it gets another:
                # a large one, decoded, would stay in memory for that long. The server reads
                # nothing of it after dispatch (the method name was read before).
                incoming.message.clear()
                large_messages.COLLECTION.schedule()

    def _prepare(self, incoming):
        """``(endpoint, method, context, arguments)`` of ``incoming``; _Malformed when an
        endpoint could not take it."""
        message = incoming.message
        method = message.get('method')
        if not isinstance(method, str) or not method:
            raise _Malformed('malformed',
                             'method %s is not a name' % incoming_log._short(repr(method)),
                             dispatcher.NoSuchMethod(method))
        namespace = message.get('namespace')
        version = message.get('version', '1.0')
        for name, value in (('version', version), ('namespace', namespace)):
            if value is not None and not isinstance(value, str):
                raise _Malformed('malformed', '%s is a %s' % (name, type(value).__name__),
                                 dispatcher.UnsupportedVersion(version, method=method))
        args = message.get('args', {})
        if not isinstance(args, dict):
            reason = 'args is a %s, not an object' % type(args).__name__
            raise _Malformed('malformed', reason, exception.Invalid(reason=reason))
        endpoint = self._endpoint(method, namespace, version)
        try:
            return self._decode(incoming, endpoint, method, args)
        except _Malformed as exc:
            exc.endpoint = endpoint
            raise

    def _decode(self, incoming, endpoint, method, args):
        if _nesting_deeper_than(args, MAX_ARGUMENT_DEPTH):
            reason = 'arguments nested deeper than %d levels' % MAX_ARGUMENT_DEPTH
            raise _Malformed('bad arguments', reason,
                             exception.InvalidObjectRequest(reason=reason))
        try:
            ctxt = self.serializer.deserialize_context(incoming.ctxt)
        except Exception as exc:
            reason = 'request context does not load: %s: %s' % (type(exc).__name__,
                                                                exception.first_line(exc))
            raise _Malformed('bad context', reason, exception.Invalid(reason=reason)) from None
        if getattr(getattr(endpoint, method, None), 'undecoded', False):
            return endpoint, method, ctxt, dict(args)  # a method that takes them as they came
        kwargs = {}
        _decoding.active = True
        try:
            for name, value in args.items():
                try:
                    kwargs[name] = self.serializer.deserialize_entity(ctxt, value)
                except messaging.ExpectedException as exc:  # a server_side serializer's
                    raise self._bad_argument(name, exc.exc_info[1]) from None
                except Exception as exc:
                    raise self._bad_argument(name, exc) from None
        finally:
            _decoding.active = False
        problem = self._parameters_of(endpoint, method).problem(kwargs)
        if problem:
            raise _Malformed('bad arguments', problem,
                             exception.Invalid(reason='%s(): %s' % (method, problem)))
        return endpoint, method, ctxt, kwargs

    @staticmethod
    def _bad_argument(name, exc):
        if isinstance(exc, exception.MinischedException):
            reason = 'argument %r does not load: %s' % (name, exc.format_message())
            return _Malformed('bad arguments', reason, exc)
        reason = 'argument %r does not load: %s: %s' % (name, type(exc).__name__,
                                                       exception.first_line(exc))
        return _Malformed('bad arguments', reason,
                          exception.InvalidObjectRequest(reason=reason))

    def _endpoint(self, method, namespace, version):
        """The base class's endpoint choice, without the watchdog thread and event it makes
        for every message, started or not (a tenth of a millisecond under eventlet): the
        first endpoint whose target takes the namespace and version and which has the method
        (allowed by the access policy). _Malformed of NoSuchMethod when an endpoint took the
        version but none had the method, else of UnsupportedVersion."""
        found_compatible = False
        try:
            for endpoint in self.endpoints:
                target = getattr(endpoint, 'target', None) or self._default_target
                if not (self._is_namespace(target, namespace) and
                        self._is_compatible(target, version)):
                    continue
                if hasattr(endpoint, method) and self.access_policy.is_allowed(endpoint,
                                                                               method):
                    return endpoint
                found_compatible = True
        except (TypeError, ValueError) as exc:  # a version that is not "<major>.<minor>"
            raise _Malformed('unsupported version', 'version %r: %s' % (
                version, exception.first_line(exc)),
                dispatcher.UnsupportedVersion(version, method=method)) from None
        if found_compatible:
            raise _Malformed('unknown method', 'no such method',
                             dispatcher.NoSuchMethod(method))
        raise _Malformed('unsupported version', 'no endpoint at version %s%s' % (
            version, ' of namespace %s' % namespace if namespace else ''),
            dispatcher.UnsupportedVersion(version, method=method))

    def _parameters_of(self, endpoint, method):
        key = (type(endpoint), method)
        parameters = self._parameters.get(key)
        if parameters is None:
            parameters = self._parameters[key] = _Parameters(getattr(endpoint, method))
        return parameters

    @staticmethod
    def _clean_up(incoming, malformed):
        """Let the endpoint undo what was written for a message it will never run (the
        build request the API wrote before its cast): its ``_clean_up_refused(method, args,
        reason)``, ``args`` as they arrived, undecoded (private: no message can call it)."""
        refused = getattr(malformed.endpoint, '_clean_up_refused', None)
        if refused is None:
            return
        method = incoming.message.get('method')
        try:
            refused(method, incoming.message.get('args'), malformed.reason)
        except Exception:
            LOG.exception('Could not clean up after the refused %s (request %s)', method,
                          incoming_log._short(str(_request_id(incoming))))

    def _refuse(self, incoming, malformed):
        """Report ``malformed`` (rate-limited) and raise what the caller gets back."""
        method = incoming.message.get('method')
        # Only a method an endpoint has goes into the key: the kinds stay a bounded set.
        known = malformed.kind not in ('malformed', 'unknown method', 'unsupported version')
        what = 'call' if getattr(incoming, 'reply_q', None) else 'cast'
        incoming_log.INCOMING_LOG.log(
            (self.topic, method if known else None, malformed.kind), logging.WARNING,
            'malformed messages to %s (%s%s)' % (self.topic, malformed.kind,
                                                 ' of %s' % method if known else ''),
            'Rejected a malformed %s to %s (method %s, request %s): %s', what, self.topic,
            incoming_log._short(repr(method)), incoming_log._short(str(_request_id(incoming))),
            incoming_log._short(malformed.reason, 300))
        try:
            raise malformed.error
        except BaseException:
            raise messaging.ExpectedException() from None

    def _invoke(self, incoming, endpoint, method, ctxt, kwargs):
        try:
            result = getattr(endpoint, method)(ctxt, **kwargs)
        except messaging.ExpectedException:
            raise
        except Exception as exc:
            failure = exc
        else:
            return self.serializer.serialize_entity(ctxt, result)
        self._report_failure(incoming, method, failure)
        try:
            raise failure
        except Exception:
            raise messaging.ExpectedException() from None

    def _report_failure(self, incoming, method, exc):
        """Log an endpoint's exception with its traceback, once per kind and interval: a
        flood of messages that all fail the same way (garbage the checks above cannot
        recognise, a database down) must not write one traceback each."""
        frame = exc.__traceback__
        while frame.tb_next is not None:
            frame = frame.tb_next
        where = '%s:%d' % (frame.tb_frame.f_code.co_filename, frame.tb_lineno)
        incoming_log.INCOMING_LOG.log(
            (self.topic, method, type(exc).__name__, where), logging.ERROR,
            'failures of %s on %s like the one above (%s at %s)' % (
                method, self.topic, type(exc).__name__, where),
            'Exception during message handling (method %r to %s, request %s)',
            method, self.topic, incoming_log._short(str(_request_id(incoming))),
            exc_info=(type(exc), exc, exc.__traceback__))



def _request_id(incoming):
    ctxt = getattr(incoming, 'ctxt', None)
    return ctxt.get('request_id') if isinstance(ctxt, dict) else None
