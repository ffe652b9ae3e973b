"The rlexplain command line."
import subprocess
import sys
from pathlib import Path

import pytest

from rlexplain.cli import build_parser, main


def test_help_explains_every_option():
    for argv in (["--help"], ["demo", "--help"], ["zoo", "train", "--help"], ["ir", "--help"], ["docs", "--help"],
                 ["saliency", "--help"], ["scoreboard", "--help"]):
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


# --- errors, configurations, subcommands, scoreboard (issues 17.3, 18.2-18.3, 20.7) ---

def test_user_mistake_prints_one_line_and_exits_2(capsys):
    assert main(["ir", "--states", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlexplain: error: ") and err.count("\n") == 1 and "Traceback" not in err and "p=0" in err
    with pytest.raises(ValueError, match="p and t"):
        main(["ir", "--states", "0", "--debug"])


def test_ir_rerun_with_other_configuration_is_refused_before_any_work(tmp_path, capsys):
    from rlexplain.core import RunDir
    from rlexplain.ir import IRConfig
    RunDir(tmp_path / "run", config=IRConfig.demo(p=5))       # an earlier run with 5 states
    assert main(["ir", "--out", str(tmp_path), "--states", "3", "--agents", "4"]) == 2
    err = capsys.readouterr().err
    assert "p: saved=5, given=3" in err and "n_agents: saved=5, given=4" in err and "--force" in err


def _fake_demo(monkeypatch, calls):
    "A registered demo job 'fake' whose units count their computations."
    import sys, types
    from rlexplain import cli
    from rlexplain.core import RunDir
    mod = types.ModuleType("_fake_demo_mod")
    def job(sec, scale, executor=None, max_workers=1):
        rd = RunDir(sec.dir / "run", config={"scale": scale})
        for u in ("a", "b"): rd.unit(u, lambda u=u: calls.append(u) or [u])
        sec.note("ok")
    mod.job = job
    monkeypatch.setitem(sys.modules, "_fake_demo_mod", mod)
    monkeypatch.setattr(cli, "DEMOS", {**cli.DEMOS, "fake": ("Fake", "a fake job", "_fake_demo_mod:job")})


def test_demo_force_redoes_every_unit_and_other_scale_is_refused(tmp_path, monkeypatch, capsys):
    from rlexplain.cli import run_demo
    from rlexplain.core import ConfigMismatchError
    calls = []; _fake_demo(monkeypatch, calls)
    run_demo(tmp_path, only=["fake"], scale="demo")
    (tmp_path / "fake" / "done.json").unlink()                 # "interrupted" after its units
    run_demo(tmp_path, only=["fake"], scale="demo")
    assert calls == ["a", "b"]                                  # resumed: no unit twice
    run_demo(tmp_path, only=["fake"], scale="demo", force=True)
    assert calls == ["a", "b", "a", "b"]                        # --force: every unit again
    with pytest.raises(ConfigMismatchError, match="scale: saved='demo', given='paper'"):
        run_demo(tmp_path, only=["fake"], scale="paper")
    out = capsys.readouterr().out
    assert "1/1 fake: finished in" in out and "left" in out      # the overall progress line with the time left


def test_every_method_has_a_subcommand_whose_help_example_parses():
    import shlex
    from rlexplain.cli import DEMOS
    p = build_parser()
    sub = next(a for a in p._actions if a.dest == "cmd").choices
    assert {"saliency", "xrlbench", "ranld", "timeseries", "switching", "ir", "demo", "zoo", "scoreboard"} <= set(sub)
    for key in DEMOS:
        assert key.replace("_", "-") in sub, key
    for name, sp in sub.items():
        if name in ("docs", "readme", "zoo"): continue
        ex = [l for l in (sp.epilog or "").splitlines() if l.startswith("example: rlexplain ")]
        assert ex, f"{name} has no example"
        args = p.parse_args(shlex.split(ex[0][len("example: rlexplain "):]))
        assert args.cmd == name


def test_ir_help_example_games_are_in_the_zoo():
    from rlexplain.agents import list_zoo
    sp = next(a for a in build_parser()._actions if a.dest == "cmd").choices["ir"]
    games = set(list_zoo().env_id)
    args = build_parser().parse_args(sp.epilog.split("example: rlexplain ")[1].split())
    assert set(args.games) <= games


def _fake_scoreboard(monkeypatch):
    import sys, types
    import pandas as pd
    mod = types.ModuleType("rlexplain.scoreboard")
    def score_run(run_dir):
        b = pd.DataFrame({"id": ["ir-1", "sal-2"], "paper": ["Mott", "Huber"], "where": ["T6", "T1"], "claim": ["c1", "c2"],
                          "paper_value": ["0.9", "1"], "ours": ["0.8", ""], "interval": ["[0.7, 0.9]", ""], "n": ["5 seeds", ""],
                          "verdict": ["reproduced", "not run"], "why": ["", "no table"]})
        b.attrs["scale"] = "demo"; return b
    mod.score_run = score_run
    mod.summary_line = lambda board: "demo scale: 1 of 2 claims reproduced, 1 not run"
    monkeypatch.setitem(sys.modules, "rlexplain.scoreboard", mod)
    import rlexplain
    monkeypatch.setattr(rlexplain, "scoreboard", mod, raising=False)


def test_scoreboard_command_prints_the_summary_and_board(tmp_path, monkeypatch, capsys):
    _fake_scoreboard(monkeypatch)
    assert main(["scoreboard", str(tmp_path), "--csv", str(tmp_path / "b.csv")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("demo scale: 1 of 2 claims reproduced") and "ir-1" in out and "reproduced" in out
    assert (tmp_path / "b.csv").exists()
    assert main(["scoreboard", str(tmp_path / "nope")]) == 2


def test_scoreboard_of_the_real_module_on_an_empty_run(tmp_path, capsys):
    pytest.importorskip("rlexplain.scoreboard")
    assert main(["scoreboard", str(tmp_path)]) == 0
    assert "claims" in capsys.readouterr().out


def test_report_opens_with_the_scoreboard(tmp_path, monkeypatch):
    from rlexplain.cli import Section, write_report
    _fake_scoreboard(monkeypatch)
    s = Section(tmp_path, "x", "Method X", "text"); s.note("hello")
    page = write_report(tmp_path, [s]).read_text()
    assert "demo scale: 1 of 2 claims reproduced" in page
    assert page.index("Reproduction scoreboard") < page.index("Method X") and (tmp_path / "scoreboard.csv").exists()


def test_package_has_a_docstring():
    import rlexplain
    assert rlexplain.__doc__ and "reinforcement-learning" in rlexplain.__doc__ and rlexplain.__version__


def test_docs_work_offline_with_a_real_landing_page(tmp_path):
    "No CDN scripts, the README's content and the lesson plan on the landing page, no hidden cells, no absolute paths."
    import nbformat
    from rlexplain.cli import render_docs
    nbs = tmp_path / "nbs"; nbs.mkdir()
    v4 = nbformat.v4
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# rlexplain\n\n> Explaining agents."),
                                          v4.new_markdown_cell("Install it and run `bash run.sh demo`.")]), nbs / "index.ipynb")
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# core\n\n> Policies and results."),
                                          v4.new_code_cell("#| hide\nprint('scaffolding')"),
                                          v4.new_code_cell("#| export\nimport rlexplain, pathlib\nprint(pathlib.Path(rlexplain.__file__).resolve().parent)")]),
                   nbs / "00_core.ipynb")
    index = render_docs(nbs, tmp_path / "docs")
    landing, page = index.read_text(), (tmp_path / "docs" / "00_core.html").read_text()
    for p in (landing, page):
        assert "<script" not in p and "cdnjs" not in p and "load mathjax" not in p.lower()
    assert "run.sh demo" in landing and "Lessons" in landing and "00_core.html" in landing and "Policies and results." in landing
    import rlexplain
    from pathlib import Path
    assert "scaffolding" not in page and "#| export" not in page
    assert str(Path(rlexplain.__file__).resolve().parent) not in page


def test_timeseries_report_assembly_lives_in_the_cli():
    "The CLI builds the time-series section from a study; while timeseries.demo_outputs exists, the tables are the same."
    import pandas as pd
    import torch
    from rlexplain import timeseries
    from rlexplain.cli import DEMOS, _timeseries_outputs
    from rlexplain.core import Policy

    class Tiny(torch.nn.Module):
        def __init__(self, s):
            super().__init__(); torch.manual_seed(s); self.lin = torch.nn.Linear(84, 4); torch.nn.init.normal_(self.lin.weight, std=3.0)
        def forward(self, x): return self.lin(x[:, -1].mean(1))
    pols = {n: Policy.from_module(Tiny(s), (4, 84, 84), kind="q", device="cpu", name=n) for s, n in enumerate("ab")}
    cfg = timeseries.TimeSeriesConfig(env_id="toybox/Breakout", seeds=(0, 1, 2), n_episodes=6, T=3, window=2, horizon=3, max_steps=30, n_boot=50)
    study = timeseries.run_study(cfg, policies=pols)
    figs, tabs, text = _timeseries_outputs(study)
    assert {"ts_breakout_impacts", "ts_breakout_forecast", "ts_breakout_overlap", "ts_breakout_returns"} == set(tabs)
    assert [n for n, _, _ in figs] == ["ts_breakout_forecast", "ts_breakout_impact_a", "ts_breakout_impact_b", "ts_breakout_did"]
    assert DEMOS["timeseries"][2] == "rlexplain.cli:_demo_timeseries" and DEMOS["switching"][2] == "rlexplain.cli:_demo_switching"
    if hasattr(timeseries, "demo_outputs"):
        _, old, _ = timeseries.demo_outputs(study)
        for k, (df, cap) in tabs.items():
            pd.testing.assert_frame_equal(df, old[k][0]); assert cap == old[k][1]
