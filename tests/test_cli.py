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
    assert {"ir", "ranld", "saliency", "saliency_bench", "xrlbench", "timeseries", "switching"} <= set(DEMOS)
    for key, (title, text, spec) in DEMOS.items():
        assert title and text and callable(_resolve(spec)), key


def test_run_demo_rejects_unknown_jobs(tmp_path):
    from rlexplain.cli import run_demo
    with pytest.raises(ValueError, match="unknown demo jobs"):
        run_demo(tmp_path, only=["nope"])


def test_render_docs_keeps_figures_and_math_under_agg(tmp_path, monkeypatch):
    "run.sh exports MPLBACKEND=Agg; the rendered pages must still show the notebooks' figures, and equations as MathML."
    import nbformat
    from rlexplain.cli import render_docs
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nbs = tmp_path / "nbs"; nbs.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t\n\nThe return $G_t = \\sum_k \\gamma^k r_{t+k}$."),
                                         nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([0, 1]); plt.show()")])
    nbformat.write(nb, nbs / "t.ipynb")
    index = render_docs(nbs, tmp_path / "docs")
    page = (tmp_path / "docs" / "t.html").read_text()
    assert index.exists() and "<img" in page and "data:image/png" in page
    assert "<math" in page and "$G_t" not in page
