"""Flavor and FlavorList on a migrated SQLite API database: Nova 34's remotables."""
import pytest

from minisched import context
from minisched import exception
from minisched.objects import flavor as flavor_obj
from tests.unit.db import conftest as db_fixtures

# A migrated SQLite API database per test, as the DB unit tests have.
isolated_engines = db_fixtures.isolated_engines
migrated_templates = db_fixtures.migrated_templates
db = db_fixtures.db
ctx = db_fixtures.ctx


def _flavor(ctxt, flavorid, name, memory_mb=512, **values):
    flavor = flavor_obj.Flavor(ctxt, flavorid=flavorid, name=name, memory_mb=memory_mb,
                               vcpus=1, root_gb=values.pop('root_gb', 1), ephemeral_gb=0,
                               swap=0, disabled=False, **values)
    flavor.create()
    return flavor


def _user(project_id):
    return context.RequestContext(user_id='u', project_id=project_id, is_admin=False)


def test_a_flavor_is_never_deleted_and_read_deleted_changes_nothing(ctx):
    _flavor(ctx, '1', 'small')
    for read_deleted in (None, 'yes', 'no'):
        found = flavor_obj.Flavor.get_by_flavor_id(ctx, '1', read_deleted=read_deleted)
        assert (found.name, found.deleted, found.deleted_at) == ('small', False, None)
        assert found.obj_what_changed() == set()


def test_access_is_granted_and_taken_and_projects_load_when_read(ctx):
    flavor = _flavor(ctx, '1', 'private', is_public=False)
    found = flavor_obj.Flavor.get_by_id(ctx, flavor.id)
    assert not found.obj_attr_is_set('projects')
    assert found.projects == [] and found.obj_what_changed() == set()
    found.add_access('p1')
    found.add_access('p2')
    assert found.projects == ['p1', 'p2']
    with pytest.raises(exception.FlavorAccessExists):
        found.add_access('p1')
    found.remove_access('p1')
    assert flavor_obj.Flavor.get_by_name(ctx, 'private').projects == ['p2']
    with pytest.raises(exception.FlavorAccessNotFound):
        found.remove_access('p1')
    found.projects = ['p3']
    with pytest.raises(exception.ObjectActionError):
        found.add_access('p4')  # Nova refuses while projects has unsaved changes
    found.save_projects(to_add=['p3'], to_delete=['p2'])
    assert found.obj_what_changed() == set()
    assert flavor_obj.Flavor.get_by_id(ctx, flavor.id).projects == ['p3']


def test_create_with_projects_and_destroy_takes_them_along(ctx):
    flavor = _flavor(ctx, '1', 'private', is_public=False, projects=['p1', 'p1', 'p2'])
    assert flavor.projects == ['p1', 'p2']
    flavor.destroy()
    with pytest.raises(exception.FlavorNotFound):
        flavor_obj.Flavor.get_by_flavor_id(ctx, '1')
    again = _flavor(ctx, '1', 'private', is_public=False)
    assert flavor_obj.Flavor.get_by_id(ctx, again.id).projects == []
    by_flavorid = flavor_obj.Flavor(ctx, flavorid='1')  # Nova's light object, no id
    by_flavorid.destroy()
    assert by_flavorid.name == 'private'


def test_a_users_context_sees_public_flavors_and_those_of_its_project(ctx):
    _flavor(ctx, '1', 'public')
    private = _flavor(ctx, '2', 'private', is_public=False)
    private.add_access('p1')
    assert flavor_obj.Flavor.get_by_flavor_id(_user('p1'), '2').name == 'private'
    with pytest.raises(exception.FlavorNotFound):
        flavor_obj.Flavor.get_by_flavor_id(_user('p2'), '2')
    with pytest.raises(exception.FlavorNotFoundByName):
        flavor_obj.Flavor.get_by_name(_user('p2'), 'private')
    assert [f.flavorid for f in flavor_obj.FlavorList.get_all(_user('p2'))] == ['1']
    assert [f.flavorid for f in flavor_obj.FlavorList.get_all(_user('p1'))] == ['1', '2']
    public_only = flavor_obj.FlavorList.get_all(ctx, filters={'is_public': True})
    assert [f.flavorid for f in public_only] == ['1']
    with_access = flavor_obj.FlavorList.get_all(_user('p1'), filters={'is_public': True})
    assert [f.flavorid for f in with_access] == ['1', '2']
    private_only = flavor_obj.FlavorList.get_all(ctx, filters={'is_public': False})
    assert [f.flavorid for f in private_only] == ['2']


def test_get_all_filters_sorts_and_pages_as_nova(ctx):
    for flavorid, name, memory_mb, root_gb in (('a', 'm1.small', 2048, 20),
                                               ('b', 'm1.tiny', 512, 1),
                                               ('c', 'm1.large', 8192, 80),
                                               ('d', 'x.large', 8192, 40)):
        _flavor(ctx, flavorid, name, memory_mb=memory_mb, root_gb=root_gb)

    def ids(**kwargs):
        return [f.flavorid for f in flavor_obj.FlavorList.get_all(ctx, **kwargs)]
    assert ids() == ['a', 'b', 'c', 'd']
    assert ids(filters={'min_memory_mb': 2048, 'min_root_gb': 30}) == ['c', 'd']
    assert ids(filters={'name': '^m1\\.(t|l)'}) == ['b', 'c']
    assert ids(filters={'disabled': True}) == []
    assert ids(sort_key='memory_mb', sort_dir='desc') == ['d', 'c', 'a', 'b']
    assert ids(sort_key='memory_mb', sort_dir='desc', limit=2, marker='d') == ['c', 'a']
    assert ids(sort_key='memory_mb', limit=2, marker='c') == ['d']
    assert ids(inactive=True, limit=1) == ['a']
    with pytest.raises(exception.MarkerNotFound):
        ids(marker='nope')
    with pytest.raises(exception.Invalid):
        ids(sort_key='nope')
