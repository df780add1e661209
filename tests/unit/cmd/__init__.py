"""Tests of the minisched commands (minisched/cmd)."""
