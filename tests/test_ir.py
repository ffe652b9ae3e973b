"Integration tests of rlexplain.ir and rlexplain.ir_study on hand-checkable cases and on real Toybox states."
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from rlexplain.core import Policy
from rlexplain.envs import ToyboxEnv
from rlexplain.ir import (IRMatrix, interventional_robustness, intervened_observations, ir_from_agents, ir_matrix,
                          js_divergence, sample_states)


def test_known_values():
    assert js_divergence(np.eye(2)) == pytest.approx(1.0)
    assert js_divergence([[1, 0], [0.5, 0.5]]) == pytest.approx(0.311278, abs=1e-5)
    assert interventional_robustness(np.tile([0.2, 0.8], (5, 1))) == pytest.approx(1.0)
    assert interventional_robustness(np.eye(6)) == pytest.approx(0.0, abs=1e-9)
    # 4 agents, actions (0, 0, 1, 1): histogram (1/2, 1/2) -> JSD = 1 bit, R = 1 - 1/2
    assert interventional_robustness(np.eye(3)[[0, 0, 1, 1]]) == pytest.approx(0.5)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 10), st.integers(2, 8), st.integers(0, 10_000))
def test_r_bounds_and_sampling(n, a, seed):
    p = np.random.default_rng(seed).dirichlet(np.ones(a), size=(3, n))
    r = ir_from_agents(p, True, t=5, seed=seed)
    assert ((r >= 0) & (r <= 1)).all()


@pytest.mark.parametrize("bad,match", [
    (np.eye(3)[[0]], "n >= 2"),
    (np.array([[0.5, 0.4], [1.0, 0.0]]), "sum to 1"),
    (np.array([[np.nan, 1.0], [1.0, 0.0]]), "NaN"),
    (np.array([1.0, 0.0]), "shape"),
])
def test_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        interventional_robustness(bad)


def test_matrix_on_real_states_and_save_load(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 84 * 84, 4))
    a = Policy.from_module(net, (4, 84, 84), kind="q", device="cpu")
    env = ToyboxEnv("breakout")
    states = sample_states(None, env, p=3, seed=1, max_steps=100)

    class Wide:
        name = "wide"
        def apply(self, s):
            s = dict(s); s["paddle_width"] = 48.0; return s

    class Never:
        name = "never"
        def apply(self, s):
            raise ValueError("does not fit")

    obs, valid, skipped = intervened_observations(env, states, [Wide(), Never()])
    assert obs.shape == (3, 3, 4, 84, 84) and valid[:2].all() and not valid[2].any() and len(skipped) == 3
    assert not np.array_equal(obs[0], obs[1])             # the wider paddle is visible
    m = ir_matrix([a, a], obs, valid, interventions=["none", "wide", "never"], pipeline="x", frames=1)
    assert np.allclose(m.R[:2], 1.0) and np.isnan(m.R[2]).all()
    m.save(tmp_path / "m")
    m2 = IRMatrix.load(tmp_path / "m")
    np.testing.assert_array_equal(m2.R, m.R)
    assert m2.summary()["original"].item() == pytest.approx(1.0) and m2.to_dict()["original"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same action count"):
        ir_matrix([a, Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 84 * 84, 3)), (4, 84, 84), device="cpu")], obs)


# --- bad input at the public entry points and configurations that never mix (issue 18) ---
import json
import shutil
import warnings

from rlexplain.agents import ZOO_DIR
from rlexplain.runs import ConfigMismatchError
from rlexplain.ir_study import IRConfig, ir_jobs, run_ir

_TB_DQN = ZOO_DIR / "toybox-breakout" / "dqn"


def test_unknown_intervention_names_list_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown interventions \['no_such_intervention'\].*paddle_width_6"):
        IRConfig(interventions=("no_such_intervention",))
    with pytest.raises(TypeError, match="string"):
        IRConfig(interventions="paddle_width_6")
    with pytest.raises(ValueError, match="pass None"):
        IRConfig(interventions=())
    IRConfig(interventions=("paddle_width_6", "drop_row_0"))    # valid names pass


def test_more_agents_than_the_zoo_has_is_an_error():
    with pytest.raises(ValueError, match=r"n_agents=9.*seeds \[1, 2, 3, 4, 5\]"):
        ir_jobs(IRConfig(pipelines=("dqn",), n_agents=9, plays=False))


def test_missing_zoo_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such_zoo"):
        ir_jobs(IRConfig(zoo=str(tmp_path / "no_such_zoo")))


@pytest.mark.parametrize("sto", [[True, False], [True] * 4, [[True, True, True]]])
def test_stochastic_of_the_wrong_length(sto):
    p = np.full((2, 3, 2), 0.5)
    with pytest.raises(ValueError, match="one per agent"):
        ir_from_agents(p, sto)
    with pytest.raises(TypeError, match="bools"):
        ir_from_agents(p, [0.5, 0.5, 0.5])


def test_valid_and_names_of_the_wrong_shape():
    a = Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8, 2)), (8,), kind="q", device="cpu")
    obs = np.zeros((2, 3, 8), np.float32)
    assert ir_matrix([a, a], obs, np.ones((2, 3), bool)).R.shape == (2, 3)
    with pytest.raises(ValueError, match="valid must have shape"):
        ir_matrix([a, a], obs, np.ones((3, 2), bool))
    with pytest.raises(ValueError, match="intervention names"):
        ir_matrix([a, a], obs, interventions=["none"])
    with pytest.raises(ValueError, match="obs must have shape"):
        ir_matrix([a, a], obs.reshape(6, 8))


def _small_zoo(tmp_path):
    "Breakout DQN seeds 0-2 at 5e4 frames and one corrupt card of another game."
    if not _TB_DQN.exists(): pytest.skip("the demo zoo's Breakout DQN agents are absent")
    root = tmp_path / "zoo"
    for s in range(3):
        shutil.copytree(_TB_DQN / f"seed{s}" / "0000050000", root / "toybox-breakout" / "dqn" / f"seed{s}" / "0000050000")
    bad = root / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"; bad.mkdir(parents=True)
    (bad / "card.json").write_text('{"id": "cartpole-v1/dqn-mlp/seed0/6')
    return root


def test_a_corrupt_card_does_not_break_a_study_and_reruns_never_mix(tmp_path):
    root = _small_zoo(tmp_path)
    cfg = IRConfig(pipelines=("dqn",), n_agents=2, plays=False, p=3, t=2, interventions=("paddle_width_48",), zoo=str(root))
    with pytest.warns(UserWarning, match="card.json"):
        s1 = run_ir(cfg, run_dir=tmp_path / "run")
    assert s1.matrices[0].R.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigMismatchError, match="p: saved=3, given=4"):
            run_ir(IRConfig(**{**cfg.__dict__, "p": 4}), run_dir=tmp_path / "run")
        s2 = run_ir(IRConfig(**{**cfg.__dict__, "p": 4}), run_dir=tmp_path / "run", force=True)
        assert s2.matrices[0].R.shape == (2, 4)
        s3 = run_ir(IRConfig(**{**cfg.__dict__, "p": 4}), run_dir=tmp_path / "run")   # same configuration: resumes
    np.testing.assert_array_equal(s3.matrices[0].R, s2.matrices[0].R)


@pytest.mark.parametrize("games,match", [(("ALE/Pong-v5",), "Toybox game states"), (("toybox/Pacman",), "unknown Toybox game"),
                                         ("toybox/Breakout", "string")])
def test_games_must_be_toybox_games(games, match):
    with pytest.raises((ValueError, TypeError), match=match):
        IRConfig(games=games)


@pytest.mark.parametrize("field", ["n_agents", "p", "t"])
def test_sizes_must_be_integers(field):
    with pytest.raises(TypeError, match=f"{field} must be an integer"):
        IRConfig(**{field: 2.5})


def test_agent_probs_forwards_at_the_agents_batch_size():
    "IR's forward passes use the agent's calibrated batch size (they used a fixed 1024); an explicit batch_size overrides."
    from rlexplain.core import Policy
    from rlexplain.compute import ComputeSettings
    from rlexplain.ir import agent_probs
    torch.manual_seed(0)
    pol = Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(2 * 6 * 6, 3)), (2, 6, 6), device="cpu")
    pol.apply_settings(ComputeSettings(1, 1, "contiguous", 4, "override"))
    sizes, forward = [], pol.forward
    pol.forward = lambda z: (sizes.append(len(z)), forward(z))[1]
    obs = np.random.default_rng(0).random((10, 2, 6, 6)).astype(np.float32)
    p = agent_probs(pol, obs)
    assert max(sizes) == 4 and p.shape == (10, 3)
    np.testing.assert_allclose(p.sum(1), 1.0)
    sizes.clear(); np.testing.assert_allclose(agent_probs(pol, obs, batch_size=10), p, rtol=1e-6); assert sizes == [10]


def _const_policy(action: int, n_actions: int = 3) -> Policy:
    "A greedy agent that always prefers `action` (logits 10 on it, 0 elsewhere), on 2-feature observations."
    class _C(torch.nn.Module):
        def forward(self, x): return torch.nn.functional.one_hot(torch.full((len(x),), action), n_actions).float() * 10
    return Policy(_C(), n_actions, (2,), kind="logits", stochastic=False, device="cpu", name=f"always{action}")


def test_identical_agents_have_jsd_exactly_zero():
    "Exact entropies: identical distributions give JSD 0.0 exactly, not 1e-10 (the original code's eps is an option)."
    p = np.tile([0.1, 0.2, 0.7], (4, 1))
    assert js_divergence(p) == 0.0
    assert interventional_robustness(p) == 1.0
    from rlexplain.ir import entropy_bits
    assert entropy_bits(np.eye(3)).tolist() == [0.0, 0.0, 0.0]   # 0 log 0 = 0 and 1 log 1 = 0 exactly (eps gave -1.4e-10)
    assert js_divergence(np.eye(2)[[0, 0, 1]], eps=1e-10) == pytest.approx(js_divergence(np.eye(2)[[0, 0, 1]]), abs=1e-9)


def test_jackknife_interval_over_agents_by_hand():
    "n = 4 greedy agents, one of which always disagrees: leave-one-out values and the t interval computed by hand."
    from scipy.stats import t as student_t
    obs = np.zeros((2, 3, 2))                     # 2 interventions (null + 1) x 3 states
    m = ir_matrix([_const_policy(a) for a in (0, 0, 0, 1)], obs, mode="exact")
    h = lambda q: -sum(x * np.log2(x) for x in q if x > 0)
    r_all = 1 - h([0.75, 0.25]) / np.log2(4)
    np.testing.assert_allclose(m.R, r_all)
    loo = np.array([1 - h([2 / 3, 1 / 3]) / np.log2(3)] * 3 + [1.0])   # leave out a 0-agent (x3), or the odd one
    np.testing.assert_allclose(m.R_jackknife[:, 0, 0], loo)
    se = np.sqrt(3 / 4 * ((loo - loo.mean()) ** 2).sum())
    lo, hi, se_ = m.interval()
    assert se_ == pytest.approx(se)
    q = student_t.ppf(0.975, 3)
    assert (lo, hi) == pytest.approx((r_all - q * se, r_all + q * se))
    row = m.to_dict()
    assert row["original_low"] == pytest.approx(lo) and row["n_agents"] == 4
    with pytest.raises(ValueError, match="level"):
        m.interval(1.5)


def test_identical_agents_give_a_zero_width_interval_and_it_survives_save_load(tmp_path):
    m = ir_matrix([_const_policy(2)] * 3, np.zeros((1, 4, 2)), mode="exact")
    assert m.interval()[:2] == (1.0, 1.0)
    m2 = IRMatrix.load(m.save(tmp_path / "m"))
    np.testing.assert_array_equal(m2.R_jackknife, m.R_jackknife)


# --- issue 28: what lesson 10's demo-scale cells (#| slow in nbdev_test) compute, at a test's size ---

def test_uniformly_random_agents_baseline_by_hand():
    """Lesson 10's baseline (its cells 64-65 are #| slow): n uniformly random agents over 4 actions. Exact expectation by
    enumerating the multinomial action histograms: n = 2 gives 1/4 (R = 1 when the two agree, else 0); n = 5 gives 0.37
    (the value the lesson prints); Algorithm 1's sampled estimate matches it, and R rises with n."""
    from itertools import product
    from math import factorial
    def exact(n, a=4):
        return sum(factorial(n) / np.prod([factorial(c) for c in cs]) / a ** n * interventional_robustness(np.repeat(np.eye(a), cs, axis=0))
                   for cs in product(range(n + 1), repeat=a) if sum(cs) == n)
    assert exact(2) == pytest.approx(0.25, abs=1e-12)
    assert exact(5) == pytest.approx(0.37, abs=0.005)
    sampled = float(ir_from_agents(np.full((1, 5, 4), 0.25), True, t=100_000, seed=0)[0])
    assert sampled == pytest.approx(exact(5), abs=0.01)
    rs = [exact(n) for n in range(2, 7)]
    assert all(b > a for a, b in zip(rs, rs[1:]))


def test_zoo_study_tables_plots_and_both_intervention_bases():
    """Lesson 10's demo study (`run_ir` on the zoo's Toybox Breakout DQN agents, `table`, Figures 3-4 and the two
    intervention bases; #| slow in the lesson) at 2 agents x 3 states x 1 intervention. At 5e4 frames the zoo's DQN
    agents are untrained with ALL's zero output heads: Q = 0 everywhere, every seed takes action 0, so R = 1 exactly
    in every valid cell and Normalized = 0, whichever state the intervention is applied to."""
    import matplotlib.pyplot as plt
    if not _TB_DQN.exists(): pytest.skip("the demo zoo's Breakout DQN agents are absent")
    frames = sorted(int(p.name) for p in (_TB_DQN / "seed1").iterdir() if p.name.isdigit())
    tables = {}
    studies = {}
    for base, checkpoints in (("state", (50_000, frames[-1])), ("original", (50_000,))):
        cfg = IRConfig(pipelines=("dqn",), checkpoints=checkpoints, n_agents=2, plays=False, p=3, t=2,
                       interventions=("paddle_width_48",), intervention_base=base)
        studies[base] = study = run_ir(cfg)
        tables[base] = t = study.table()
        assert list(t.frames) == list(checkpoints) and (t.pipeline == "dqn").all()
        early = t[t.frames == 50_000].iloc[0]
        assert early.original == 1.0 and early.intervened == 1.0 and early.normalized == 0.0
        assert t.return_mean.notna().all()
        m0 = next(m for m in study.matrices if m.frames == 50_000)
        assert np.all(m0.R[~np.isnan(m0.R)] == 1.0)
    for normalized in (False, True):   # Figures 3 and 4: one row (dqn), two checkpoints and the return panel
        fig = studies["state"].plot(normalized=normalized); assert isinstance(fig, plt.Figure) and len(fig.axes) >= 3
    plt.close("all")
    # the unintervened row does not depend on where interventions are applied
    assert tables["state"].original.iloc[0] == tables["original"].original.iloc[0] == 1.0


def test_checkpoints_of_a_pipeline_share_the_sampled_states(monkeypatch):
    """Algorithm 3's states and their intervened observations depend on the pipeline's sampler G_0, not on the measured
    agents' checkpoint: `run_ir` samples them once per pipeline (the demo sampled them once per checkpoint), and every
    job computed alone, from scratch, gives the same R matrix."""
    import rlexplain.ir_study as ir
    if not _TB_DQN.exists(): pytest.skip("the demo zoo's Breakout DQN agents are absent")
    frames = sorted(int(p.name) for p in (_TB_DQN / "seed1").iterdir() if p.name.isdigit())
    cfg = IRConfig(pipelines=("dqn",), checkpoints=(50_000, frames[-1]), n_agents=2, plays=False, p=3, t=2, interventions=("paddle_width_48",))
    calls, sample = [], ir.sample_states
    monkeypatch.setattr(ir, "sample_states", lambda *a, **k: (calls.append(1), sample(*a, **k))[1])
    ir._IR_CELLS.clear()
    study = run_ir(cfg)
    assert len(study.matrices) == 2 and len(calls) == 1
    for job, m in zip(ir.ir_jobs(cfg), study.matrices):
        ir._IR_CELLS.clear()
        np.testing.assert_array_equal(ir._run_ir_job(job).R, m.R)
    assert len(calls) == 3


def _gated_copy(root, pipe, seed, frames, plays, src_frames=640_000):
    "A copy of a zoo entry of Toybox Breakout PPO under `root`, relabelled to `frames`, its stored gate saying `plays`."
    import json, shutil
    from rlexplain.agents import entry_dir
    from rlexplain.agent_zoo import quality_gate
    src = entry_dir(ZOO_DIR, "toybox/Breakout", "ppo", seed, src_frames); d = entry_dir(root, "toybox/Breakout", pipe, seed, frames)
    shutil.copytree(src, d)
    card = json.loads((d / "card.json").read_text())
    card.update(frames=frames, pipeline=pipe, id=f"toybox-breakout/{pipe}/seed{seed}/{frames}", gate={**quality_gate(src), "plays": plays})
    (d / "card.json").write_text(json.dumps(card))


def test_ir_measures_the_seeds_that_pass_the_quality_gate(tmp_path):
    """IRConfig(plays=True): the pipeline's last checkpoint with 3 or more playing seeds; the lowest playing seed samples the
    states and the next ones are measured; a later checkpoint with fewer playing seeds is named in a warning; a pipeline with
    no such checkpoint is left out with a warning; no pipeline at all is an error."""
    root = tmp_path / "zoo"
    for s, ok in enumerate([False, True, True, False, True, True]): _gated_copy(root, "ppo", s, 640_000, ok)
    for s in range(6): _gated_copy(root, "ppo", s, 50_000, False)                       # untrained: allowed to be constant
    for s in range(6): _gated_copy(root, "ppo", s, 1_600_000, s in (1, 2))                 # later: only two play
    for s in range(4): _gated_copy(root, "a2c", s, 640_000, s == 0)                        # one playing seed: left out
    cfg = IRConfig(pipelines=("ppo", "a2c"), n_agents=2, p=3, t=2, interventions=("paddle_width_48",), zoo=str(root))
    with pytest.warns(UserWarning) as rec: jobs = ir_jobs(cfg)
    msgs = " ".join(str(w.message) for w in rec)
    assert "[1600000] have fewer than 3 agents" in msgs and "a2c: no checkpoint has 3 agents" in msgs and "left out" in msgs
    assert [(j.pipeline, j.frames) for j in jobs] == [("ppo", 50_000), ("ppo", 640_000)]
    assert all(j.sampler.endswith("seed1/0000640000") for j in jobs)                     # the lowest playing seed samples
    assert [p.split("/")[-2] for p in jobs[1].agents] == ["seed2", "seed4"]              # the next n_agents playing seeds
    assert [p.split("/")[-2] for p in jobs[0].agents] == ["seed2", "seed4"]              # the same runs at every checkpoint
    with pytest.raises(ValueError, match="no pipeline of \\['a2c'\\] has 4 agents"), pytest.warns(UserWarning):
        ir_jobs(IRConfig(pipelines=("a2c",), zoo=str(root)))


def test_ir_does_not_move_to_a_checkpoint_where_too_few_agents_play_for_an_interval(tmp_path):
    """With n_agents >= 3 a study ends at the last checkpoint where a sampler and 3 measured agents play (the fewest whose
    jackknife interval exists), not at a later one where only 2 would be measured."""
    root = tmp_path / "zoo"
    for s in range(6): _gated_copy(root, "ppo", s, 640_000, s in (0, 1, 2, 4, 5))          # 5 play: sampler + 4 measured
    for s in range(6): _gated_copy(root, "ppo", s, 1_600_000, s in (0, 1, 2))              # later: sampler + 2 measured only
    cfg = IRConfig(pipelines=("ppo",), n_agents=5, p=3, t=2, interventions=("paddle_width_48",), zoo=str(root))
    with pytest.warns(UserWarning, match=r"\[1600000\] have fewer than 4 agents"): jobs = ir_jobs(cfg)
    assert [j.frames for j in jobs] == [640_000] and [p.split("/")[-2] for p in jobs[0].agents] == ["seed1", "seed2", "seed4", "seed5"]
    two = ir_jobs(IRConfig(**{**cfg.__dict__, "n_agents": 2}))                          # a 2-agent study has no interval to keep
    assert [j.frames for j in two] == [640_000, 1_600_000] and [p.split("/")[-2] for p in two[1].agents] == ["seed1", "seed2"]


def test_the_ir_command_marks_its_section_finished_last(tmp_path, monkeypatch):
    """Issue 54.4: `rlexplain ir` writes `ir/done.json` after its tables; a rerun killed while writing removes the old
    marker first, so the scoreboard refuses the half-written section instead of scoring old and new tables together.
    A demo's finished ir section (its `done.json` without `"command": "ir"`) is still never replaced."""
    import rlexplain.ir_study as ir
    from rlexplain.runs import load_json
    from rlexplain.runtables import IncompleteSection, check_run
    if not _TB_DQN.exists(): pytest.skip("the demo zoo's Breakout DQN agents are absent")
    cfg = IRConfig(pipelines=("dqn",), checkpoints=(50_000,), n_agents=2, plays=False, p=3, t=2, interventions=("paddle_width_48",))
    ir.run_ir_to(tmp_path, cfg)
    done = load_json(tmp_path / "ir" / "done.json")
    assert done["command"] == "ir" and [i[2] for i in done["items"] if i[0] == "table"] == ["ir_table.csv", "ir_cells.csv"]
    check_run(tmp_path)                                                  # finished: scored
    def killed(sec, study, games):                                       # the rerun dies after its first table
        sec.table("ir_table", study.table(), "cut"); raise KeyboardInterrupt
    monkeypatch.setattr(ir, "section_outputs", killed)
    with pytest.raises(KeyboardInterrupt): ir.run_ir_to(tmp_path, cfg)
    assert not (tmp_path / "ir" / "done.json").exists()
    with pytest.raises(IncompleteSection, match="rlexplain ir --out"): check_run(tmp_path)
    (tmp_path / "ir" / "done.json").write_text('{"items": [], "seconds": 1.0}')   # as `rlexplain demo` marks its section
    with pytest.raises(ValueError, match="finished ir section of a `rlexplain demo` run"): ir.run_ir_to(tmp_path, cfg)
