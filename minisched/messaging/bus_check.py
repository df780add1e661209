"""Whether a message bus a transport URL names can be reached, and if not, why in one line.

A cell's transport URL is stored in the API database and used as it is: when it names a
RabbitMQ vhost that was deleted, or a broker that moved, the conductor's casts to that cell's
computes wait for a broker that never lets them in, and a build stays in ``scheduling``
with nothing but the conductor's log saying why. :func:`problem` opens one AMQP connection
(pika, with the URL's credentials and vhost) and closes it again, so that the conductor at
start-up (:func:`log_unreachable_cells`) and ``minisched-cluster status`` can say so first.
Only ``rabbit://`` and ``amqp://`` URLs are checked: ``fake://`` lives in one process and
``none:`` marks cell0, which gets no messages.
"""
import logging
import urllib.parse

LOG = logging.getLogger(__name__)

#: The schemes :func:`problem` checks (others are taken as reachable).
CHECKED_SCHEMES = ('rabbit', 'amqp')


def pika_parameters(url, timeout=2.0):
    """pika connection parameters for every host of a rabbit:// URL (``rabbit://u:p@h1:5672,
    u:p@h2:5672/vhost``); a ``BlockingConnection`` given the list tries them in turn."""
    import pika
    scheme, _, rest = url.partition('://')
    netlocs, slash, path = rest.partition('/')
    params = []
    for netloc in netlocs.split(','):
        parsed = urllib.parse.urlsplit('%s://%s%s%s' % (scheme, netloc, slash, path))
        credentials = pika.PlainCredentials(urllib.parse.unquote(parsed.username or 'guest'),
                                            urllib.parse.unquote(parsed.password or 'guest'))
        vhost = urllib.parse.unquote(parsed.path[1:]) if len(parsed.path) > 1 else '/'
        params.append(pika.ConnectionParameters(
            host=parsed.hostname or '127.0.0.1', port=parsed.port or 5672,
            virtual_host=vhost, credentials=credentials, socket_timeout=timeout,
            blocked_connection_timeout=timeout, connection_attempts=1, stack_timeout=timeout))
    return params


def problem(url, timeout=2.0):
    """None when the broker of ``url`` lets a connection in (with the URL's user and vhost),
    else why not, in one line (``NOT_ALLOWED - vhost x not found``, ``connection refused``).
    URLs of other schemes than :data:`CHECKED_SCHEMES` are not checked: None."""
    import pika
    scheme = url.partition('://')[0].partition('+')[0]
    if scheme not in CHECKED_SCHEMES:
        return None
    # pika logs each failed attempt at ERROR, with a traceback: the caller says it in a line.
    pika_log = logging.getLogger('pika')
    level = pika_log.level
    pika_log.setLevel(logging.CRITICAL)
    try:
        pika.BlockingConnection(pika_parameters(url, timeout)).close()
        return None
    except pika.exceptions.AMQPConnectionError as exc:
        return _reason(exc)
    except Exception as exc:  # a malformed URL, a name that does not resolve...
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    finally:
        pika_log.setLevel(level)


def _reason(exc):
    """The broker's own words when it closed the connection, else the socket's error."""
    text = '%s %r' % (exc, exc)  # some of pika's errors only say it in their repr
    for marker in ('NOT_ALLOWED', 'ACCESS_REFUSED'):
        if marker in text:
            return text[text.index(marker):].split("'")[0].strip()
    if 'Connection refused' in text or 'ConnectionRefused' in text:
        return 'connection refused'
    return str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)


def unreachable_cells(ctxt, conf_url):
    """``[(cell, masked url, reason)]`` for the enabled cells (cell0 aside) whose message bus
    does not let a connection in; a template URL is filled in from ``conf_url`` (``[DEFAULT]
    transport_url``). Needs the API database configured in this process."""
    from minisched.objects import cell_mapping
    found = []
    for cell in cell_mapping.CellMappingList.get_all(ctxt):
        if cell.is_cell0() or cell.disabled or not cell.transport_url:
            continue
        url = cell_mapping.format_url(cell.transport_url, conf_url)
        reason = problem(url)
        if reason:
            found.append((cell, cell_mapping.mask_url(url), reason))
    return found


def log_unreachable_cells(ctxt, conf_url):
    """Log an ERROR for each cell :func:`unreachable_cells` finds; returns them. A check that
    cannot run (the API database not there yet) is logged at WARNING and skipped: the
    service starts all the same."""
    try:
        found = unreachable_cells(ctxt, conf_url)
    except Exception as exc:  # the database libraries' errors are many; none is fatal here
        LOG.warning('Could not check the cells\' message buses at start-up: %s',
                    str(exc).strip().splitlines()[0] if str(exc).strip() else exc)
        return []
    for cell, url, reason in found:
        LOG.error('Cell %(name)s (%(uuid)s) has the transport URL %(url)s, which does not '
                  'let a connection in: %(reason)s. Builds sent to its computes will wait '
                  'until they time out. Point it at the cell\'s broker: minisched-manage cell '
                  'update_cell --cell_uuid %(uuid)s --transport-url URL',
                  {'name': cell.name, 'uuid': cell.uuid, 'url': url, 'reason': reason})
    return found
