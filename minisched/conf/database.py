"""[database] and [api_database] connection options (oslo.db), with embedded SQLite defaults."""
from oslo_config import cfg
from oslo_db import options as oslo_db_options

GROUP = cfg.OptGroup('database', title='Cell database',
                     help='Database of this cell: services, compute nodes, instances.')
API_GROUP = cfg.OptGroup('api_database', title='API database', help="""
Database shared by the whole deployment: cell and host mappings, flavors,
aggregates, instance groups and request specs.""")

#: Embedded defaults, resolved against ``state_path`` when no connection is configured.
MAIN_SQLITE = 'minisched.sqlite'
API_SQLITE = 'minisched_api.sqlite'

API_OPTS = [
    cfg.StrOpt('connection', secret=True, help="""
SQLAlchemy URL of the API database. Default:
``sqlite:///$state_path/minisched_api.sqlite``.

Example: ``mysql+pymysql://minisched:secret@db/minisched_api``"""),
    cfg.StrOpt('slave_connection', secret=True,
               help='Read-only replica URL of the API database (unused by minisched today).'),
    cfg.BoolOpt('sqlite_synchronous', default=True,
                help='If True, SQLite uses synchronous mode.'),
    cfg.IntOpt('max_pool_size', default=5, help='Maximum number of pooled connections.'),
    cfg.IntOpt('max_overflow', default=50, help='Connections allowed above max_pool_size.'),
    cfg.IntOpt('pool_timeout', help='Seconds to wait for a pooled connection (unset: '
                                    'SQLAlchemy\'s 30).'),
    cfg.IntOpt('connection_recycle_time', default=3600,
               help='Seconds after which a pooled connection is replaced.'),
    cfg.IntOpt('max_retries', default=10,
               help='Connection attempts at start-up (-1 for forever).'),
    cfg.IntOpt('retry_interval', default=10, help='Seconds between connection attempts.'),
]


def register_opts(conf):
    oslo_db_options.set_defaults(conf, connection=None)
    conf.register_group(API_GROUP)
    conf.register_opts(API_OPTS, group=API_GROUP)


def list_opts():
    # [database] is documented by the oslo.db namespace in the generator config.
    return {API_GROUP: API_OPTS}
