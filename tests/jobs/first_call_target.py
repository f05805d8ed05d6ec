"""A module tests/jobs/test_process_start.py imports through core.jobs.on_first_call."""


def double(value: int) -> int:
    return 2 * value
