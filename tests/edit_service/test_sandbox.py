"""The sandbox's isolation properties, one by one, on the real bubblewrap."""

import socket
import textwrap
import threading
import time
import uuid

import psutil
import pytest

from edit_service.engine.errors import RunFailed, SandboxUnavailable
from edit_service.engine.sandbox import RUN_MOUNT, Sandbox, SandboxLimits


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "runs" / "r1"
    folder.mkdir(parents=True)
    return folder


def run(sandbox, run_dir, code: str):
    return sandbox.execute(run_dir, ["-c", textwrap.dedent(code)])


def test_a_normal_script_runs_and_writes_only_its_folder(sandbox, run_dir):
    outcome = run(sandbox, run_dir, "open('result.txt', 'w').write('hello')")
    assert outcome.returncode == 0 and not outcome.timed_out
    assert (run_dir / "result.txt").read_text() == "hello"


def test_network_is_blocked(sandbox, run_dir):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    outcome = run(sandbox, run_dir, f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=3)
            result = "connected"
        except OSError as exc:
            result = type(exc).__name__
        open("result.txt", "w").write(result)
    """)
    server.close()
    assert outcome.returncode == 0
    assert (run_dir / "result.txt").read_text() != "connected"
    assert accepted == []


def test_writes_outside_the_run_folder_are_impossible(sandbox, run_dir, tmp_path):
    import sys

    targets = ["/usr/evil", f"{sys.prefix}/evil", str(tmp_path / "evil"), "/etc/evil", "/evil"]
    outcome = run(sandbox, run_dir, f"""
        results = []
        for target in {targets!r}:
            try:
                open(target, "w").write("x")
                results.append("written " + target)
            except OSError as exc:
                results.append("refused")
        open("result.txt", "w").write("\\n".join(results))
    """)
    assert outcome.returncode == 0
    assert (run_dir / "result.txt").read_text().split("\n") == ["refused"] * len(targets)
    assert not (tmp_path / "evil").exists()


def test_private_tmp_does_not_leak(sandbox, run_dir):
    marker = f"/tmp/sandbox-leak-{uuid.uuid4().hex}"
    assert run(sandbox, run_dir, f"open({marker!r}, 'w').write('x')").returncode == 0
    import os

    assert not os.path.exists(marker)


def test_other_models_files_are_invisible(sandbox, tmp_path):
    models = tmp_path / "data" / "models"
    (models / "m_other").mkdir(parents=True)
    (models / "m_other" / "model.ifc").write_text("secret")
    own = models / "m_mine" / "script" / "runs" / "r"
    own.mkdir(parents=True)
    outcome = run(sandbox, own, f"""
        import os
        visible = [p for p in ({str(models / 'm_other' / 'model.ifc')!r}, {str(models)!r}, "../../../m_other") if os.path.exists(p)]
        open("result.txt", "w").write(repr((visible, os.listdir("."), os.getcwd())))
    """)
    assert outcome.returncode == 0
    assert (own / "result.txt").read_text() == repr(([], ["result.txt"], RUN_MOUNT))


def _leftovers(marker: str) -> list:
    return [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_infinite_loop_is_killed_at_the_wall_time_with_nothing_left(run_dir):
    marker = f"loop-{uuid.uuid4().hex}"
    sandbox = Sandbox(SandboxLimits(wall_seconds=2))
    started = time.monotonic()
    outcome = run(sandbox, run_dir, f"# {marker}\nwhile True: pass")
    assert outcome.timed_out and 2 <= time.monotonic() - started < 10
    time.sleep(0.3)
    assert _leftovers(marker) == []


def test_setsid_grandchild_is_killed_too(run_dir):
    marker = f"grandchild-{uuid.uuid4().hex}"
    sandbox = Sandbox(SandboxLimits(wall_seconds=3))
    outcome = run(sandbox, run_dir, f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)  # {marker}"], start_new_session=True)
        open("spawned", "w").write("yes")
        time.sleep(600)
    """)
    assert outcome.timed_out
    assert (run_dir / "spawned").exists()
    time.sleep(0.3)
    assert _leftovers(marker) == []


def test_memory_hog_is_stopped(run_dir):
    sandbox = Sandbox(SandboxLimits(memory_mb=512, wall_seconds=30))
    outcome = run(sandbox, run_dir, "blocks = [bytearray(64 * 1024 * 1024) for _ in range(64)]")
    assert outcome.returncode != 0 and not outcome.timed_out
    assert "MemoryError" in outcome.stderr_tail


def test_cpu_limit_stops_a_busy_loop_before_the_wall_time(run_dir):
    sandbox = Sandbox(SandboxLimits(cpu_seconds=1, wall_seconds=30))
    outcome = run(sandbox, run_dir, "while True: pass")
    assert not outcome.timed_out and outcome.returncode != 0 and outcome.seconds < 20


def test_one_megabyte_of_stderr_comes_back_as_its_last_2_kb(sandbox, run_dir):
    outcome = run(sandbox, run_dir, """
        import sys
        for i in range(16384):
            sys.stderr.write(f"line {i:06d} " + "x" * 51 + "\\n")
        sys.exit(3)
    """)
    assert outcome.returncode == 3
    assert len(outcome.stderr_tail.encode()) == 2048
    assert outcome.stderr_tail.endswith(f"line 016383 {'x' * 51}\n")


def test_file_size_limit(run_dir):
    sandbox = Sandbox(SandboxLimits(file_size_mb=1, wall_seconds=30))
    outcome = run(sandbox, run_dir, "open('big', 'wb').write(b'x' * (2 * 1024 * 1024))")
    assert outcome.returncode != 0
    assert (run_dir / "big").stat().st_size <= 1024 * 1024


def test_missing_bubblewrap_refuses_to_run(run_dir):
    sandbox = Sandbox(SandboxLimits(bwrap="/nonexistent/bwrap"))
    with pytest.raises(SandboxUnavailable) as refused:
        run(sandbox, run_dir, "open('ran', 'w').write('unsafe')")
    assert "bubblewrap" in str(refused.value.detail)
    assert not (run_dir / "ran").exists()


def test_build_failure_reports_the_error_output(sandbox, run_dir):
    script = "PARAMS = {'a': 1}\n\ndef build(params, out_path):\n    raise ValueError('the roof is missing')\n"
    with pytest.raises(RunFailed) as failed:
        sandbox.build(script, {"a": 1}, run_dir)
    assert "ValueError: the roof is missing" in failed.value.detail
