"""What the demo says about each placement: choice, weight, runner-up, filters, reschedules,
and the allocation ratio behind usage above the total."""
import datetime

from minisched.objects import instance_action
from tests.unit import base

demo_why = base.import_without_eventlet('minisched.cmd.demo_why')

RANKING = demo_why.Ranking(
    counts=[('RetryFilter', 3, 3), ('RamFilter', 3, 2), ('DiskFilter', 2, 2)],
    weighed=[('compute3', 1.5), ('compute2', 0.75)])


def test_the_chosen_host_with_its_weight_the_runner_up_and_what_filters_removed():
    assert demo_why.placement_line('demo-01', 'm1.small', RANKING, 'compute3') == (
        'demo-01  m1.small  -> compute3 (weight 1.500); runner-up compute2 (0.750); '
        'RamFilter removed 1 of 3')


def test_a_reschedule_and_a_failure_are_told_apart_from_a_different_view():
    assert demo_why.placement_line('demo-02', 'm1.large', RANKING, 'compute2',
                                   ['compute3']) == (
        'demo-02  m1.large  -> compute2 (weight 0.750) after a reschedule; first choice '
        'compute3 (weight 1.500); runner-up compute2 (0.750); RamFilter removed 1 of 3')
    assert demo_why.placement_line('demo-03', 'm1.large', RANKING, None,
                                   ['compute3', 'compute2']).startswith(
        'demo-03  m1.large  -> no host; first choice compute3 (weight 1.500); runner-up')
    assert demo_why.placement_line('demo-04', 'm1.large', RANKING, 'compute2') == (
        'demo-04  m1.large  -> compute2 (weight 0.750); these filters and weighers ranked '
        'compute3 (weight 1.500) first (the scheduler saw other host states); runner-up '
        'compute2 (0.750); RamFilter removed 1 of 3')


def test_the_weigher_that_put_the_first_host_ahead_most_is_named():
    ranking = RANKING._replace(lead=('RAMWeigher', 0.5))
    assert demo_why.placement_line('demo-01', 'm1.small', ranking, 'compute3') == (
        'demo-01  m1.small  -> compute3 (weight 1.500); runner-up compute2 (0.750), '
        'RAMWeigher put the first ahead most (+0.500); RamFilter removed 1 of 3')


def test_no_host_left_and_a_lone_host():
    empty = demo_why.Ranking([('RamFilter', 3, 0)], [])
    assert demo_why.placement_line('demo-05', 'm1.large', empty, None) == (
        'demo-05  m1.large  -> no host passed the filters: RamFilter removed 3 of 3')
    lone = demo_why.Ranking([('RamFilter', 1, 1)], [('compute1', 0.0)])
    assert demo_why.placement_line('demo-06', 'm1.tiny', lone, 'compute1') == (
        'demo-06  m1.tiny   -> compute1 (weight 0.000); no runner-up; no filter removed a host')


def _event(name, result, host, details, minute):
    return instance_action.InstanceActionEvent(
        event=name, result=result, host=host, details=details,
        start_time=datetime.datetime(2026, 1, 1, 12, minute))


def test_reschedules_come_from_the_build_events_finished_as_error_oldest_first():
    events = [_event(demo_why.BUILD_EVENT, 'Success', 'compute1', None, 3),
              _event(demo_why.BUILD_EVENT, 'Error', 'compute2', 'Free disk 0.00 GB < '
                     'requested 80 GB', 2),
              _event('compute_terminate_instance', 'Error', 'compute9', 'other', 0),
              _event(demo_why.BUILD_EVENT, 'Error', 'compute3', None, 1)]
    action = instance_action.InstanceAction(action='create')
    assert demo_why.reschedules([(action, events)]) == [
        ('compute3', 'no reason recorded'), ('compute2', 'Free disk 0.00 GB < requested 80 GB')]
    assert demo_why.reschedules([]) == []


def test_usage_shows_the_limit_the_allocation_ratio_makes():
    assert demo_why.with_ratio(8704, 8192, 1.5) == '8704/8192 (x1.5 = 12288)'
    assert demo_why.with_ratio(5, 4, 16.0) == '5/4 (x16 = 64)'
    assert demo_why.with_ratio(80, 100, None) == '80/100'
