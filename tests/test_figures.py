"""Figures are readable (issue #38 item 4): every visible text at least 8 pt at the size the figure is drawn, every shaded
band (`fill_between`) named in a legend, every colour bar labelled with its quantity and unit, titles naming the condition.
Each plotting function is called on small synthetic result objects (no training, no environments)."""
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.collections import PolyCollection
from matplotlib.text import Text
from torch import nn

MIN_PT = 8.0


def small_texts(fig) -> list:
    "Every visible, non-empty `Text` of `fig` smaller than 8 pt, as (text, size) pairs; the figure is drawn first."
    fig.canvas.draw()   # tick labels exist once drawn
    return [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and t.get_fontsize() < MIN_PT]


def legend_labels(fig) -> set:
    "The texts of every legend in `fig`."
    return {t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()} | \
           {t.get_text() for lg in fig.legends for t in lg.get_texts()}


def bands(fig) -> list:
    "The shaded bands (`fill_between` PolyCollections) of `fig`."
    return [c for ax in fig.axes for c in ax.collections if type(c).__name__ in ("PolyCollection", "FillBetweenPolyCollection")
            or isinstance(c, PolyCollection) and not type(c).__name__.startswith("Quad")]


def colorbar_axes(fig) -> list:
    "The colour-bar Axes of `fig`."
    return [ax for ax in fig.axes if hasattr(ax, "_colorbar")]


def check_figure(fig, n_bands: int | None = None, n_colorbars: int | None = None):
    "Assert the house rules on `fig`: text >= 8 pt, every band labelled and in a legend, every colour bar labelled."
    assert small_texts(fig) == [], small_texts(fig)
    bs, shown = bands(fig), legend_labels(fig)
    if n_bands is not None: assert len(bs) == n_bands
    for b in bs:
        assert not b.get_label().startswith("_"), f"unlabelled band {b.get_label()!r}"
        assert b.get_label() in shown, f"band {b.get_label()!r} is in no legend ({sorted(shown)})"
    cbs = colorbar_axes(fig)
    if n_colorbars is not None: assert len(cbs) == n_colorbars
    for cb in cbs: assert (cb.get_ylabel() or cb.get_xlabel()).strip(), "colour bar without a label"
    plt.close(fig)


def test_helpers_catch_small_text_unlabelled_bands_and_bare_colour_bars():
    "The checks themselves can fail: 6-pt text, an unnamed band and an unlabelled colour bar are each caught."
    fig, ax = plt.subplots(); ax.set_title("t", fontsize=6)
    assert small_texts(fig) == [("t", 6.0)]; plt.close(fig)
    fig, ax = plt.subplots(); ax.fill_between([0, 1], [0, 0], [1, 1])
    with pytest.raises(AssertionError, match="unlabelled band"): check_figure(fig)
    fig, ax = plt.subplots(); fig.colorbar(ax.imshow(np.eye(3)), ax=ax)
    with pytest.raises(AssertionError, match="colour bar without a label"): check_figure(fig)
    plt.close("all")


def _ir_study(rows: int = 40):
    from rlexplain.ir import IRMatrix
    from rlexplain.ir_study import IRStudy
    rng = np.random.default_rng(0)
    names = ("none",) + tuple(f"paddle_width_{k}" if k < rows // 2 else f"drop_row_{k}" for k in range(1, rows))
    mats = tuple(IRMatrix(R=rng.random((rows, 12)), interventions=names, state_steps=tuple(range(-1, 11)), pipeline=p,
                          frames=f, agents=("a", "b"), mode="exact", t=30) for p in ("dqn", "ppo") for f in (1e5, 1e6))
    perf = pd.DataFrame([{"game": "Breakout", "pipeline": p, "frames": f, "seed": s, "return": float(s)}
                         for p in ("dqn", "ppo") for f in (1e5, 1e6) for s in range(3)])
    return IRStudy(mats, ("Breakout",) * len(mats), perf)


@pytest.mark.parametrize("normalized", [False, True])
def test_ir_heatmap_labels_every_row_at_8pt_and_grows_with_rows(normalized):
    "IRMatrix.plot: 8-pt row labels however many interventions; the figure is taller for more rows; a labelled colour bar."
    st = _ir_study(40)
    ax = st.matrices[0].plot(normalized=normalized)
    assert len(ax.get_yticklabels()) == 40 and st.matrices[0].pipeline in ax.get_title()
    h40 = ax.figure.get_figheight(); check_figure(ax.figure, n_colorbars=1)
    assert h40 > _ir_study(10).matrices[0].plot().figure.get_figheight()
    plt.close("all")


def test_ir_study_figure_is_readable():
    "IRStudy.plot: every panel's text >= 8 pt, the game in the title, the colour bar labelled with R's meaning."
    fig = _ir_study(40).plot("Breakout")
    assert "Breakout" in fig._suptitle.get_text()
    check_figure(fig, n_colorbars=1)


def test_timeseries_bands_are_named():
    "Forecast and CausalImpact plots: each prediction / effect interval band has a legend entry; text >= 8 pt."
    from rlexplain.timeseries import causal_impact, forecast
    rng = np.random.default_rng(0)
    fc = forecast({"flat": 5 + rng.normal(0, 0.2, 40), "down": 8 - 0.2 * np.arange(40) + rng.normal(0, 0.2, 40)}, horizon=10, window=None)
    check_figure(fc.plot().figure, n_bands=2)
    X0 = rng.normal(0, 1, (4, 12)); X1 = X0 + np.r_[np.zeros(5), -np.ones(7)]
    check_figure(causal_impact(X1, X0, T=5, n_boot=50).plot(), n_bands=2)


def test_sanity_check_bands_are_named():
    "SanityCheck.plot: the 99% interval band of every method is in the legend; text >= 8 pt."
    from rlexplain.saliency_bench import SanityCheck
    rows = [{"method": m, "metric": j, "n_randomized": k, "layer": str(k), "state": s, "value": 1 - 0.2 * k + 0.01 * s}
            for m in ("occlusion", "random") for j in ("spearman", "ssim", "hog") for k in range(4) for s in range(3)]
    check_figure(SanityCheck(pd.DataFrame(rows), ("3", "2", "1", "0"), {}).plot(), n_bands=6)


def test_insertion_bands_are_named():
    "InsertionResult.plot: the +-1 std band of each start image is in the legend."
    from rlexplain.attribution.metrics.insertion import InsertionResult
    rng = np.random.default_rng(0); B, K = 3, 5
    r = InsertionResult(q=rng.random((B, 2, K)) + 1, advantage=rng.random((B, 2, K)), q_orig=np.ones(B), actions=np.zeros(B, int),
                        fractions=np.linspace(0, 1, K), method="occlusion", game="Breakout")
    check_figure(r.plot().figure, n_bands=2)


def test_comparison_ranks_heatmap_is_readable():
    "Comparison.plot: cell annotations and ticks >= 8 pt; the colour bar says it is a rank."
    from rlexplain.compare import Comparison
    t = pd.DataFrame([{"method": m, "metric": j, "state": s, "value": v + 0.01 * s, "higher_is_better": j != "down"}
                      for m, v in (("a", 3.0), ("b", 2.0), ("c", 1.0)) for j in ("up", "down") for s in range(6)])
    check_figure(Comparison(t, pd.DataFrame(), "image", {"agent": "toy"}).plot(n_boot=20).figure, n_colorbars=1)


def test_ranld_figures_are_readable():
    "PrincipalDirection.plot / plot_spectrum, QuotientTable.plot / plot_directions and plot_tables: text >= 8 pt, labelled colour bars."
    from rlexplain.ranld import ranld
    from rlexplain.ranld_study import QuotientTable, plot_tables
    torch.manual_seed(1)
    from rlexplain.core import Policy
    pol = Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(2 * 10 * 10, 3)), obs_shape=(2, 10, 10), device="cpu")
    res = ranld(pol, torch.rand(12, 2, 10, 10), name="img")
    check_figure(res.plot().figure, n_colorbars=1); check_figure(res.plot_spectrum().figure, n_colorbars=1)
    conds = ["unmodified (S-hat)", "fgsm"]
    tab = pd.DataFrame([{"condition": c, "at": "observed", "run": r, "quotient": 0.5 + 0.1 * r, "changed": 1.0,
                         "mean_return": 1.0, "n_states": 10} for c in conds for r in range(2)])
    qt = QuotientTable(tab, np.random.default_rng(0).normal(size=(3, 2, 10, 10)), ("unmodified (S-hat)", "fgsm", "baseline"), None, {})
    check_figure(qt.plot().figure); check_figure(qt.plot_directions().figure, n_colorbars=1)
    df = pd.DataFrame([{"game": g, "condition": c, "at": "observed", "quotient_mean": 0.5, "quotient_std": 0.1, "paper_mean": 0.6,
                        "changed": 0.0 if c == "fgsm" and g == "Pong" else 1.0} for g in ("Pong", "Breakout") for c in conds])
    ax = plot_tables(df); assert "observed" in ax.get_title(); check_figure(ax.figure)


def test_xrlbench_and_metric_plots_are_readable():
    "XRLBenchResult.plot on a synthetic curve table: text >= 8 pt and the game in the title."
    from rlexplain.xrlbench import XRLBenchResult
    curves = pd.DataFrame([{"method": m, "metric": "AIM", "order": "abs", "k": k, "score": 0.1 * k} for m in ("IG", "PS") for k in range(1, 4)])
    ax = XRLBenchResult("toy-v0", pd.DataFrame(), curves, {}).plot(metric="AIM")
    assert "toy-v0" in ax.get_title(); check_figure(ax.figure)


def test_scoreboard_plot_is_readable():
    "scoreboard.plot on a two-paper board: text >= 8 pt."
    from rlexplain import scoreboard as sb
    b = pd.DataFrame({"id": ["x", "y", "z"], "paper": ["P1", "P1", "P2"], "verdict": ["reproduced", "contradicted", "not run"]})
    b.attrs["scale"] = "demo"
    ax = sb.plot(b); assert ax.get_title().startswith("demo scale"); check_figure(ax.figure)


@pytest.mark.parametrize("normalized", [False, True])
def test_attribution_map_colour_bar_has_units(normalized):
    "Attribution.plot of a pixel map: the colour bar names the quantity and its unit (a.u.); text >= 8 pt."
    from rlexplain.attribution import explain
    from rlexplain.core import Policy
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 7 * 7, 3))
    att = explain("occlusion", Policy.from_module(net, (2, 16, 16), device="cpu"),
                  np.random.default_rng(0).random((2, 2, 16, 16)).astype(np.float32), patch=4)
    ax = (att.normalized() if normalized else att).plot(index=1)
    assert "a.u." in ax.figure.axes[-1].get_ylabel(); check_figure(ax.figure, n_colorbars=1)


def test_episode_overlap_plot_is_readable():
    "OverlapStudy.plot: text >= 8 pt and the game in the title."
    from rlexplain.episode import OverlapStudy
    rng = np.random.default_rng(0)
    t = pd.DataFrame([{"state": s, "method": m, "reference": r, "overlap": rng.random(), "random_overlap": rng.random()}
                      for s in range(5) for m in ("occlusion", "rise") for r in ("fgsm", "ranld")])
    ax = OverlapStudy(t, k=10, n_pixels=100, env_id="Breakout").plot()
    assert "Breakout" in ax.get_title(); check_figure(ax.figure)


def test_ranld_policy_comparison_is_readable():
    "PolicyComparison.plot (Figures 2-4 analogue): text >= 8 pt."
    from rlexplain.ranld_study import PolicyComparison
    rng = np.random.default_rng(0)
    tab = pd.DataFrame({"label": ["DDQN", "SA-DDQN"], "spectral_entropy": [0.5, 0.6], "grad_norm_cv": [1.0, 2.0]})
    pc = PolicyComparison(rng.normal(size=(2, 2, 10, 10)), [rng.random(20) + 0.1 for _ in range(2)], ("DDQN", "SA-DDQN"), tab,
                          np.eye(2), {})
    check_figure(pc.plot())


def test_saliency_benchmark_figures_are_readable():
    "SaliencyBenchmark.plot_examples / plot_curves, Highlights.plot and Tuning.plot: text >= 8 pt, the game in the curve titles."
    from rlexplain.saliency_bench import Highlights, Tuning
    from rlexplain.saliency_study import SUB_METRIC_LABELS, SaliencyBenchmark
    rng = np.random.default_rng(0); methods = ("occlusion", "random")
    curves = pd.DataFrame([{"game": "toybox/Breakout", "method": m, "sub_metric": sub, "fraction": f, "mean": f}
                           for m in methods for sub in SUB_METRIC_LABELS.values() for f in np.linspace(0, 1, 5)])
    b = SaliencyBenchmark(None, curves, pd.DataFrame(), pd.DataFrame(), rng.random((1, 2, 16, 16)),
                          rng.integers(0, 255, (1, 2, 16, 16)).astype(np.uint8), ("toybox/Breakout",), methods, (), None)
    check_figure(b.plot_examples())
    fig = b.plot_curves(); assert all("Breakout" in ax.get_title() for ax in fig.axes); check_figure(fig)
    check_figure(Highlights(np.array([2, 5]), rng.random(10), 0.5, {}).plot().figure)
    tu = pd.DataFrame({"seconds_per_map": [0.1, 0.2], "score": [1.0, 2.0], "chosen": [False, True], "params": ["{}", "{}"]})
    check_figure(Tuning(tu, "occlusion", 1.0, "toybox/Breakout").plot().figure)


def test_saliency_sanity_figure_is_readable():
    """SaliencyBenchmark.plot_sanity (Figure 3): text >= 8 pt and every CI band in the legend, one compact legend (one entry per
    method, its line and band together) beneath the panels and outside every one, and no two x tick labels of a panel overlapping."""
    from rlexplain.saliency_study import SaliencyBenchmark
    rng = np.random.default_rng(0); methods = ("occlusion", "noise_sensitivity", "sarfa", "rise", "lime_slic")
    san = pd.DataFrame([{"game": "g", "method": m, "variant": "shared", "n_randomized": k, "layer": f"l{k}", "state": s,
                         "metric": met, "value": rng.random()}
                        for m in methods for k in range(1, 8) for s in range(3) for met in ("spearman", "ssim", "hog")])
    b = SaliencyBenchmark(pd.DataFrame(), pd.DataFrame(), san, pd.DataFrame(), rng.random((1, 1, 4, 4)),
                          np.zeros((1, 1, 4, 4), np.uint8), ("toybox/Breakout",), methods)
    fig = b.plot_sanity(); fig.canvas.draw(); r = fig.canvas.get_renderer()
    legs = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legs) == 1 and len(legs[0].get_texts()) == len(methods)
    box = legs[0].get_window_extent(r)
    assert all(not box.overlaps(ax.get_tightbbox(r)) for ax in fig.axes)
    for ax in fig.axes:
        ticks = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
        assert len(ticks) >= 2 and all(not a.overlaps(c) for a, c in zip(ticks, ticks[1:]))
    check_figure(fig)

def test_effect_plots_are_readable():
    "TimeSeriesStudy.plot_effects, SwitchingStudy.plot_effects and PerformanceSeries.plot: text >= 8 pt."
    from rlexplain.switching import SwitchingConfig, SwitchingStudy
    from rlexplain.timeseries import PerformanceSeries
    from rlexplain.timeseries_study import TimeSeriesConfig, TimeSeriesStudy
    imp = pd.DataFrame({"agent": "a", "shift": ["eps=1", "eps=2"], "did": [-1.0, -2.0], "ci_low": [-1.5, -2.5], "ci_high": [-0.5, -1.5],
                        "n_seeds": 3, "placebo": [0.1, 0.0], "placebo_low": [-0.2, -0.3], "placebo_high": [0.3, 0.2], "placebo_T": 2,
                        "label": ["switch 1", "switch 2"]})
    import dataclasses
    cfg = dataclasses.asdict(TimeSeriesConfig(env_id="toybox/Breakout", seeds=(0, 1, 2)))
    check_figure(TimeSeriesStudy(pd.DataFrame(), imp, pd.DataFrame(), pd.DataFrame(), cfg, "toybox/Breakout").plot_effects().figure)
    check_figure(SwitchingStudy(pd.DataFrame(), imp, pd.DataFrame(), dataclasses.asdict(SwitchingConfig(seeds=(0, 1, 2))), {}).plot_effects().figure)
    t = pd.DataFrame([{"agent": "a", "condition": c, "seed": s, "episode": e, "return": float(e + s)}
                      for c in ("clean", "fgsm") for s in range(2) for e in range(6)])
    check_figure(PerformanceSeries(t, "toybox/Breakout", {}).plot(window=2).figure)


def test_episode_movie_frame_text_is_readable():
    "MovieFrames (the explained-episode movie): every text of a frame, the scale note included, >= 8 pt."
    from rlexplain.core import Policy
    from rlexplain.envs import Rollout
    from rlexplain.episode import MovieFrames, explain_episode

    class OnePixel(nn.Module):
        def forward(self, obs): return torch.stack([obs[:, 3, 10, 21], torch.full_like(obs[:, 0, 0, 0], 0.5)], -1)
    obs = np.zeros((4, 4, 84, 84), np.float32); obs[:, :, 10, 21] = 0.9
    ro = Rollout(obs, np.zeros(4, np.int64), np.arange(4, dtype=np.float64), np.zeros(4, np.int64), [], "one-pixel")
    ep = explain_episode(Policy.from_module(OnePixel(), (4, 84, 84), device="cpu"), ro, "occlusion", every=2, patch=12)
    mf = MovieFrames(ep)
    assert any(t.get_text().startswith("occlusion") for t in mf.fig.texts)
    check_figure(mf.fig)
