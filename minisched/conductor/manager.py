"""Conductor RPC endpoint: runs remoted object methods against the database.

The methods run with the caller's context, so the database API's checks apply to whoever
sent the message (see ``minisched.context``). A refusal goes back to the caller as an
expected exception (Forbidden, or the NotFound of a row of another project) and is logged
at WARNING with the object, the method and the context's project and user.
"""
import logging

import oslo_messaging as messaging
from oslo_versionedobjects import exception as ovo_exc

from minisched.conductor import compute_task
from minisched import context as ms_context
from minisched import exception
from minisched import manager
from minisched.objects import base as objects_base

LOG = logging.getLogger(__name__)


class ConductorManager(manager.Manager):
    """Mission: conduct things (database work for services that have none)."""

    target = messaging.Target(version='3.0')

    def __init__(self, conf, host=None):
        super().__init__(conf, host=host, service_name='conductor')
        self.additional_endpoints = [compute_task.ComputeTaskManager(conf, self.host)]

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
        oldobj = objinst.obj_clone()
        result = _dispatch(context, objinst, objmethod, tuple(args or ()), kwargs)
        updates = {}
        for name, field in objinst.fields.items():
            if not objinst.obj_attr_is_set(name):
                continue
            if (not oldobj.obj_attr_is_set(name) or
                    getattr(oldobj, name) != getattr(objinst, name)):
                updates[name] = field.to_primitive(objinst, name, getattr(objinst, name))
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
    """Call the method; its exceptions go back to the caller without a server traceback."""
    if kwargs is not None and not isinstance(kwargs, dict):
        _raise_expected(exception.InvalidObjectRequest(reason='kwargs must be a dict'))
    try:
        return getattr(target, method)(*args, **(kwargs or {}))
    except exception.MinischedException as exc:
        if not ms_context.is_refusal(exc):
            raise messaging.ExpectedException()
        refusal, expected = exc, messaging.ExpectedException()  # it keeps the exception
    except (TypeError, ValueError) as exc:
        LOG.info('Rejected %s.%s: %s', getattr(target, '__name__', type(target).__name__),
                 method, exc)
        _raise_expected(exception.InvalidObjectRequest(
            reason='%s: %s' % (method, exc)))
    # A refusal, logged out of the except block, where oslo.log would append the exception.
    _log_refusal(context, target, method, refusal)
    raise expected
