"""minisched: a faithful re-implementation of Nova's scheduling architecture."""
from minisched import monkey_patch as _monkey_patch

# Where nothing chose a concurrency backend (a process embedding minisched), oslo.service
# follows the process: native threads unless eventlet patched it (see monkey_patch).
_monkey_patch.register_default()
