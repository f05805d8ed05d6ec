"""DATABASES['default'] from the configuration: PostgreSQL (psycopg 3) when a DSN is set, else SQLite."""

from pathlib import Path

_DJANGO_KEYS = {"dbname": "NAME", "user": "USER", "password": "PASSWORD", "host": "HOST", "port": "PORT"}


def postgres_settings(dsn: str) -> dict:
    """Accepts both DSN forms psycopg does: postgresql://user@host:port/db and 'host=... dbname=...'."""
    from psycopg.conninfo import conninfo_to_dict  # here: psycopg's import is ~0.1 s that a SQLite process need not pay

    params = conninfo_to_dict(dsn)
    settings = {"ENGINE": "django.db.backends.postgresql", "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True, "OPTIONS": {}}
    for key, value in params.items():
        if key in _DJANGO_KEYS:
            settings[_DJANGO_KEYS[key]] = value
        else:
            settings["OPTIONS"][key] = value
    settings.setdefault("NAME", settings.get("USER") or "postgres")
    return settings


def sqlite_settings(data_dir: Path) -> dict:
    # Gateway and workers write concurrently: WAL + IMMEDIATE transactions + busy timeout make writers wait, and
    # the writers of one process take turns (sqlite_backend) instead of racing in SQLite's busy handler.
    return {
        "ENGINE": "viewer_gateway.sqlite_backend",
        "NAME": str(data_dir / "viewer.sqlite3"),
        "CONN_MAX_AGE": 60,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(data_dir / "test-viewer.sqlite3")},
    }


def database_settings(pg_dsn: str, data_dir: Path) -> dict:
    return postgres_settings(pg_dsn) if pg_dsn else sqlite_settings(data_dir)
