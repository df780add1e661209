"""[notifications] options (oslo.messaging's own notification options live in its group)."""
from oslo_config import cfg

GROUP = cfg.OptGroup('notifications', title='Notifications', help="""
What minisched emits. Nothing is sent unless
``[oslo_messaging_notifications] driver`` is set.""")

OPTS = [
    cfg.StrOpt('notification_format', default='unversioned',
               choices=[('both', 'legacy and versioned'), ('versioned', 'versioned only'),
                        ('unversioned', 'legacy only')],
               help='Format of the notifications minisched sends.'),
    cfg.ListOpt('versioned_notifications_topics', default=['versioned_notifications'],
                help='Topics of versioned notifications.'),
    cfg.StrOpt('notify_on_state_change', choices=[(None, 'no notifications'),
                                                  ('vm_state', 'on vm_state changes'),
                                                  ('vm_and_task_state', 'on both')],
               help='Send instance.update notifications on these state changes.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
