#!/usr/bin/env python
"""Gateway entry point."""
import os
import sys

if __name__ == "__main__":
    from serving.lifetime import die_with_parent_if_asked

    die_with_parent_if_asked()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "viewer_gateway.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
