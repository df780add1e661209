"""What a request asks of Placement: the ``GET /allocation_candidates`` query, as Nova builds it.

From the flavor: ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` (root disk, less for a volume-backed
request, plus ephemeral and swap rounded up to GB), replaced by ``PCPU`` for
``hw:cpu_policy=dedicated`` (``cpu_pinning_requested``); ``resources:<RC>=<amount>`` extra
specs override an amount (0 drops it), ``resources<N>:``/``resources_<suffix>:`` and
``trait<N>:`` make numbered request groups, ``trait:<NAME>=required|forbidden`` traits of the
unnumbered group, ``group_policy`` how numbered groups share providers. From the image:
``traits_required``, and ``hw_cpu_policy``. From what the request filters
(:mod:`minisched.scheduler.request_filter`) wrote into the RequestSpec: the aggregates to be
in (``member_of``) or out of, and the traits the root provider must have or lack
(``root_required``).
"""
import math
import re
import urllib.parse

import os_resource_classes as orc

from minisched.virt import hardware

_RESOURCES = re.compile(r'^resources([1-9][0-9]*|_[a-zA-Z0-9_-]{1,64})?:(.+)$')
_TRAIT = re.compile(r'^trait([1-9][0-9]*|_[a-zA-Z0-9_-]{1,64})?:(.+)$')


class RequestGroup:
    """One group of resources and traits (``suffix`` '' for the unnumbered one)."""

    def __init__(self, suffix=''):
        self.suffix = suffix
        self.resources = {}
        self.required_traits = set()
        self.forbidden_traits = set()

    def query(self):
        params = []
        resources = ','.join('%s:%d' % item for item in sorted(self.resources.items()))
        if resources:
            params.append(('resources' + self.suffix, resources))
        traits = sorted(self.required_traits) + ['!' + t for t in sorted(self.forbidden_traits)]
        if traits:
            params.append(('required' + self.suffix, ','.join(traits)))
        return params


class ResourceRequest:
    """The groups of one request and the request-level parameters."""

    def __init__(self, limit=None):
        self.groups = {'': RequestGroup()}
        self.group_policy = None
        self.limit = limit
        self.root_required = set()
        self.root_forbidden = set()
        #: Each item a list of aggregate uuids, the providers in at least one of each.
        self.member_of = []
        self.forbidden_aggregates = set()
        self.cpu_pinning_requested = False

    @property
    def unnumbered(self):
        return self.groups['']

    def group(self, suffix):
        return self.groups.setdefault(suffix, RequestGroup(suffix))

    @property
    def all_required_traits(self):
        return set().union(*(g.required_traits for g in self.groups.values()))

    @classmethod
    def from_request_spec(cls, spec_obj, limit=None, enable_pinning_translate=True):
        request = cls(limit)
        flavor = spec_obj.flavor
        image = spec_obj.image if spec_obj.obj_attr_is_set('image') else None
        is_bfv = spec_obj.is_bfv if spec_obj.obj_attr_is_set('is_bfv') else False
        group = request.unnumbered
        disk = (0 if is_bfv else flavor.root_gb) + flavor.ephemeral_gb + int(
            math.ceil((flavor.swap or 0) / 1024.0))
        group.resources = {orc.VCPU: flavor.vcpus, orc.MEMORY_MB: flavor.memory_mb,
                           orc.DISK_GB: disk}
        extra_specs = flavor.extra_specs if 'extra_specs' in flavor else {}
        explicit = request._apply_extra_specs(extra_specs)
        if image is not None and 'properties' in image and \
                image.properties.obj_attr_is_set('traits_required'):
            group.required_traits |= set(image.properties.traits_required or ())
        if enable_pinning_translate and not explicit & {orc.VCPU, orc.PCPU}:
            request._translate_pinning(flavor, image)
        for each in request.groups.values():
            each.resources = {rc: amount for rc, amount in each.resources.items() if amount}
        request._apply_request_level(spec_obj)
        return request

    def _apply_request_level(self, spec_obj):
        """What the request filters wrote into the RequestSpec: the destination's
        aggregates (each entry a comma-separated set to be in one of) and forbidden
        aggregates, the root provider's required and forbidden traits."""
        destination = spec_obj.requested_destination if spec_obj.obj_attr_is_set(
            'requested_destination') else None
        if destination is not None:
            for entry in destination.aggregates or ():
                self.member_of.append(entry.split(','))
            self.forbidden_aggregates |= set(destination.forbidden_aggregates or ())
        if spec_obj.obj_attr_is_set('request_level_params'):
            self.root_required |= set(spec_obj.root_required)
            self.root_forbidden |= set(spec_obj.root_forbidden)

    def _apply_extra_specs(self, extra_specs):
        """Resources, traits and group policy of the extra specs; returns the resource
        classes of the unnumbered group they set."""
        explicit = set()
        for key, value in sorted(extra_specs.items()):
            if key == 'group_policy':
                self.group_policy = value
                continue
            match = _RESOURCES.match(key)
            if match:
                suffix, rc = match.group(1) or '', match.group(2)
                try:
                    amount = int(value)
                except ValueError:
                    continue  # the API's extra spec validation refuses these
                self.group(suffix).resources[rc] = amount
                if not suffix:
                    explicit.add(rc)
                continue
            match = _TRAIT.match(key)
            if match:
                group = self.group(match.group(1) or '')
                if value == 'required':
                    group.required_traits.add(match.group(2))
                elif value == 'forbidden':
                    group.forbidden_traits.add(match.group(2))
        return explicit

    def _translate_pinning(self, flavor, image):
        """``hw:cpu_policy=dedicated``: the flavor's vCPUs as PCPU, as Nova asks."""
        image_meta = image if image is not None else _NoImage()
        try:
            policy = hardware.get_cpu_policy_constraint(flavor, image_meta)
        except Exception:
            return  # conflicting policies: the API refuses them
        if policy != 'dedicated':
            return
        resources = self.unnumbered.resources
        resources[orc.PCPU] = resources.pop(orc.VCPU, flavor.vcpus)
        self.cpu_pinning_requested = True

    def to_querystring(self):
        params = []
        for suffix in sorted(self.groups):
            params.extend(self.groups[suffix].query())
        for aggregates in self.member_of:
            params.append(('member_of', 'in:' + ','.join(sorted(aggregates))))
        if self.forbidden_aggregates:
            params.append(('member_of', '!in:' + ','.join(sorted(self.forbidden_aggregates))))
        root = sorted(self.root_required) + ['!' + t for t in sorted(self.root_forbidden)]
        if root:
            params.append(('root_required', ','.join(root)))
        if self.group_policy and len(self.groups) > 1:
            params.append(('group_policy', self.group_policy))
        if self.limit is not None:
            params.append(('limit', str(self.limit)))
        return urllib.parse.urlencode(sorted(params))

    def __str__(self):
        return self.to_querystring()


class _NoImage:
    """An image without properties, for the CPU policy of a request that has none."""

    class properties:  # noqa: N801 - read as image_meta.properties
        @staticmethod
        def get(key, default=None):
            return default
