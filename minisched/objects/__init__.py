"""minisched's versioned objects. ``register_all()`` fills ``minisched.objects.<Name>``."""


def register_all():
    # Importing a module registers its classes (MinischedObjectRegistry.register).
    __import__('minisched.objects.aggregate')
    __import__('minisched.objects.build_request')
    __import__('minisched.objects.cell_mapping')
    __import__('minisched.objects.compute_node')
    __import__('minisched.objects.flavor')
    __import__('minisched.objects.host_mapping')
    __import__('minisched.objects.hv_spec')
    __import__('minisched.objects.image_meta')
    __import__('minisched.objects.instance')
    __import__('minisched.objects.instance_action')
    __import__('minisched.objects.instance_fault')
    __import__('minisched.objects.instance_group')
    __import__('minisched.objects.instance_mapping')
    __import__('minisched.objects.instance_numa')
    __import__('minisched.objects.instance_pci_requests')
    __import__('minisched.objects.network_metadata')
    __import__('minisched.objects.numa')
    __import__('minisched.objects.pci_device')
    __import__('minisched.objects.pci_device_pool')
    __import__('minisched.objects.request_spec')
    __import__('minisched.objects.security_group')
    __import__('minisched.objects.selection')
    __import__('minisched.objects.service')
    __import__('minisched.objects.virt_cpu_topology')
