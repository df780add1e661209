"""Server groups: (anti-)affinity policies and their member instances.

``minisched-manage group create NAME --policy P [--max-server-per-host N]``, ``group list``,
``group show NAME|UUID`` and ``group delete NAME|UUID``. As Nova's API (microversion 2.64):
one policy per group; ``max_server_per_host`` is the only rule and only ``anti-affinity``
takes it. Members are added by ``server create --group``; deleting a group leaves them be.
"""
from oslo_utils import uuidutils

from minisched import context, exception
from minisched.cmd import manage_display, manage_flavor
from minisched.objects import instance_group as group_obj

DEFAULT_OWNER = 'admin'


def find_group(ctxt, name_or_uuid):
    """The group with uuid ``name_or_uuid``, else the only group of that name."""
    if uuidutils.is_uuid_like(name_or_uuid):
        try:
            return group_obj.InstanceGroup.get_by_uuid(ctxt, name_or_uuid)
        except exception.InstanceGroupNotFound:
            pass
    matches = [g for g in group_obj.InstanceGroupList.get_all(ctxt) if g.name == name_or_uuid]
    if not matches:
        raise exception.InstanceGroupNotFound(group_uuid=name_or_uuid)
    return manage_display.only_match('server group', name_or_uuid, matches)


def _rules(group):
    return manage_flavor.format_pairs(group.rules).replace("'", '')


class GroupCommands:
    """Server groups: (anti-)affinity policies and their members."""

    def create(self, name, policy, max_server_per_host=None, project=DEFAULT_OWNER,
               user=DEFAULT_OWNER):
        rules = {}
        if max_server_per_host is not None:
            if policy != 'anti-affinity':
                return manage_flavor.error('Only anti-affinity policy supports rules.')
            rules['max_server_per_host'] = str(max_server_per_host)
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        group = group_obj.InstanceGroup(ctxt, name=name, policy=policy, project_id=project,
                                        user_id=user)
        group._rules = rules
        group.create()
        return self._show(group)

    def list(self):
        groups = group_obj.InstanceGroupList.get_all(context.get_admin_context())
        rows = [(g.uuid, g.name, g.project_id, g.user_id, g.policy, _rules(g), len(g.members))
                for g in sorted(groups, key=lambda g: (g.name or '', g.uuid))]
        return ('ID', 'Name', 'Project', 'User', 'Policy', 'Rules', 'Members'), rows

    def show(self, group):
        return self._show(find_group(context.get_admin_context(), group))

    def delete(self, group):
        found = find_group(context.get_admin_context(), group)
        found.destroy()
        print('Server group %s (%s) deleted.' % (found.name, found.uuid))
        return 0

    @staticmethod
    def _show(group):
        return manage_display.fields([
            ('id', group.uuid), ('name', group.name), ('project_id', group.project_id),
            ('user_id', group.user_id), ('policy', group.policy), ('rules', _rules(group)),
            ('members', manage_display.items(group.members)),
            ('member_hosts', manage_display.items(group.get_hosts()))])


def _create_arguments(create):
    create.add_argument('name', help='Group name.')
    create.add_argument('--policy', required=True, choices=group_obj.POLICIES,
                        help='affinity: all members on one host; anti-affinity: each on its '
                             'own host; soft-*: preferred by weighers, never enforced.')
    create.add_argument('--max-server-per-host', type=manage_flavor.integer(1), metavar='N',
                        help='Rule of anti-affinity groups: up to N members per host.')
    create.add_argument('--project', default=DEFAULT_OWNER, metavar='PROJECT',
                        help='Project owning the group (default: admin).')
    create.add_argument('--user', default=DEFAULT_OWNER, metavar='USER',
                        help='User owning the group (default: admin).')


def _group_argument(parser):
    parser.add_argument('group', help='Group UUID or name.')


def add_parsers(actions):
    """Add the ``group`` category's actions."""
    commands = GroupCommands()
    manage_display.add_command(actions, 'create', manage_display.ShowOne(
        commands.create, ['name', 'policy', 'max_server_per_host', 'project', 'user'],
        _create_arguments), help_text='Create a server group.')
    manage_display.add_command(actions, 'list', manage_display.Lister(commands.list),
                               help_text='List server groups (of every project).')
    manage_display.add_command(actions, 'show', manage_display.ShowOne(
        commands.show, ['group'], _group_argument), help_text='Show a group and its members.')
    delete = actions.add_parser('delete', help='Delete a server group.')
    delete.add_argument('action_kwarg_group', metavar='group', help='Group UUID or name.')
    delete.set_defaults(action_fn=commands.delete, action_kwargs=['group'])
