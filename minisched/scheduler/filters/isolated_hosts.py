"""Keep isolated images on isolated hosts (and, by default, isolated hosts for them alone).

``[filter_scheduler] isolated_images`` may only run on ``isolated_hosts``; with
``restrict_isolated_hosts_to_isolated_images`` (default) those hosts take nothing else.
Without isolated images, isolated hosts are simply closed when restricted.
"""
from minisched.scheduler import filters


class IsolatedHostsFilter(filters.BaseHostFilter):
    """Passes hosts allowed for the request's image by the isolation options."""

    # The options do not change within a request.
    run_filter_once_per_request = True
    # A rebuild may change the image, so the host must still fit the new one.
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        options = self.conf.filter_scheduler
        restrict = options.restrict_isolated_hosts_to_isolated_images
        host_isolated = host_state.host in options.isolated_hosts
        if not options.isolated_images:
            return not restrict or not host_isolated
        image_isolated = _image_id(spec_obj) in options.isolated_images
        if restrict:
            return image_isolated == host_isolated
        return not image_isolated or host_isolated

    def is_noop(self, spec_obj):
        options = self.conf.filter_scheduler
        if not options.restrict_isolated_hosts_to_isolated_images:
            return _image_id(spec_obj) not in (options.isolated_images or [])
        # Restricted: with no isolated host, everything passes unless the image is isolated.
        return not options.isolated_hosts and (
            _image_id(spec_obj) not in (options.isolated_images or []))


def _image_id(spec_obj):
    # Volume-backed instances may come without an image id.
    image = spec_obj.image
    return image.id if image and image.obj_attr_is_set('id') else None
