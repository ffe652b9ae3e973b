"""The quality gate (`rlexplain.agent_zoo.quality_gate`): a constant network fails it, a trained agent passes it, and the
agents that the lessons, the demo and the reference scale use pass it."""
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from rlexplain.agents import ZOO_DIR, load_card
from rlexplain.agent_zoo import best_zoo_entry, gate_verdict, list_zoo, quality_gate

CARTPOLE = ZOO_DIR / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"


def _copy(tmp_path, zero_head: bool):
    "A copy of the zoo's CartPole DQN as a one-entry zoo; with `zero_head` its last layer is 0: the same q-values everywhere."
    root = tmp_path / "zoo"; d = root / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"
    shutil.copytree(CARTPOLE, d)
    card = load_card(d); card.pop("gate", None)
    import json; (d / "card.json").write_text(json.dumps(card))
    if zero_head:
        sd = load_file(str(d / "weights.safetensors"))
        last = sorted(k for k in sd if k.startswith("q_net.") and k.endswith(".weight"))[-1]   # the output layer
        for k in (last, last.replace(".weight", ".bias")): sd[k] = torch.zeros_like(sd[k])
        save_file(sd, str(d / "weights.safetensors"))
    return root, d


def test_constant_network_fails_the_gate(tmp_path):
    root, d = _copy(tmp_path, zero_head=True)
    g = quality_gate(d, n_episodes=30)
    assert g["modal_share"] == 1.0 and g["entropy_bits"] == 0.0 and g["distinct"] == 1
    assert g["q_range_mean"] == 0.0
    assert g["plays"] is False
    assert list_zoo(root).plays.tolist() == [False]
    assert list_zoo(root).plays_well.tolist() == [False]   # an agent that fails the gate does not play well
    with pytest.raises(LookupError, match="passes the quality gate"): best_zoo_entry("CartPole-v1", root=root, plays=True)


def test_trained_agent_passes_the_gate_and_is_stored(tmp_path):
    root, d = _copy(tmp_path, zero_head=False)
    g = quality_gate(d, n_episodes=30)
    assert g["n"] == 30 and g["low"] > 0 and g["modal_share"] <= 0.95 and g["plays"] is True
    assert load_card(d)["gate"]["plays"] is True                      # recorded in the card
    tier = load_card(d)["tier"]                                       # and the second tier it gives, beside it
    assert (tier["plays_well"], tier["reference_return"], tier["reference_src"], tier["random_src"]) == (True, 500.0, "rlzoo", "gate")
    assert quality_gate(d, n_episodes=30) == load_card(d)["gate"]     # a stored gate of the same protocol is reused
    assert best_zoo_entry("cartpole-v1", root=root, plays=True) == str(d)
    row = list_zoo(root).iloc[0]                                      # the list shows the gate's own figures
    assert (row.plays, row.gap, row.gap_low, row.gap_high) == (True, g["diff"], g["low"], g["high"])
    assert (row.plays_well, row.reference_return, row.reference_src) == (True, 500.0, "rlzoo")   # computed at read time too
    assert (row.gate_n, row.gate_return, row.gate_random) == (30, np.mean(g["returns"]), np.mean(g["random_returns"]))
    assert row.gap == pytest.approx(row.gate_return - row.gate_random)   # the gap is of the gate's own episodes, not the evaluation's


def test_zoo_list_shows_the_gate_and_says_what_plays_means(tmp_path, capsys):
    from rlexplain.agent_zoo import GATE_COLUMNS, TIER_COLUMNS
    from rlexplain.cli import main
    root, d = _copy(tmp_path, zero_head=False); g = quality_gate(d, n_episodes=30)
    assert main(["zoo", "list", "--root", str(root)]) == 0
    head, row, note, *legend = capsys.readouterr().out.splitlines()
    assert head.split() == [*GATE_COLUMNS, *TIER_COLUMNS] and row.split()[:4] == [load_card(d)["id"], "60000", "True", "30"]
    assert float(row.split()[4]) == pytest.approx(g["mean"], abs=0.005)
    assert row.split()[-5:] == ["500.0", "rlzoo", "NaN", "None", "True"]   # CartPole: the RL Zoo's DQN, no human score
    assert note.startswith("plays: the 95% BCa bootstrap interval of gap") and "<= 0.95" in note
    assert legend[0].startswith("plays_well: plays, and reference_fraction") and legend[2].startswith("  rlzoo: RL Baselines3 Zoo")
    assert len(legend) == 4 and legend[3].startswith("  gate: ")   # only the sources the table uses: rlzoo and the gate's random play
    assert main(["zoo", "list", "--root", str(root), "--wide"]) == 0
    assert "return_mean" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("low,share,plays", [(0.1, 0.5, True), (0.0, 0.5, False), (-1, 0.5, False), (1, 0.951, False), (1, 0.95, True)])
def test_gate_verdict(low, share, plays):
    assert gate_verdict(low, share) is plays


def _entry(card: dict):
    from rlexplain.agents import entry_dir
    return entry_dir(ZOO_DIR, card["env_id"], card["pipeline"], card["seed"], card["frames"])


def test_every_agent_the_demo_and_the_reference_scale_use_passes_the_gate(tmp_path):
    """Issue 36: the agents of every study at demo and reference scale pass the quality gate. The IR study's last checkpoint
    of each pipeline (sampler and measured agents), and each other section's agent, chosen as its plan chooses it."""
    import warnings
    from rlexplain.ranld_study import demo_plan as ranld_plan
    from rlexplain.xrlbench import demo_plan as xrl_plan
    from rlexplain.ir_study import IRConfig, ir_jobs
    from rlexplain.saliency_study import BenchConfig, _agent_spec
    from rlexplain.switching import SwitchingConfig, team_entry
    from rlexplain.timeseries_study import STUDY_GAMES
    used = {}
    for scale in ("demo", "reference"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # pipelines without 3 playing seeds are left out, with a warning
            jobs = ir_jobs(IRConfig.from_scale(scale))
        assert {j.pipeline for j in jobs} >= {"ppo"}
        for pipe in {j.pipeline for j in jobs}:
            last = max((j for j in jobs if j.pipeline == pipe), key=lambda j: j.frames)
            for p in (last.sampler, *last.agents): used[p] = f"IR {pipe} ({scale})"
        _, _, _, cards, _ = xrl_plan(scale)
        for c in cards.values(): used[str(_entry(c))] = f"XRL-Bench ({scale})"
        games, _, _, _ = ranld_plan(scale, tmp_path)
        for _, (_, _, c) in games.items(): used[str(_entry(c))] = f"RA-NLD ({scale})"
        cfg = BenchConfig.from_scale(scale)
        for g in cfg.games: used[_agent_spec(cfg, g)] = f"saliency benchmark ({scale})"   # as the study selects it
        sw = SwitchingConfig.from_scale(scale)
        for seed in {sw.team, sw.donor}: used[team_entry(sw.env_id, sw.pipeline, seed)] = f"switching ({scale})"
    for g in STUDY_GAMES:
        for a in ("a2c", "ppo"): used[best_zoo_entry(g, a)] = "time series"
    used[best_zoo_entry("ALE/Breakout-v5", "dqn")] = "saliency demo"
    failing = {k: v for k, v in used.items() if not (load_card(k).get("gate") or {}).get("plays")}
    assert not failing, f"agents that do not pass the quality gate: {failing}"


def test_no_lesson_or_module_picks_an_agent_by_a_hard_coded_id_or_around_the_gate():
    """Lessons and modules choose agents through the gate (best_zoo_entry / load_best_agent, plays=True by default): no code
    cell holds a zoo id such as 'dqn/seed0/0000200000', and only the agent zoo and IR modules name plays=False."""
    import json, re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    ids = re.compile(r"seed\d+/\d{5,}")
    bad = []
    for nb in sorted((root / "nbs").rglob("*.ipynb")):
        if nb.name in ("02a_agent_zoo.ipynb", "11_ir_study.ipynb"): continue   # the gate's own lesson shows a failing agent on purpose
        for c in json.loads(nb.read_text())["cells"]:
            s = "".join(c["source"])
            if c["cell_type"] == "code" and (ids.search(s) or "plays=False" in s): bad.append(f"{nb.name}: {s[:80]!r}")
    for py in sorted((root / "rlexplain").rglob("*.py")):
        if py.name in ("agent_zoo.py", "ir_study.py", "_modidx.py"): continue
        if "plays=False" in py.read_text(): bad.append(str(py.relative_to(root)))
    assert not bad, bad


def test_explain_warns_once_when_the_policy_takes_one_action_in_every_state():
    "Issue 36.1: `explain` names the agent when its greedy action is the same in every state of its input, once per agent."
    import warnings
    import numpy as np
    import torch
    from torch import nn
    from rlexplain.attribution import explain
    from rlexplain.core import Policy
    net = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    with torch.no_grad(): net[1].weight.zero_(); net[1].bias.copy_(torch.tensor([0., 1., 0.]))
    const = Policy(net, n_actions=3, obs_shape=(4,), name="constant-explain-test")
    x = np.random.default_rng(0).random((12, 4)).astype(np.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        explain("random", const, x[:3])                              # 3 states: agreement is no evidence (issue 54.6)
        explain("random", const, x); explain("random", const, x)
    msgs = [str(m.message) for m in w if "takes action" in str(m.message)]
    assert len(msgs) == 1 and "constant-explain-test" in msgs[0] and "action 1 in all 12 states" in msgs[0]
    net2 = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    with torch.no_grad(): net2[1].weight.copy_(torch.eye(3, 4)); net2[1].bias.zero_()
    varied = Policy(net2, n_actions=3, obs_shape=(4,), name="varied-explain-test")
    xs = np.eye(4, dtype=np.float32)[:3]            # state i's greedy action is i
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        explain("random", varied, xs)
    assert not [m for m in w if "takes action" in str(m.message)]


def test_a_gate_of_an_older_interval_is_rederived_from_its_stored_returns_without_playing(tmp_path):
    """A stored gate whose protocol differs only in the interval (Welch's, before the bootstrap) is re-derived from the
    returns it stored: no episode is played (the entry here has no weights, so playing would raise), and `plays` follows
    the new interval. Returns of a Toybox Breakout PPO seed's kind: 29 short episodes and one that clears the wall."""
    import json
    from rlexplain.agent_zoo import GATE, return_gap
    d = tmp_path / "zoo" / "entry"; d.mkdir(parents=True)
    ret = [float(r) for r in [1, 2, 3, 4, 5, 6] * 4 + [1, 2, 3, 2, 3]] + [188.0]
    rnd = [float(r) for r in [0, 1, 0, 2, 1, 0] * 5]
    old_proto = {"n_episodes": 30, "seed": 10000, "epsilon": 0.0, "max_steps": 5000, "confidence": 0.95,
                 "max_modal_share": 0.95, "play": "play_episodes"}
    welch = return_gap(ret, rnd, method="welch")
    assert welch["low"] < 0                                      # the old gate failed this agent
    card = {**load_card(CARTPOLE), "evaluation": None,   # a whole card, its weights left behind
            "gate": {"protocol": old_proto, **welch, "plays": False, "returns": ret, "random_returns": rnd,
                     "entropy_bits": 1.5, "entropy_norm": 0.75, "modal_share": 0.4, "modal_action": 2, "distinct": 4, "n_states": 900}}
    (d / "card.json").write_text(json.dumps(card))
    g = quality_gate(d, n_episodes=30)
    assert g["protocol"] == {**old_proto, "interval": GATE["interval"]} and g["test"] == "bca"
    assert g["low"] > 0 and g["plays"] is True                   # every resample's mean of the agent is above random play's
    assert (g["welch_low"], g["welch_high"]) == (welch["low"], welch["high"])   # Welch's beside it
    assert g["returns"] == ret and g["modal_share"] == 0.4 and load_card(d)["gate"] == g
    assert g == quality_gate(d, n_episodes=30)                   # stored: asked again, the same


def test_bootstrap_and_welch_agree_on_symmetric_returns():
    "On returns without a long tail the bootstrap's interval is close to Welch's (both estimate the same difference of means)."
    from rlexplain.agent_zoo import return_gap
    rng = np.random.default_rng(0)
    a, b = rng.normal(5, 2, 200), rng.normal(1, 1, 200)
    g, w = return_gap(a, b), return_gap(a, b, method="welch")
    assert g["diff"] == w["diff"] and abs(g["low"] - w["low"]) < 0.1 and abs(g["high"] - w["high"]) < 0.1


def test_protocol_epsilon_is_dqns_on_ale_and_greedy_elsewhere():
    from rlexplain.agent_zoo import protocol_epsilon
    assert protocol_epsilon("ALE/Pong-v5") == 0.05 and protocol_epsilon("ALE/Breakout-v5") == 0.05
    assert protocol_epsilon("toybox/Breakout") == 0.0 and protocol_epsilon("CartPole-v1") == 0.0


def test_an_unevaluated_ale_entry_is_gated_under_its_games_protocol_epsilon(tmp_path):
    """`quality_gate(epsilon=None)` on an ALE entry whose card has no evaluation plays at 0.05 (`protocol_epsilon`), not at 0:
    its stored gate, of the same episodes at 0.05 under an older interval, is re-derived without playing (the entry has no
    weights, so playing would raise). Before the fix the card's missing evaluation meant epsilon 0, another protocol."""
    import json
    from rlexplain.agent_zoo import return_gap
    d = tmp_path / "zoo" / "entry"; d.mkdir(parents=True)
    ret, rnd = [-18.0, -19.0, -17.0] * 10, [-20.0, -21.0, -20.0] * 10
    proto = {"n_episodes": 30, "seed": 10000, "epsilon": 0.05, "max_steps": 5000, "confidence": 0.95,
             "max_modal_share": 0.95, "play": "play_episodes", "interval": "welch"}
    card = {**load_card(CARTPOLE), "env_id": "ALE/Pong-v5", "evaluation": None,
            "gate": {"protocol": proto, **return_gap(ret, rnd, method="welch"), "plays": True, "returns": ret, "random_returns": rnd,
                     "entropy_bits": 1.5, "entropy_norm": 0.6, "modal_share": 0.3, "modal_action": 2, "distinct": 6, "n_states": 900}}
    (d / "card.json").write_text(json.dumps(card))
    g = quality_gate(d)
    assert g["protocol"]["epsilon"] == 0.05 and g["plays"] is True and g["returns"] == ret
    with pytest.raises(FileNotFoundError, match="weights"): quality_gate(d, epsilon=0.0)   # another protocol: it must play, and cannot


def test_ranld_demo_plan_names_a_gated_agent_that_has_no_evaluation(monkeypatch, tmp_path):
    "The RA-NLD demo's notes come from the gate (which every agent it picks has passed), not from an evaluation the card may lack."
    import rlexplain.ranld_study as rs
    from rlexplain.ranld_study import PAPER_ENV_IDS, demo_plan
    gate = {"mean": -18.7, "random_mean": -20.0, "low": 0.57, "high": 1.97, "protocol": {"n_episodes": 30, "epsilon": 0.05}}
    def fake(env_id, algo=None, root=None, device="auto", plays=True):
        if env_id != "ALE/Pong-v5": raise LookupError(f"no {env_id} agent")
        return object(), {"id": "ale-pong-v5/ddqn-frequent/seed0/400000", "env_id": env_id, "evaluation": None, "gate": gate}
    monkeypatch.setattr(rs, "load_best_agent", fake)   # the name ranld_study imported
    games, jobs, names, notes = demo_plan("demo", tmp_path)
    assert list(games) == ["ALE/Pong-v5"] and len(jobs) == 1 and len(notes) == len(PAPER_ENV_IDS)
    assert "return -18.7 against random play's -20.0 over the gate's 30 episodes (epsilon 0.05; 95% interval of the gap [0.6, 2.0])" in notes[0]


def test_the_constant_action_warning_needs_enough_states_to_mean_anything():
    """Issue 54.6: with `--states 3` an agent that passes the gate (modal share 0.42) was told it "does not react to the
    screen", and IR counted it in `constant_agents`. Below `MIN_CONSTANT_STATES` agreement is no evidence: no warning, and
    IR's `constant_agents` is NaN (not 'all agents constant'); from there on the warning speaks and states its count."""
    import warnings
    import numpy as np
    from rlexplain.core import MIN_CONSTANT_STATES, warn_constant_policy
    from rlexplain.ir import IRMatrix
    q = np.tile([[0.0, 1.0, 0.0]], (MIN_CONSTANT_STATES, 1))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert warn_constant_policy("few-states-test", q[:3], "t") is False
        assert warn_constant_policy("enough-states-test", q, "t") is True
    assert [str(m.message) for m in w] and all(f"in all {MIN_CONSTANT_STATES} states" in str(m.message) for m in w) and len(w) == 1
    R = np.ones((1, 3))
    few = IRMatrix(R, ("none",), (0, 1, 2), "dqn", 0, ("a", "b"), "sample", 1, modal_actions=np.zeros((2, 3), int))
    assert np.isnan(few.to_dict()["constant_agents"]) and few.to_dict()["distinct_actions"] == 1.0
    R = np.ones((1, MIN_CONSTANT_STATES))
    many = IRMatrix(R, ("none",), tuple(range(MIN_CONSTANT_STATES)), "dqn", 0, ("a", "b"), "sample", 1,
                    modal_actions=np.vstack([np.zeros(MIN_CONSTANT_STATES, int), np.arange(MIN_CONSTANT_STATES) % 2]))
    assert many.to_dict()["constant_agents"] == 1.0
