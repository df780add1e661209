"""Conductor RPC endpoint: runs remoted object methods against the database.

The methods run with the caller's context, so the database API's checks apply to whoever
sent the message (see ``minisched.context``). A refusal goes back to the caller as an
expected exception (Forbidden, or the NotFound of a row of another project) and is logged
at WARNING with the object, the method and the context's project and user. A database error
that passes by itself (connection lost or refused, deadlock: see ``db_errors``) goes back as
DBTransientError, also expected and logged once at WARNING, so that the caller can retry it.
"""
import copy
import datetime
import logging

import oslo_messaging as messaging
from oslo_service import periodic_task
from oslo_versionedobjects import exception as ovo_exc

from minisched.conductor import db_errors
from minisched.conductor import stuck_builds
from minisched import context as ms_context
from minisched import exception
from minisched import manager
from minisched.objects import base as objects_base

LOG = logging.getLogger(__name__)

#: The messages that start builds: run ``[conductor] max_concurrent_schedule_and_build`` at
#: a time per worker, after the messages of builds already under way.
NEW_BUILDS = frozenset([('compute_task', 'schedule_and_build_instances')])


class ConductorManager(manager.Manager):
    """Mission: conduct things (database work for services that have none)."""

    target = messaging.Target(version='3.0')

    def __init__(self, conf, host=None):
        super().__init__(conf, host=host, service_name='conductor')
        self.additional_endpoints = [db_errors.ComputeTaskManager(conf, self.host)]
        self.stuck_builds = stuck_builds.StuckBuilds(conf, self.host)
        # New builds wait for the calls of the builds under way (rpc_admission).
        self.rpc_admission = (NEW_BUILDS, conf.conductor.max_concurrent_schedule_and_build)
        timeout = conf.conductor.stuck_build_timeout_seconds
        self.configure_periodic_tasks({'_fail_stuck_builds':
                                       stuck_builds.check_spacing(timeout)})
        if 0 < timeout < 2 * conf.long_rpc_timeout:
            LOG.warning('[conductor] stuck_build_timeout_seconds (%d) is shorter than twice '
                        '[DEFAULT] long_rpc_timeout (%d): builds whose compute is still '
                        'retrying its writes may be set to ERROR.', timeout,
                        conf.long_rpc_timeout)

    @periodic_task.periodic_task(spacing=stuck_builds.MAX_SPACING)
    def _fail_stuck_builds(self, context):
        """End the builds nothing else will finish (``[conductor]
        stuck_build_timeout_seconds``)."""
        self.stuck_builds.run(context)

    def object_class_action_versions(self, context, objname, objmethod, object_versions,
                                     args, kwargs):
        objclass = _resolve_class(objname, object_versions)
        _check_remotable(objclass, objname, objmethod)
        result = _dispatch(context, objclass, objmethod, (context,) + tuple(args or ()),
                           kwargs)
        if isinstance(result, objects_base.MinischedObject):
            # Send back what the caller can read: backport to the version it asked for.
            requested = object_versions.get(result.obj_name(), result.VERSION)
            if result.VERSION != requested:
                return result.obj_to_primitive(target_version=requested,
                                               version_manifest=object_versions)
        return result

    def object_action(self, context, objinst, objmethod, args, kwargs):
        if not isinstance(objinst, objects_base.MinischedObject):
            _raise_expected(exception.InvalidObjectRequest(
                reason='objinst must be a minisched object primitive'))
        _check_remotable(objinst, objinst.obj_name(), objmethod)
        before = _field_values(objinst)
        result = _dispatch(context, objinst, objmethod, tuple(args or ()), kwargs)
        updates = {}
        for name, field in objinst.fields.items():
            if not objinst.obj_attr_is_set(name):
                continue
            value = getattr(objinst, name)
            if name not in before or not _same(before[name], value):
                updates[name] = field.to_primitive(objinst, name, value)
        updates['obj_what_changed'] = objinst.obj_what_changed()
        return updates, result

    def object_backport_versions(self, context, objinst, object_versions):
        if not isinstance(objinst, objects_base.MinischedObject) or \
                not isinstance(object_versions, dict):
            _raise_expected(exception.InvalidObjectRequest(
                reason='objinst must be a minisched object primitive and object_versions a '
                       'dict'))
        target = object_versions.get(objinst.obj_name())
        return objinst.obj_to_primitive(target_version=target,
                                        version_manifest=object_versions)


#: Field values a method cannot change in place: kept as they are, not copied.
_IMMUTABLE = (str, int, float, bool, type(None), datetime.datetime)


class _Nested:
    """A nested object (or list of them) as it was before the method: itself, its items,
    and the fields each had changed."""

    __slots__ = ('obj', 'items')

    def __init__(self, obj):
        self.obj = obj
        items = obj if isinstance(obj, list) else [obj]
        self.items = [(item, item.obj_what_changed()) for item in items]

    def same(self, value):
        items = value if isinstance(value, list) else [value]
        return value is self.obj and len(items) == len(self.items) and all(
            item is old and item.obj_what_changed() == changes
            for item, (old, changes) in zip(items, self.items))


def _nested(value):
    """Whether ``value`` is an object or a non-empty list of objects (:class:`_Nested`)."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, objects_base.MinischedObject) for v in value)
    return isinstance(value, objects_base.MinischedObject)


def _field_values(objinst):
    """``{field: value}`` of the set fields of ``objinst`` as they are now, for Nova's diff
    of an object before and after its method (``object_action``).

    Nova diffs against ``obj_clone()``, a deep copy of the whole object; values that cannot
    change in place (numbers, strings, datetimes) need no copy, and dicts and lists are
    deep-copied as the clone copied them. A nested object (or a list of them) is kept with
    the fields it had changed (:class:`_Nested`): a copy of it never compares equal (objects
    have no equality), so Nova sends every nested object back after every method (an
    Instance's flavor with each save) although the caller has it already. A method that
    replaces it, or sets any field of it (which marks the field changed), still sends it
    back. A state report's Service has nothing to copy; the clone was a tenth of its
    handling.
    """
    values = {}
    for name in objinst.fields:
        if objinst.obj_attr_is_set(name):
            value = getattr(objinst, name)
            if isinstance(value, _IMMUTABLE):
                values[name] = value
            elif _nested(value):
                values[name] = _Nested(value)
            else:
                values[name] = copy.deepcopy(value)
    return values


def _same(before, value):
    """Whether ``value`` is what :func:`_field_values` recorded as ``before``."""
    return before.same(value) if isinstance(before, _Nested) else before == value


def _log_refusal(context, target, method, exc):
    """Who was refused what: identities only, never the context's token."""
    reason = exc.format_message()
    if not isinstance(exc, exception.Forbidden):
        reason += ' (it belongs to another project)'
    LOG.warning('Refused %(object)s.%(method)s to project %(project)s, user %(user)s: '
                '%(reason)s', {'object': target.obj_name(), 'method': method,
                               'project': context.project_id, 'user': context.user_id,
                               'reason': reason})


def _raise_expected(exc):
    """Raise ``exc`` to the caller as an expected exception (no server-side traceback)."""
    try:
        raise exc
    except Exception:
        raise messaging.ExpectedException()


def _resolve_class(objname, object_versions):
    if not isinstance(object_versions, dict) or objname not in object_versions:
        _raise_expected(exception.InvalidObjectRequest(
            reason='object_versions has no version for %s' % objname))
    try:
        return objects_base.MinischedObject.obj_class_from_name(objname,
                                                                object_versions[objname])
    except ovo_exc.UnsupportedObjectError:
        _raise_expected(exception.UnsupportedObjectError(objtype=objname))
    except ovo_exc.IncompatibleObjectVersion as exc:
        _raise_expected(exception.IncompatibleObjectVersion(
            objname=objname, objver=object_versions[objname],
            supported=exc.kwargs.get('supported')))


def _check_remotable(target, objname, objmethod):
    """Only remotable methods may be called over RPC: never arbitrary attributes.

    ``target`` is the class of a class action or the object of an object action; the method
    must be bound to it, so that neither kind can call a method of the other kind.
    """
    method = getattr(target, objmethod, None) if isinstance(objmethod, str) else None
    if (method is None or not getattr(method, 'remotable', False)
            or getattr(method, '__self__', None) is not target):
        _raise_expected(exception.InvalidObjectRequest(
            reason='%s has no remotable method %r' % (objname, objmethod)))


def _dispatch(context, target, method, args, kwargs):
    """Call the method; its exceptions go back to the caller without a server traceback.

    A transient database error becomes DBTransientError (the driver's class would reach the
    caller as a RemoteError it cannot tell from a bug); any other unexpected exception goes
    back as it is, logged with its traceback by oslo.messaging.
    """
    if kwargs is not None and not isinstance(kwargs, dict):
        _raise_expected(exception.InvalidObjectRequest(reason='kwargs must be a dict'))
    try:
        return getattr(target, method)(*args, **(kwargs or {}))
    except exception.MinischedException as exc:
        if not ms_context.is_refusal(exc):
            raise messaging.ExpectedException()
        refusal, expected = exc, messaging.ExpectedException()  # it keeps the exception
    except (TypeError, ValueError) as exc:
        LOG.info('Rejected %s.%s: %s', _name(target), method, exc)
        _raise_expected(exception.InvalidObjectRequest(
            reason='%s: %s' % (method, exc)))
    except Exception as exc:
        if not db_errors.is_transient(exc):
            raise
        refusal, failure = None, db_errors.reason(exc)
    # Logged out of the except block, where oslo.log would append the exception.
    if refusal is None:
        LOG.warning('Database unavailable for %(object)s.%(method)s, answered as transient: '
                    '%(reason)s', {'object': _name(target), 'method': method,
                                   'reason': failure})
        _raise_expected(exception.DBTransientError(reason=failure))
    _log_refusal(context, target, method, refusal)
    raise expected


def _name(target):
    """The object name of a class action's class or an object action's object."""
    return target.obj_name() if hasattr(target, 'obj_name') else getattr(
        target, '__name__', type(target).__name__)
