"""The private parts of oslo.messaging that minisched hooks into, against the installed one.

Each test here fails when upstream changes what a hook relies on (a name, a signature, the
text of a log line, where a value is read), before a service would start without the check
the hook carries. ``tools/upper-constraints.txt`` names the versions the suite ran against.
"""
import inspect
import os
import subprocess
import sys
import textwrap

import pytest
from oslo_messaging._drivers import amqp as rpc_amqp
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging import server as messaging_server
from oslo_messaging.rpc import server as rpc_server

from minisched.messaging import incoming as rpc_incoming

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize('hook', rpc_incoming.REQUIRED_HOOKS + rpc_incoming.OPTIONAL_HOOKS,
                         ids=lambda hook: '%s.%s' % (hook[0], hook[2]))
def test_every_hook_is_present(hook):
    assert rpc_incoming.missing_hooks([hook]) == []


def test_the_consumer_callback_builds_the_driver_message_from_the_delivery():
    # _checked_callback calls the original with (consumer, raw message); the original makes
    # impl_rabbit.RabbitMessage(message), looked up in the module at each call, so that
    # _CheckedRabbitMessage takes its place.
    original = rpc_incoming._original_callback
    assert list(inspect.signature(original).parameters) == ['self', 'message']
    assert 'RabbitMessage(message)' in inspect.getsource(original)


def test_the_driver_message_is_a_dict_acknowledged_through_its_raw_message():
    # _CheckedRabbitMessage skips the base __init__: it must set what the base's methods use.
    assert issubclass(impl_rabbit.RabbitMessage, dict)
    assert list(inspect.signature(impl_rabbit.RabbitMessage.__init__).parameters) == [
        'self', 'raw_message']
    for method in ('acknowledge', 'requeue'):
        assert 'self._raw_message' in inspect.getsource(
            getattr(impl_rabbit.RabbitMessage, method))


def test_the_envelope_decoder_reads_what_the_encoder_writes():
    message = {'method': 'ping', 'args': {'n': 1}}
    assert driver_common.deserialize_msg(driver_common.serialize_msg(message)) == message


def test_the_duplicate_message_report_is_the_line_the_filter_matches():
    # _DuplicatesRateLimited matches the record's format string exactly.
    assert 'LOG.exception("ignoring duplicate message %s"' in inspect.getsource(amqpdriver)
    assert hasattr(amqpdriver.LOG, 'addFilter')


def test_the_listeners_read_the_poll_floor_from_the_module_each_time():
    assert isinstance(amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN, float)
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN <= amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX
    # (poll itself is wrapped by batch_poll_helper: the class's source is read.)
    for reader in (amqpdriver.AMQPListener, amqpdriver.ReplyWaiter):
        assert '= ACK_REQUEUE_EVERY_SECONDS_MIN' in inspect.getsource(reader)


def test_the_rpc_server_hands_each_message_to_overridable_methods():
    # AdmittingRPCServer overrides _on_incoming and submits _process_incoming itself to the
    # executor that MessageHandlingServer.start makes.
    for name in ('_on_incoming', '_process_incoming'):
        assert list(inspect.signature(getattr(rpc_server.RPCServer, name)).parameters) == [
            'self', 'incoming']
    assert 'self._work_executor' in inspect.getsource(
        messaging_server.MessageHandlingServer.start)
    assert 'self._on_incoming' in inspect.getsource(
        messaging_server.MessageHandlingServer.start)


def test_the_rpc_listener_builds_incoming_messages_the_admission_builds_too():
    # rpc_admission._AdmittingListener replaces RpcAMQPListener.__call__ for admitted casts:
    # it builds the AMQPIncomingMessage itself, with the listener's attributes, and the
    # server's listener is the driver's, wrapped by PollStyleListenerAdapter.
    assert list(inspect.signature(amqpdriver.AMQPIncomingMessage.__init__).parameters) == [
        'self', 'listener', 'ctxt', 'message', 'unique_id', 'msg_id', 'reply_q',
        'client_timeout', 'obsolete_reply_queues', 'message_operations_handler']
    # The RPC listener acknowledges on receipt, then its base builds the message: what
    # _AdmittingListener does in one step for admitted casts, without the acknowledgement.
    assert amqpdriver.RpcAMQPListener.__mro__[1] is amqpdriver.AMQPListener
    assert 'message.acknowledge()' in inspect.getsource(amqpdriver.RpcAMQPListener.__call__)
    call = inspect.getsource(amqpdriver.AMQPListener.__call__)
    for used in ('self.incoming.append(', 'self._obsolete_reply_queues',
                 'self._message_operations_handler', 'unpack_context(',
                 'check_duplicate_message(message)'):
        assert used in call, used
    # ...whose duplicate check takes the message's unique id out under this key.
    assert 'UNIQUE_ID' in inspect.getsource(rpc_amqp._MsgIdCache.check_duplicate_message)
    # _DeferredAck.settle acknowledges through the message's operations handler (the
    # consumer's thread) and the driver message it keeps.
    init = inspect.getsource(amqpdriver.AMQPIncomingMessage.__init__)
    assert 'self._message_operations_handler = message_operations_handler' in init
    assert 'super().__init__(ctxt, message, msg_id)' in init  # the base keeps .message
    assert callable(amqpdriver.MessageOperationsHandler.do)
    assert isinstance(rpc_amqp.UNIQUE_ID, str)
    from oslo_messaging._drivers import base as driver_base
    assert 'self._poll_style_listener = ' in inspect.getsource(
        driver_base.PollStyleListenerAdapter.__init__)
    assert list(inspect.signature(rpc_server.RPCServer._create_listener).parameters) == [
        'self']


def test_a_missing_hook_is_named_with_what_needs_it():
    class Owner:
        present = 1

    hooks = [('where', Owner, 'present', 'a'), ('where', Owner, 'absent', 'the check')]
    assert rpc_incoming.missing_hooks(hooks) == ['where.absent (the check)']


def test_a_service_without_a_required_hook_refuses_to_start_with_one_line(tmp_path):
    conf = tmp_path / 'minisched.conf'
    conf.write_text('[DEFAULT]\ntransport_url = fake://\nstate_path = %s\n' % tmp_path)
    code = textwrap.dedent('''
        import sys
        from minisched import monkey_patch
        monkey_patch.patch('threading')  # first, as the command itself would
        from oslo_messaging._drivers import impl_rabbit
        del impl_rabbit.Consumer._callback  # an oslo.messaging that renamed it
        from minisched.cmd import scheduler
        sys.exit(scheduler.main(['minisched-scheduler', '--config-file', %r]))
    ''' % str(conf))
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('minisched-scheduler: error: oslo.messaging %s has no '
                               'impl_rabbit.Consumer._callback'
                               % rpc_incoming.oslo_messaging_version())
    assert 'upper-constraints' in lines[0]
