"""Service liveness: reporting a service's state and answering whether it is up."""
from minisched.servicegroup.api import API  # noqa: F401
