"""minisched's benchmarks: ``python -m benchmarks [--quick]`` prints every figure of the
performance targets (pipeline, refresh, end to end, memory, build throughput) with its target.

Figures are printed, never asserted: timing depends on the machine and its load. The unit
smoke test only checks that the pipeline bench runs and that its decisions match the reference.
"""
