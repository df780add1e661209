"""Aggregate and AggregateList on a migrated SQLite API database: Nova 34's remotables."""
import pytest

from minisched.objects import aggregate as aggregate_obj
from tests.unit.db import conftest as db_fixtures

# A migrated SQLite API database per test, as the DB unit tests have.
isolated_engines = db_fixtures.isolated_engines
migrated_templates = db_fixtures.migrated_templates
db = db_fixtures.db
ctx = db_fixtures.ctx


def _aggregate(ctxt, name, hosts=(), **metadata):
    agg = aggregate_obj.Aggregate(ctxt, name=name, metadata=metadata)
    agg.create()
    for host in hosts:
        agg.add_host(host)
    return agg


def _names(aggregates):
    return sorted(agg.name for agg in aggregates)


def test_an_aggregate_is_never_deleted_and_saves_without_the_deleted_fields(ctx):
    agg = _aggregate(ctx, 'a1', ['h1'], availability_zone='az1')
    assert (agg.deleted, agg.deleted_at) == (False, None)
    agg.name = 'a2'
    agg.deleted = True  # no column: nothing to write, and read back as Nova's
    agg.save()
    found = aggregate_obj.Aggregate.get_by_uuid(ctx, agg.uuid)
    assert (found.name, found.deleted, found.hosts) == ('a2', False, ['h1'])


def test_get_by_metadata_key_and_hosts(ctx):
    _aggregate(ctx, 'az1', ['h1', 'h2'], availability_zone='az1', other='x')
    _aggregate(ctx, 'az2', ['h3'], availability_zone='az2')
    _aggregate(ctx, 'plain', ['h1'], other='y')
    found = aggregate_obj.AggregateList.get_by_metadata_key(ctx, 'availability_zone')
    assert _names(found) == ['az1', 'az2']
    # Nova's join fills each aggregate's metadata with the matching items only.
    assert {agg.name: agg.metadata for agg in found} == {
        'az1': {'availability_zone': 'az1'}, 'az2': {'availability_zone': 'az2'}}
    assert [agg.hosts for agg in found if agg.name == 'az1'] == [['h1', 'h2']]
    assert _names(aggregate_obj.AggregateList.get_by_metadata_key(
        ctx, 'availability_zone', hosts=['h3', 'h9'])) == ['az2']
    assert list(aggregate_obj.AggregateList.get_by_metadata_key(ctx, 'availability_zone',
                                                                hosts=[])) == []
    assert _names(aggregate_obj.AggregateList.get_by_host(ctx, 'h1', key='other')) == [
        'az1', 'plain']


def test_get_by_metadata_key_value_or_both(ctx):
    _aggregate(ctx, 'a', tenant='p1', ssd='true')
    _aggregate(ctx, 'b', tenant='p2', gpu='true')
    _aggregate(ctx, 'c', ssd='false')
    get = aggregate_obj.AggregateList.get_by_metadata
    assert _names(get(ctx, key='ssd')) == ['a', 'c']
    assert _names(get(ctx, value='true')) == ['a', 'b']
    assert [(agg.name, agg.metadata) for agg in get(ctx, key='ssd', value='true')] == [
        ('a', {'ssd': 'true'})]
    with pytest.raises(ValueError):
        get(ctx)


def test_get_non_matching_by_metadata_keys(ctx):
    _aggregate(ctx, 'agg1', **{'trait:HW_CPU_X86_MMX': 'required'})
    _aggregate(ctx, 'agg2', **{'trait:HW_CPU_X86_SGX': 'required'})
    _aggregate(ctx, 'agg3', **{'trait:HW_CPU_X86_MMX': 'required',
                               'trait:HW_CPU_X86_SGX': 'required'})
    found = aggregate_obj.AggregateList.get_non_matching_by_metadata_keys(
        ctx, ['trait:HW_CPU_X86_MMX'], 'trait:', value='required')
    assert _names(found) == ['agg2', 'agg3']
