"""The reports of a finished check as files a person can send: HTML, and BCF 3.0 topics."""

from __future__ import annotations

from checks_app import selectors
from core.errors import Invalid


def check_report_html(*, model_id: str, check_id: str) -> tuple[str, str]:
    """(file name, HTML) of a self-contained report a person can send."""
    from checks_app.reports import html_report

    check = selectors.done_check_get(model_id, check_id)
    return f"{check.model_id}-{check.id}.html", html_report(check)


def check_report_bcf(*, model_id: str, check_id: str, per: str = "element") -> tuple[str, bytes]:
    """(file name, BCF 3.0 archive): one topic per failing element, or per failing specification."""
    from checks_app.reports import bcf_report

    if per not in ("element", "specification"):
        raise Invalid(f"per must be element or specification, got {per!r}")
    check = selectors.done_check_get(model_id, check_id)
    return f"{check.model_id}-{check.id}-{per}.bcfzip", bcf_report(check, per)
