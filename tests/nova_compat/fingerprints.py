"""Object fingerprints, field by field: ``python -m tests.nova_compat.fingerprints nova|minisched``.

Prints, as JSON, every versioned object one project registers: its version, its
oslo.versionedobjects fingerprint (``ObjectVersionChecker``: name, version, the ``repr`` of
each field, the signature of each remotable method) and those parts one by one, so that a
difference can be named rather than only detected. Run once per project, each in a process
of its own: both projects register classes by object name in oslo's one registry, and both
register options on ``cfg.CONF``.
"""
import json
import sys
import warnings

#: The object namespace (``OBJ_PROJECT_NAMESPACE``) of each project.
NAMESPACES = {'nova': 'nova', 'minisched': 'minisched'}


def describe(project):
    """``{name: {'fingerprint', 'version', 'fields': {name: repr}, 'methods': {name: spec}}}``
    for every object class of ``project`` (the newest registered version of each)."""
    from oslo_versionedobjects import base
    from oslo_versionedobjects import fixture

    warnings.simplefilter('ignore')
    if project == 'nova':
        from nova import objects
    else:
        from minisched import objects
    objects.register_all()
    namespace = NAMESPACES[project]
    classes = {}
    for name, versions in base.VersionedObjectRegistry.obj_classes().items():
        own = [cls for cls in versions if cls.OBJ_PROJECT_NAMESPACE == namespace]
        if own:
            classes[name] = own
    checker = fixture.ObjectVersionChecker(classes)
    hashes = checker.get_hashes()
    described = {}
    for name, versions in classes.items():
        cls = versions[0]
        methods = {}
        for attr in dir(cls):
            thing = getattr(cls, attr)
            method = checker._find_remotable_method(cls, thing)
            if method:
                methods[attr] = repr(fixture.get_method_spec(method))
        described[name] = {
            'fingerprint': hashes[name],
            'version': cls.VERSION,
            'fields': {field: repr(value) for field, value in cls.fields.items()},
            'methods': methods,
        }
    return described


def differences(nova, ours):
    """Lines naming each way an object of ``ours`` differs from Nova's one of that name."""
    lines = []
    for name in sorted(ours):
        mine = ours[name]
        theirs = nova.get(name)
        if theirs is None:
            lines.append('%s: Nova 34 has no object of that name' % name)
            continue
        if mine['fingerprint'] == theirs['fingerprint']:
            continue
        head = '%s %s (Nova %s)' % (name, mine['version'], theirs['version'])
        if mine['version'] != theirs['version']:
            lines.append('%s: version differs' % head)
        for kind in ('fields', 'methods'):
            a, b = mine[kind], theirs[kind]
            for key in sorted(set(b) - set(a)):
                lines.append('%s: %s %s missing: Nova has %s' % (head, kind[:-1], key, b[key]))
            for key in sorted(set(a) - set(b)):
                lines.append('%s: %s %s is not in Nova: %s' % (head, kind[:-1], key, a[key]))
            for key in sorted(set(a) & set(b)):
                if a[key] != b[key]:
                    lines.append('%s: %s %s is %s, Nova has %s'
                                 % (head, kind[:-1], key, a[key], b[key]))
        if len(lines) and not lines[-1].startswith(head):
            lines.append('%s: fingerprint differs (child versions?)' % head)
    return lines


if __name__ == '__main__':
    json.dump(describe(sys.argv[1]), sys.stdout, sort_keys=True)
