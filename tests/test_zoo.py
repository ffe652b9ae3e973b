"The shipped demo zoo: every entry loads, and every pipeline's last checkpoint beats a random policy clearly."
import numpy as np
import pytest

from rlexplain.agent_zoo import ALE_AC_ZOO, ALE_ZOO, DEMO_ZOO, MPE_ZOO, RANLD_ZOO, TABULAR_ZOO, list_zoo, load_agent
from rlexplain.runs import load_json


@pytest.fixture(scope="module")
def zoo():
    z = list_zoo()
    if z.empty:
        pytest.fail("the demo zoo (rlexplain/zoo) is empty: train it with `rlexplain zoo train --spec demo`")
    return z


def test_demo_zoo_is_complete(zoo):
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    for pipe in DEMO_ZOO["pipelines"]:
        for frames in DEMO_ZOO["checkpoints"][pipe]:
            seeds = sorted(z[(z.pipeline == pipe) & (z.frames == frames)].seed)
            assert seeds == DEMO_ZOO["seeds"], (pipe, frames, seeds)


def test_entries_load_and_act(zoo):
    for path in zoo.path:
        pol = load_agent(path, device="cpu")
        card = load_json(f"{path}/card.json")
        obs = np.zeros((2, *card["observation_shape"]), np.uint8)
        assert pol.act(obs).shape == (2,)


def _assert_beats_random(last, label):
    """`last`: zoo rows of one pipeline's last checkpoint (all seeds, >= 10 seeded episodes each), against the uniformly
    random policy on the same episode seeds: mean return at least twice the random policy's (when random play scores
    <= 0, as in simple_spread: at least half a random-play standard deviation above it), and the difference significant (one-sided Mann-Whitney U on the pooled
    episode returns, p < 0.001)."""
    from scipy.stats import mannwhitneyu
    assert len(last), f"{label}: no entries"
    assert last.return_mean.notna().all(), f"{label}: unevaluated entries"
    evs = [load_json(f"{p}/card.json")["evaluation"] for p in last.path]
    assert min(e["n_episodes"] for e in evs) >= 10
    agent = np.concatenate([e["returns"] for e in evs]); rand = np.concatenate([e["random_returns"] for e in evs])
    bar = 2 * rand.mean() if rand.mean() > 0 else rand.mean() + 0.5 * rand.std()
    assert agent.mean() >= bar, (label, agent.mean(), rand.mean(), rand.std())
    assert mannwhitneyu(agent, rand, alternative="greater").pvalue < 1e-3, (label, last.return_mean.tolist())


def test_last_checkpoint_beats_random(zoo):
    "Per pipeline of the IR study, the last checkpoint's six agents beat random play (pooled)."
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    for pipe in DEMO_ZOO["pipelines"]:
        _assert_beats_random(z[(z.pipeline == pipe) & (z.frames == max(DEMO_ZOO["checkpoints"][pipe]))], pipe)


@pytest.mark.parametrize("env_id", ALE_ZOO["env_ids"])
def test_ale_zoo_is_complete_and_beats_random(zoo, env_id):
    "The saliency benchmark's ALE DQN agents: every checkpoint present, the last one beats random play."
    z = zoo[zoo.env_id == env_id]
    for pipe, frames_list in ALE_ZOO["checkpoints"][env_id].items():
        for frames in frames_list:
            assert sorted(z[(z.pipeline == pipe) & (z.frames == frames)].seed) == ALE_ZOO["seeds"], (env_id, pipe, frames)
        _assert_beats_random(z[(z.pipeline == pipe) & (z.frames == max(frames_list))], f"{env_id} {pipe}")


@pytest.mark.parametrize("env_id", ALE_AC_ZOO["env_ids"])
def test_ale_actor_critic_zoo_is_complete_and_beats_random(zoo, env_id):
    "The time-series study's ALE A2C and PPO agents: every checkpoint present, the last one beats random play."
    z = zoo[zoo.env_id == env_id]
    for pipe, frames_list in ALE_AC_ZOO["checkpoints"][env_id].items():
        for frames in frames_list:
            assert sorted(z[(z.pipeline == pipe) & (z.frames == frames)].seed) == ALE_AC_ZOO["seeds"], (env_id, pipe, frames)
        _assert_beats_random(z[(z.pipeline == pipe) & (z.frames == max(frames_list))], f"{env_id} {pipe}")


@pytest.mark.parametrize("env_id", RANLD_ZOO["env_ids"])
def test_ranld_zoo_is_complete_and_beats_random(zoo, env_id):
    """RA-NLD's dueling Nature-CNN DDQN (and SA-DDQN) agents on the paper's games: every checkpoint present, with its
    card's architecture, and the last one beats random play clearly (the issue's bar: "clearly beat random play")."""
    z = zoo[zoo.env_id == env_id]
    for pipe, frames_list in RANLD_ZOO["checkpoints"][env_id].items():
        for frames in frames_list:
            rows = z[(z.pipeline == pipe) & (z.frames == frames)]
            assert sorted(rows.seed) == RANLD_ZOO["seeds"], (env_id, pipe, frames)
            assert all(load_json(f"{p}/card.json")["features"] == "nature-conv" for p in rows.path)
        last = z[(z.pipeline == pipe) & (z.frames == max(frames_list))]
        assert all(load_json(f"{p}/card.json")["evaluation"]["n_episodes"] >= RANLD_ZOO["eval_episodes"] for p in last.path)
        _assert_beats_random(last, f"{env_id} {pipe}")


@pytest.mark.parametrize("env_id", list(TABULAR_ZOO["checkpoints"]))
def test_tabular_zoo_is_competent(zoo, env_id):
    "XRL-Bench's feature-vector DQNs: evaluated over 100 episodes, above the issue's bars (CartPole 475, LunarLander 200), else above random play."
    z = zoo[zoo.env_id == env_id]
    for pipe, frames_list in TABULAR_ZOO["checkpoints"][env_id].items():
        last = z[(z.pipeline == pipe) & (z.frames == max(frames_list))]
        assert sorted(last.seed) == TABULAR_ZOO["seeds"], (env_id, pipe)
        for path in last.path:
            n = load_json(f"{path}/card.json")["evaluation"]["n_episodes"]
            assert n >= TABULAR_ZOO["eval_episodes"], (path, n)
        bar = TABULAR_ZOO["competent"].get(env_id)
        if bar is None: _assert_beats_random(last, f"{env_id} {pipe}")
        else: assert (last.return_mean > bar).all(), (env_id, pipe, last.return_mean.tolist(), bar)


def test_best_zoo_entry_picks_the_best_last_checkpoint(zoo):
    from rlexplain.agent_zoo import best_zoo_entry, load_best_agent
    z = zoo[(zoo.env_id == DEMO_ZOO["env_id"]) & (zoo.algo == "dqn")]
    last = z[z.frames == z.groupby(["pipeline", "seed"]).frames.transform("max")]
    path = best_zoo_entry(DEMO_ZOO["env_id"], "dqn", plays=False)   # every agent, as trained (the 2e5-frame DQNs fail the gate)
    assert path == last.loc[last.return_mean.idxmax(), "path"]
    assert best_zoo_entry(DEMO_ZOO["env_id"].upper(), "dqn", plays=False) == path   # env ids match case-insensitively
    pol, card = load_best_agent(DEMO_ZOO["env_id"], "dqn", device="cpu", plays=False)
    assert card["frames"] == last.frames.max() and pol.n_actions == card["n_actions"]
    with pytest.raises(LookupError, match="no dqn agent for ALE/Nope-v5"):
        best_zoo_entry("ALE/Nope-v5", "dqn")


def test_best_zoo_entry_compares_runs_of_every_pipeline(tmp_path):
    """A hand-made zoo of cards: seed 0 of pipeline "long" ends at 16M frames with -10, seed 0 of "short" at 4M frames with
    -5 (its 2M checkpoint scored 0, but is not its last). The best last checkpoint is "short" at 4M: a seed's checkpoints
    of different pipelines are different runs, and a longer run of one pipeline must not hide another's."""
    from rlexplain.agents import entry_dir
    from rlexplain.agent_zoo import best_zoo_entry
    from rlexplain.runs import save_json
    for pipe, algo, frames, mean in (("long", "a2c", 16_000_000, -10.0), ("short", "ppo", 2_000_000, 0.0),
                                     ("short", "ppo", 4_000_000, -5.0)):
        d = entry_dir(tmp_path, "ALE/Pong-v5", pipe, 0, frames); d.mkdir(parents=True)
        save_json(d / "card.json", {"id": f"ale-pong-v5/{pipe}/seed0/{frames}", "env_id": "ALE/Pong-v5", "pipeline": pipe,
                                    "algo": algo, "seed": 0, "frames": frames, "env_steps": frames // 4,
                                    "evaluation": {"mean": mean, "std": 1.0, "random_mean": -20.0, "random_std": 1.0}})
    assert best_zoo_entry("ALE/Pong-v5", root=tmp_path, plays=False) == str(entry_dir(tmp_path, "ALE/Pong-v5", "short", 0, 4_000_000))
    assert best_zoo_entry("ALE/Pong-v5", "a2c", root=tmp_path, plays=False) == str(entry_dir(tmp_path, "ALE/Pong-v5", "long", 0, 16_000_000))
    with pytest.raises(LookupError, match="not gated"):   # by default only agents that pass the quality gate are chosen
        best_zoo_entry("ALE/Pong-v5", root=tmp_path)


def test_mpe_teams_are_complete_and_beat_random(zoo):
    "The switching study's simple_spread PPO teams: every seed present, each team beats random play on its own."
    z = zoo[zoo.env_id == MPE_ZOO["env_id"]]
    for pipe in MPE_ZOO["pipelines"]:
        last = z[(z.pipeline == pipe) & (z.frames == max(MPE_ZOO["checkpoints"][pipe]))]
        assert sorted(last.seed) == MPE_ZOO["seeds"], (pipe, sorted(last.seed))
        for _, row in last.iterrows():
            _assert_beats_random(last[last.seed == row.seed], f"{pipe} team {row.seed}")


@pytest.mark.parametrize("env_id,algo", [("ALE/Breakout-v5", "dqn"), ("toybox/Breakout", "qrdqn"), ("toybox/Breakout", "ppo")])
def test_policy_outputs_equal_sb3s_own_forward(env_id, algo):
    """Policy's fast path (images in [0, 1] straight to the feature extractor) gives SB3's own q-values, and for an
    actor-critic its raw actor logits, which SB3's Categorical normalises (log-softmax) to the same distribution."""
    import torch
    from rlexplain.agent_zoo import load_best_agent
    pol, _ = load_best_agent(env_id, algo, device="cpu", plays=False)   # the adapter's arithmetic, whether or not the agent plays
    x = torch.rand(5, 4, 84, 84)
    sb3 = pol.module.policy
    with torch.no_grad():
        ref = (sb3.q_net(x * 255) if algo == "dqn" else sb3.quantile_net(x * 255).mean(dim=1) if algo == "qrdqn"
               else sb3.get_distribution(x * 255).distribution.logits)
    out = pol.outputs(x)
    torch.testing.assert_close(out.log_softmax(-1) if algo == "ppo" else out, ref, rtol=1e-5, atol=1e-5)


# --- corrupt or mismatched zoo entries (issue 18): a clear error naming the file, and list_zoo skips the entry ---
import json
import shutil
import warnings

from rlexplain.agents import ZOO_DIR, load_card

_CARTPOLE = ZOO_DIR / "cartpole-v1" / "dqn-mlp" / "seed0" / "0000060000"


def _tiny_zoo(tmp_path, n=2):
    "A zoo of `n` copies (seeds 0..n-1) of the shipped CartPole DQN; returns the root and the entry folders."
    if not _CARTPOLE.exists(): pytest.skip("the shipped CartPole DQN is absent")
    dirs = []
    for s in range(n):
        d = tmp_path / "zoo" / "cartpole-v1" / "dqn-mlp" / f"seed{s}" / "0000060000"
        shutil.copytree(_CARTPOLE, d)
        card = json.loads((d / "card.json").read_text()); card["seed"] = s; card["id"] = f"cartpole-v1/dqn-mlp/seed{s}/60000"
        (d / "card.json").write_text(json.dumps(card))
        dirs.append(d)
    return tmp_path / "zoo", dirs


def test_missing_zoo_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such_zoo"):
        list_zoo(tmp_path / "no_such_zoo")


def test_truncated_card_is_skipped_by_list_zoo_and_named_on_load(tmp_path):
    root, (good, bad) = _tiny_zoo(tmp_path)
    text = (bad / "card.json").read_text(); (bad / "card.json").write_text(text[: len(text) // 2])
    with pytest.warns(UserWarning, match=str(bad / "card.json").replace("\\", "\\\\")):
        z = list_zoo(root)
    assert list(z.path) == [str(good)]
    with pytest.raises(ValueError, match="card.json is not valid JSON"):
        load_agent(bad, device="cpu")
    load_agent(good, device="cpu")   # the other entry still loads


def test_card_without_id_is_named(tmp_path):
    root, (d, _) = _tiny_zoo(tmp_path)
    card = json.loads((d / "card.json").read_text()); del card["id"]; (d / "card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match=r"lacks the keys \['id'\]"):
        load_card(d)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(list_zoo(root)) == 1
    assert any("card.json" in str(x.message) for x in w)


def test_truncated_weights_are_named(tmp_path):
    _, (d, _) = _tiny_zoo(tmp_path)
    raw = (d / "weights.safetensors").read_bytes(); (d / "weights.safetensors").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="weights.safetensors"):
        load_agent(d, device="cpu")


@pytest.mark.parametrize("key,value", [("n_actions", 3), ("observation_shape", [6])])
def test_card_that_disagrees_with_its_weights(tmp_path, key, value):
    _, (d, _) = _tiny_zoo(tmp_path)
    card = json.loads((d / "card.json").read_text()); card[key] = value; (d / "card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="do not fit its card"):
        load_agent(d, device="cpu")


@pytest.mark.parametrize("value", [0, "2", [2]])
def test_card_with_a_bad_action_count(tmp_path, value):
    _, (d, _) = _tiny_zoo(tmp_path)
    card = json.loads((d / "card.json").read_text()); card["n_actions"] = value; (d / "card.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="n_actions must be a positive integer"):
        load_agent(d, device="cpu")


def test_ir_zoo_follows_the_papers_presets(zoo):
    """The IR study's Toybox agents were trained with ALL 0.7.1's presets (the IR paper's code): every card says so, and the
    untrained checkpoint (5e4 frames, before DQN's and QR-DQN's replay start) still has ALL's zero output heads, so its
    q-values are exactly 0 for every action; SB3's own initialisers (init=None) give non-zero q-values."""
    from rlexplain.agent_zoo import untrained_agent
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    x = np.random.default_rng(0).integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
    from rlexplain.agents import TOYBOX_PIPELINES
    assert sorted(TOYBOX_PIPELINES) == ["dqn", "qrdqn"]   # PPO stays RL-Zoo's at demo scale (02_agents: ppo-all did not learn by 4e5 frames)
    for pipe in DEMO_ZOO["pipelines"]:
        rows = z[z.pipeline == pipe]
        demo_rows = rows[rows.frames.isin(DEMO_ZOO["checkpoints"][pipe])]   # the training campaign adds later checkpoints
        assert len(demo_rows) == len(DEMO_ZOO["seeds"]) * len(DEMO_ZOO["checkpoints"][pipe]), pipe
        for path in rows.path:
            card = load_json(f"{path}/card.json")
            if pipe in TOYBOX_PIPELINES:
                assert card["init"] == "all-0.7.1" and "autonomous-learning-library 0.7.1" in card["source"], path
            else:
                assert card.get("init") is None, path
        if pipe in TOYBOX_PIPELINES:
            for path in rows[rows.frames == 50_000].path:
                assert (load_agent(path, device="cpu").outputs(x) == 0).all(), path
            fresh = untrained_agent(rows.path.iloc[0], seed=1, device="cpu", init=None)
            assert (fresh.outputs(x) != 0).any()
            assert (untrained_agent(rows.path.iloc[0], seed=1, device="cpu").outputs(x) == 0).all()
    with pytest.raises(ValueError, match="init must be"):
        untrained_agent(z.path.iloc[0], init="xavier")


def test_ir_zoo_cards_record_the_command_that_trains_them(zoo):
    "Each IR card's `command`, parsed by the CLI's own parser, names its pipeline, seed, checkpoints and env flags."
    import shlex
    from rlexplain.cli_options import build_parser
    z = zoo[zoo.env_id == DEMO_ZOO["env_id"]]
    for path in z[z.pipeline.isin(["dqn", "qrdqn"])].path:    # the entries trained since cards record the full command
        card = load_json(f"{path}/card.json")
        args = build_parser().parse_args(shlex.split(card["command"])[1:])
        assert args.pipelines == [card["pipeline"]] and args.seeds == [card["seed"]], card["command"]
        from rlexplain.agent_zoo import CAMPAIGN   # a run ends at the demo zoo's last checkpoint or at a campaign stage's
        ends = {max(DEMO_ZOO["checkpoints"][card["pipeline"]])} | {max(st["checkpoints"]) for r in CAMPAIGN.values() for st in r
                                                                  if card["pipeline"] in st["pipelines"] and st["env_id"] == card["env_id"]}
        assert card["frames"] in args.checkpoints and max(args.checkpoints) in ends, card["command"]
        assert args.fire_on_life_loss == bool(card["env_kwargs"].get("fire_on_life_loss")), card["command"]


def test_cards_are_strict_json(zoo):
    "Cards parse as strict JSON (no Infinity/NaN tokens that jq or a browser would reject)."
    import json
    def _refuse(token): raise ValueError(f"non-standard JSON token {token}")
    for path in zoo.path:
        with open(f"{path}/card.json") as f: json.load(f, parse_constant=_refuse)
