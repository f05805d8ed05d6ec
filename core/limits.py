"""Every request-body and upload limit of the gateway, in bytes (the spec's Limits and the extensions beyond it).

The server (viewer_gateway/server.py) refuses a body over its route's limit before reading it; the upload handler
(api/uploads.py) stops a file part at its view's limit; the use cases check what arrives in a body.
The largest model upload is a setting (maxUploadMB), not a constant.
"""

MEGABYTE = 1024 * 1024
MULTIPART_OVERHEAD_BYTES = 64 * 1024  # boundaries and part headers of a multipart body

BCF_ARCHIVE_MAX_BYTES = 50 * MEGABYTE
IDS_MAX_BYTES = 5 * MEGABYTE  # one IDS file
SCREENSHOT_MAX_BYTES = 5 * MEGABYTE  # spec, Limits: issue screenshot (a part, a viewpoint snapshot, a BCF snapshot)
ISSUE_PART_MAX_BYTES = 5 * MEGABYTE  # the JSON part 'issue' of a multipart issue request
PLAN_FILE_BYTES = 5 * MEGABYTE  # one plan file (a JSON document)
# a script body: the edit service applies its own, much smaller, exact limit; this one stops a huge body early
SCRIPT_BODY_BYTES = 2 * MEGABYTE
# JSON bodies (plans, messages) and everything not listed above
DEFAULT_BODY_BYTES = 10 * MEGABYTE


def size_limit_message(limit_bytes: int, what: str = "file") -> str:
    if limit_bytes < MEGABYTE:
        return f"{what} exceeds the limit of {limit_bytes / 1024:g} KB"
    return f"{what} exceeds the limit of {limit_bytes / MEGABYTE:g} MB"
