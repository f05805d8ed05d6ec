"""supervisord event listener (scripts/supervisord.conf): says loudly on stderr which process supervisord gave up
on after it kept dying at start, so that it does not pass as one INFO line among the others' output."""

import sys

from supervisor import childutils


def announcement(processname: str, groupname: str) -> str:
    return (
        f"\n*** GAVE UP on {processname}: it died within seconds of each of its starts "
        f"and is not restarted any more; the other processes keep running.\n"
        f"*** Its output above (lines '{processname} | ...') says why. Once fixed: "
        f"supervisorctl -c scripts/supervisord.conf start {groupname}:{processname} (with VIEWER_DATA_DIR set), "
        f"or stop and run `make run` again.\n\n"
    )


def main() -> None:
    while True:
        _, payload = childutils.listener.wait(sys.stdin, sys.stdout)
        process, _ = childutils.eventdata(payload + "\n")
        sys.stderr.write(announcement(process["processname"], process["groupname"]))
        sys.stderr.flush()
        childutils.listener.ok(sys.stdout)


if __name__ == "__main__":
    main()
