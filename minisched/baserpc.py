"""The base RPC API every service answers (namespace ``baseapi``): ``ping``."""
import oslo_messaging as messaging

_NAMESPACE = 'baseapi'


class BaseAPI:
    """Client side of the base RPC API.

    API version history:
        1.0 - Initial version.
        1.1 - Add get_backdoor_port
    """

    VERSION_ALIASES = {}

    def __init__(self, topic, client_factory, version_cap=None):
        target = messaging.Target(topic=topic, namespace=_NAMESPACE, version='1.0')
        self.client = client_factory(target, version_cap=version_cap)

    def ping(self, context, arg, timeout=None):
        cctxt = self.client.prepare(timeout=timeout)
        return cctxt.call(context, 'ping', arg=arg)


class BaseRPCAPI:
    """Server side of the base RPC API."""

    target = messaging.Target(namespace=_NAMESPACE, version='1.1')

    def __init__(self, service_name, backdoor_port=None):
        self.service_name = service_name
        self.backdoor_port = backdoor_port

    def ping(self, context, arg):
        return {'service': self.service_name, 'arg': arg}

    def get_backdoor_port(self, context):
        return self.backdoor_port
