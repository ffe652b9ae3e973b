"`bash run.sh test` (what CI runs, `.ci/run`): both suites always run, and the command fails if either failed."
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _fake_repo(tmp_path: Path, nbdev_rc: int, pytest_rc: int, xdist: bool = True) -> Path:
    """A copy of run.sh beside a fake .venv whose nbdev_test and pytest only log their call and exit with the given codes;
    its `python -c ...` (run.sh's probe for pytest-xdist) succeeds when `xdist` is installed."""
    shutil.copy(ROOT / "run.sh", tmp_path / "run.sh")
    bin_ = tmp_path / ".venv" / "bin"; bin_.mkdir(parents=True)
    (bin_ / "nbdev_test").write_text(f"#!/bin/sh\necho \"nbdev_test $*\" >> calls.log\nexit {nbdev_rc}\n")
    (bin_ / "python").write_text(f"#!/bin/sh\n[ \"$1\" = -c ] && exit {0 if xdist else 1}\n"
                                 f"echo \"python $*\" >> calls.log\nexit {pytest_rc}\n")
    for f in bin_.iterdir(): f.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("nbdev_rc,pytest_rc,ok", [(0, 0, True), (1, 0, False), (0, 1, False), (1, 1, False), (0, 5, False)])
def test_run_sh_test_runs_both_suites_and_fails_if_either_failed(tmp_path, nbdev_rc, pytest_rc, ok):
    repo = _fake_repo(tmp_path, nbdev_rc, pytest_rc)
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "SKIP_INSTALL": "1"}, timeout=60)
    calls = (repo / "calls.log").read_text().splitlines()
    assert calls[0].startswith("nbdev_test") and calls[1].startswith("python -m pytest"), calls   # pytest ran after a failed nbdev_test too
    assert (r.returncode == 0) == ok, (r.returncode, r.stderr)
    if not ok: assert f"nbdev_test exit {nbdev_rc}, pytest exit {pytest_rc}" in r.stderr


@pytest.mark.parametrize("workers", [None, "1"])
def test_run_sh_test_runs_both_suites_on_workers_processes(tmp_path, workers):
    "Issue 28.3: the notebooks on $WORKERS processes (default 2), pytest on as many pytest-xdist workers."
    repo = _fake_repo(tmp_path, 0, 0)
    env = {**os.environ, "SKIP_INSTALL": "1"}; env.pop("WORKERS", None); env.pop("SLOW", None)
    if workers: env["WORKERS"] = workers
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True, env=env, timeout=60)
    n = workers or "2"
    assert r.returncode == 0, r.stderr
    assert (repo / "calls.log").read_text().splitlines() == [f"nbdev_test --n_workers {n} --timing",
                                                             f"python -m pytest -q -n {n} --dist worksteal tests"]


def test_run_sh_test_without_xdist_runs_pytest_in_one_process_and_says_so(tmp_path):
    "A .venv installed before pytest-xdist joined the dev extras (SKIP_INSTALL=1) still runs every test."
    repo = _fake_repo(tmp_path, 0, 0, xdist=False)
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "SKIP_INSTALL": "1"}, timeout=60)
    assert r.returncode == 0 and "pytest-xdist is not installed" in r.stderr, r.stderr
    assert (repo / "calls.log").read_text().splitlines()[1] == "python -m pytest -q tests"


def test_pytest_xdist_is_a_pinned_dev_requirement():
    import configparser
    cfg = configparser.ConfigParser(); cfg.read(ROOT / "settings.ini")
    assert "pytest-xdist==3.8.0" in cfg["DEFAULT"]["dev_requirements"].split()


def test_ci_runs_exactly_the_readme_test_command():
    assert "exec bash run.sh test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("slow,flags", [("0", ""), ("1", " --flags slow")])
def test_run_sh_test_runs_the_slow_cells_only_when_asked(tmp_path, slow, flags):
    "Issue 28: plain `bash run.sh test` skips the lessons' #| slow cells; SLOW=1 adds nbdev_test --flags slow; other values are refused."
    repo = _fake_repo(tmp_path, 0, 0)
    env = {**os.environ, "SKIP_INSTALL": "1", "SLOW": slow}; env.pop("WORKERS", None)
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (repo / "calls.log").read_text().splitlines()[0] == f"nbdev_test --n_workers 2 --timing{flags}"
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True, env={**env, "SLOW": "yes"}, timeout=60)
    assert r.returncode == 2 and "SLOW must be 1" in r.stderr, r.stderr
