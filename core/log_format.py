"""The log configuration of both services (gateway and edit service): one line per record, its time in UTC as
ISO 8601 with the offset (2026-11-25T19:30:22.123+00:00), whatever the host's zone, so the two logs interleave."""

import logging
from datetime import datetime, timezone


class UtcIsoFormatter(logging.Formatter):
    def formatTime(self, record, datefmt=None):
        return datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")


def logging_config(loggers: dict | None = None) -> dict:
    """Django's LOGGING: records of level INFO and up to stderr; `loggers` sets the levels of particular loggers."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"utc": {"()": UtcIsoFormatter, "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "utc"}},
        "root": {"handlers": ["console"], "level": "INFO"},
        "loggers": loggers or {},
    }
