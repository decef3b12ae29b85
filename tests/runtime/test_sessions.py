"""Agent sessions for real: Claude Code hook events through `stockade hook`, runs under
bubblewrap through `stockade run --session`, a private HOME, state and workspace per test.

Covered: the breaker trips and resumes; approvals turn `confirm` into `allow` and can never
override a `deny`; read-before-edit refuses blind and stale edits; the journal reverts a
session's changes and leaves a person's concurrent change alone; two parallel sessions in
their own clones of one repository; `cpus` sets the run's cpu cgroup; `audit --session`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODING = ROOT / "examples" / "coding-agent.policy"

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


class Machine:
    """A private HOME, state directory and workspace, and the CLI run against them."""

    def __init__(self, tmp: Path, session_section: str = "", extra: str = ""):
        self.root = tmp.resolve()
        self.home = self.root / "home"
        self.workspace = self.root / "ws"
        self.state = self.root / "state"
        for path in (self.home, self.workspace, self.state):
            path.mkdir(parents=True, exist_ok=True)
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh" / "id_rsa").write_text("PRIVATE KEY canary\n")
        self.policy = self.root / "team.policy"
        self.policy.write_text(f'policy "team"\ninclude "{CODING}"\n{session_section}\n{extra}\n')
        self.audit = self.root / "audit.jsonl"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                    "STOCKADE_STATE": str(self.state), "XDG_CACHE_HOME": str(self.root / "cache"),
                    "XDG_DATA_HOME": str(self.root / "data"), "XDG_CONFIG_HOME": str(self.root / "config"),
                    "STOCKADE_AUDIT": str(self.audit), "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8"}

    def cli(self, *args: str, stdin: str | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stockade", *args], input=stdin, capture_output=True,
                              text=True, cwd=str(cwd or self.workspace), env={**self.env, **(env or {})},
                              timeout=120)

    def hook(self, tool: str, tool_input: dict, session: str = "s1", event: str = "PreToolUse",
             response: dict | None = None) -> dict | None:
        payload = {"hook_event_name": event, "session_id": session, "cwd": str(self.workspace),
                   "tool_name": tool, "tool_input": tool_input}
        if response is not None:
            payload["tool_response"] = response
        done = self.cli("hook", "claude-code", "--approve-allowed", "--policy", str(self.policy),
                        stdin=json.dumps(payload))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["hookSpecificOutput"] if done.stdout.strip() else None

    def bash(self, command: str, session: str = "s1") -> tuple[str, str]:
        answer = self.hook("Bash", {"command": command}, session)
        assert answer is not None
        return answer["permissionDecision"], answer["permissionDecisionReason"]

    def state_of(self, session: str) -> dict:
        return json.loads((self.state / "sessions" / session / "state.json").read_text())


SESSION = """session {
    max-denials 2
    max-steps   50
    approvals   persist
    never-persist npm publish
}"""


# -- the breaker ------------------------------------------------------------------------------


def test_the_breaker_trips_after_denials_in_a_row_and_a_person_resumes(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    assert m.bash("ls")[0] == "allow"
    assert m.bash("cat ~/.ssh/id_rsa")[0] == "deny"
    assert m.bash("ls")[0] == "allow"  # an allow ends the run of denials
    assert m.bash("cat ~/.ssh/id_rsa")[0] == "deny"
    decision, why = m.bash("cat ~/.ssh/id_rsa")
    assert decision == "deny" and "stops the session" in why and "max-denials 2" in why
    decision, why = m.bash("ls")  # stopped: even an allowed command is refused
    assert decision == "deny" and "stockade session resume s1" in why
    assert m.state_of("s1")["status"] == "stopped"
    shown = m.cli("session", "show", "s1")
    assert "stopped" in shown.stdout and "max-denials 2" in shown.stdout
    assert m.cli("session", "resume", "s1").returncode == 0
    assert m.bash("ls")[0] == "allow"
    assert "s1" in m.cli("session", "list").stdout


def test_max_steps_stops_a_session_and_ended_sessions_refuse(tmp_path: Path) -> None:
    m = Machine(tmp_path, "session {\n    max-steps 2\n}")
    assert m.bash("ls")[0] == "allow"
    assert m.bash("ls")[0] == "allow"
    decision, why = m.bash("ls")
    assert decision == "deny" and "max-steps 2" in why
    m.cli("session", "resume", "s1")
    assert m.bash("ls")[0] == "allow"  # the budget starts again after a person resumed
    assert m.cli("session", "end", "s1").returncode == 0
    assert m.bash("ls") == ("deny", "stockade: session `s1` has ended")


def test_on_limit_confirm_makes_a_person_decide_every_command(tmp_path: Path) -> None:
    m = Machine(tmp_path, "session {\n    max-denials 1\n    on-limit confirm\n}")
    assert m.bash("cat ~/.ssh/id_rsa")[0] == "deny"
    decision, why = m.bash("ls")
    assert decision == "ask" and "every command needs a person" in why


def test_failures_in_a_row_trip_the_breaker_from_post_tool_use(tmp_path: Path) -> None:
    m = Machine(tmp_path, "session {\n    max-failures 2\n}")
    for _ in range(2):
        assert m.bash("false")[0] == "allow"
        assert m.hook("Bash", {"command": "false"}, event="PostToolUseFailure", response={}) is None
    decision, why = m.bash("ls")
    assert decision == "deny" and "max-failures 2" in why


def test_without_a_session_section_the_hook_keeps_no_session(tmp_path: Path) -> None:
    m = Machine(tmp_path)
    assert m.bash("ls")[0] == "allow"
    assert not (m.state / "sessions").exists()


# -- approvals --------------------------------------------------------------------------------


def test_an_approval_turns_confirm_into_allow_for_every_segment_and_never_a_deny(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    assert m.bash("git push origin feature")[0] == "ask"
    added = m.cli("approvals", "add", "--policy", str(m.policy), "--yes", "--", "git", "push", "origin", "feature")
    assert added.returncode == 0, added.stderr
    assert "`git push`" in added.stdout and "never a `deny`" in added.stdout
    decision, why = m.bash("git push origin feature")
    assert decision == "allow" and "approved by `git push`" in why
    assert m.bash("git push origin other && git status")[0] == "allow"
    # the approval covers `git push`, not the inline code in another segment
    assert m.bash("git push origin x && python3 -c 'import subprocess; subprocess.run([\"make\"])'")[0] == "ask"
    # and can never override a deny rule
    decision, why = m.bash("git push --force origin main")
    assert decision == "deny" and "history rewrite" in why
    listed = m.cli("approvals", "list")
    assert "git push" in listed.stdout
    approval_id = listed.stdout.split()[0]
    assert m.cli("approvals", "revoke", approval_id).returncode == 0
    assert m.bash("git push origin feature")[0] == "ask"
    trail = [json.loads(line) for line in m.audit.read_text().splitlines()]
    assert any(r.get("event") == "approval-added" for r in trail)
    assert any(r.get("event") == "approval-revoked" for r in trail)


def test_approvals_have_a_safe_granularity(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)

    def add(*argv: str) -> subprocess.CompletedProcess[str]:
        return m.cli("approvals", "add", "--policy", str(m.policy), "--yes", "--", *argv)

    bare = add("git")
    assert bare.returncode == 1 and "subcommand" in bare.stderr  # never a bare multi-command tool
    inline = add("python3", "-c", "import os")
    assert inline.returncode == 1 and "inline" in inline.stderr
    denied = add("git", "push", "--force", "origin", "x")
    assert denied.returncode == 1 and "can never allow it" in denied.stderr
    never = add("npm", "publish", "--tag", "next")
    assert never.returncode == 1 and "never-persist npm publish" in never.stderr
    assert add("npm", "test").returncode == 0
    from stockade.runtime.approvals import Approval

    saved = Approval("npm", ("test",))
    assert saved.matches(["npm", "test", "--", "--watch"])
    assert not saved.matches(["npm", "publish"])
    assert not saved.matches(["./npm", "test"])  # a program given as a path matches only itself


def test_approvals_never_in_the_policy_refuses_storing(tmp_path: Path) -> None:
    m = Machine(tmp_path, "session {\n    approvals never\n}")
    done = m.cli("approvals", "add", "--policy", str(m.policy), "--yes", "--", "git", "push", "origin", "x")
    assert done.returncode == 1 and "approvals never" in done.stderr


def test_layers_cannot_loosen_a_locked_session_setting(tmp_path: Path) -> None:
    base = tmp_path / "base.policy"
    base.write_text('policy "base"\nsession {\n    locked max-denials 3\n    locked approvals session\n}\n')
    team = tmp_path / "team.policy"
    team.write_text(f'policy "team"\ninclude "{base}"\nsession {{\n    max-denials 10\n    approvals persist\n}}\n')
    from stockade.api import load_policy
    from stockade.diagnostics import StockadeError

    with pytest.raises(StockadeError) as raised:
        load_policy(str(team), workspace=str(tmp_path))
    messages = " ".join(d.message for d in raised.value.diagnostics)
    assert "max-denials 10" in messages and "approvals persist" in messages
    team.write_text(f'policy "team"\ninclude "{base}"\nsession {{\n    max-denials 2\n    approvals never\n}}\n')
    ir = load_policy(str(team), workspace=str(tmp_path)).ir
    from stockade.runtime.sessions import SessionSettings

    settings = SessionSettings.from_ir(ir)
    assert settings.max_denials is not None and settings.max_denials.count == 2 and settings.approvals == "never"


# -- read before edit -------------------------------------------------------------------------


def test_a_blind_edit_is_refused_and_a_read_then_edit_passes(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    target = m.workspace / "app.py"
    target.write_text("print('v1')\n")
    edit = {"file_path": str(target), "old_string": "v1", "new_string": "v2"}
    answer = m.hook("Edit", edit)
    assert answer is not None and answer["permissionDecision"] == "deny"
    assert "has not read it" in answer["permissionDecisionReason"]
    assert m.hook("Read", {"file_path": str(target)})["permissionDecision"] == "allow"  # type: ignore[index]
    assert m.hook("Edit", edit)["permissionDecision"] == "allow"  # type: ignore[index]
    target.write_text("print('v2')\n")  # the tool wrote it
    assert m.hook("Edit", edit, event="PostToolUse", response={"filePath": str(target)}) is None
    assert m.hook("Edit", edit)["permissionDecision"] == "allow"  # type: ignore[index]  # it knows what it wrote
    target.write_text("print('a person changed it')\n")  # someone else edits meanwhile
    answer = m.hook("Edit", edit)
    assert answer is not None and answer["permissionDecision"] == "deny"
    assert "changed since this session read it" in answer["permissionDecisionReason"]
    # a new file needs no read
    new = m.hook("Write", {"file_path": str(m.workspace / "new.py"), "content": "x"})
    assert new is not None and new["permissionDecision"] == "allow"


def test_an_edit_through_a_symlinked_directory_is_not_a_blind_pass(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    (m.workspace / "real").mkdir()
    (m.workspace / "real" / "f.txt").write_text("x\n")
    (m.workspace / "link").symlink_to(m.workspace / "real")
    answer = m.hook("Write", {"file_path": str(m.workspace / "link" / "f.txt"), "content": "y"})
    assert answer is not None and answer["permissionDecision"] == "deny"


# -- the journal and revert -------------------------------------------------------------------


def test_revert_restores_a_sessions_changes_and_leaves_a_persons_change_alone(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    (m.workspace / "a.txt").write_text("original a\n")
    (m.workspace / "b.txt").write_text("original b\n")
    done = m.cli("run", "--session", "r1", "--policy", str(m.policy), "--",
                 "sh", "-c", "echo agent >> a.txt; echo agent > b.txt; echo new > c.txt; rm b.txt; echo b2 > b.txt")
    assert done.returncode == 0, done.stderr
    assert (m.workspace / "c.txt").read_text() == "new\n"
    diff = m.cli("session", "diff", "r1")
    assert "+agent" in diff.stdout and "+++ b/c.txt" in diff.stdout
    (m.workspace / "b.txt").write_text("a person's edit\n")  # concurrent change by someone else
    reverted = m.cli("revert", "r1")
    assert reverted.returncode == 1  # one file refused
    assert "b.txt: changed since the session changed it" in reverted.stdout
    assert (m.workspace / "a.txt").read_text() == "original a\n"
    assert not (m.workspace / "c.txt").exists()
    assert (m.workspace / "b.txt").read_text() == "a person's edit\n"
    timeline = m.cli("audit", "--session", "r1", str(m.audit), "--format", "json")
    records = json.loads(timeline.stdout)
    assert [r["event"] for r in records] == ["decision", "run"] and {r["step"] for r in records} == {1}


def test_revert_never_follows_a_symlink_planted_in_the_workspace(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    (m.workspace / "d").mkdir()
    (m.workspace / "d" / "f.txt").write_text("before\n")
    outside = m.root / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside stays\n")
    done = m.cli("run", "--session", "r2", "--policy", str(m.policy), "--", "sh", "-c", "echo after > d/f.txt")
    assert done.returncode == 0, done.stderr
    shutil.rmtree(m.workspace / "d")
    (m.workspace / "d").symlink_to(outside)  # the directory swapped for a link out of the workspace
    reverted = m.cli("revert", "r2")
    assert reverted.returncode == 1
    assert (outside / "f.txt").read_text() == "outside stays\n"


def test_hook_file_edits_are_journaled_and_reverted(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    target = m.workspace / "notes.md"
    target.write_text("one\n")
    m.hook("Read", {"file_path": str(target)})
    assert m.hook("Write", {"file_path": str(target), "content": "two\n"})["permissionDecision"] == "allow"  # type: ignore[index]
    target.write_text("two\n")
    m.hook("Write", {"file_path": str(target)}, event="PostToolUse", response={})
    assert m.cli("revert", "s1").returncode == 0
    assert target.read_text() == "one\n"


# -- per-session workspaces -------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_two_parallel_sessions_get_their_own_clones_and_merge_back(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    _git(m.workspace, "init", "-q", "-b", "main")  # the test's own fresh repository
    (m.workspace / "README").write_text("hello\n")
    _git(m.workspace, "add", "README")
    _git(m.workspace, "commit", "-q", "-m", "init")
    trees = {}
    for name in ("alpha", "beta"):
        started = m.cli("session", "start", name, "--worktree", "--policy", str(m.policy), "--format", "json")
        assert started.returncode == 0, started.stderr
        trees[name] = Path(json.loads(started.stdout)["workspace"])
    assert trees["alpha"] != trees["beta"]
    for name in ("alpha", "beta"):
        done = m.cli("run", "--session", name, "--policy", str(m.policy), "--workspace", str(trees[name]), "--",
                     "sh", "-c", f"echo {name} > {name}.txt", cwd=trees[name])
        assert done.returncode == 0, done.stderr
    assert not (trees["alpha"] / "beta.txt").exists() and not (trees["beta"] / "alpha.txt").exists()
    assert not (m.workspace / "alpha.txt").exists()
    # the clone's git metadata is protected as in the main workspace
    hooked = m.cli("run", "--session", "alpha", "--policy", str(m.policy), "--workspace", str(trees["alpha"]),
                   "--approve", "--", "sh", "-c", "echo x > .git/hooks/post-commit", cwd=trees["alpha"])
    assert hooked.returncode != 0
    merged = m.cli("session", "end", "alpha", "--merge")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert (m.workspace / "alpha.txt").read_text() == "alpha\n"
    assert not trees["alpha"].exists()
    discarded = m.cli("session", "end", "beta", "--discard")
    assert discarded.returncode == 0
    assert not (m.workspace / "beta.txt").exists() and not trees["beta"].exists()
    assert "stockade/beta" not in _git(m.workspace, "branch")


# -- cpus -------------------------------------------------------------------------------------


def _cpu_root() -> Path | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            for mount in (f"/sys/fs/cgroup/{controllers}", "/sys/fs/cgroup/cpu"):
                if os.path.isdir(mount):
                    candidate = Path(mount + path.rstrip("/"))
                    return candidate if os.access(candidate, os.W_OK) else None
    return None


@pytest.mark.skipif(_cpu_root() is None, reason="needs a writable cgroup v1 cpu hierarchy")
def test_cpus_limits_the_runs_cpu_bandwidth(tmp_path: Path) -> None:
    m = Machine(tmp_path, extra="limits {\n    cpus 0.25\n}")
    root = _cpu_root()
    assert root is not None
    before = set(root.glob("stockade-*"))
    run = subprocess.Popen([sys.executable, "-m", "stockade", "run", "--policy", str(m.policy), "--", "sleep", "3"],
                           cwd=m.workspace, env=m.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    quota = None
    deadline = time.monotonic() + 20
    while quota is None and time.monotonic() < deadline and run.poll() is None:
        for group in set(root.glob("stockade-*")) - before:
            try:
                if (group / "tasks").read_text().strip():
                    quota = ((group / "cpu.cfs_quota_us").read_text().strip(),
                             (group / "cpu.cfs_period_us").read_text().strip())
            except OSError:
                continue
        time.sleep(0.05)
    _out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert quota == ("25000", "100000")
    assert "cpus" not in err  # no "not enforced" warning


def test_cpus_is_refused_where_it_cannot_be_enforced(tmp_path: Path) -> None:
    m = Machine(tmp_path, extra="limits {\n    cpus 1.5\n}")
    for target in ("seatbelt", "windows"):
        done = m.cli("compile", str(m.policy), "--target", target)
        assert done.returncode != 0 and "cpus" in done.stderr + done.stdout


def test_always_at_the_terminal_stores_the_approval_shown(tmp_path: Path) -> None:
    """On a real pty: `always` runs the command and stores `git push`; the next push runs unasked."""
    import pty

    m = Machine(tmp_path, SESSION)
    argv = [sys.executable, "-m", "stockade", "run", "--session", "t1", "--policy", str(m.policy), "--",
            "sh", "-c", "git push origin feature; exit 0"]
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        os.chdir(m.workspace)
        os.execve(sys.executable, argv, m.env)
    import select

    seen = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"`always`" in seen:
            os.write(fd, b"always\n")
            answered = True
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert answered, seen.decode(errors="replace")
    assert b"git push" in seen and b"never a `deny`" in seen  # what it will match, before it is saved
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    assert [a["words"] for a in json.loads(m.cli("approvals", "list", "--format", "json").stdout)] == [["push"]]
    again = m.cli("run", "--session", "t1", "--policy", str(m.policy), "--", "sh", "-c", "git push origin x; exit 0")
    assert again.returncode == 0, again.stderr
    records = [json.loads(line) for line in m.audit.read_text().splitlines()]
    decisions = [r for r in records if r.get("event") == "decision" and r.get("session") == "t1"]
    assert decisions[0]["approved_by"].startswith("terminal (stored approval")
    assert decisions[1]["approved_by"].startswith("approval ")


def test_the_generic_hook_keeps_a_session_named_by_flag_or_variable(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)

    def generic(command: str, *flags: str, env: dict[str, str] | None = None) -> dict:
        done = m.cli("hook", "generic", "--policy", str(m.policy), *flags, stdin=json.dumps({"command": command}),
                     env=env)
        return json.loads(done.stdout)

    assert generic("cat ~/.ssh/id_rsa", "--session", "g1")["decision"] == "deny"
    assert generic("cat ~/.ssh/id_rsa", env={"STOCKADE_SESSION": "g1"})["decision"] == "deny"
    answer = generic("ls", "--session", "g1")
    assert answer["decision"] == "deny" and answer["session"] == "g1"
    assert any(r["code"] == "X640" for r in answer["reasons"])
    bad = m.cli("hook", "generic", "--policy", str(m.policy), "--session", "../escape",
                stdin=json.dumps({"command": "ls"}))
    assert json.loads(bad.stdout)["decision"] == "deny" and not (m.root / "escape").exists()


def test_a_sandboxed_command_cannot_touch_session_state_even_where_the_policy_writes(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    m.policy.write_text(m.policy.read_text() + f'filesystem {{\n    write "{m.state}"\n}}\n')
    assert m.bash("cat ~/.ssh/id_rsa")[0] == "deny"  # the hook made session s1's state
    state_file = m.state / "sessions" / "s1" / "state.json"
    before = state_file.read_text()
    done = m.cli("run", "--policy", str(m.policy), "--approve", "--",
                 "sh", "-c", f"echo '{{}}' > {state_file}; mkdir -p {m.state}/approvals; "
                             f"echo x > {m.state}/approvals/user.json")
    assert done.returncode != 0
    assert state_file.read_text() == before
    assert not (m.state / "approvals" / "user.json").exists()


@pytest.mark.parametrize(("body", "needle"), [
    ("max-denials many", "not a whole number"),
    ("max-denials 3 within soon", "duration"),
    ("max-denials 3 4", "takes a count"),
    ("on-limit maybe", "`on-limit` takes"),
    ("approvals forever", "`approvals` takes"),
    ("never-persist git push,", "empty command pattern"),
    ("max-stepz 5", "unknown keyword"),
])
def test_a_malformed_session_section_is_a_located_error(tmp_path: Path, body: str, needle: str) -> None:
    policy = tmp_path / "bad.policy"
    policy.write_text(f'policy "bad"\nsession {{\n    {body}\n}}\n')
    done = subprocess.run([sys.executable, "-m", "stockade", "check", str(policy)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
                               "XDG_CACHE_HOME": str(tmp_path / "c"), "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{policy}:3:" in done.stderr and needle in done.stderr, done.stderr


def test_damaged_session_state_fails_closed_and_damaged_approvals_grant_nothing(tmp_path: Path) -> None:
    m = Machine(tmp_path, SESSION)
    assert m.bash("ls")[0] == "allow"
    (m.state / "sessions" / "s1" / "state.json").write_text("{not json")
    decision, why = m.bash("ls")
    assert decision == "deny" and "unreadable" in why
    (m.state / "approvals").mkdir(exist_ok=True)
    (m.state / "approvals" / "user.json").write_text('{"approvals": [{"program": "git", "words": 7}, "x"]}')
    assert m.bash("git push origin feature", session="s2")[0] == "ask"
