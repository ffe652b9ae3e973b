"`bash run.sh test` (what CI runs, `.ci/run`): both suites always run, and the command fails if either failed."
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _fake_repo(tmp_path: Path, nbdev_rc: int, pytest_rc: int) -> Path:
    "A copy of run.sh beside a fake .venv whose nbdev_test and pytest only log their call and exit with the given codes."
    shutil.copy(ROOT / "run.sh", tmp_path / "run.sh")
    bin_ = tmp_path / ".venv" / "bin"; bin_.mkdir(parents=True)
    (bin_ / "nbdev_test").write_text(f"#!/bin/sh\necho nbdev_test >> calls.log\nexit {nbdev_rc}\n")
    (bin_ / "python").write_text(f"#!/bin/sh\necho \"python $*\" >> calls.log\nexit {pytest_rc}\n")
    for f in bin_.iterdir(): f.chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("nbdev_rc,pytest_rc,ok", [(0, 0, True), (1, 0, False), (0, 1, False), (1, 1, False), (0, 5, False)])
def test_run_sh_test_runs_both_suites_and_fails_if_either_failed(tmp_path, nbdev_rc, pytest_rc, ok):
    repo = _fake_repo(tmp_path, nbdev_rc, pytest_rc)
    r = subprocess.run(["bash", "run.sh", "test"], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "SKIP_INSTALL": "1"}, timeout=60)
    calls = (repo / "calls.log").read_text().splitlines()
    assert calls[0] == "nbdev_test" and calls[1].startswith("python -m pytest"), calls   # pytest ran after a failed nbdev_test too
    assert (r.returncode == 0) == ok, (r.returncode, r.stderr)
    if not ok: assert f"nbdev_test exit {nbdev_rc}, pytest exit {pytest_rc}" in r.stderr


def test_ci_runs_exactly_the_readme_test_command():
    assert "exec bash run.sh test" in (ROOT / ".ci" / "run").read_text()
