"""SchedulerOptions: a JSON file of extra scheduling settings, re-read when it changes.

Nova's (pre-Pike) ``scheduler_json_config_location``: the FilterScheduler hands its content
to filters as the request's ``config_options``. An unreadable or invalid file is logged and
treated as empty, so a typo never stops scheduling.
"""
import json
import logging
import os

from oslo_utils import timeutils

LOG = logging.getLogger(__name__)


class SchedulerOptions:
    """Cached view of the JSON file; ``get_configuration()`` is cheap when it has not changed."""

    def __init__(self, filename):
        self.filename = filename
        self.data = {}
        self.last_modified = None
        self.last_checked = None

    def _get_file_timestamp(self, filename):
        try:
            return os.path.getmtime(filename)
        except OSError as exc:
            LOG.exception('Could not stat scheduler options file %(filename)s: %(exc)s',
                          {'filename': filename, 'exc': exc})
            raise

    def _load_file(self, handle):
        try:
            return json.load(handle)
        except ValueError:
            LOG.exception('Could not decode scheduler options')
            return {}

    def get_configuration(self, filename=None):
        """The file's content as a dict ({} without a file or when it cannot be read)."""
        filename = filename or self.filename
        if not filename:
            return {}
        self.last_checked = timeutils.utcnow()
        try:
            modified = self._get_file_timestamp(filename)
        except OSError:
            return self.data
        if modified != self.last_modified:
            self.last_modified = modified
            with open(filename) as handle:
                loaded = self._load_file(handle)
            self.data = loaded if isinstance(loaded, dict) else {}
        return self.data
