"""The engine's exceptions."""


class Cancelled(Exception):
    """should_stop() said stop: the run ends without a result."""
