"Tests of rlexplain.compare: direction-aligned ranks with intervals, the finding in words, and a small end-to-end comparison."
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from rlexplain.compare import Comparison, compare, finding, rank_agreement, settings
from rlexplain.core import Policy

torch.set_num_threads(1)


def toy(metrics=("up", "down"), lower=("down",)):
    return pd.DataFrame([{"method": m, "metric": j, "state": s, "value": v + 0.01 * s, "higher_is_better": j not in lower}
                         for m, v in (("a", 3.0), ("b", 2.0), ("c", 1.0)) for j in metrics for s in range(6)])


def test_ranks_follow_each_metrics_direction():
    r = Comparison(toy(), pd.DataFrame()).ranks(n_boot=40).set_index(["method", "metric"])
    assert r.loc[("a", "up"), "rank"] == 1 and r.loc[("a", "down"), "rank"] == 3
    assert ((r.rank_lo <= r["rank"]) & (r["rank"] <= r.rank_hi)).all()
    assert Comparison(toy(), pd.DataFrame()).agreement().loc["up", "down"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="n_boot"): Comparison(toy(), pd.DataFrame()).ranks(n_boot=0)


def test_bootstrap_ranks_and_intervals_by_hand():
    """The bootstrap (ranks and table, done as array operations) is the loop it replaced: resample b draws
    `rng.integers(0, N, N)` in turn, takes each cell's nanmean and ranks the methods per metric (average ranks of ties,
    an all-NaN cell left out and NaN)."""
    from scipy.stats import rankdata
    v = {("a", "up"): [1, 2, 3, 4], ("b", "up"): [2, 2, 2, 2], ("c", "up"): [np.nan] * 4,
         ("a", "down"): [1, 1, 1, 1], ("b", "down"): [1, 1, 1, 1], ("c", "down"): [0, np.nan, 5, 0]}
    df = pd.DataFrame([{"method": m, "metric": j, "state": s, "value": x, "higher_is_better": j == "up"}
                       for (m, j), xs in v.items() for s, x in enumerate(xs)])
    c = Comparison(df, pd.DataFrame())
    cube = np.array([[v[(m, j)] for j in ("up", "down")] for m in "abc"], np.float64)      # (M, J, N)
    sign = np.array([-1.0, 1.0]); rng = np.random.default_rng(3); ranks, means = [], []
    for _ in range(30):
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning): mu = np.nanmean(cube[:, :, rng.integers(0, 4, 4)], -1)
        r = np.full(mu.shape, np.nan)
        for j in range(2):
            ok = np.isfinite(mu[:, j])
            r[ok, j] = rankdata(sign[j] * mu[ok, j], method="average")
        ranks.append(r); means.append(mu)
    lo, hi = np.nanpercentile(np.stack(ranks), [2.5, 97.5], axis=0)
    got = c.ranks(n_boot=30, seed=3).set_index(["method", "metric"])
    for a, m in enumerate("abc"):
        for b, j in enumerate(("up", "down")):
            assert got.loc[(m, j), "rank_lo"] == lo[a, b] or (np.isnan(lo[a, b]) and np.isnan(got.loc[(m, j), "rank_lo"]))
            assert got.loc[(m, j), "rank_hi"] == hi[a, b] or (np.isnan(hi[a, b]) and np.isnan(got.loc[(m, j), "rank_hi"]))
    full = got["rank"]
    assert full[("a", "up")] == 1 and full[("b", "up")] == 2 and np.isnan(full[("c", "up")])   # c has no values: no rank
    assert full[("a", "down")] == full[("b", "down")] == 1.5 and full[("c", "down")] == 3        # a tie shares ranks 1 and 2 (c: 5/3)
    blo, bhi = np.nanpercentile(np.stack(means), [2.5, 97.5], axis=0)
    assert c.table(n_boot=30, seed=3).loc["c", "down (lower better)"] == f"{np.nanmean(cube[2, 1]):.3g} [{blo[2, 1]:.3g}, {bhi[2, 1]:.3g}]"


def test_finding_is_computed_from_the_ranks():
    t = toy(("insertion_black_q", "AIM", "sanity_spearman", "RIS"), lower=("AIM", "sanity_spearman", "RIS"))
    c = Comparison(t, pd.DataFrame(), "image", {"agent": "toy", "n_states": 6})
    ra = rank_agreement(c).set_index(["metric", "vs"]).spearman_rho
    assert ra[("insertion_black_q", "AIM")] == pytest.approx(-1.0) and ra[("sanity_spearman", "RIS")] == pytest.approx(1.0)
    f = finding(c)
    assert "in opposite orders" in f and "sanity vs RIS rank the methods alike" in f


def test_compare_end_to_end_on_a_tiny_cnn():
    torch.manual_seed(0)
    pol = Policy.from_module(nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 7 * 7, 3)),
                             (2, 16, 16), device="cpu")
    x = np.random.default_rng(0).random((3, 2, 16, 16)).astype(np.float32)
    c = compare(pol, x, {"occlusion": dict(patch=4), "random": {}, "tabular_shap": {}},
                {"AIM": dict(pixel_step=64), "insertion_black_q": dict(pixel_step=64), "sanity_spearman": {}})
    assert c.methods == ["occlusion", "random"]                   # the tabular-only method is skipped for images
    assert set(c.metrics) == {"AIM", "insertion_black_q", "sanity_spearman"} and len(c.scores) == 2 * 3 * 3
    r = c.ranks(n_boot=20).set_index(["method", "metric"])
    assert r.loc[("random", "sanity_spearman"), "rank"] == 2     # a map that ignores the network fails the sanity check
    ax = c.plot(n_boot=20); assert "ranks of 2 explainers" in ax.get_title()
    with pytest.raises(LookupError, match="unknown"): compare(pol, x, {"nope": {}}, {})
    with pytest.raises(ValueError, match="kind"): settings("audio")


def test_compare_tabular_with_the_lessons_metrics_and_the_random_anchor():
    """Lesson 41's tabular experiment and its solutions 1 and 3 (#| slow in nbdev_test) at a test's size: an MLP agent on
    6 features, three explainers, the lesson's tabular metrics (settings("tabular")). The random map ignores the network,
    so its Spearman similarity after randomisation is exactly 1 and it ranks last on sanity_spearman; treating AIM as
    higher-is-better reverses its ranks, so its correlation with AUM changes sign."""
    torch.manual_seed(0)
    pol = Policy.from_module(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), (6,), device="cpu")
    X = np.random.default_rng(0).normal(size=(80, 6)).astype(np.float32)
    ex, metrics = settings("tabular")
    c = compare(pol, X[:12], {k: ex[k] for k in ("perturbation_saliency", "integrated_gradients", "random")}, metrics,
                background=X[12:], agent="mlp")
    assert c.kind == "tabular" and set(c.metrics) == set(metrics) and len(c.scores) == 3 * len(metrics) * 12
    assert np.isfinite(c.scores.value).all()
    r = c.ranks(n_boot=20).set_index(["method", "metric"])
    assert r.loc[("random", "sanity_spearman"), "rank"] == 3.0
    assert r.loc[("random", "sanity_spearman"), "mean"] == pytest.approx(1.0, abs=1e-6)
    wrong = c.scores.copy(); wrong.loc[wrong.metric == "AIM", "higher_is_better"] = True
    rho = c.agreement().loc["AIM", "AUM"]
    assert Comparison(wrong, c.timing).agreement().loc["AIM", "AUM"] == pytest.approx(-rho, abs=1e-9)
    ra = rank_agreement(c)   # no insertion metric on tabular states: only the sanity-vs-RIS pair is asked about
    assert list(zip(ra.metric, ra.vs)) == [("sanity_spearman", "RIS")] and -1 <= ra.spearman_rho.iloc[0] <= 1
