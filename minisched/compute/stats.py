"""Per-node instance statistics written into ``ComputeNode.stats`` (Nova's compute/stats.py)."""
from minisched.objects import instance as instance_obj

#: Task states that count as I/O-heavy work (``io_workload``).
_IO_TASK_STATES = ('resize_migrating', 'rebuilding', 'resize_prep', 'image_snapshot',
                   'image_backup', 'rescuing', 'unshelving')
#: vm_states whose instances no longer consume resources.
_GONE_VM_STATES = (instance_obj.DELETED, instance_obj.SHELVED_OFFLOADED)


class Stats(dict):
    """Counters keyed as Nova's: num_instances, num_vm_*, num_task_*, num_os_type_*,
    num_proj_*, io_workload, failed_builds."""

    def __init__(self):
        super().__init__()
        self.states = {}  # instance uuid -> (vm_state, task_state, os_type, project_id)

    def clear(self):
        failed_builds = self.get('failed_builds', 0)
        super().clear()
        self.states.clear()
        if failed_builds:
            self['failed_builds'] = failed_builds

    def _bump(self, key, delta):
        self[key] = self.get(key, 0) + delta

    def update_stats_for_instance(self, instance, is_removed=False):
        uuid = instance.uuid
        old = self.states.pop(uuid, None)
        if old is not None:
            self._apply(old, -1)
        else:
            self._bump('num_instances', 1)
        if is_removed or instance.vm_state in _GONE_VM_STATES:
            self._bump('num_instances', -1)
            return
        new = (instance.vm_state, instance.task_state, instance.os_type, instance.project_id)
        self._apply(new, 1)
        self.states[uuid] = new

    def _apply(self, state, delta):
        vm_state, task_state, os_type, project_id = state
        self._bump('num_vm_%s' % vm_state, delta)
        self._bump('num_task_%s' % task_state, delta)
        self._bump('num_os_type_%s' % os_type, delta)
        self._bump('num_proj_%s' % project_id, delta)
        if vm_state == instance_obj.BUILDING or task_state in _IO_TASK_STATES:
            self._bump('io_workload', delta)

    @property
    def num_instances(self):
        return self.get('num_instances', 0)

    @property
    def io_workload(self):
        return self.get('io_workload', 0)

    def calculate_workload(self):
        """Instances with a task in progress (``current_workload``)."""
        return sum(count for key, count in self.items()
                   if key.startswith('num_task_') and key != 'num_task_None')

    def build_failed(self):
        self._bump('failed_builds', 1)

    def build_succeeded(self):
        self['failed_builds'] = 0

    def to_node_stats(self):
        return {key: str(value) for key, value in self.items()}
