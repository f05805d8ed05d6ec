"""The tag of the configuration's system checks: registered by the gateway (viewer_gateway/checks.py), run by every
command that starts a process of the service, the workers (core/jobs/worker.py) among them."""

CONFIGURATION_TAG = "gateway_configuration"
