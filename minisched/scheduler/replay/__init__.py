"""Snapshot, record and replay: the scheduler's decisions tried again, offline.

- :mod:`.snapshot`: what the scheduler sees, written to one JSON file and read back into a
  HostManager.
- :mod:`.recorder`: the requests a scheduler worker answers, appended to a trace
  (``[scheduler] record_requests_to``).
- :mod:`.offline`: the real FilterScheduler over held host states, with no broker and no
  database.
- :mod:`.run`: requests (a trace, or described) replayed over a snapshot per configuration,
  and the figures of what each made of them.
- :mod:`.plot`: those figures as PNG files (``--plot DIR``).

Importing the package imports none of them: a scheduler worker loads the recorder alone.
"""
