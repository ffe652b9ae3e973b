"""Integration tests of rlexplain.saliency_bench (hand-checkable insertion and similarity cases, cascading randomisation, also of
an SB3 model through Policy.from_sb3, HIGHLIGHTS-DIV, tuning, bad input) and rlexplain.saliency_study (a resumable end-to-end run)."""
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.runs import load_result
from rlexplain import saliency_bench as sb, saliency_study as ss
from rlexplain.attribution import PAPER_PARAMS
from rlexplain.saliency_bench import (PAPER_CALIBRATION, InsertionResult, SanityCheck, cascading_randomization,
                                      highlights_div, insertion_curves, map_similarity, model_layers, paper_grid,
                                      random_map_calibration, random_saliency, sanity_check, tune)
from rlexplain.saliency_study import BenchConfig, SaliencyBenchmark, paper_insertion_table, run_benchmark

torch.set_num_threads(1)
SHAPE = (4, 32, 32)
ONES = np.ones((1, *SHAPE), np.float32)


class OnePixel(nn.Module):
    "Q = (I[3, 10, 21], 0.5)."
    def forward(self, x): return torch.stack([x[:, 3, 10, 21], torch.full_like(x[:, 0, 0, 0], 0.5)], -1)


def small_cnn(obs=(4, 32, 32), n_actions=3, seed=0):
    torch.manual_seed(seed)
    h = ((obs[1] - 8) // 4 + 1 - 3) // 2 + 1
    return nn.Sequential(nn.Conv2d(obs[0], 4, 8, 4), nn.ReLU(), nn.Conv2d(4, 4, 3, 2), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * h * h, 8), nn.ReLU(), nn.Linear(8, n_actions))


@pytest.fixture(scope="module")
def px(): return Policy.from_module(OnePixel(), SHAPE, device="cpu")


@pytest.fixture(scope="module")
def cnn(): return Policy.from_module(small_cnn(), SHAPE, device="cpu")


def perfect_map():
    m = np.zeros((1, 32, 32), np.float32); m[0, 10, 21] = 1
    return m


# ---------------------------------------------------------------- insertion
def test_perfect_map_has_maximal_insertion_auc(px):
    perfect = insertion_curves(px, ONES, perfect_map())
    test_k = perfect.fractions
    assert perfect.q.shape == (1, 2, 14) and test_k[0] == 0 and test_k[-1] == 1
    np.testing.assert_allclose(perfect.curves("q")[0, 0], [0.0] + [1.0] * 13)          # black start
    np.testing.assert_allclose(perfect.curves("q")[0, :, 1:], 1.0)                      # both starts: pixel in at step 1
    np.testing.assert_allclose(perfect.advantage[0, 0], [-0.25] + [0.25] * 13)
    best = perfect.auc("q", "black")[0]
    np.testing.assert_allclose(best, 1 - 0.5 * 84 / 1024, rtol=1e-6)     # first step inserts 84 of 1024 pixels
    rng = np.random.default_rng(1)
    rand = [insertion_curves(px, ONES, rng.random((1, 32, 32))).auc("q", "black")[0] for _ in range(15)]
    assert max(rand) <= best + 1e-9 and np.mean(rand) < best - 0.2
    baseline = random_saliency(px, ONES)
    assert insertion_curves(px, ONES, baseline).auc("advantage", "black")[0] <= perfect.auc("advantage", "black")[0]


def test_insertion_batched_equals_unbatched_and_roundtrip(cnn, tmp_path):
    rng = np.random.default_rng(0)
    obs, maps = rng.random((3, *SHAPE), dtype=np.float32), rng.random((3, 32, 32))
    a, b = insertion_curves(cnn, obs, maps, batch_size=4096), insertion_curves(cnn, obs, maps, batch_size=1)
    np.testing.assert_allclose(a.q, b.q, atol=1e-5); np.testing.assert_allclose(a.advantage, b.advantage, atol=1e-5)
    np.testing.assert_allclose(a.q[:, :, -1], np.repeat(a.q_orig[:, None], 2, 1), atol=1e-5)   # ends at the original
    back = InsertionResult.load(a.save(tmp_path / "ins"))
    np.testing.assert_array_equal(back.q, a.q); assert back.starts == a.starts
    df = a.to_frame()
    assert set(df.sub_metric) == {"Q-val rand", "Adv rand", "Q-val black", "Adv black"} and len(df) == 12
    np.testing.assert_allclose(a.auc("q", "random", kind="mean"), a.curves("q")[:, 1].mean(-1))
    plt.close(a.plot().figure)


# ---------------------------------------------------------------- similarity
def test_self_similarity_is_one_and_calibration_matches_paper():
    rng = np.random.default_rng(0)
    m = rng.random((2, 84, 84))
    for v in map_similarity(m, m).values(): np.testing.assert_allclose(v, 1.0, atol=1e-9)
    for v in map_similarity(m, 1 - m).values(): np.testing.assert_allclose(v, 1.0, atol=1e-9)
    np.testing.assert_allclose(map_similarity(m, m, ssim_flat=True)["ssim"], 1.0, atol=1e-9)
    cal = random_map_calibration(n_pairs=20)
    ours = cal[["spearman", "ssim", "hog"]].to_numpy()
    assert (ours < 0.06).all() and (ours > 0).all()
    assert (np.abs(ours - PAPER_CALIBRATION.loc[cal.index].to_numpy()) < 0.03).all(), cal


# ---------------------------------------------------------------- sanity checks
def test_cascading_randomization_changes_every_layer_and_keeps_original(cnn):
    before = {k: v.clone() for k, v in cnn.module.state_dict().items()}
    names = [n for n, _ in model_layers(cnn)]
    assert names == ["0", "2", "5", "7"]
    steps = cascading_randomization(cnn, seed=3)
    assert [n for n, _ in steps] == names[::-1]
    for k, (_, p) in enumerate(steps, 1):
        sd = p.module.state_dict()
        for i, n in enumerate(names):
            assert (not torch.equal(sd[f"{n}.weight"], before[f"{n}.weight"])) == (i >= len(names) - k)
    for k, v in cnn.module.state_dict().items(): assert torch.equal(v, before[k])
    again = cascading_randomization(cnn, seed=3)     # seeded
    assert all(torch.equal(a.module.state_dict()["7.weight"], b.module.state_dict()["7.weight"]) for (_, a), (_, b) in zip(steps, again))


def test_sanity_check_result(cnn, tmp_path):
    obs = np.random.default_rng(2).random((2, *SHAPE), dtype=np.float32)
    sc = sanity_check(cnn, obs, "occlusion", patch=4)
    assert len(sc.table) == 4 * 2 * 3 and sc.layers == ("7", "5", "2", "0")
    assert sc.table.value.between(-1, 1).all()
    s = sc.summary()
    assert set(s.columns) >= {"method", "metric", "n_randomized", "mean", "ci99"}
    back = SanityCheck.load(sc.save(tmp_path / "sc"))
    pd.testing.assert_frame_equal(back.table, sc.table)
    fig = sc.plot(); assert isinstance(fig, plt.Figure); plt.close(fig)          # multi-panel: the Figure


def test_sb3_model_via_from_sb3():
    gym = pytest.importorskip("gymnasium")
    DQN = pytest.importorskip("stable_baselines3").DQN

    class ImageEnv(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        action_space = gym.spaces.Discrete(4)
        def reset(self, seed=None, options=None): return self.observation_space.sample(), {}
        def step(self, a): return self.observation_space.sample(), 0.0, True, False, {}

    model = DQN("CnnPolicy", ImageEnv(), buffer_size=10, learning_starts=0, device="cpu", seed=0,
                policy_kwargs=dict(net_arch=[16], features_extractor_kwargs=dict(features_dim=32)))
    pol = Policy.from_sb3(model, device="cpu")
    layers = [n for n, _ in model_layers(pol)]
    assert len(layers) == 6 and not any("target" in n for n in layers)         # the target network is never called
    obs = np.random.default_rng(0).integers(0, 256, (2, 4, 84, 84), dtype=np.uint8)
    before = {k: v.clone() for k, v in pol.module.state_dict().items()}
    sc = sanity_check(pol, obs, "occlusion", patch=12)
    assert sc.table.n_randomized.max() == 6
    for k, v in pol.module.state_dict().items(): assert torch.equal(v, before[k])
    ins = insertion_curves(pol, obs, random_saliency(pol, obs))
    assert ins.q.shape == (2, 2, 85)
    assert len(highlights_div(pol, obs, budget=1).indices) == 1


# ---------------------------------------------------------------- HIGHLIGHTS-DIV and tuning
def test_highlights_div_and_tuning(px, cnn):
    obs = np.random.default_rng(4).random((30, *SHAPE), dtype=np.float32)
    hl = highlights_div(cnn, obs, budget=3, context=2, min_gap=2, percentile=10)
    idx = hl.indices
    assert 1 <= len(idx) <= 3 and idx[0] == np.argmax(hl.importance)
    assert all(abs(int(a) - int(b)) > 4 for i, a in enumerate(idx) for b in idx[i + 1:])
    grid = [dict(patch=1), dict(patch=8, color=1.0)]
    t = tune(px, ONES, "occlusion", grid=grid, costs=[0.0, 0.0])
    assert t.best == {"patch": 1}
    np.testing.assert_allclose(t.table[["z_q", "z_adv"]].abs().to_numpy(), 1.0)
    # the budget reads injected costs, never this machine's clock: the better set over budget, the other chosen
    assert tune(px, ONES, "occlusion", grid=grid, max_seconds=0.5, costs=[2.0, 0.1]).best == {"patch": 8, "color": 1.0}
    assert tune(px, ONES, "occlusion", grid=grid, max_seconds=5.0, costs=[2.0, 0.1]).best == {"patch": 1}
    with pytest.raises(ValueError, match="one per grid entry"): tune(px, ONES, "occlusion", grid=grid, costs=[1.0])
    assert len(paper_grid("occlusion")) == 40 and len(paper_grid("noise_sensitivity")) == 10


# ---------------------------------------------------------------- bad input
def test_bad_input_raises_value_error(px, cnn):
    perfect = perfect_map()
    nan_map = perfect.copy(); nan_map[0, 0, 0] = np.nan
    cases = [
        (lambda: insertion_curves(px, np.ones((1, 32, 32, 4), np.float32), perfect), "channel-first"),
        (lambda: insertion_curves(px, ONES, perfect, actions=7), "out of range"),
        (lambda: insertion_curves(px, ONES, nan_map), "NaN"),
        (lambda: insertion_curves(px, ONES, np.zeros((1, 16, 16))), "(B, H, W)"),
        (lambda: insertion_curves(px, ONES, np.zeros((2, 32, 32))), "(B, H, W)"),
        (lambda: sanity_check(cnn, np.ones((1, 32, 32, 4), np.float32)), "channel-first"),
        (lambda: sanity_check(cnn, ONES, action=3), "out of range"),
        (lambda: sanity_check(cnn, ONES, reference=nan_map), "NaN"),
        (lambda: map_similarity(np.zeros((2, 8, 8)), np.zeros((1, 8, 8))), "equal shape"),
        (lambda: BenchConfig(methods=("gradcam",)), "unknown methods"),
        (lambda: BenchConfig(auc="simpson"), "auc must be"),
    ]
    for fn, msg in cases:
        with pytest.raises(ValueError) as e: fn()
        assert msg in str(e.value), (msg, str(e.value))


def test_configs_and_paper_tables():
    d, p = BenchConfig.demo(), BenchConfig.paper()
    assert len(d.games) >= 2 and all(g.startswith("ALE/") for g in d.games) and set(d.games) <= set(p.games)
    assert d.n_states >= 50 and set(d.methods) >= {"occlusion", "noise_sensitivity", "sarfa", "rise", "lime_slic"}
    assert len(p.games) == 4 and p.stream_steps - p.skip == 1000 and p.n_states is None
    assert BenchConfig.from_scale("paper") == p
    t = paper_insertion_table()
    assert len(t) == 16 * 8 + 16 * 2
    row = t[(t.paper_game == "Breakout") & (t.sub_metric == "Q-val black") & (t.method == "lime_felzenszwalb")].iloc[0]
    assert (row["mean"], row["std"]) == (7.48, 9.6)
    assert all(k in PAPER_PARAMS for k in p.methods)
    pt = ss.paper_tuning_table()
    assert pt.final.sum() == 5 and json.loads(pt[pt.final & (pt.method == "occlusion")].params.iloc[0])["patch"] == 2


# ---------------------------------------------------------------- end to end, resumable
def test_run_benchmark_end_to_end_resumes(tmp_path, monkeypatch):
    pytest.importorskip("ctoybox")
    pol = Policy.from_module(small_cnn((4, 84, 84), 4), (4, 84, 84), device="cpu", name="tiny")
    cfg = BenchConfig.demo(games=("toybox/Breakout",), methods=("occlusion",), n_states=3, n_sanity=1, stream_steps=40,
                           highlights_budget=2)
    res = run_benchmark(cfg, agents={"toybox/Breakout": pol}, run_dir=tmp_path / "run")
    assert res.methods == ("occlusion", "random") and res.examples.shape == (1, 2, 84, 84)
    tab = res.table()
    assert len(tab) == 4 and "paper: occlusion" in tab.columns
    assert tab.loc[tab.sub_metric == "Q-val black", "paper: occlusion"].iloc[0] == "3.16 ± 4.20"
    assert set(res.sanity.method) == {"occlusion"} and res.sanity.n_randomized.max() == 4
    assert (res.runtime_table().s_per_map > 0).all()
    assert (tmp_path / "run" / "units" / "bench" / "toybox-breakout" / "occlusion" / "result.json").exists()

    def boom(job): raise AssertionError("a finished job was run again")
    monkeypatch.setattr(ss, "_run_bench_job", boom)
    again = run_benchmark(cfg, agents={"toybox/Breakout": pol}, run_dir=tmp_path / "run")
    pd.testing.assert_frame_equal(again.insertion, res.insertion)
    back = load_result(res.save(tmp_path / "res"))
    assert isinstance(back, SaliencyBenchmark) and back.games == res.games
    for fig in (res.plot_sanity(), res.plot_examples(), res.plot_curves()): assert isinstance(fig, plt.Figure); plt.close(fig)


@pytest.mark.parametrize("scale", ["demo", "reference"])
def test_every_agent_the_benchmark_selects_passes_the_gate(scale):
    """Issue 36: the demo and reference scales run the paper's four games, each on the zoo agent the study selects
    (`_agent_spec`: `best_zoo_entry(..., plays=True)`), and every selected agent's card records a passed quality gate. A game
    whose zoo has no agent that passes is refused with an error naming it (never a fallback); skipped where the zoo lacks one."""
    from rlexplain.agent_zoo import list_zoo
    from rlexplain.runs import load_json
    cfg = BenchConfig.from_scale(scale)
    assert set(cfg.games) == set(ss.PAPER_GAMES)
    zoo = list_zoo(); checked, missing = 0, []
    for g in cfg.games:
        try: spec = ss._agent_spec(cfg, g)
        except LookupError as e:
            assert g in str(e) and "quality gate" in str(e), str(e)
            assert not zoo[(zoo.env_id.str.lower() == g.lower()) & (zoo.algo == cfg.algo)].plays.eq(True).any(), g   # truly none passes
            missing.append(g); continue
        card = load_json(f"{spec}/card.json")
        assert card["env_id"].lower() == g.lower() and card["algo"] == cfg.algo
        assert (card.get("gate") or {}).get("plays") is True, (g, spec)
        checked += 1
    if missing: pytest.skip(f"the zoo has no {cfg.algo} agent that passes the gate for {missing} ({checked} checked)")


def test_a_game_without_a_gated_agent_stops_the_benchmark(tmp_path, monkeypatch):
    """A game whose zoo agents all fail the quality gate stops `benchmark_jobs` with an error naming the game, before any
    stream is recorded (no fallback to the failing agent); the same agent given explicitly is used, with a warning."""
    from rlexplain.agent_zoo import best_zoo_entry, list_zoo
    import shutil
    z = list_zoo(); fails = z[z.plays.eq(False) & z.env_id.str.startswith("ALE/") & (z.algo == "dqn")]
    if fails.empty: pytest.skip("the zoo has no ALE DQN agent that fails the gate")
    e = fails.iloc[0]; rel = Path(e.path).relative_to(Path(e.path).parents[3])
    root = tmp_path / "zoo"; (root / rel).mkdir(parents=True); shutil.copy(Path(e.path) / "card.json", root / rel / "card.json")
    monkeypatch.setattr(ss, "best_zoo_entry", lambda g, algo, plays=True: best_zoo_entry(g, algo, root=root, plays=plays))
    cfg = BenchConfig.demo(games=(e.env_id,), methods=("occlusion",), n_states=2, n_sanity=0, stream_steps=10)
    with pytest.raises(LookupError, match=f"{e.env_id} has no agent that passes the quality gate"):
        ss.benchmark_jobs(cfg, tmp_path / "run")
    assert not any((tmp_path / "run").rglob("*stream*"))                     # it stopped before recording anything
    with pytest.warns(UserWarning, match="fails the quality gate"):
        assert ss._agent_spec(cfg, e.env_id, {e.env_id: str(root / rel)}) == str(root / rel)


def test_demo_runs_on_the_zoo_ale_agents(tmp_path):
    """The demo's games have DQN agents in the shipped zoo, and lesson 33's `#| slow` demo path runs on them at 2 states per game:
    the benchmark with a sanity check, its tables and figures, then HIGHLIGHTS-DIV states and a tuning table on Ms. Pac-Man."""
    from rlexplain.agent_zoo import best_zoo_entry
    cfg = BenchConfig.demo(methods=("rise",), n_states=2, n_sanity=1, stream_steps=30, highlights_budget=1)
    for g in cfg.games:
        assert "/dqn/" in ss._agent_spec(cfg, g)
    res = run_benchmark(cfg, run_dir=tmp_path / "run")
    assert res.games == cfg.games and set(res.insertion.game) == set(cfg.games)
    assert all(a.startswith("ale-") for a in res.agents.values()), res.agents
    assert np.isfinite(res.insertion.auc).all()
    tab = res.table()
    assert len(tab) == 4 * len(cfg.games) and "paper: rise" in tab.columns
    first_last = res.sanity_summary().groupby(["method", "metric"])["mean"].agg(["first", "last"])
    assert len(first_last) == 3 and set(res.sanity.n_randomized) == set(range(1, 8))     # the zoo CNN's 7 parametrised layers
    assert (res.runtime_table().s_per_map > 0).all()
    for fig in (res.plot_examples(), res.plot_sanity()): assert isinstance(fig, plt.Figure); plt.close(fig)
    agent, env_kwargs, _ = sb.load_bench_agent(best_zoo_entry("ALE/MsPacman-v5", "dqn", plays=True), "cpu")
    o, e = sb.collect_stream(agent, "ALE/MsPacman-v5", 12, seed=42, env_kwargs=env_kwargs, epsilon=0.05)
    hl = highlights_div(agent, o[4:], budget=2, episode=e[4:])
    tn = tune(agent, o[4:][hl.indices], "occlusion", grid=[dict(patch=p) for p in (8, 12)], costs=[0.1, 0.2])
    assert len(tn.table) == 2 and tn.table.chosen.sum() == 1 and np.isfinite(tn.table[["q_auc", "adv_auc"]].to_numpy()).all()


# ---------------------------------------------------------------- jobs for a scheduler; reruns compute nothing
def _boom(*a, **k): raise AssertionError("a rerun after every unit was saved computed something")


def test_benchmark_jobs_run_elsewhere_then_run_benchmark_loads_them(tmp_path, monkeypatch):
    """`benchmark_jobs` gives what `run_benchmark` runs: results of its jobs saved under its names are what `run_benchmark` returns,
    and a rerun then neither runs a job nor loads an agent, records a stream, selects HIGHLIGHTS-DIV states or runs the network."""
    pytest.importorskip("ctoybox")
    from rlexplain.runs import RunDir
    pol = Policy.from_module(small_cnn((4, 84, 84), 4), (4, 84, 84), device="cpu", name="tiny")
    cfg = BenchConfig.demo(games=("toybox/Breakout",), methods=("occlusion",), n_states=3, n_sanity=1, stream_steps=40,
                           highlights_budget=3)
    agents = {"toybox/Breakout": pol}
    fn, jobs, names = ss.benchmark_jobs(cfg, tmp_path / "a", agents=agents)
    assert names == ["bench/toybox-breakout/occlusion", "bench/toybox-breakout/random"] and len(jobs) == 2
    rd = RunDir(tmp_path / "a")
    assert rd.done("stream/toybox-breakout") and rd.done("highlights/toybox-breakout")
    for name, job in zip(names, jobs): rd.save_unit(name, fn(job))                 # a scheduler's worker
    ref = run_benchmark(cfg, agents=agents, run_dir=tmp_path / "b")              # the same, run by run_benchmark
    for f in ("_run_bench_job", "highlights_div", "collect_stream", "load_bench_agent", "penultimate_features"):
        for mod in (sb, ss):   # the study calls the lesson's functions through its own names
            if hasattr(mod, f): monkeypatch.setattr(mod, f, _boom)
    monkeypatch.setattr(pol, "forward", _boom)
    for d in ("a", "b"):
        res = run_benchmark(cfg, agents=agents, run_dir=tmp_path / d)
        pd.testing.assert_frame_equal(res.insertion, ref.insertion)
        pd.testing.assert_frame_equal(res.sanity, ref.sanity)
        np.testing.assert_array_equal(res.examples, ref.examples); np.testing.assert_array_equal(res.example_obs, ref.example_obs)
        assert res.agents == {"toybox/Breakout": "tiny"}


def test_tuning_jobs_match_tune_on_the_highlights_states_and_rerun_computes_nothing(tmp_path, monkeypatch):
    """`run_tuning` tunes on the first `budget` HIGHLIGHTS-DIV states, the prefix of the benchmark's own selection (greedy: a smaller
    budget stops earlier), so it equals `tune` on `highlights_div(..., budget)`'s states; saved, a rerun runs nothing."""
    pytest.importorskip("ctoybox")
    from rlexplain.runs import RunDir
    pol = Policy.from_module(small_cnn((4, 84, 84), 4), (4, 84, 84), device="cpu", name="tiny")
    cfg = BenchConfig.demo(games=("toybox/Breakout",), methods=("occlusion",), n_states=3, n_sanity=1, stream_steps=60,
                           highlights_budget=4, highlights_context=2, highlights_min_gap=2)
    agents, game = {"toybox/Breakout": pol}, "toybox/Breakout"
    grids = {"occlusion": [dict(patch=12), dict(patch=21, color=0.5)], "sarfa": [dict(radius=12)]}
    ss.benchmark_jobs(cfg, tmp_path, agents=agents)                              # records the stream and the 4 states
    fn, jobs, names = ss.tuning_jobs(cfg, tmp_path, budget=2, methods=("occlusion", "sarfa"), grids=grids, agents=agents)
    assert names == ["tuning/toybox-breakout/occlusion", "tuning/toybox-breakout/sarfa"]
    o, e = ss.game_stream(pol, game, cfg, {}, RunDir(tmp_path))
    hl = highlights_div(pol, o, budget=2, context=2, min_gap=2, episode=e, seed=cfg.seed)
    assert len(hl.indices) == 2
    np.testing.assert_array_equal(jobs[0].obs, o[hl.indices])
    got = ss.run_tuning(cfg, tmp_path, budget=2, methods=("occlusion", "sarfa"), grids=grids, agents=agents)
    cols = ["method", "params", "q_auc", "adv_auc", "z_q", "z_adv", "score"]
    for t, m in zip(got, ("occlusion", "sarfa")):
        want = tune(pol, o[hl.indices], m, grid=grids[m], game=game)
        pd.testing.assert_frame_equal(t.table.sort_values("params")[cols].reset_index(drop=True),
                                      want.table.sort_values("params")[cols].reset_index(drop=True))
    for f in ("_run_tune_job", "tune", "highlights_div", "collect_stream", "load_bench_agent"):
        for mod in (sb, ss):
            if hasattr(mod, f): monkeypatch.setattr(mod, f, _boom)
    again = ss.run_tuning(cfg, tmp_path, budget=2, methods=("occlusion", "sarfa"), grids=grids, agents=agents)
    for a, b in zip(again, got): pd.testing.assert_frame_equal(a.table, b.table)
    with pytest.raises(ValueError, match="no parameter grid"): ss.tuning_jobs(cfg, tmp_path, methods=("lime_quickshift",), agents=agents)
    with pytest.raises(ValueError, match="budget"): ss.tuning_jobs(cfg, tmp_path, budget=0, agents=agents)


def test_timing_pass_table_pairs_methods_over_states_and_a_rerun_times_nothing(tmp_path, monkeypatch):
    """`run_timing` on a tiny benchmark: one row per (game, state, method) in `TIMING_COLUMNS`, on the benchmark's first `n_timing`
    insertion states of the saved stream, the methods' order rotated per state (each method once in each position); saved, a rerun
    times nothing. Only the table's structure is tested, never the measured seconds beyond being finite and not negative (a monotonic clock; its speed and the load are not tested)."""
    pytest.importorskip("ctoybox")
    import dataclasses
    from rlexplain.runs import RunDir
    pol = Policy.from_module(small_cnn((4, 84, 84), 4), (4, 84, 84), device="cpu", name="tiny")
    cfg = BenchConfig.demo(games=("toybox/Breakout",), methods=("occlusion", "noise_sensitivity", "rise"), n_states=5, n_sanity=0,
                           n_timing=3, stream_steps=40, highlights_budget=2)
    agents = {"toybox/Breakout": pol}
    fn, jobs, names = ss.timing_jobs(cfg, tmp_path, agents=agents)
    assert names == ["timing/toybox-breakout"] and len(jobs) == 1
    o, _ = ss.game_stream(pol, "toybox/Breakout", cfg, {}, RunDir(tmp_path))       # the stream timing_jobs saved
    np.testing.assert_array_equal(jobs[0].obs, o[np.linspace(0, len(o) - 1, 5).round().astype(int)[:3]])
    t = ss.run_timing(cfg, tmp_path, agents=agents)
    assert list(t.columns) == ss.TIMING_COLUMNS == ["game", "method", "state", "position", "seconds"] and len(t) == 3 * 3
    assert (t.game == "toybox/Breakout").all() and sorted(t.state.unique()) == [0, 1, 2]
    m = list(cfg.methods)
    assert [t[t.state == i].sort_values("position").method.tolist() for i in range(3)] == [m[i:] + m[:i] for i in range(3)]
    assert np.isfinite(t.seconds).all() and (t.seconds >= 0).all()   # a monotonic clock never goes back; its speed is not tested
    monkeypatch.setattr(ss, "_run_timing_job", _boom); monkeypatch.setattr(pol, "forward", _boom)
    pd.testing.assert_frame_equal(ss.run_timing(cfg, tmp_path, agents=agents), t)   # loaded: nothing timed again
    none = ss.run_timing(dataclasses.replace(cfg, n_timing=0), tmp_path, agents=agents)
    assert none.empty and list(none.columns) == ss.TIMING_COLUMNS


def test_time_maps_is_the_shared_round_robin_loop_on_a_fake_clock(monkeypatch):
    """`time_maps` hands `compute.time_round_robin` the call `_bench_explainer(method).explain(policy, obs[i:i+1])`: an untimed warm-up per
    method on state 0, then one state per call in the rotated order, and seconds read off the injected clock (a fake one
    that only the calls advance: occlusion 1 s, rise 2 s, random 4 s), so every time is exact whatever the machine's load."""
    from rlexplain.compute import time_round_robin
    cost, now, log = {"occlusion": 1.0, "rise": 2.0, "random": 4.0}, [0.0], []
    class _Fake:   # the explainer of one method: its explain advances the fake clock
        def __init__(self, method): self.method = method
        def explain(self, policy, x): log.append((self.method, len(x), int(x[0, 0, 0, 0]))); now[0] += cost[self.method]
    monkeypatch.setattr(sb, "_bench_explainer", _Fake)
    obs = np.arange(4, dtype=np.uint8).reshape(4, 1, 1, 1) * np.ones((4, 4, 8, 8), np.uint8)   # state i is all i
    t = sb.time_maps(None, obs, list(cost), clock=lambda: now[0])
    assert list(t.columns) == ["state", "method", "position", "seconds"] and len(t) == 4 * 3
    assert log[:3] == [(m, 1, 0) for m in cost]                                       # the warm-ups, on state 0
    assert [(m, n, v) for m, n, v in log[3:]] == [(m, 1, i) for i, m in zip(t.state, t.method)]   # one state per call
    expect = time_round_robin(lambda m, i: None, list(cost), 4, clock=lambda: 0.0)
    assert list(t[["state", "method", "position"]].itertuples(index=False, name=None)) == [r[:3] for r in expect]
    assert t.method.tolist()[3:6] == ["rise", "random", "occlusion"]                 # state 1: rotated left by one
    assert t.seconds.tolist() == [cost[m] for m in t.method]


def test_random_map_calibration_is_saved_and_read_back(tmp_path, monkeypatch):
    "With run_dir the calibration table is computed once: the saved table is the computed one, and a second call computes nothing."
    want = random_map_calibration(n_pairs=4, shape=(24, 24), seed=3)
    got = random_map_calibration(n_pairs=4, shape=(24, 24), seed=3, run_dir=tmp_path)
    pd.testing.assert_frame_equal(got, want)
    monkeypatch.setattr(sb, "map_similarity", _boom)
    pd.testing.assert_frame_equal(random_map_calibration(n_pairs=4, shape=(24, 24), seed=3, run_dir=tmp_path), want)
    with pytest.raises(AssertionError): random_map_calibration(n_pairs=5, shape=(24, 24), seed=3, run_dir=tmp_path)   # other arguments: computed


def test_hog_features_equal_scikit_image_hog_bit_for_bit():
    "The vectorised block normalisation gives scikit-image's `hog` exactly, on random, Gaussian, sparse, constant and odd-sized maps."
    from skimage.feature import hog
    from rlexplain.attribution.metrics.randomisation import _hog_l2hys, hog_features, minmax
    rng = np.random.default_rng(5)
    for maps in (rng.random((6, 84, 84)), rng.normal(size=(3, 84, 84)), (rng.random((3, 84, 84)) > 0.97) * 1.0,
                 np.zeros((2, 84, 84)), rng.random((3, 29, 41))):
        want = np.stack([hog(x, pixels_per_cell=(3, 3)) for x in minmax(maps)])
        got = hog_features(maps)
        assert got.shape == want.shape and np.array_equal(got, want)
    m = rng.random((2, 30, 30))                                 # another cell size
    assert np.array_equal(hog_features(m, (5, 5)), np.stack([hog(x, pixels_per_cell=(5, 5)) for x in minmax(m)]))
    assert _hog_l2hys(np.zeros((1, 6, 6)), (3, 3)) is None        # smaller than one 3 x 3-cell block: scikit-image's own hog raises


def test_hog_features_falls_back_to_scikit_image_hog_without_its_private_histograms(monkeypatch):
    """`hog_features` reads scikit-image's private `skimage.feature._hoghistogram`; a scikit-image without it (the module
    renamed or removed) takes the fallback, one public `hog` call per map, with the same features."""
    import sys
    import skimage.feature
    from skimage.feature import hog
    from rlexplain.attribution.metrics.randomisation import _hog_l2hys, hog_features, minmax
    maps = np.random.default_rng(7).random((3, 84, 84))
    fast = hog_features(maps)
    monkeypatch.delattr(skimage.feature, "_hoghistogram", raising=False)
    monkeypatch.setitem(sys.modules, "skimage.feature._hoghistogram", None)   # `from skimage.feature import _hoghistogram` raises ImportError
    assert _hog_l2hys(minmax(maps), (3, 3)) is None
    got = hog_features(maps)
    want = np.stack([hog(x, pixels_per_cell=(3, 3)) for x in minmax(maps)])
    assert np.array_equal(got, want) and np.array_equal(got, fast)
