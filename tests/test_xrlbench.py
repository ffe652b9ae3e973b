"Integration tests of rlexplain.xrlbench on hand-checkable linear agents and the XRL-Bench agents (when present)."
import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rlexplain.attribution import Attribution, explain
_fitted = lambda name, policy, background=None, **kw: __import__('rlexplain.attribution', fromlist=['explainer']).explainer(name, **kw).fit(policy, background)   # issue 49: fit, then explain(policy, states)
from rlexplain.core import Policy
from rlexplain.attribution import MetricResult
from rlexplain.xrlbench import (AIM, AUM, IMAGE_METHODS, PGI, PGU, RIS, TABULAR_METHODS, XRLBenchResult,
                                dataset_arrays, generate_dataset, load_dataset, load_xrlbench_policy, run_benchmark, SARFA,
                                save_dataset)

torch.set_num_threads(1)


def linear_policy(W, b=None):
    W = np.asarray(W, np.float32)
    lin = nn.Linear(W.shape[1], W.shape[0], bias=b is not None)
    with torch.no_grad():
        lin.weight[:] = torch.tensor(W)
        if b is not None: lin.bias[:] = torch.tensor(b, dtype=torch.float32)
    return Policy.from_module(lin, (W.shape[1],), device="cpu")


def greedy_att(pol, X, values, method="hand"):
    "An Attribution of plain `values` for the agent's greedy actions on `X` (what the metrics explain by default)."
    return Attribution(np.asarray(values), pol.outputs(np.asarray(X, np.float32)).numpy().argmax(1), method)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 4)).astype(np.float32), rng


@pytest.mark.parametrize("bias", [None, [0.5, -1.0, 2.0]])
@pytest.mark.parametrize("name", ["DeepSHAP", "GradientSHAP", "IG"])
def test_exact_linear_attributions(name, bias, data):
    X, rng = data
    W = rng.normal(size=(3, 4))
    pol = linear_policy(W, bias)
    ref = X[:1]
    acts = rng.integers(0, 3, 25)
    e = (_f := _fitted(name, pol, background=ref)).explain(_f.policy, X[1:26], acts)
    np.testing.assert_allclose(e.values, W[acts] * (X[1:26] - ref), atol=1e-4)
    # the attributions sum to Q_a(x) - Q_a(x0)
    q = pol.outputs(X[1:26]).numpy()[np.arange(25), acts] - pol.outputs(ref).numpy()[0, acts]
    np.testing.assert_allclose(e.values.sum(1), q, atol=1e-4)


def test_ig_averages_over_references_and_all_actions(data):
    X, rng = data
    W = rng.normal(size=(2, 4))
    pol = linear_policy(W, [1.0, 2.0])
    e = (_f := _fitted("IG", pol, background=X[:50], n_background=10, all_actions=True)).explain(_f.policy, X[100:110])
    refs = X[:50][np.random.RandomState(42).choice(50, 10, replace=False)]       # the benchmark's draw (seed 42)
    np.testing.assert_allclose(e.per_action, W[None] * (X[100:110] - refs.mean(0))[:, None], atol=1e-4)
    np.testing.assert_array_equal(e.actions, pol.outputs(X[100:110]).numpy().argmax(1))


def test_deepshap_needs_relu_modules(data):
    X, _ = data
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))

    class Functional(nn.Module):
        def __init__(self):
            super().__init__(); self.a, self.b = seq[0], seq[2]
        def forward(self, x): return self.b(torch.relu(self.a(x)))

    good = (_f := _fitted("DeepSHAP", Policy.from_module(seq, (4,), device="cpu"), background=X[:20])).explain(_f.policy, X[20:30])
    assert good.values.shape == (10, 4)
    with pytest.raises(ValueError, match="nn.ReLU"):
        (_f := _fitted("DeepSHAP", Policy.from_module(Functional(), (4,), device="cpu"), background=X[:20])).explain(_f.policy, X[20:30])


def test_perfect_random_and_worst_explanations(data):
    X, rng = data
    pol = linear_policy([[1, 0, 0, 0], [-1, 0, 0, 0]])
    Xn = X.copy(); Xn[:, 0] = -np.abs(Xn[:, 0]) - 0.1          # greedy action 1 everywhere; masking x0 flips it to 0
    perfect = greedy_att(pol, Xn, np.tile([1.0, 0, 0, 0], (len(X), 1)))
    worst = greedy_att(pol, Xn, 1 - perfect.values)
    rand = greedy_att(pol, Xn, rng.random(X.shape))
    for cls, best, bad in [(AIM, 0.0, 1.0), (AUM, 1.0, 0.0)]:
        assert cls()(pol, Xn, perfect).value == best
        assert cls()(pol, Xn, worst).value == bad
        assert min(best, bad) < cls()(pol, Xn, rand).value < max(best, bad)
    assert PGU()(pol, Xn, perfect).value == 0.0
    assert PGI()(pol, Xn, perfect).value > PGI()(pol, Xn, rand).value > PGI()(pol, Xn, worst).value == 0.0
    r = AIM(order="both")(pol, Xn, greedy_att(pol, Xn, -perfect.values))     # signed: raw ranking puts x0 last
    assert r.value == 0.0 and r.raw["raw_per_state"].mean() == 1.0 and r.params["order"] == "both"   # reported apart, never max'ed
    assert AIM.higher_is_better is False and AUM.higher_is_better and "Xiong" in PGI.source


def test_explainers_on_a_one_feature_agent(data):
    X, _ = data
    pol = linear_policy([[1, 0, 0, 0], [-1, 0, 0, 0]])
    big = np.random.default_rng(1).normal(size=(2000, 4)).astype(np.float32)
    for name in TABULAR_METHODS:
        kw = {"n_samples": 500} if name == "TabularLIME" else {}
        ex = _fitted(name, pol, background=big, **kw)
        Xc = X[:30].copy()
        e = ex.explain(pol, Xc)
        np.testing.assert_array_equal(Xc, X[:30])               # never modified in place
        assert isinstance(e, Attribution) and e.values.shape == (30, 4) and np.isfinite(e.values).all()
        share = np.abs(e.values).mean(0)
        assert share.argmax() == 0, (name, share)
    assert _fitted("TabularSHAP", pol, background=big).agreement > 0.95


def test_sarfa_by_hand():
    p0 = np.e / (np.e + 2)
    assert SARFA.score([1.0, 0, 0], [0.0, 0, 0], 0) == pytest.approx(2 * (p0 - 1 / 3) / (1 + p0 - 1 / 3))
    assert SARFA.score([0.0, 0, 0], [1.0, 0, 0], 0) == 0.0


def test_images_tiny_cnn():
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))
    pol = Policy.from_module(cnn, (2, 12, 12), device="cpu")
    imgs = np.random.default_rng(0).random((6, 2, 12, 12)).astype(np.float32)
    for name in IMAGE_METHODS:
        kw = {"stride": 3} if name == "PS" else {"stride": 3, "perturbation": "blob"} if name == "SARFA" else {"n_background": 4}   # XRL-Bench's image SARFA: blobs
        e = (_f := _fitted(name, pol, background=imgs, **kw)).explain(_f.policy, imgs[:3])
        assert e.values.shape == (3, 2, 12, 12)
    r = AIM()(pol, imgs[:3], e)
    assert list(r.curve_x) == list(range(12, 144, 12)) and 0 <= r.value <= 1
    p = PGI(pixel_step=36)(pol, imgs[:3], e); assert p.curve.shape == (3,) and not p.raw   # one ranking by default: |importance|
    with pytest.raises(ValueError, match="explains tabular"):
        _fitted("TabularLIME", pol, background=imgs)


def test_bad_input(data):
    X, _ = data
    pol = linear_policy(np.eye(2, 4))
    with pytest.raises(LookupError, match="unknown explainer 'Shapley'"):
        _fitted("Shapley", pol, background=X)
    with pytest.raises(ValueError, match="D = 4 features"):
        (_f := _fitted("PS", pol, background=X)).explain(_f.policy, X[:5, :3])
    with pytest.raises(ValueError, match="NaN"):
        (_f := _fitted("IG", pol, background=X)).explain(_f.policy, np.full((2, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match=r"k must lie in \[1, 4\]"):
        AIM(ks=[7])(pol, X[:5], greedy_att(pol, X[:5], X[:5]))
    with pytest.raises(ValueError, match="k must lie"):
        PGU(ks=[0])(pol, X[:5], greedy_att(pol, X[:5], X[:5]))
    with pytest.raises(ValueError, match="the states have"):
        AUM()(pol, X[:5], greedy_att(pol, X[:4], X[:4]))
    with pytest.raises(ValueError, match="needs background"):
        _fitted("DeepSHAP", pol)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        (_f := _fitted("SARFA", pol, background=X)).explain(_f.policy, X[:2], actions=[0, 5])


def test_ris_linear_ig_is_one(data):
    X, _ = data
    pol = linear_policy([[0.5, -1.0, 2.0, 0.3]])
    e = explain("IG", pol, X[:20] + 4.0, baseline="zeros")
    r = RIS(n_neighbors=4)(pol, X[:20] + 4.0, e)                # re-explains with the explainer that made e
    np.testing.assert_allclose(r.per_state, 1.0, rtol=1e-4)
    assert RIS(variant="original")(pol, X[:20] + 4.0, e).params["n_neighbors"] == 1


def test_benchmark_and_results_roundtrip(tmp_path, data):
    X, _ = data
    pol = linear_policy([[1, 0.2, 0, 0], [-1, 0, 0.1, 0]])
    r = run_benchmark(pol, X, X[:20], methods=("TabularSHAP", "PS", "IG"), n_ris=4, ris_neighbors=2, n_time=3)
    assert list(r.table.method) == ["TabularSHAP", "PS", "IG"]
    main = {"AIM", "AUM", "PGI", "PGU", "RIS", "ms_per_sample", "student_agreement"}
    spread = {"AIM_std", "AUM_std", "PGI_std", "PGU_std", "RIS_std", "n_states", "RIS_n"}   # the scoreboard's intervals
    variants = {f"{m}_{v}" for m in ("AIM", "AUM", "PGI", "PGU") for v in ("abs", "raw", "abs_std", "raw_std", "ranking")}
    assert set(r.summary().columns) == main | spread | variants
    t = r.table
    for m, lower in (("AIM", True), ("AUM", False), ("PGI", False), ("PGU", True)):   # the paper's value: the better ranking
        best = np.where(t[f"{m}_raw"] < t[f"{m}_abs"], t[f"{m}_raw"], t[f"{m}_abs"]) if lower else np.maximum(t[f"{m}_abs"], t[f"{m}_raw"])
        np.testing.assert_array_equal(t[m], best)
        np.testing.assert_array_equal(t[f"{m}_std"], [row[f"{m}_{row[f'{m}_ranking']}_std"] for _, row in t.iterrows()])
    assert (t.set_index("method").loc["PS", [f"{m}_ranking" for m in ("AIM", "AUM", "PGI", "PGU")]] == "abs").all()   # never negative: a tie
    assert list(r.times.columns) == ["method", "state", "seconds"] and len(r.times) == 9 and r.params["n_time"] == 3
    s = r.summary(); assert (s.n_states == r.params["n_states"]).all() and (s.RIS_n == r.params["n_ris"]).all()
    assert (s[[c for c in spread if c.endswith("_std")]] >= 0).all().all()
    assert {"AIM_raw", "RIS_code", "RIS_original"} <= set(r.table.columns) and "AIM_order" not in r.table.columns
    r.save(tmp_path / "bench")
    back = XRLBenchResult.load(tmp_path / "bench")
    pd.testing.assert_frame_equal(back.table, r.table); pd.testing.assert_frame_equal(back.times, r.times)
    e = (_f := _fitted("SARFA", pol, background=X)).explain(_f.policy, X[:5])
    e.save(tmp_path / "e"); e2 = Attribution.load(tmp_path / "e")
    np.testing.assert_array_equal(e2.values, e.values); assert e2.method == "sarfa"
    f = AIM()(pol, X[:5], e); f.save(tmp_path / "f")
    assert MetricResult.load(tmp_path / "f").value == f.value


def test_real_agents_dataset_and_deepshap(shared_agents, tmp_path):
    path = shared_agents / "xrl-bench" / "LunarLander.pth"
    if not path.exists(): pytest.skip("XRL-Bench LunarLander model absent")
    pol = load_xrlbench_policy(path, device="cpu")
    df = generate_dataset(pol, "LunarLander-v3", n_states=300, seed=0)
    back = load_dataset(save_dataset(df, tmp_path / "ll"))
    pd.testing.assert_frame_equal(back, df)
    X, a = dataset_arrays(back)
    assert (a == back[[f"q_{i}" for i in range(4)]].to_numpy().argmax(1)).all()
    e = explain("DeepSHAP", pol, X[:20], background=back)      # additivity checked by shap
    q = pol.outputs(X[:20]).numpy()[np.arange(20), e.actions]
    np.testing.assert_allclose(e.values.sum(1), q - e.base_values[e.actions], atol=1e-2)
    assert e.feature_names[:2] == ("x", "y") and "feature_names" not in e.params and "base_values" not in e.params   # fields, not params


@pytest.mark.parametrize("env_id", ["ALE/Breakout-v5", "ALE/Pong-v5"])
def test_image_benchmark_on_the_zoo_agent(env_id):
    """Table 3's five image methods on the zoo agent `image_agent` picks for each of the paper's image games (Breakout: the
    DQN, compact CNN): every metric finite, in range, and timed."""
    from rlexplain.xrlbench import IMAGE_METHODS, XRLBenchConfig, image_agent, image_states, run_image_benchmark
    torch.set_num_threads(1)
    agent, card = image_agent(env_id, device="cpu")
    assert card["evaluation"]["mean"] > card["evaluation"]["random_mean"]
    assert card["algo"] == "dqn"   # the paper explains DQN agents; the zoo has one that beats random play on both games
    cfg = XRLBenchConfig.demo(n_image_background=12, n_image_explain=3, n_image_ris=1, image_ris_neighbors=2, n_image_time=2)
    r = run_image_benchmark(agent, env_id, cfg)
    s = r.summary()
    assert list(s.index) == list(IMAGE_METHODS)
    assert s.filter(like="_ranking").isin(["abs", "raw"]).all().all() and len(r.times) == 2 * len(IMAGE_METHODS)
    assert np.isfinite(s.drop(columns="RIS_std").select_dtypes("number").to_numpy()).all() and ((s.AIM >= 0) & (s.AIM <= 1) & (s.AUM >= 0) & (s.AUM <= 1)).all()
    assert s.RIS_std.isna().all() and (s.RIS_n == 1).all()   # one RIS state: its spread over states is undefined, not 0
    assert (s.ms_per_sample > 0).all() and (s.PGI >= 0).all()
    assert {"PGI_code", "PGU_code"} <= set(s.columns) and (s.PGI_code >= 0).all()   # the code's blur, beside the paper's noise
    assert r.params["pixel_step"] == cfg.image_pixel_step == 84 and XRLBenchConfig.paper().image_pixel_step == 10
    xs = image_states(agent, env_id, 5, seed=3)
    assert xs.shape == (5, 4, 84, 84) and xs.dtype == np.uint8
    with pytest.raises(ValueError, match="n_states must be >= 1"): image_states(agent, env_id, 0)


def test_tabularshap_thread_count_does_not_change_values():
    "TabularSHAP's explain_jobs only sets LightGBM's TreeSHAP threads: one or two threads give the same values."
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    pol = Policy.from_module(nn.Linear(5, 3), (5,), device="cpu")
    one = (_f := _fitted("TabularSHAP", pol, X, explain_jobs=1)).explain(_f.policy, X[:50])
    two = (_f := _fitted("TabularSHAP", pol, X, explain_jobs=2)).explain(_f.policy, X[:50])
    np.testing.assert_array_equal(one.values, two.values)
    assert _fitted("TabularSHAP", pol, X).explain_jobs >= 1


def test_benchmark_plot_names_the_better_direction_and_keeps_methods_apart():
    "XRLBenchResult.plot: one line per method, each in its own style; the title says AIM/PGU lower, AUM/PGI higher is better."
    import matplotlib.pyplot as plt
    from rlexplain.xrlbench import run_benchmark
    torch.manual_seed(0)
    X = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32)
    r = run_benchmark(Policy.from_module(nn.Linear(4, 3), (4,), device="cpu"), X, X[:20], methods=("IG", "PS", "SARFA"), n_ris=0)
    for metric, better in (("AIM", "lower"), ("AUM", "higher"), ("PGI", "higher"), ("PGU", "lower")):
        ax = r.plot(metric=metric)
        assert ax.get_title().endswith(f"{metric} ({better} is better)"), ax.get_title()
        lines = ax.get_lines()
        assert [l.get_label() for l in lines] == ["IG", "PS", "SARFA"]
        assert len({(l.get_marker(), l.get_linestyle()) for l in lines}) == 3
        plt.close(ax.figure)
    with pytest.raises(ValueError, match="no 'RIS' curves"): r.plot(metric="RIS")
    with pytest.raises(TypeError, match="pass the metric by name"): r.plot("AIM")   # ax comes first, as in every plot


def test_ris_variants_share_one_set_of_neighbour_explanations(data):
    """`RIS(also=...)` gives each formula's value exactly as its own `RIS` call would, from one pass over the neighbours."""
    X, _ = data
    pol = linear_policy([[0.5, -1.0, 2.0, 0.3], [0.1, 0.4, -0.2, 1.0]])
    ig = _fitted("IG", pol, baseline="zeros")
    calls = []
    def f(s, a):
        calls.append(len(s)); return ig.explain(pol, s, a).values
    e = ig.explain(pol, X[:12] + 1.0)
    both = RIS(n_neighbors=3, seed=4, explainer=f, also=("code",))(pol, e.states, e)
    assert calls == [36]                                     # 12 states x 3 neighbours, explained once
    alone = {v: RIS(n_neighbors=3, seed=4, variant=v, explainer=f)(pol, e.states, e) for v in ("paper", "code")}
    np.testing.assert_array_equal(both.per_state, alone["paper"].per_state)
    assert both.value == alone["paper"].value and both.params["also"]["code"] == alone["code"].value
    assert both.params["variant"] == "paper" and alone["code"].params["variant"] == "code"
    assert alone["paper"].value != alone["code"].value
    with pytest.raises(ValueError, match="original"):
        RIS(explainer=f, also=("original",))(pol, e.states, e)
    with pytest.raises(ValueError, match="subset"):
        RIS(explainer=f, also=("mean",))(pol, e.states, e)


def test_zoo_agent_benchmark_against_the_paper_and_waterfall():
    """Lesson 40's zoo experiment and its TabularSHAP plots (#| slow in nbdev_test) at a test's size: the zoo's newest
    LunarLander DQN plays a seeded dataset, TabularSHAP and PS are benchmarked on 10 of its states and
    joined with the paper's Table 2 row by method; then the waterfall plot of one state. The waterfall's bars are the
    SHAP values: base value + their sum = the explained output, exactly for DeepSHAP on this ReLU network's Q-value."""
    import matplotlib.pyplot as plt
    from rlexplain.agent_zoo import list_zoo, load_agent
    from rlexplain.xrlbench import paper_results, waterfall_plot
    z = list_zoo(); z = z[(z.env_id == "LunarLander-v3") & (z.algo == "dqn")] if len(z) else z
    if not len(z): pytest.skip("the zoo has no LunarLander DQN")
    pol = load_agent(z.sort_values("frames").iloc[-1].path, device="cpu")
    df = generate_dataset(pol, "LunarLander-v3", n_states=300, seed=0, min_episodes=2)
    X, a = dataset_arrays(df)
    r = run_benchmark(pol, df, X[:10], methods=("TabularSHAP", "PS"), n_ris=2, ris_neighbors=2,
                      env_id="LunarLander-v3", seed=0)
    paper = paper_results()
    t = r.summary().join(paper[paper.env == "LunarLander"].set_index("method").drop(columns="env").add_prefix("paper_"))
    assert list(t.index) == ["TabularSHAP", "PS"] and t.paper_AIM.notna().all()
    assert ((t.AIM >= 0) & (t.AIM <= 1)).all() and 0 < t.loc["TabularSHAP", "student_agreement"] <= 1
    e = explain("DeepSHAP", pol, X[:4], background=df)
    sx = e.to_shap()
    q = pol.outputs(X[:4]).numpy()[np.arange(4), e.actions]
    np.testing.assert_allclose(sx.base_values + sx.values.sum(1), q, atol=1e-3)
    fig = waterfall_plot(e, 0, max_display=5); assert isinstance(fig, plt.Figure) and len(fig.axes) >= 1
    with pytest.raises(IndexError, match="state index"): waterfall_plot(e, 4)
    plt.close("all")


def test_fidelity_curve_batched_over_k_is_the_one_k_at_a_time_curve(data, monkeypatch):
    """The k grid goes through the policy in batched forwards (`_rank_curve`); each k's score is the one a forward of that k
    alone gives, here by hand: a linear agent Q = W x, the top-k features (by |e|) set to 0, the greedy action kept or not."""
    from rlexplain.attribution.metrics.fidelity import _FidelityCurves
    X, rng = data
    W = np.array([[1.0, -2.0, 0.5, 0.0], [-1.0, 1.0, 2.0, -0.5], [0.3, 0.3, -1.0, 2.0]], np.float32)
    pol = linear_policy(W)
    x, e = X[:30], rng.normal(size=(30, 4))
    greedy = (x @ W.T).argmax(1)
    hand = []
    for k in (1, 2, 3):
        xm = x.copy()
        for i in range(30): xm[i, np.argsort(-np.abs(e[i]), kind="stable")[:k]] = 0.0   # |e| has no ties here
        hand.append(((xm @ W.T).argmax(1) == greedy).astype(float))
    calls = []
    outputs = pol.outputs
    monkeypatch.setattr(pol, "outputs", lambda obs, batch_size=None: (calls.append(len(obs)), outputs(obs, batch_size))[1])
    att = greedy_att(pol, x, e); calls.clear()
    r = AIM()(pol, x, att)
    np.testing.assert_array_equal(r.per_state, np.mean(hand, 0))
    assert calls == [30, 90]                        # the states' outputs, then k = 1, 2, 3 in one forward
    calls.clear(); monkeypatch.setattr(_FidelityCurves, "_CHUNK", 1)   # one k per forward: the same curve
    r1 = AIM()(pol, x, att)
    assert calls == [30, 30, 30, 30]
    np.testing.assert_array_equal(r1.curve, r.curve); np.testing.assert_array_equal(r1.per_state, r.per_state)
    for M in (PGI, PGU):                            # noise: n_draws rows per state and k, the draws averaged per k
        a, b = M(n_draws=3, feature_std=X.std(0))(pol, x, att), None
        monkeypatch.setattr(_FidelityCurves, "_CHUNK", 1 << 23); b = M(n_draws=3, feature_std=X.std(0))(pol, x, att)
        monkeypatch.setattr(_FidelityCurves, "_CHUNK", 1)
        np.testing.assert_array_equal(a.curve, b.curve); np.testing.assert_array_equal(a.per_state, b.per_state)


def test_fidelity_both_orders_in_one_score_call(data, monkeypatch):
    """`score(..., order="both")` gives the |importance| ranking's value and curve, the signed ranking's in `raw`, each equal to
    its own call's; a map that is never negative ranks alike in both orders and is scored once (half the forwards)."""
    from rlexplain.attribution import score
    X, rng = data
    pol = linear_policy([[1.0, -2.0, 0.5, 0.0], [-1.0, 1.0, 2.0, -0.5]])
    x = X[:20]
    e = explain("ig", pol, x, background=X, baseline="zeros")
    for m in ("AIM", "AUM", "PGI", "PGU"):
        both = score(m, pol, x, e, order="both", feature_std=X.std(0))
        ab, rw = (score(m, pol, x, e, order=o, feature_std=X.std(0)) for o in ("abs", "raw"))
        assert both.value == ab.value and np.mean(both.raw["raw_per_state"]) == rw.value
        np.testing.assert_array_equal(both.curve, ab.curve); np.testing.assert_array_equal(both.raw["raw_curve"], rw.curve)
    assert not np.array_equal(both.curve, both.raw["raw_curve"])      # IG's signed map ranks otherwise
    pos = dataclasses.replace(e, values=np.abs(e.values))
    calls = []
    outputs = pol.outputs
    monkeypatch.setattr(pol, "outputs", lambda obs, batch_size=None: (calls.append(len(obs)), outputs(obs, batch_size))[1])
    r = score("AIM", pol, x, pos, order="both")
    assert calls == [20, 60]                        # the states, then k = 1..3 once for both rankings
    np.testing.assert_array_equal(r.curve, r.raw["raw_curve"])


def test_better_of_two_and_abs_crown_different_winners(data):
    """Xiong et al. 2024, Sec. 4.2: each method's value is the better of its |importance| and signed ranking. On the agent that uses
    only x0 (masking it flips the action), X ranks x1 first by |e| and x0 second (AIM AUC 1/3), and x0 last by sign (1); Y ranks
    x0 last by |e| (1) but first by sign (0). By |importance| X wins; by the paper's rule Y does."""
    from rlexplain.attribution import score
    from rlexplain.xrlbench import better_of_two
    X, _ = data
    pol = linear_policy([[1, 0, 0, 0], [-1, 0, 0, 0]])
    Xn = X.copy(); Xn[:, 0] = -np.abs(Xn[:, 0]) - 0.1
    ex = greedy_att(pol, Xn, np.tile([-1.0, 2.0, 0, 0], (len(X), 1)), "X")
    ey = greedy_att(pol, Xn, np.tile([1.0, -2.0, -3.0, -4.0], (len(X), 1)), "Y")
    res = {}
    for e in (ex, ey):
        r = score("AIM", pol, Xn, e, order="both")
        res[e.method] = (r.value, float(r.raw["raw_per_state"].mean()))
    assert res["X"][0] == pytest.approx(1 / 3) and res["X"][1] == 1.0 and res["Y"] == (1.0, 0.0)
    best = {m: better_of_two("AIM", *v) for m, v in res.items()}
    assert best == {"X": (pytest.approx(1 / 3), "abs"), "Y": (0.0, "raw")}
    assert min(res, key=lambda m: res[m][0]) == "X" and min(best, key=lambda m: best[m][0]) == "Y"
    with pytest.raises(ValueError, match="fidelity metrics"): better_of_two("RIS", 1.0, 2.0)


def test_time_per_state_rotates_the_methods_and_warms_each_up(data, monkeypatch):
    "Each state is explained alone by every method, the order rotated per state, after one untimed warm-up call per method."
    import rlexplain.xrlbench as xb
    X, _ = data
    pol = linear_policy([[1, 0.2, 0, 0], [-1, 0, 0.1, 0]])
    calls = []
    real = xb.EXPLAINERS["perturbation_saliency"].explain
    monkeypatch.setattr(xb.EXPLAINERS["perturbation_saliency"], "explain", lambda self, p, s, a=None: (calls.append(len(s)), real(self, p, s, a))[1])
    now = [0.0]                                                    # a fake clock: each reading advances it by 1 s
    def fake_clock(): now[0] += 1.0; return now[0]
    monkeypatch.setattr(xb, "time_round_robin", functools.partial(xb.time_round_robin, clock=fake_clock))
    t = xb.time_per_state(pol, X, X[:4], methods=("PS", "IG", "SARFA"))
    assert calls == [1] * 5                                        # a warm-up, then one call per state, one state each
    assert [list(g) for g in np.split(t.method.to_numpy(), 4)] == [["PS", "IG", "SARFA"], ["IG", "SARFA", "PS"],
                                                                     ["SARFA", "PS", "IG"], ["PS", "IG", "SARFA"]]
    assert list(t.columns) == ["method", "state", "seconds"] and list(t.state) == [i for i in range(4) for _ in range(3)]
    assert (t.seconds == 1.0).all() and now[0] == 2 * 12           # two readings per timed call, none around a warm-up
    with pytest.raises(ValueError, match="unknown explainer"): xb.time_per_state(pol, X, X[:2], methods=("Nope",))
    with pytest.raises(ValueError, match="n_time must be an int"): run_benchmark(pol, X, X[:2], methods=("PS",), n_time=-1)
