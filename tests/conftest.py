"""Setup shared by every test process."""
import logging

# minisched's rate-limited RPC reports (rpc_incoming.LogLimiter) count repeats and flush the
# count from a timer up to a minute later, when the test that caused them may be long over.
# With no handler anywhere, logging's last resort would print that line into the middle of
# the test run's output; tests that look at logs attach their own handlers (caplog,
# assertLogs) as before.
logging.getLogger('minisched').addHandler(logging.NullHandler())
