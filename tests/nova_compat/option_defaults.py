"""Option defaults: ``python -m tests.nova_compat.option_defaults nova|minisched``.

Prints, as JSON, ``{"group.name": repr(default)}`` for every option the project lists for its
sample config. Run once per project, each in a process of its own: both register their
options on ``cfg.CONF``, under the same names.
"""
import json
import sys
import warnings


def defaults(project):
    warnings.simplefilter('ignore')
    if project == 'nova':
        from nova.conf import opts
    else:
        from minisched.conf import opts
    found = {}
    for group, options in opts.list_opts():
        group_name = getattr(group, 'name', group)
        for opt in options:
            found['%s.%s' % (group_name, opt.dest)] = repr(opt.default)
    return found


if __name__ == '__main__':
    json.dump(defaults(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
