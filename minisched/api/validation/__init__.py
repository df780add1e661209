"""Request validation as nova-api's JSON schemas and extra spec validators do it.

minisched has no REST API: ``minisched.compute.api`` and ``minisched-manage`` call these
functions before they write anything. One module per kind of request, as Nova's schemas:
``servers`` (server create), ``flavors`` (flavor create, extra specs), ``images`` (the image
a server is booted from), with the value rules they share in ``parameter_types`` and the
per-key extra spec rules in ``extra_specs``. Every refusal is a
:class:`minisched.exception.ValidationError` naming the field, the rule and what is wrong
with the value.
"""
