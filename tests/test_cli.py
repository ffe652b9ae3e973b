"The rlexplain command line."
import subprocess
import sys
from pathlib import Path

import pytest

from rlexplain.cli import build_parser, main


def test_help_explains_every_option():
    for argv in (["--help"], ["demo", "--help"], ["zoo", "train", "--help"], ["ir", "--help"], ["docs", "--help"]):
        r = subprocess.run([str(Path(sys.executable).parent / "rlexplain"), *argv], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "usage: rlexplain" in r.stdout


def test_zoo_list_runs(capsys):
    assert main(["zoo", "list"]) == 0
    assert "toybox" in capsys.readouterr().out


def test_bad_arguments_exit_2():
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["ir", "--mode", "guess"])
    assert e.value.code == 2


def test_every_method_has_a_demo_job():
    from rlexplain.cli import DEMOS, _resolve
    assert {"ir", "ranld", "saliency", "saliency_bench", "xrlbench", "timeseries"} <= set(DEMOS)
    for key, (title, text, spec) in DEMOS.items():
        assert title and text and callable(_resolve(spec)), key


def test_run_demo_rejects_unknown_jobs(tmp_path):
    from rlexplain.cli import run_demo
    with pytest.raises(ValueError, match="unknown demo jobs"):
        run_demo(tmp_path, only=["nope"])
