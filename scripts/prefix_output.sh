#!/usr/bin/env bash
# prefix_output.sh NAME COMMAND [ARG...]: runs COMMAND with each line of its stdout and stderr prefixed "NAME | ",
# as honcho showed them (used by scripts/supervisord.conf).
# COMMAND replaces this shell, so it keeps the pid supervisord watches and signals. The prefixing sed is its child
# in the same process group; it ignores SIGINT/SIGTERM so that it passes on COMMAND's last lines, and ends when
# COMMAND's output closes (or with the group's SIGKILL).
name=$1
shift
exec > >(trap '' INT TERM; exec sed -u "s/^/$name | /") 2>&1
exec "$@"
