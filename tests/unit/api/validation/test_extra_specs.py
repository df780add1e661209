"""Extra spec rules: the keys minisched reads, Nova's namespaces, the API schema's limits."""
from minisched.api.validation import extra_specs
from minisched import exception
from tests.unit import base


class TestExtraSpecs(base.TestCase):

    def assertAccepted(self, key, value):
        self.assertEqual({key: value}, extra_specs.validate_extra_specs({key: value}))

    def assertRefused(self, specs, says):
        with self.assertRaises(exception.ValidationError) as raised:
            extra_specs.validate_extra_specs(specs)
        message = raised.exception.format_message()
        self.assertIn(says, message)
        return raised.exception

    def test_keys_minisched_reads_take_their_values(self):
        for key, value in (
                ('hw:numa_nodes', '2'), ('hw:numa_cpus.0', '0-3,^2'), ('hw:numa_cpus.12', '5'),
                ('hw:numa_mem.1', '1024'), ('hw:cpu_policy', 'mixed'),
                ('hw:cpu_thread_policy', 'isolate'), ('hw:mem_page_size', '2MiB'),
                ('hw:mem_page_size', 'large'), ('hw:emulator_threads_policy', 'share'),
                ('hw:pci_numa_affinity_policy', 'socket'), ('hw:cpu_dedicated_mask', '^0'),
                ('hw:cpu_realtime', 'yes'), ('hw:cpu_realtime_mask', '^0-1'),
                ('hw:locked_memory', 'False'), ('hw:pmem', 'LABEL_A,LABEL_B'),
                ('hw:maxphysaddr_mode', 'emulate'), ('hw:maxphysaddr_bits', '42'),
                ('pci_passthrough:alias', 'nic:2, gpu:1'),
                ('aggregate_instance_extra_specs:ssd', '<in> true'),
                ('capabilities:hypervisor_type', 's== QEMU'),
                ('capabilities:cpu_info:features', '<in> aes'), ('resources:VCPU', '0'),
                ('resources1:PCPU', '4'), ('resources_G1:CUSTOM_FPGA', '1'),
                ('trait:HW_CPU_HYPERTHREADING', 'forbidden'), ('group_policy', 'none'),
                ('quota:cpu_quota', '-1'), ('hw_rng:allowed', 'true'),
                ('hw:redirected_usb_ports', '15')):
            with self.subTest(key=key, value=value):
                self.assertAccepted(key, value)

    def test_bad_values_are_refused_with_the_rule(self):
        for key, value, says in (
                ('hw:numa_nodes', '0', 'minimum of 1'),
                ('hw:numa_nodes', 'two', 'not a valid integer'),
                ('hw:numa_mem.0', '0', 'minimum of 1'),
                ('hw:numa_cpus.0', '0-a', 'format'),
                ('hw:cpu_policy', 'sometimes', 'not one of: dedicated, shared, mixed'),
                ('hw:cpu_thread_policy', 'prefer-ish', 'not one of'),
                ('hw:emulator_threads_policy', 'shared', 'not one of: isolate, share'),
                ('hw:mem_page_size', 'huge', 'format'),
                ('hw:pci_numa_affinity_policy', 'strict', 'not one of'),
                ('hw:locked_memory', 'perhaps', 'boolean-like'),
                ('hw:redirected_usb_ports', '16', 'maximum of 15'),
                ('pci_passthrough:alias', 'nic', 'format'),
                ('pci_passthrough:alias', 'nic:two', 'format'),
                ('resources:VCPU', 'many', 'not a valid integer'),
                ('trait:HW_CPU_HYPERTHREADING', 'preferred', 'not one of')):
            with self.subTest(key=key, value=value):
                error = self.assertRefused({key: value}, says)
                self.assertEqual('extra_specs.%s' % key, error.kwargs['field'])

    def test_unknown_keys_of_nova_namespaces_are_refused(self):
        for key in ('hw:cpu_polcy', 'hw:numa_cpus', 'hw:numa_cpus.x', 'pci_passthrough:aliases',
                    'capabilities:no_such_thing', 'resources:vcpu', 'trait2:lower',
                    'quota:cpu_limits', 'hw_rng:rate', 'os:other'):
            with self.subTest(key=key):
                self.assertRefused({key: '1'}, 'does not appear to be a valid extra spec')

    def test_keys_of_other_namespaces_or_none_are_accepted(self):
        for key in ('ssd', 'my_namespace:anything', 'hardware:x', 'hw_other:x'):
            self.assertAccepted(key, 'anything')

    def test_schema_limits_keys_and_values(self):
        self.assertAccepted('k' * 255, 'v' * 255)
        self.assertRefused({'k' * 256: 'v'}, '256 characters')
        self.assertRefused({'a/b': 'v'}, 'characters a-z')
        self.assertRefused({'k': 'v' * 256}, 'maximum of 255')
        self.assertRefused({'k': None}, 'not a string')
        self.assertRefused({'k': True}, 'not a string')
        self.assertRefused(['k'], 'not an object')

    def test_numbers_are_kept_as_strings(self):
        self.assertEqual({'hw:numa_nodes': '2', 'x': '1.5'},
                         extra_specs.validate_extra_specs({'hw:numa_nodes': 2, 'x': 1.5}))
        self.assertRefused({'k': 10 ** 255}, 'maximum of 255')
