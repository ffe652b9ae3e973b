"""Issue 41: bad input a careless user gives gets one clear line (or a stated warning), never a silent answer or a
traceback; a run folder has one writer at a time, and a command never replaces another command's results.
Every test here failed on the code before issue 41 (the case it reproduces is named in its docstring)."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from rlexplain.cli import main


# --- silent answers in the library ---

def test_uint8_frames_of_zeros_and_ones_warn():
    "uint8 frames holding only 0/1 were divided by 255 without a word (the network saw 0 and 0.0039)."
    from rlexplain.core import to_obs_tensor
    planes = np.zeros((2, 4, 8, 8), np.uint8); planes[:, :, 2:4, 2:4] = 1
    with pytest.warns(UserWarning, match="binary-values check.*hold only 0 and 1"):
        t = to_obs_tensor(planes, (4, 8, 8))
    assert float(t.max()) == pytest.approx(1 / 255)              # still converted as documented, but said
    frames = planes * 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # real 0-255 frames and an all-black frame: no warning
        assert float(to_obs_tensor(frames, (4, 8, 8)).max()) == pytest.approx(200 / 255)
        assert float(to_obs_tensor(np.zeros((4, 8, 8), np.uint8), (4, 8, 8)).max()) == 0.0
        to_obs_tensor(planes.astype(np.float32), (4, 8, 8))      # the fix the warning names


def _tabular_policy():
    from rlexplain.core import Policy
    torch.manual_seed(0)
    return Policy.from_module(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), (4,), 3)


def test_score_refuses_an_attribution_of_other_states():
    "`score` accepted an attribution made on other states of the same shape, although the attribution stores its states."
    from rlexplain.attribution import explain, score
    pol = _tabular_policy(); rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32)
    att = explain("random", pol, X)
    assert np.isfinite(score("PGI", pol, X, att).value)          # its own states: scored
    with pytest.raises(ValueError, match=r"same-states check: .*other states \(6 of 6 differ, first state 0\).*attribution.states"):
        score("PGI", pol, Y, att)
    Z = X.copy(); Z[3, 1] += 1.0
    with pytest.raises(ValueError, match=r"1 of 6 differ, first state 3"):
        score("PGI", pol, Z, att)


def test_an_option_typo_names_the_public_method_and_its_options():
    "`n_step=8` named the private class `_FittedExplainer.__init__()` and listed no valid options."
    from rlexplain.attribution import explain
    pol = _tabular_policy(); X = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    with pytest.raises(TypeError) as e:
        explain("tabular_lime", pol, X, n_step=8, background=X)
    msg = str(e.value)
    assert msg.startswith("explain('tabular_lime') has no option 'n_step'; its options: ") and "_Fitted" not in msg
    assert "seed" in msg and "batch_size" in msg


def test_causal_impact_refuses_a_transposed_matrix():
    "`causal_impact` accepted an episodes x seeds array (transposed) and answered for 20 'seeds' of 3 'episodes'."
    from rlexplain.timeseries import causal_impact
    x = np.random.default_rng(0).normal(size=(20, 3)); y = x.copy(); y[10:] -= 1
    with pytest.raises(ValueError, match=r"treatment must be a \(M seeds, N episodes\) matrix; got shape \(20, 3\).*treatment.T"):
        causal_impact(y, x, T=10)
    assert np.isfinite(causal_impact(y.T, x.T, T=10).did)         # the suggested fix


def test_from_sb3_refuses_an_algo_other_than_the_zips(shared_agents):
    "`Policy.from_sb3(ppo_zip, algo='a2c')` was accepted and named a2c (same network family)."
    from rlexplain.core import Policy
    z = shared_agents / "sb3-zoo" / "ppo" / "CartPole-v1" / "CartPole-v1.zip"
    if not z.exists(): pytest.skip(f"{z} is absent")
    with pytest.raises(ValueError, match=r"holds a PPO model; got algo='a2c'. Pass algo='ppo' or leave it out"):
        Policy.from_sb3(z, algo="a2c", device="cpu")
    assert Policy.from_sb3(z, algo="ppo", device="cpu").n_actions == 2


# --- the command line: one line naming the option ---

@pytest.mark.parametrize("argv,expected", [
    (["ir", "--pipelines", ""], "argument --pipelines: expected a non-empty comma-separated list, got ''"),
    (["ir", "--pipelines", "dqn,dqn"], "argument --pipelines: 'dqn' appears twice in 'dqn,dqn'"),
    (["ir", "--pipelines", "dqn,,ppo"], "argument --pipelines: expected a comma-separated list without empty items"),
    (["ir", "--checkpoints", "5e4,50000"], "argument --checkpoints: 50000 appears twice"),
    (["demo", "--only", ""], "argument --only: expected a non-empty comma-separated list"),
    (["ir", "--out", ""], "argument --out: expected a folder, got ''"),
    (["saliency", "--out", " "], "argument --out: expected a folder"),
    (["zoo", "train", "--checkpoints", "0"], "argument --checkpoints: expected integers >= 1, got 0"),
    (["zoo", "train", "--checkpoints", "5e4,0"], "argument --checkpoints: expected integers >= 1, got 0"),
])
def test_empty_repeated_and_non_positive_lists_are_refused(argv, expected, tmp_path, monkeypatch, capsys, fake_ir):
    """`--pipelines ""` meant all pipelines, `dqn,dqn` computed DQN twice, `--out ""` wrote into the current folder and
    `zoo train --checkpoints 0` evaluated 18 zero-frame agents. (The work itself is replaced by stand-ins that stop at once:
    a command that gets past its arguments fails this test quickly instead of running a study.)"""
    from rlexplain import agent_zoo, cli, demo
    def stop(*a, **kw): raise _StopBeforeWork("the command got past its arguments")
    monkeypatch.setattr(demo, "run_demo", stop); monkeypatch.setattr(agent_zoo, "train_zoo", stop)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rlexplain: error: {expected}") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []                         # nothing written


class _StopBeforeWork(Exception): pass


@pytest.fixture
def fake_ir(monkeypatch):
    "`run_ir` replaced by a stand-in that records its configuration and fails as the zoo lookup does (no agents)."
    import rlexplain.ir_study
    seen = []
    def run_ir(cfg, **kw):
        seen.append(cfg); raise LookupError(f"the zoo has no {cfg.pipelines[0]} agents for {cfg.games[0]}")
    monkeypatch.setattr(rlexplain.ir_study, "run_ir", run_ir)
    return seen


def test_game_ids_are_matched_case_insensitively_or_listed(tmp_path, fake_ir, capsys):
    "`--games toybox/breakout` (lower case) ran and gave NaN returns."
    from rlexplain.ir_study import toybox_ids
    assert toybox_ids(["toybox/breakout", "TOYBOX/SPACEINVADERS", "toybox/amidar"]) == ["toybox/Breakout", "toybox/SpaceInvaders", "toybox/Amidar"]
    assert main(["ir", "--out", str(tmp_path / "o"), "--games", "toybox/breakout"]) == 2
    assert fake_ir[0].games == ("toybox/Breakout",)              # the canonical id reaches the study
    capsys.readouterr()
    assert main(["ir", "--out", str(tmp_path / "o"), "--games", "toybox/brekout"]) == 2
    err = capsys.readouterr().err
    assert "--games: unknown game 'toybox/brekout'; IR runs on toybox/Breakout, toybox/Amidar, toybox/SpaceInvaders" in err
    assert main(["ir", "--out", str(tmp_path / "o"), "--games", "toybox/Breakout,toybox/breakout"]) == 2
    assert "toybox/Breakout is given twice" in capsys.readouterr().err and len(fake_ir) == 1


def test_toybox_ids_are_the_envs_games():
    from rlexplain.envs import TOYBOX_GAMES
    from rlexplain.ir_study import TOYBOX_IDS, IRConfig
    assert {g.split("/")[1].lower() for g in TOYBOX_IDS} == set(TOYBOX_GAMES) and set(IRConfig.paper().games) == set(TOYBOX_IDS)


def test_an_option_without_effect_is_refused(tmp_path, fake_ir, capsys):
    "`--mode exact --t 5` was accepted although --t has no effect in exact mode (and a later rerun was refused over it)."
    assert main(["ir", "--out", str(tmp_path / "o"), "--mode", "exact", "--t", "5"]) == 2
    err = capsys.readouterr().err
    assert "--t 5 has no effect with --mode exact" in err and "leave --t out" in err and not fake_ir
    assert not (tmp_path / "o").exists()


def test_a_failed_run_writes_nothing_and_the_corrected_command_is_accepted(tmp_path, fake_ir, capsys):
    """A run that failed on its agents (`--pipelines dqnn`) had written `config.json`, so the corrected command was refused as
    'holds results of another configuration' by a folder holding no results."""
    out = tmp_path / "o"
    assert main(["ir", "--out", str(out), "--pipelines", "dqn", "--states", "3"]) == 2   # fails on its agents (the stand-in)
    assert "the zoo has no dqn agents" in capsys.readouterr().err
    assert not out.exists()                                       # nothing left behind
    out.mkdir(); assert main(["ir", "--out", str(out), "--pipelines", "dqn", "--states", "3"]) == 2   # a folder the user made
    assert [p.name for p in out.rglob("*") if p.is_file()] == []
    (out / "run").mkdir(); (out / "run" / "config.json").write_text('{"p": 3}')   # what such a failed run left before issue 41
    capsys.readouterr()
    assert main(["ir", "--out", str(out), "--pipelines", "dqn", "--states", "4"]) == 2   # the corrected command reaches the study
    err = capsys.readouterr().err
    assert "the zoo has no dqn agents" in err and "another configuration" not in err and len(fake_ir) == 3


@pytest.mark.parametrize("argv,expected", [
    (["--pipelines", "dqnn"], r"--pipelines: the zoo has no dqnn agents for toybox/Breakout \(did you mean dqn\?\); it has a2c, dqn, "),
    (["--pipelines", "dqn", "--checkpoints", "123"], r"--checkpoints: the zoo's dqn agents for toybox/Breakout have no checkpoint at 123 "
                                                     r"frames \(the nearest is 50000\); they have 50000, "),
])
def test_zoo_lookups_list_what_exists_and_the_nearest(argv, expected, tmp_path, fake_ir, capsys):
    """`--pipelines dqnn` and `--checkpoints 123` both said 'the zoo has no dqn(n) agents ... train them' (false for the second),
    listing no valid choice."""
    import re
    assert main(["ir", "--out", str(tmp_path / "o"), "--games", "toybox/Breakout", "--states", "3", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(expected, err) and err.count("\n") == 1, err
    assert not fake_ir and not (tmp_path / "o").exists()         # refused before any work or write


def test_rundir_without_results_takes_the_new_configuration(tmp_path):
    from rlexplain.runs import ConfigMismatchError, RunDir, load_json
    RunDir(tmp_path, config={"n": 1})                             # recorded, nothing computed
    rd = RunDir(tmp_path, config={"n": 2})
    assert load_json(tmp_path / "config.json") == {"n": 2}
    rd.save_unit("a", [1])
    with pytest.raises(ConfigMismatchError, match="n: saved=2, given=3"):
        RunDir(tmp_path, config={"n": 3})


# --- one writer per run folder ---

_HOLDER = """
import sys
from rlexplain.runs import run_lock
with run_lock(sys.argv[1], "rlexplain ir --out held-by-the-test"):
    print("locked", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path, fake_ir, capsys):
    """`ir --states 10` and, 1.5 s later, `ir --states 3 --force` into one folder both exited 0 and mixed their results.
    Here another process holds the folder's lock (it says so on stdout, then waits on stdin: no timing involved)."""
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "locked\n"
        lock = json.loads((out / ".rlexplain.lock").read_text())
        assert lock["pid"] == p.pid and lock["command"] == "rlexplain ir --out held-by-the-test"
        assert main(["ir", "--out", str(out), "--states", "3", "--force"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{out} is in use by another run: pid {p.pid}" in err and "held-by-the-test" in err
        assert not fake_ir and sorted(x.name for x in out.iterdir()) == [".rlexplain.lock"]   # refused before any check or write
    finally:
        p.stdin.write("\n"); p.stdin.close()
        assert p.stdout.readline() == "released\n"; p.wait()
    assert not (out / ".rlexplain.lock").exists()                # removed on exit
    assert main(["ir", "--out", str(out), "--states", "3"]) == 2 and len(fake_ir) == 1   # free again: the run gets to the study


def test_a_stale_lock_is_taken_over_and_a_live_one_refused(tmp_path):
    import socket
    from rlexplain.runs import RunFolderBusy, run_lock
    dead = subprocess.Popen([sys.executable, "-c", "pass"]); dead.wait()   # a pid that no longer runs
    (tmp_path / ".rlexplain.lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": "x", "command": "killed"}))
    with run_lock(tmp_path, "mine") as lk:
        assert json.loads(lk.path.read_text())["pid"] == os.getpid()
        with pytest.raises(RunFolderBusy, match="in use by another run: this process"):
            with run_lock(tmp_path): pass
    assert not (tmp_path / ".rlexplain.lock").exists()
    (tmp_path / ".rlexplain.lock").write_text("")                 # being written by someone: refused, with what to do
    with pytest.raises(RunFolderBusy, match="being written or unreadable.*delete"):
        with run_lock(tmp_path): pass


# --- a command never replaces another command's results ---

def _two_fake_sections(monkeypatch):
    "Two registered demo jobs, `fake` and `other`, each writing one table: a finished demo folder in miniature."
    import types
    import pandas as pd
    from rlexplain import demo, report
    mod = types.ModuleType("_fake_sections_mod")
    def job(sec, scale, executor=None, max_workers=1):
        sec.table(f"{sec.key}_table", pd.DataFrame({"x": [1, 2]})); sec.note(f"{sec.key} ok")
    mod.job = job
    monkeypatch.setitem(sys.modules, "_fake_sections_mod", mod)
    for _k, _v in {"fake": demo.DemoEntry("Fake", "a fake job", "_fake_sections_mod:job"),
                                        "other": demo.DemoEntry("Other", "another fake job", "_fake_sections_mod:job")}.items(): monkeypatch.setitem(demo.DEMOS, _k, _v)   # the one table (sections.DEMOS)
    monkeypatch.setattr(report, "_scoreboard_html", lambda out: "")   # the report's sections are under test, not the scoring


def _files(folder: Path) -> dict:
    "Every file's bytes but `meta.json` (the machine record that each opening of a configured folder refreshes)."
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "meta.json"}


def test_a_method_command_into_a_finished_demo_folder_keeps_every_section(tmp_path, monkeypatch):
    """`rlexplain saliency --out runs/demo` recomputed nothing but replaced the demo's 8-section report with one section."""
    from rlexplain.demo import run_demo
    from rlexplain.report import write_report
    _two_fake_sections(monkeypatch)
    run_demo(tmp_path, only=["fake", "other"], scale="demo", report=write_report)
    before = _files(tmp_path)
    assert "fake_table" in before["report.html"].decode() and "other_table" in before["report.html"].decode()
    assert main(["fake", "--out", str(tmp_path)]) == 0
    assert _files(tmp_path) == before                             # nothing replaced, the report included
    (tmp_path / "other" / "done.json").unlink()                  # `other` interrupted: the rerun redoes only it
    assert main(["other", "--out", str(tmp_path)]) == 0
    after = _files(tmp_path)
    assert after["report.html"] == before["report.html"] and after["fake/fake_table.csv"] == before["fake/fake_table.csv"]


def test_the_ir_command_refuses_a_demo_folders_ir_section(tmp_path, fake_ir, monkeypatch, capsys):
    """`rlexplain ir --states 3 --out runs/demo` replaced the demo's IR table and its whole report (exit 0)."""
    (tmp_path / "ir").mkdir()
    for name, text in {"ir/done.json": '{"items": [["table", "IR", "ir_table.csv"]], "seconds": 1}', "ir/ir_table.csv": "a\n1\n",
                       "ir/config.json": '{"job": "ir", "scale": "demo"}', "report.html": "<html>demo</html>"}.items():
        (tmp_path / name).write_text(text)
    before = _files(tmp_path)
    assert main(["ir", "--out", str(tmp_path), "--states", "3"]) == 2
    err = capsys.readouterr().err
    assert "holds the finished ir section of a `rlexplain demo` run" in err and "choose another --out" in err
    assert _files(tmp_path) == before and not fake_ir and not (tmp_path / "run").exists()


# --- tracebacks that become one line ---

def test_a_corrupt_unit_is_named_and_computed_again(tmp_path):
    "A truncated unit `arrays.npz` gave a raw `zipfile.BadZipFile` traceback, and the run could not resume until it was deleted."
    from rlexplain.compute import run_jobs
    from rlexplain.runs import CorruptUnitError, RunDir
    rd = RunDir(tmp_path, config={"n": 1})
    rd.unit("a", lambda: {"x": np.arange(1000)}); rd.unit("b", lambda: {"x": np.arange(3)})
    f = tmp_path / "units" / "a.npz"; f.write_bytes(f.read_bytes()[:100])   # killed mid-copy, say
    with pytest.raises(CorruptUnitError, match=rf"the saved unit 'a' at {f} cannot be read \(BadZipFile"):
        rd.load_unit("a")
    calls = []
    with pytest.warns(UserWarning, match=rf"unit 'a' at {f} cannot be read.*computing it again"):
        out = run_jobs(lambda j: calls.append(j) or {"x": np.arange(1000)}, ["a", "b"], names=["a", "b"], run_dir=RunDir(tmp_path, config={"n": 1}))
    assert calls == ["a"] and out[0]["x"].sum() == 499500 and out[1]["x"].tolist() == [0, 1, 2]
    assert RunDir(tmp_path).load_unit("a")["x"].sum() == 499500   # saved again, readable
    (tmp_path / "units" / "b.npz").write_bytes(b"")
    with pytest.warns(UserWarning, match="unit 'b'"):
        assert RunDir(tmp_path).unit("b", lambda: {"x": np.ones(2)})["x"].tolist() == [1.0, 1.0]


def test_from_sb3_on_a_folder_names_it(tmp_path):
    "`from_sb3` on a directory raised a raw IsADirectoryError."
    from rlexplain.core import Policy
    (tmp_path / "CartPole-v1.zip").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"{tmp_path} is a folder; expected the model zip .*e.g. {tmp_path / 'CartPole-v1.zip'}"):
        Policy.from_sb3(tmp_path)


def test_tabular_lime_with_no_samples_is_refused():
    "`tabular_lime` with `n_samples=0` raised an IndexError from inside lime."
    from rlexplain.attribution import explain
    pol = _tabular_policy(); X = np.random.default_rng(2).normal(size=(5, 4)).astype(np.float32)
    for n in (0, -3, 1.5):
        with pytest.raises(ValueError, match=rf"explain\('tabular_lime'\): n_samples must be an integer >= 2.*got {n}"):
            explain("tabular_lime", pol, X, n_samples=n, background=X)
    assert explain("tabular_lime", pol, X[:1], n_samples=2, background=X).values.shape == (1, 4)


def test_ctrl_c_prints_one_line_and_the_rerun_resumes(tmp_path, monkeypatch, capsys):
    "Ctrl-C printed a full KeyboardInterrupt traceback (the rerun resumed correctly)."
    import types
    from rlexplain import demo, report
    from rlexplain.runs import RunDir
    calls, interrupt = [], [True]
    mod = types.ModuleType("_ctrl_c_mod")
    def job(sec, scale, executor=None, max_workers=1):
        rd = RunDir(sec.dir / "run", config={"scale": scale})
        rd.unit("a", lambda: calls.append("a") or [1])
        if interrupt[0]: raise KeyboardInterrupt
        rd.unit("b", lambda: calls.append("b") or [2]); sec.note("ok")
    mod.job = job
    monkeypatch.setitem(sys.modules, "_ctrl_c_mod", mod)
    for _k, _v in {"fake": demo.DemoEntry("Fake", "a fake job", "_ctrl_c_mod:job")}.items(): monkeypatch.setitem(demo.DEMOS, _k, _v)   # the one table (sections.DEMOS)
    monkeypatch.setattr(report, "_scoreboard_html", lambda out: "")
    try: rc = main(["fake", "--out", str(tmp_path)])
    except KeyboardInterrupt: pytest.fail("Ctrl-C escaped `main` as a traceback")
    err = capsys.readouterr().err
    assert rc == 130 and err == f"rlexplain: interrupted; the finished parts are saved in {tmp_path}: run the same command again to resume\n"
    assert not (tmp_path / ".rlexplain.lock").exists()            # the lock went with the run
    interrupt[0] = False
    assert main(["fake", "--out", str(tmp_path)]) == 0 and calls == ["a", "b"]   # resumed: unit a not computed again


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    "`rlexplain scoreboard RUN | head` ended in 'Broken pipe'."
    from rlexplain import cli
    def closed(args): raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(cli, "_run", closed)
    assert main(["scoreboard", "runs/demo"]) == 0
    assert "Broken pipe" not in capsys.readouterr().err


def test_a_demo_into_an_ir_command_folder_refuses_to_replace_it(tmp_path, monkeypatch, capsys):
    """The reverse direction: `rlexplain demo --out runs/ir` would have written the demo's IR section over the `ir` command's.
    The section records the command that made it, and the demo refuses it before any work."""
    import types
    import matplotlib.pyplot as plt
    import pandas as pd
    import rlexplain.ir_study
    from rlexplain import report
    from rlexplain.demo import run_demo
    study = types.SimpleNamespace(table=lambda: pd.DataFrame({"pipeline": ["dqn"], "R": [0.5]}),
                                  to_frame=lambda: pd.DataFrame({"R": [0.5]}), plot=lambda g, normalized=False: plt.figure())
    monkeypatch.setattr(rlexplain.ir_study, "run_ir", lambda cfg, **kw: study)
    monkeypatch.setattr(report, "_scoreboard_html", lambda out: "")
    def stop(*a, **kw): raise _StopBeforeWork("the demo's IR section started")
    monkeypatch.setattr(rlexplain.ir_study, "demo_section", stop)                    # a demo that gets past its checks fails here, quickly
    assert main(["ir", "--out", str(tmp_path), "--games", "toybox/Breakout", "--states", "3"]) == 0
    assert json.loads((tmp_path / "ir" / "config.json").read_text())["command"] == "ir"
    before = _files(tmp_path)
    with pytest.raises(ValueError, match=rf"{tmp_path / 'ir'} holds the results of `rlexplain ir`, which the demo's ir section would replace"):
        run_demo(tmp_path, only=["ir"], scale="demo")
    assert _files(tmp_path) == before


# --- the scoreboard refuses what is not a finished run (issue 41.2) ---

def _finished_ir_run(root: Path) -> Path:
    "A finished run with one section, as `rlexplain demo --out root --only ir` writes it (records and one table)."
    (root / "ir").mkdir(parents=True)
    (root / "ir" / "config.json").write_text(json.dumps({"job": "ir", "scale": "demo"}))
    (root / "ir" / "done.json").write_text(json.dumps({"items": [["table", "Table 6", "ir_table.csv"]], "seconds": 1.0}))
    (root / "ir" / "ir_table.csv").write_text("game,pipeline,frames,original,original_se,n_agents\ntoybox/Breakout,dqn,50000,1.0,0.0,6\n")
    return root


def _one_error_line(capsys) -> str:
    cap = capsys.readouterr(); lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlexplain: error: ") and "Traceback" not in cap.err, cap.err
    return lines[0]


@pytest.mark.parametrize("case, expected", [
    ("empty", "is not a finished run: it holds none of the sections ir, ranld"),
    ("section", "is the 'ir' section of a run, not a run folder"),
    ("corrupt", "ir/ir_table.csv cannot be parsed as CSV"),
    ("renamed", "ir/ir_table.csv lacks the declared column(s) ['original'] ('original' renamed to 'original_R'?)"),
])
def test_scoreboard_refuses_what_is_not_a_finished_run(case, expected, tmp_path, capsys):
    """`rlexplain scoreboard` on an empty folder, on a section subfolder, on a run with a corrupt CSV or a renamed column
    printed a board of 'not run' rows and exited 0. Now: one line naming the folder or file, exit status 2."""
    run = _finished_ir_run(tmp_path / "run")
    assert main(["scoreboard", str(run)]) == 0 and "reproduced" in capsys.readouterr().out   # the finished run is scored
    target = {"empty": tmp_path / "empty", "section": run / "ir"}.get(case, run)
    if case == "empty": target.mkdir()
    if case == "corrupt": (run / "ir" / "ir_table.csv").write_bytes(b"game,pipeline,frames\n\xff\xfe\x00\x81,1,2,3,4\n")
    if case == "renamed":
        p = run / "ir" / "ir_table.csv"; p.write_text(p.read_text().replace("original,", "original_R,", 1))
    assert main(["scoreboard", str(target)]) == 2
    assert expected in _one_error_line(capsys)


def test_zoo_gate_of_an_unknown_environment_is_an_error_and_seeds_are_not_negative(capsys):
    "Issue 54.5: `zoo gate --env X` with no match exited 0 printing the whole zoo; `explain-episode --seed -1` gave a raw traceback."
    assert main(["zoo", "gate", "--env", "Bogus-v0"]) == 2
    err = capsys.readouterr().err
    assert "no entry for --env Bogus-v0" in err and "toybox/Breakout" in err and len(err.strip().splitlines()) == 1
    assert main(["explain-episode", "--seed", "-1", "--out", "unused"]) == 2
    assert "argument --seed: expected an integer >= 0, got -1" in capsys.readouterr().err


def test_ir_t_beyond_memory_is_refused_before_allocating_and_memory_errors_are_one_line(monkeypatch, capsys):
    """Issue 54.5: Algorithm 1's samples are sized before they are drawn (t x states x agents x actions), so `--t 1e9`
    is a clear error naming the GiB needed and available; a MemoryError anywhere else is one line, not a traceback."""
    import numpy as np
    import rlexplain.cli as cli
    from rlexplain.ir import ir_from_agents
    p = np.full((5, 3, 4), 0.25)
    with pytest.raises(ValueError, match=r"t=1000000000 action samples .* GiB; .* GiB are available: lower t"):
        ir_from_agents(p, True, t=10**9)
    assert ir_from_agents(p, True, t=30).shape == (5,)
    def boom(args): raise MemoryError()
    monkeypatch.setattr(cli, "_run", boom)
    assert main(["ir", "--out", "runs/x"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "out of memory" in err and "runs/x" in err, err


def test_ir_agents_above_the_playing_seeds_is_said_and_recorded():
    """Issue 54.5: `--agents 10` with fewer seeds that pass the gate measures the playing seeds, with a warning that names
    them; each job holds the agents it measures (ir_table's n_agents)."""
    from rlexplain.ir_study import IRConfig, ir_jobs
    with pytest.warns(UserWarning, match=r"IRConfig\(n_agents=10\) asks for 10 measured agents; \d+ pass the quality gate"):
        jobs = ir_jobs(IRConfig(n_agents=10, pipelines=("a2c",)))
    assert jobs and all(2 <= len(j.agents) < 10 for j in jobs)
