"""The dict and list columns minisched-manage prints are osc-lib's, as ``openstack`` prints
them (minisched formats them itself: importing osc-lib loads the OpenStack SDK)."""
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from osc_lib.cli import format_columns

from minisched.cmd import manage_display

_keys = st.text(alphabet='abcxyz_.-', min_size=1, max_size=6)
_scalars = st.none() | st.integers() | st.booleans() | st.text(max_size=8)
_mappings = st.recursive(st.dictionaries(_keys, _scalars, max_size=4),
                         lambda inner: st.dictionaries(_keys, _scalars | inner, max_size=4),
                         max_leaves=12)


@given(_mappings)
def test_properties_read_as_osc_libs_dict_column(mapping):
    ours, theirs = manage_display.properties(mapping), format_columns.DictColumn(mapping)
    assert ours.human_readable() == theirs.human_readable()
    assert ours.machine_readable() == theirs.machine_readable()


@given(st.lists(st.text(max_size=8), max_size=6))
def test_items_read_as_osc_libs_list_column(values):
    ours, theirs = manage_display.items(values), format_columns.ListColumn(sorted(values))
    assert ours.human_readable() == theirs.human_readable()
    assert ours.machine_readable() == theirs.machine_readable()


def test_properties_of_nothing_are_empty():
    assert manage_display.properties(None).human_readable() == ''
    assert manage_display.items(None).human_readable() == ''


def test_minisched_manage_does_not_load_the_openstack_sdk():
    loaded = subprocess.run(
        [sys.executable, '-c', 'import sys, minisched.cmd.manage; '
         'print(sorted(m for m in sys.modules if m.split(".")[0] in ("openstack", "osc_lib")))'],
        capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == '[]'
