"""The names of the task queues (TASKS["default"]["QUEUES"] in the settings lists the same names); core.jobs.tasks
holds one task for each. A leaf module: the kinds registry checks a kind's queue against it."""

CONVERSION_QUEUE = "conversions"
CHECK_QUEUE = "checks"
CLASH_QUEUE = "clashes"

QUEUES = (CONVERSION_QUEUE, CHECK_QUEUE, CLASH_QUEUE)
