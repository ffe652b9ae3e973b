"The rlexplain command line."
import subprocess
import sys
from pathlib import Path

import pytest

from rlexplain.cli import main
from rlexplain.cli_options import build_parser
from rlexplain.runs import load_json


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
    "Each section's builder (and units function) is a public function of its method's module."
    from rlexplain.demo import DEMOS, _resolve
    assert {"ir", "ranld", "saliency", "saliency_bench", "xrlbench", "timeseries", "switching"} <= set(DEMOS)
    for key, e in DEMOS.items():
        assert e.title and e.text and callable(_resolve(e.builder)), key
        for spec in (e.builder, e.units or e.builder):
            mod, fn = spec.split(":")
            assert mod != "rlexplain.cli" and not fn.startswith("_") and callable(_resolve(spec)), (key, spec)


def test_run_demo_rejects_unknown_jobs(tmp_path):
    from rlexplain.demo import run_demo
    with pytest.raises(ValueError, match="unknown demo jobs"):
        run_demo(tmp_path, only=["nope"])


# --- errors, configurations, subcommands, scoreboard (issues 17.3, 18.2-18.3, 20.7) ---

@pytest.mark.parametrize("argv,flag", [(["ir", "--states", "-5"], "--states"), (["ir", "--states", "0"], "--states"),
                                       (["ir", "--agents", "1"], "--agents"), (["ir", "--t", "x"], "--t"),
                                       (["demo", "--workers", "0"], "--workers"), (["zoo", "eval", "--episodes", "-1"], "--episodes")])
def test_user_mistake_prints_one_line_naming_the_flag_and_exits_2(capsys, argv, flag):
    "Issue 27.4: `--states -5` is refused naming --states (not IRConfig's internal 'p and t'), in one line."
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlexplain: error: ") and err.count("\n") == 1 and "Traceback" not in err and "usage:" not in err
    assert f"argument {flag}:" in err and "p and t" not in err


def test_debug_shows_the_traceback_of_a_user_mistake(capsys):
    assert main(["demo", "--execute-docs"]) == 2 and "add --docs" in capsys.readouterr().err
    with pytest.raises(ValueError, match="add --docs"):
        main(["demo", "--execute-docs", "--debug"])


def test_os_errors_become_one_line_naming_the_path_and_the_flag(tmp_path, capsys):
    "Issue 27.4: `saliency --out <a file>` printed a raw '[Errno 20] Not a directory'."
    f = tmp_path / "afile"; f.write_text("")
    assert main(["saliency", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rlexplain: error: --out {f}: cannot use {f}: it exists already and is not a folder")   # the run lock's folder
    assert err.count("\n") == 1 and "Errno" not in err and "Traceback" not in err


def test_zoo_card_warnings_are_one_line_each(tmp_path, capsys):
    "Issue 27.4: a corrupt zoo card printed a raw UserWarning with its Python source line."
    for seed, text in ((0, '{"id": 3'), (1, "{}")):
        d = tmp_path / "env" / "dqn" / f"seed{seed}" / "100"; d.mkdir(parents=True); (d / "card.json").write_text(text)
    assert main(["zoo", "list", "--root", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(l.startswith("rlexplain: warning: list_zoo skips a corrupt zoo entry: ") for l in err), err
    assert "UserWarning" not in "".join(err) and "warnings.warn" not in "".join(err)


def test_ir_rerun_with_other_configuration_is_refused_before_any_work(tmp_path, capsys):
    from rlexplain.runs import RunDir
    from rlexplain.ir_study import IRConfig
    RunDir(tmp_path / "run", config=IRConfig.demo(p=5)).save_unit("u", [1])   # an earlier run with 5 states and a result
    assert main(["ir", "--out", str(tmp_path), "--states", "3", "--agents", "4"]) == 2
    err = capsys.readouterr().err
    assert "--states: saved=5, given=3" in err and "--agents: saved=5, given=4" in err and "--force" in err   # the user's flags


def _fake_demo(monkeypatch, calls):
    "A registered demo job 'fake' whose units count their computations."
    import sys, types
    from rlexplain import demo
    from rlexplain.runs import RunDir
    mod = types.ModuleType("_fake_demo_mod")
    def job(sec, scale, executor=None, max_workers=1):
        rd = RunDir(sec.dir / "run", config={"scale": scale})
        for u in ("a", "b"): rd.unit(u, lambda u=u: calls.append(u) or [u])
        sec.note("ok")
    mod.job = job
    monkeypatch.setitem(sys.modules, "_fake_demo_mod", mod)
    for _k, _v in {"fake": demo.DemoEntry("Fake", "a fake job", "_fake_demo_mod:job")}.items(): monkeypatch.setitem(demo.DEMOS, _k, _v)   # the one table (sections.DEMOS)


def test_demo_force_redoes_every_unit_and_other_scale_is_refused(tmp_path, monkeypatch, capsys):
    from rlexplain.demo import run_demo
    from rlexplain.runs import ConfigMismatchError
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
    assert "[rlexplain demo] finished in" in out and "1/1" not in out   # one job: no step counter, nothing left to estimate


def test_single_method_command_prints_no_step_counter(tmp_path, monkeypatch, capsys):
    "Issue 27.4: `rlexplain <method>` printed a '[rlexplain demo] 1/1' prefix."
    calls = []; _fake_demo(monkeypatch, calls)
    assert main(["fake", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[rlexplain fake] running at demo scale" in out and "[rlexplain fake] finished in" in out
    assert "1/1" not in out and "[rlexplain demo]" not in out


def test_demo_progress_estimates_every_step_docs_included(tmp_path, monkeypatch, capsys):
    """Issue 27.3: the time left covers the docs (a unit of their own), from this folder's measured times, shared by the
    workers and scaled by the run's pace."""
    from rlexplain import demo
    from rlexplain.compute import use_settings
    from rlexplain.runs import save_json
    monkeypatch.setattr(demo, "DEMO_SECONDS", {"a": 60, "b": 60, "s/x": 30, "s": 100, "docs": 600, "docs_execute": 6000})
    with use_settings(scale="demo"):   # the first guesses of the demo scale
        assert demo._eta([60, 600], [(60, 60)]) == "about 11 min left"                   # b + docs at the run's pace
        assert demo._eta([60, 600], [(120, 60)]) == "about 22 min left"                  # twice as slow as expected
        assert demo._eta([60, 600], [(60, 60)], workers=2) == "about 10 min left"        # the 600-s unit bounds two workers
        assert demo._eta([300, 300, 60], [(60, 60)], workers=2) == "about 6 min left"    # two workers share the 660 s
        assert demo._eta([30], [], workers=2) == "about 30 s left"                       # one unit left: one worker can run it
        assert demo._unit_seconds(tmp_path, "docs", "docs", execute_docs=True) == 6000.0
        assert demo._unit_seconds(tmp_path, "s", "x", 4) == 30.0 and demo._unit_seconds(tmp_path, "s", "y", 4) == 25.0   # own entry, else a share
        save_json(tmp_path / "docs" / "done.json", {"seconds": 30.0, "execute": False})          # this folder's own measurement
        assert demo._unit_seconds(tmp_path, "docs", "docs") == 30.0
        assert demo._unit_seconds(tmp_path, "docs", "docs", execute_docs=True) == 6000.0          # measured without executing
        save_json(tmp_path / "s" / "done.json", {"items": [], "seconds": 99.0, "units": {"y": 7.0}})
        assert demo._unit_seconds(tmp_path, "s", "y", 4) == 7.0 and demo._unit_seconds(tmp_path, "s", "s") == 99.0
    calls = []; _fake_demo(monkeypatch, calls)
    for _k, _v in {"fake2": demo.DEMOS["fake"]}.items(): monkeypatch.setitem(demo.DEMOS, _k, _v)   # the one table (sections.DEMOS)
    monkeypatch.setattr(demo, "build_docs", lambda out, nbs, execute=False, workers=1: Path(out).mkdir(parents=True, exist_ok=True) or Path(out) / "index.html")
    demo.run_demo(tmp_path / "run", only=["fake", "fake2"], scale="demo", docs=True)
    out = capsys.readouterr().out
    assert "1/3 fake: finished in" in out and "2/3 fake2: finished in" in out and "3/3 docs: finished in" in out
    line = next(l for l in out.splitlines() if "2/3 fake2: finished in" in l)
    assert "left" in line            # after the last method job the docs are still ahead: not 'about 0 s left' then silence
    assert (tmp_path / "run" / "docs" / "done.json").exists()


def test_every_method_has_a_subcommand_whose_help_example_parses():
    import shlex
    from rlexplain.demo import DEMOS
    p = build_parser()
    sub = next(a for a in p._actions if a.dest == "cmd").choices
    assert {"saliency", "xrlbench", "ranld", "timeseries", "switching", "ir", "demo", "zoo", "scoreboard"} <= set(sub)
    for key in DEMOS:
        assert key.replace("_", "-") in sub, key
    from rlexplain.cli_options import subcommand_parsers
    for name, sp in subcommand_parsers(p).items():   # every subcommand, zoo's too (issue 27.4: docs, readme and zoo had none)
        ex = [l for l in (sp.epilog or "").splitlines() if l.startswith("example: rlexplain ")]
        assert ex, f"{name} has no example"
        for e in ex:
            argv = shlex.split(e[len("example: rlexplain "):])
            assert " ".join(argv).startswith(name), (name, e)
            args = p.parse_args(argv)                   # the real parser (exits 2 on a bad example)
            assert args.cmd == name.split()[0], e


def test_cheap_help_examples_run(tmp_path, monkeypatch, capsys):
    "The examples that take seconds run for real: zoo list, lessons (checking stored outputs), scoreboard."
    import shlex
    from rlexplain.cli_options import subcommand_parsers
    pytest.importorskip("rlexplain.scoreboard")
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(tmp_path); (tmp_path / "runs" / "demo" / "ir").mkdir(parents=True); (tmp_path / "nbs").symlink_to(root / "nbs")
    (tmp_path / "runs" / "demo" / "ir" / "ir_table.csv").write_text("game,pipeline,frames,original\ntoybox/Breakout,dqn,50000,1.0\n")
    (tmp_path / "runs" / "demo" / "ir" / "done.json").write_text('{"items": [], "seconds": 1.0}')   # a finished run
    ran = []
    for name, sp in subcommand_parsers().items():
        for e in (sp.epilog or "").splitlines():
            argv = shlex.split(e[len("example: rlexplain "):])
            if argv[:2] == ["zoo", "list"] or argv[0] == "scoreboard" or (argv[0] == "lessons" and "--execute" not in argv):
                assert main(argv) in (0, 1), e        # lessons: 1 when a stored output breaks a rule (its own test says which)
                ran.append(argv[0])
    assert {"zoo", "scoreboard", "lessons"} <= set(ran)


def test_one_default_per_option():
    "Issue 27.4: help lines read '(default: X) (default: None)'. Every option that takes a value states one default; flags none."
    import argparse
    from rlexplain.cli_options import subcommand_parsers
    p = build_parser()
    for name, sp in {"": p, **subcommand_parsers(p)}.items():
        fmt = sp._get_formatter()
        for a in sp._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) or not a.option_strings: continue
            n = fmt._get_help_string(a).count("(default:")
            assert n == (0 if a.nargs == 0 else 1), (name, a.option_strings, fmt._get_help_string(a))
        assert "(default: None)" not in " ".join(sp.format_help().split()), name


def test_ir_help_example_games_are_in_the_zoo():
    from rlexplain.agent_zoo import list_zoo
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
                          "verdict": ["reproduced", "not run"], "reason": ["", "no table"]})
        b.attrs["scale"] = "demo"; return b
    mod.score_run = score_run
    mod.summary_line = lambda board: "demo scale: 1 of 2 claims reproduced, 1 not run"
    monkeypatch.setitem(sys.modules, "rlexplain.scoreboard", mod)
    import rlexplain
    import rlexplain.report
    monkeypatch.setattr(rlexplain, "scoreboard", mod, raising=False)
    monkeypatch.setattr(rlexplain.report, "scoreboard", mod)   # the name report imported at its top


def test_scoreboard_command_prints_the_summary_and_board(tmp_path, monkeypatch, capsys):
    _fake_scoreboard(monkeypatch)
    assert main(["scoreboard", str(tmp_path), "--csv", str(tmp_path / "b.csv")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("demo scale: 1 of 2 claims reproduced") and "ir-1" in out and "reproduced" in out
    assert "reason" in out.splitlines()[1] and "no table" in out     # each verdict's reason is shown
    assert (tmp_path / "b.csv").exists()
    assert main(["scoreboard", str(tmp_path / "nope")]) == 2


def test_scoreboard_of_the_real_module_on_an_empty_run(tmp_path, capsys):
    "An empty folder is not a finished run (issue 41.2): one line, exit status 2, no board of 'not run' rows."
    pytest.importorskip("rlexplain.scoreboard")
    assert main(["scoreboard", str(tmp_path)]) == 2
    cap = capsys.readouterr()
    assert "not a finished run" in cap.err and len(cap.err.strip().splitlines()) == 1 and "claims" not in cap.out


def test_report_opens_with_the_scoreboard(tmp_path, monkeypatch):
    from rlexplain.demo import Section
    from rlexplain.report import write_report
    _fake_scoreboard(monkeypatch)
    s = Section(tmp_path, "x", "Method X", "text"); s.note("hello")
    page = write_report(tmp_path, [s]).read_text()
    assert "demo scale: 1 of 2 claims reproduced" in page
    assert page.index("Reproduction scoreboard") < page.index("Method X") and (tmp_path / "scoreboard.csv").exists()


def test_package_has_a_docstring():
    import rlexplain
    assert rlexplain.__doc__ and "reinforcement-learning" in rlexplain.__doc__ and rlexplain.__version__


def test_timeseries_report_assembly_lives_in_the_study_module():
    """The time-series section is assembled from a study by `timeseries_study.demo_outputs`, the section builder registered for
    `rlexplain demo`; the CLI holds none of it."""
    import torch
    from rlexplain import cli, timeseries_study
    from rlexplain.core import Policy
    from rlexplain.demo import DEMOS

    class Tiny(torch.nn.Module):
        def __init__(self, s):
            super().__init__(); torch.manual_seed(s); self.lin = torch.nn.Linear(84, 4); torch.nn.init.normal_(self.lin.weight, std=3.0)
        def forward(self, x): return self.lin(x[:, -1].mean(1))
    pols = {n: Policy.from_module(Tiny(s), (4, 84, 84), kind="q", device="cpu", name=n) for s, n in enumerate("ab")}
    cfg = timeseries_study.TimeSeriesConfig(env_id="toybox/Breakout", seeds=(0, 1, 2), n_episodes=6, T=3, window=2, horizon=3, max_steps=30, n_boot=50)
    study = timeseries_study.run_study(cfg, policies=pols)
    figs, tabs, text = timeseries_study.demo_outputs(study)
    assert {"ts_breakout_impacts", "ts_breakout_forecast", "ts_breakout_overlap", "ts_breakout_returns"} == set(tabs)
    assert [n for n, _, _ in figs] == ["ts_breakout_forecast", "ts_breakout_impact_a", "ts_breakout_impact_b", "ts_breakout_did"]
    assert text.startswith("Time-series shift study on toybox/Breakout: 3 seeds x 6 episodes")
    assert DEMOS["timeseries"].builder == "rlexplain.timeseries_study:demo_section" and DEMOS["switching"].builder == "rlexplain.switching:demo_section"
    assert not any(n.startswith("_demo") or n.startswith("_timeseries") for n in vars(cli))

def test_progress_guess_follows_the_scale(tmp_path, monkeypatch):
    "At reference scale the time-left estimate starts from the reference run's section times, not the demo's."
    from rlexplain import demo
    from rlexplain.compute import use_settings
    monkeypatch.setattr(demo, "DEMO_SECONDS", {"a": 60})
    monkeypatch.setattr(demo, "REFERENCE_SECONDS", {"a": 600})
    with use_settings(scale="demo"):
        assert demo._unit_seconds(tmp_path, "a", "a") == 60.0 and demo._unit_seconds(tmp_path, "a", "u", 2) == 30.0
    with use_settings(scale="reference"):
        assert demo._unit_seconds(tmp_path, "a", "a") == 600.0
        assert demo._eta([demo._unit_seconds(tmp_path, "a", "a")], []) == "about 10 min left"


def _unit_demos(monkeypatch, seconds):
    "Registers tests/_demo_units.py's sections: 'split' (three units) and 'whole' (one), with these first-guess seconds."
    from rlexplain import demo
    for _k, _v in {"split": demo.DemoEntry("Split", "", "_demo_units:section", "_demo_units:units"),
                                        "whole": demo.DemoEntry("Whole", "", "_demo_units:whole")}.items(): monkeypatch.setitem(demo.DEMOS, _k, _v)   # the one table (sections.DEMOS)
    monkeypatch.setattr(demo, "DEMO_SECONDS", seconds)


def test_demo_units_go_longest_first_to_one_pool_and_sections_only_load(tmp_path, monkeypatch):
    """Issue 28: the demo's sections share one pool, their units longest first (LPT); a split section's function, run in the
    parent after its last unit, loads the saved units instead of computing them again."""
    from concurrent.futures import Future
    from rlexplain import demo
    from rlexplain.report import write_report
    _unit_demos(monkeypatch, {"split/bbb": 50, "split/a": 5, "split/cc": 20, "whole": 30, "docs": 1})
    class Recording:   # an executor that runs each job at once and records the order of submission
        def __init__(self): self.order = []
        def submit(self, fn, job):
            f = Future(); unit_fn, arg = job
            self.order.append(arg[3] if unit_fn is demo.saved_unit else arg[0]); f.set_result(fn(job)); return f
    ex = Recording()
    demo.run_demo(tmp_path, only=["split", "whole"], scale="demo", executor=ex, max_workers=2)
    assert ex.order == ["bbb", "whole", "cc", "a"]
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "split" / "calls").iterdir()) == ["a", "bbb", "cc"]   # once each
    done = load_json(tmp_path / "split" / "done.json")
    assert done["items"] == [["note", "a=1 bbb=9 cc=4", ""]] and set(done["units"]) == {"a", "bbb", "cc"}
    (tmp_path / "split" / "done.json").unlink()             # interrupted after its units: the section only loads them
    demo.run_demo(tmp_path, only=["split", "whole"], scale="demo", executor=ex, max_workers=2)
    assert ex.order == ["bbb", "whole", "cc", "a"] and len(list((tmp_path / "split" / "calls").iterdir())) == 3
    assert load_json(tmp_path / "split" / "done.json")["items"] == done["items"]


def test_demo_units_run_on_spawned_workers(tmp_path, monkeypatch, capsys):
    "Two real spawned workers: a whole section runs in a worker, a split section's units each once, the report complete."
    import os
    from rlexplain import demo
    from rlexplain.report import write_report
    _unit_demos(monkeypatch, {"split/bbb": 50, "split/a": 5, "split/cc": 20, "whole": 30})
    demo.run_demo(tmp_path, only=["split", "whole"], scale="demo", max_workers=2, report=write_report)
    assert len(list((tmp_path / "split" / "calls").iterdir())) == 3
    assert load_json(tmp_path / "split" / "done.json")["items"] == [["note", "a=1 bbb=9 cc=4", ""]]
    note = load_json(tmp_path / "whole" / "done.json")["items"][0][1]
    assert note.startswith("pid ") and note != f"pid {os.getpid()}"   # not this process
    out = capsys.readouterr().out
    assert "2 sections, 4 units on 2 processes" in out and "split/bbb: unit done in" in out and "2/2" in out
    html = (tmp_path / "report.html").read_text()
    assert "a=1 bbb=9 cc=4" in html and "pid " in html


def test_a_failing_unit_fails_its_section_only(tmp_path, monkeypatch):
    "A unit that raises marks its section FAILED in the report and the run raises at the end; the other sections finish."
    from rlexplain import demo
    from rlexplain.report import write_report
    _unit_demos(monkeypatch, {"split/bbb": 50, "whole": 30})
    import _demo_units
    def job(arg):
        if arg[1] == "cc": raise ValueError("unit cc fails")
        return {"name": arg[1], "square": 0}
    monkeypatch.setattr(_demo_units, "job", job)   # in this process: max_workers=1 runs the units here
    with pytest.raises(RuntimeError, match=r"demo jobs failed: \['split'\]"):
        demo.run_demo(tmp_path, only=["split", "whole"], scale="demo", report=write_report)
    assert (tmp_path / "whole" / "done.json").exists() and not (tmp_path / "split" / "done.json").exists()
    assert "FAILED" in (tmp_path / "report.html").read_text()


def test_a_saved_unit_leaves_its_folder_to_the_parent(tmp_path):
    """Two workers running units of one folder each opened a `RunDir` there, which removes leftover temporaries of killed
    writes, so one could delete the other's write in progress (a flaky failure). The worker now only computes; the parent
    saves the result: another process's temporary file survives a unit, and the unit's value comes back."""
    from rlexplain import demo
    tmp = tmp_path / "units" / ".x.npz.tmp"; tmp.parent.mkdir(parents=True); tmp.write_text("another process writing")
    assert demo.saved_unit((len, "abc", str(tmp_path), "u")) == 3
    assert tmp.exists() and not (tmp_path / "units" / "u.json").exists()


def test_demo_schedule_is_longest_first_by_hand(monkeypatch):
    """LPT on 2 workers by hand: a(5) -> w0 [0, 5]; b/x(4) -> w1 [0, 4]; c(3) -> w1 [4, 7] (ties keep the queue's order:
    whole sections, then split units, then the docs); b/y(3) -> w0 [5, 8]; docs(2) -> w1 [7, 9]."""
    from rlexplain import demo
    monkeypatch.setattr(demo, "DEMO_SECONDS", {"a": 5, "b/x": 4, "b/y": 3, "c": 3, "docs": 2, "z/q": 100})
    s = demo.demo_schedule(workers=2, keys=["a", "b", "c"])
    given = demo.demo_schedule(workers=2, keys=["a", "b", "c"], seconds={"a": 5, "b/x": 4, "b/y": 3, "c": 3, "docs": 2})
    assert given.equals(s)                                     # `seconds` in place of DEMO_SECONDS
    assert s.groupby("section").end.max().to_dict() == {"a": 5, "b": 8, "c": 7, "docs": 9}
    assert s.set_index("unit").loc[["x", "c", "y"], "start"].tolist() == [0, 4, 5]
    assert demo.demo_schedule(workers=1, keys=["a"], docs=False).end.tolist() == [5]
    with pytest.raises(ValueError, match="workers must be >= 1; got 0"): demo.demo_schedule(workers=0)


def test_demo_seconds_name_every_unit_of_the_split_sections(tmp_path):
    """The schedule (`demo_schedule`, the README's table) and the first guesses know each unit the split sections make from
    the shipped zoo: DEMO_SECONDS has an entry per unit, and none for a unit that no longer exists."""
    from rlexplain import demo
    made = set()
    for k, e in demo.DEMOS.items():
        if e.units is None: continue
        sec = demo.Section(tmp_path, k, k)
        made |= {f"{k}/{n}" for n, _, _ in demo._resolve(e.units)(sec, "demo")}
    assert made == {k for k in demo.DEMO_SECONDS if "/" in k}


def test_a_finished_section_says_when_the_zoo_has_changed_since(tmp_path, monkeypatch, capsys):
    """A finished section records the zoo it ran on (`done.json`'s `zoo`); a rerun on a changed zoo keeps its results but says
    so (an agent that began to pass the gate could change the section's picks), and a rerun on the same zoo skips quietly."""
    from concurrent.futures import Future
    from rlexplain import demo
    from rlexplain.report import write_report
    _unit_demos(monkeypatch, {"split/bbb": 50, "split/a": 5, "split/cc": 20, "whole": 30})
    class Now:   # runs each job at once, in this process
        def submit(self, fn, job): f = Future(); f.set_result(fn(job)); return f
    zoo = {"x/seed0/1": True, "x/seed1/1": False}
    monkeypatch.setattr(demo, "zoo_state", lambda root=None: dict(zoo))
    demo.run_demo(tmp_path, only=["split", "whole"], scale="demo", executor=Now(), max_workers=2)
    assert load_json(tmp_path / "whole" / "done.json")["zoo"] == zoo == load_json(tmp_path / "split" / "done.json")["zoo"]
    capsys.readouterr()
    demo.run_demo(tmp_path, only=["whole"], scale="demo", executor=Now(), max_workers=2)
    assert "whole: done earlier, skipped" in capsys.readouterr().out
    zoo.update({"x/seed1/1": True, "x/seed2/1": True})
    demo.run_demo(tmp_path, only=["whole"], scale="demo", executor=Now(), max_workers=2)
    out = capsys.readouterr().out
    assert "whole: done earlier on a zoo that has changed since (1 entry added, 1 entry with another gate verdict)" in out
    assert "use --force to redo it" in out
