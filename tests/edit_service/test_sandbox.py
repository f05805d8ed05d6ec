"""The sandbox's isolation properties, one by one, on the real bubblewrap."""

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from edit_service.engine.errors import RunFailed, SandboxUnavailable
from edit_service.engine.sandbox import RUN_MOUNT, Sandbox, SandboxLimits

pytestmark = pytest.mark.heavy

ROOT = Path(__file__).resolve().parents[2]
SEND_RESULTS = """
import os, sys
from outputs import send
send(int(sys.argv[-1]), [name for name in {names!r} if os.path.exists(name)])
"""


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "runs" / "r1"
    folder.mkdir(parents=True)
    return folder


def run(sandbox, run_dir, code: str, outputs=("result.txt",)):
    """Runs `code` in the sandbox; whatever of `outputs` it wrote comes back."""
    program = textwrap.dedent(code) + SEND_RESULTS.format(names=list(outputs))
    return sandbox.execute(run_dir, ["-c", program], inputs={}, outputs=tuple(outputs))


def result(outcome) -> str:
    return outcome.outputs["result.txt"].read_text()


def test_a_normal_script_runs_and_its_results_come_back(sandbox, run_dir):
    outcome = run(sandbox, run_dir, "open('result.txt', 'w').write('hello')")
    assert outcome.returncode == 0 and not outcome.timed_out
    assert result(outcome) == "hello" and outcome.outputs["result.txt"].parent.parent == run_dir


def test_the_script_runs_as_nobody_without_nested_user_namespaces(sandbox, run_dir):
    outcome = run(sandbox, run_dir, """
        import os, subprocess
        nested = subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode
        open("result.txt", "w").write(f"{os.getuid()} {os.getgid()} {nested}")
    """)
    uid, gid, nested = result(outcome).split()
    assert (uid, gid) == ("65534", "65534") and nested != "0"


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
            outcome = "connected"
        except OSError as exc:
            outcome = type(exc).__name__
        open("result.txt", "w").write(outcome)
    """)
    server.close()
    assert outcome.returncode == 0 and result(outcome) != "connected" and accepted == []


def test_nothing_outside_the_private_working_folder_is_writable(sandbox, run_dir, tmp_path):
    targets = ["/usr/evil", f"{sys.prefix}/evil", str(tmp_path / "evil"), str(run_dir / "evil"), "/etc/evil", "/evil", "/sandbox/lib/evil"]
    outcome = run(sandbox, run_dir, f"""
        results = []
        for target in {targets!r}:
            try:
                open(target, "w").write("x")
                results.append("written " + target)
            except OSError:
                results.append("refused")
        open("result.txt", "w").write("\\n".join(results))
    """)
    assert result(outcome).split("\n") == ["refused"] * len(targets)
    assert not (tmp_path / "evil").exists() and not (run_dir / "evil").exists()


def test_private_tmp_does_not_leak(sandbox, run_dir):
    marker = f"/tmp/sandbox-leak-{uuid.uuid4().hex}"
    assert run(sandbox, run_dir, f"open({marker!r}, 'w').write('x')").returncode == 0
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
    assert result(outcome) == repr(([], ["result.txt"], RUN_MOUNT))


def test_a_symlinked_result_is_refused_never_followed(sandbox, run_dir, tmp_path, monkeypatch):
    """The script tries to make the host read (and later publish) a host file through a link."""
    secret = tmp_path / "server_config.json"
    secret.write_text('{"apiToken": "TOP-SECRET"}')
    monkeypatch.chdir(tmp_path)
    outcome = run(sandbox, run_dir, """
        import os
        open("server_config.json", "w").write("a decoy that exists inside the sandbox too")
        os.symlink("/proc/self/cwd/server_config.json", "result.txt")
    """)
    assert outcome.outputs == {} and outcome.returncode != 0
    assert not any("TOP-SECRET" in p.read_text(errors="ignore") for p in run_dir.rglob("*") if p.is_file())


def test_forged_output_frames_are_refused(sandbox, run_dir):
    outcome = sandbox.execute(run_dir, ["-c", """
import os, sys
fd = int(sys.argv[-1])
os.write(fd, b'{"name": "../../escape.txt", "size": 3}\\nabc')
"""], inputs={}, outputs=("result.txt",))
    assert outcome.outputs == {} and "unexpected output" in outcome.output_error
    assert not (run_dir.parent.parent / "escape.txt").exists()


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
        time.sleep(600)
    """)
    assert outcome.timed_out
    time.sleep(0.3)
    assert _leftovers(marker) == []


def test_a_fork_bomb_is_capped_for_the_whole_tree(run_dir):
    sandbox = Sandbox(SandboxLimits(processes=24, wall_seconds=30))
    outcome = run(sandbox, run_dir, """
        import os, time
        children = 0
        try:
            for _ in range(200):
                if os.fork() == 0:
                    time.sleep(3)
                    os._exit(0)
                children += 1
        except OSError:
            pass
        open("result.txt", "w").write(str(children))
    """)
    assert outcome.returncode == 0 and int(result(outcome)) < 24


def test_memory_is_capped_for_the_whole_tree(run_dir):
    """Each of three processes stays under a per-process limit of 600 MB; together they pass it."""
    sandbox = Sandbox(SandboxLimits(memory_mb=600, wall_seconds=60))
    outcome = run(sandbox, run_dir, """
        import multiprocessing, time
        def hold():
            block = bytearray(300 * 1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])
            time.sleep(5)
        workers = [multiprocessing.Process(target=hold) for _ in range(3)]
        for w in workers: w.start()
        for w in workers: w.join()
        open("result.txt", "w").write(",".join(str(w.exitcode) for w in workers))
    """)
    codes = result(outcome).split(",") if "result.txt" in outcome.outputs else ["killed"]
    assert outcome.returncode != 0 or any(code != "0" for code in codes)


def test_private_tmp_is_size_capped(run_dir):
    sandbox = Sandbox(SandboxLimits(tmp_mb=8, wall_seconds=30))
    outcome = run(sandbox, run_dir, """
        try:
            open("/tmp/fill", "wb").write(b"x" * (32 * 1024 * 1024))
            state = "written"
        except OSError as exc:
            state = exc.strerror
        open("result.txt", "w").write(state)
    """)
    assert result(outcome) == "No space left on device"


def test_total_bytes_written_by_a_run_are_capped(run_dir):
    """Many files each under the per-file limit still stop at the working folder's size."""
    sandbox = Sandbox(SandboxLimits(output_mb=16, file_size_mb=8, wall_seconds=30))
    outcome = run(sandbox, run_dir, """
        written = 0
        try:
            for index in range(10):
                open(f"part{index}", "wb").write(b"x" * (4 * 1024 * 1024))
                written += 4
        except OSError:
            pass
        import os
        os.remove("part0")  # room for the answer
        open("result.txt", "w").write(str(written))
    """)
    assert int(result(outcome)) <= 16  # of the 40 MB it tried


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
    outcome = run(sandbox, run_dir, """
        try:
            open('big', 'wb').write(b'x' * (2 * 1024 * 1024))
        except OSError:
            pass
        import os
        open("result.txt", "w").write(str(os.path.getsize("big")))
    """)
    assert outcome.returncode != 0 or int(result(outcome)) <= 1024 * 1024


def test_outputs_over_the_cap_are_refused(run_dir):
    sandbox = Sandbox(SandboxLimits(output_mb=4, wall_seconds=30))
    outcome = run(sandbox, run_dir, """
        import os, sys, json
        fd = int(sys.argv[-1])
        os.write(fd, json.dumps({"name": "result.txt", "size": 64 * 1024 * 1024}).encode() + b"\\n")
        for _ in range(64):
            os.write(fd, b"x" * (1024 * 1024))
    """)
    assert "exceed" in outcome.output_error and outcome.outputs == {}


def test_missing_bubblewrap_refuses_to_run(run_dir):
    sandbox = Sandbox(SandboxLimits(bwrap="/nonexistent/bwrap"))
    with pytest.raises(SandboxUnavailable) as refused:
        run(sandbox, run_dir, "open('result.txt', 'w').write('unsafe')")
    assert "bubblewrap" in str(refused.value.detail)


def test_build_failure_reports_the_error_output(sandbox, run_dir):
    script = "PARAMS = {'a': 1}\n\ndef build(params, out_path):\n    raise ValueError('the roof is missing')\n"
    with pytest.raises(RunFailed) as failed:
        sandbox.build(script, {"a": 1}, run_dir)
    assert "ValueError: the roof is missing" in failed.value.detail


SANDBOX_FROM_TMP = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from edit_service.engine.sandbox import Sandbox, SandboxLimits
run_dir = Path(sys.argv[2])
script = "import script_lib as sl\\nPARAMS = {}\\n\\ndef build(params, out_path):\\n    sl.save(sl.new_model('tmp'), out_path)\\n"
ifc, _, _ = Sandbox(SandboxLimits(wall_seconds=60)).build(script, {}, run_dir)
print(ifc.read_text()[:13])
"""


def test_the_sandbox_works_with_checkout_venv_and_data_under_tmp(tmp_path):
    """Checkout and venv under /tmp (like `git clone . /tmp/x`): the private /tmp must not hide them."""
    checkout = tmp_path / "checkout"
    (checkout / "edit_service").mkdir(parents=True)
    for part in ("engine", "sandbox"):
        subprocess.run(["cp", "-r", str(ROOT / "edit_service" / part), str(checkout / "edit_service" / part)], check=True)
    (checkout / "edit_service" / "__init__.py").touch()
    subprocess.run(["cp", "-r", str(ROOT / "sandboxing"), str(checkout / "sandboxing")], check=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site_packages = next((venv / "lib").glob("python3*/site-packages"))
    (site_packages / "real-venv.pth").write_text(next(p for p in sys.path if p.endswith("site-packages")) + "\n")
    run_dir = tmp_path / "data" / "models" / "m_1" / "script" / "runs" / "r"
    run_dir.mkdir(parents=True)
    done = subprocess.run([str(venv / "bin" / "python"), "-c", SANDBOX_FROM_TMP, str(checkout), str(run_dir)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ISO-10303-21;"


# --- fail closed: no cgroup, no run (unless the operator opts in) ------------------------------------------------


@pytest.mark.parametrize("root", ["plain-folder", "missing"])
def test_a_run_is_refused_when_no_cgroup_can_be_made(run_dir, tmp_path, root):
    """A cgroup root that is not a cgroup hierarchy (a plain folder a root process can write into, or nothing)."""
    cgroup_root = tmp_path / root
    if root == "plain-folder":
        cgroup_root.mkdir()
    sandbox = Sandbox(SandboxLimits(wall_seconds=30, cgroup_root=str(cgroup_root)))
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable) as refused:
        run(sandbox, run_dir, f"open({str(marker)!r}, 'w')")
    assert refused.value.status == 503
    assert "isolation unavailable" in refused.value.detail and str(cgroup_root) in refused.value.detail
    assert "EDIT_SANDBOX_ALLOW_NO_CGROUP=1" in refused.value.detail
    assert list(run_dir.parent.iterdir()) == [run_dir] and list(run_dir.iterdir()) == []
    assert not marker.exists()
    if root == "plain-folder":
        assert list(cgroup_root.iterdir()) == []


def test_runs_go_on_without_a_cgroup_only_when_the_operator_opts_in(run_dir, tmp_path):
    sandbox = Sandbox(SandboxLimits(wall_seconds=30, cgroup_root=str(tmp_path), allow_no_cgroup=True))
    outcome = run(sandbox, run_dir, "open('result.txt', 'w').write('ran with rlimits only')")
    assert outcome.returncode == 0 and result(outcome) == "ran with rlimits only"
    assert "WITHOUT a cgroup" in sandbox.isolation_summary()
    assert "isolation unavailable" in Sandbox(SandboxLimits(cgroup_root=str(tmp_path))).isolation_summary()
    assert "per-run cgroup" in Sandbox(SandboxLimits()).isolation_summary()


def test_the_opt_in_is_read_from_its_environment_variable():
    assert SandboxLimits.from_environment({"EDIT_SANDBOX_ALLOW_NO_CGROUP": "1"}).allow_no_cgroup
    assert not SandboxLimits.from_environment({"EDIT_SANDBOX_ALLOW_NO_CGROUP": "0"}).allow_no_cgroup
    assert not SandboxLimits.from_environment({}).allow_no_cgroup
    assert SandboxLimits.from_environment({"EDIT_SANDBOX_CGROUP_ROOT": "/x"}).cgroup_root == "/x"


def test_dev_shm_is_a_small_capped_tmpfs_and_dev_is_read_only(run_dir):
    """Before: /dev/shm was an unsized tmpfs (512 MB written there, limited only by the file-size rlimit)."""
    sandbox = Sandbox(SandboxLimits(shm_mb=4, memory_mb=1024, wall_seconds=30))
    outcome = run(sandbox, run_dir, """
        import os
        states = []
        try:
            with open("/dev/shm/fill", "wb") as handle:
                handle.write(b"x" * (16 * 1024 * 1024))
            states.append("shm unbounded")
        except OSError as exc:
            states.append(exc.strerror)
        states.append(str(os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize))
        for target in ("/dev/evil", "/dev/null2"):
            try:
                open(target, "w").close()
                states.append("dev writable")
            except OSError as exc:
                states.append(exc.strerror)
        with open("/dev/null", "w") as null:  # the standard device nodes still work
            null.write("x")
        open("result.txt", "w").write("|".join(states))
    """)
    written, shm_size, *dev = result(outcome).split("|")
    assert written == "No space left on device"
    assert int(shm_size) == 4 * 1024 * 1024
    assert dev == ["Read-only file system"] * 2
