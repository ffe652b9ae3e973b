"Integration tests of rlexplain.timeseries (fast: tiny hand-made agents, short Toybox episodes, synthetic series)."
import numpy as np
import pandas as pd
import pytest
import torch

from rlexplain.core import Policy, load_result
from rlexplain.timeseries import (CausalImpact, Forecast, PerformanceSeries, TimeSeriesConfig, aggregate, causal_impact,
                                  check_fixed_seed, damped_trend_forecast, episode_seed, forecast, performance_series,
                                  simulate_damped_trend)

torch.set_num_threads(1)


class _Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__(); torch.manual_seed(0); self.lin = torch.nn.Linear(84, 4); torch.nn.init.normal_(self.lin.weight, std=3.0)
    def forward(self, x): return self.lin(x[:, -1].mean(1))


@pytest.fixture(scope="module")
def tiny():
    return Policy.from_module(_Tiny(), (4, 84, 84), kind="q", device="cpu", name="tiny")


def test_identical_seeds_repeat_exactly(tiny):
    a = performance_series(tiny, "toybox/Breakout", seeds=[0, 1], n_episodes=2, max_steps=80)
    b = performance_series(tiny, "toybox/Breakout", seeds=[0, 1], n_episodes=2, max_steps=80, engine="rollout")
    pd.testing.assert_frame_equal(a.table, b.table)
    assert list(a.table.columns[:5]) == ["agent", "seed", "episode", "return", "condition"]
    assert check_fixed_seed(tiny, "toybox/Breakout", seeds=[2], n_episodes=1, max_steps=60).ok


def test_fgsm_treatment_pre_period_equals_control(tiny):
    kw = dict(seeds=[0, 1], n_episodes=3, max_steps=60)
    c = performance_series(tiny, "toybox/Breakout", **kw)
    t = performance_series(tiny, "toybox/Breakout", shift="fgsm", start_episode=2, **kw)
    pre_c, pre_t = c.table[c.table.episode < 2], t.table[t.table.episode < 2]
    assert pre_c["actions_hash"].tolist() == pre_t["actions_hash"].tolist()
    assert (t.table[t.table.episode >= 2].attacked == 1.0).all() and not t.table[t.table.episode < 2].shifted.any()
    ci = causal_impact(t, c, T=2)
    assert ci.pre_gap == 0.0 and np.isfinite(ci.did)


def test_parallel_matches_sequential(tiny):
    kw = dict(seeds=[0, 1], n_episodes=2, max_steps=50)
    a = performance_series(tiny, "toybox/Breakout", **kw)
    b = performance_series(tiny, "toybox/Breakout", max_workers=2, **kw)
    pd.testing.assert_frame_equal(a.table, b.table)


def test_damped_trend_recovered_and_coverage():
    covers = []
    for s in range(3):
        y, l, b = simulate_damped_trend(300, seed=s)
        fc = damped_trend_forecast(y[0], horizon=10, level=0.99, window=None)
        truth = l[0] + np.cumsum(0.9 ** np.arange(1, 11)) * b[0]
        assert np.abs(fc["mean"] - truth).max() < 1.0
        rng = np.random.default_rng(50 + s); L, B = np.full(3000, l[0]), np.full(3000, b[0]); fut = np.empty((3000, 10))
        for t in range(10):
            e = rng.normal(0, 1, 3000); fut[:, t] = L + 0.9 * B + e; L, B = L + 0.9 * B + 0.3 * e, 0.9 * B + 0.05 * e
        covers.append(((fut >= fc["lower"]) & (fut <= fc["upper"])).mean())
    assert 0.95 <= np.mean(covers) <= 1.0


def test_forecast_result_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    fc = forecast({"flat": 5 + rng.normal(0, 0.2, 40), "down": 8 - 0.2 * np.arange(40) + rng.normal(0, 0.2, 40)}, horizon=20, window=None)
    assert isinstance(fc, Forecast) and set(fc.summary.label) == {"flat", "down"}
    assert not fc.overlap().overlap.iloc[0]
    back = load_result(fc.save(tmp_path / "fc"))
    pd.testing.assert_frame_equal(back.summary, fc.summary)


def test_did_known_effect_and_zero():
    ctrl = np.arange(3)[:, None] + 0.5 * np.arange(8)[None].astype(float)
    treat = ctrl - 3.0 * (np.arange(8)[None] >= 4)
    ci = causal_impact(treat, ctrl, T=4, n_boot=500)
    assert ci.did == pytest.approx(-3.0) and ci.did_post == pytest.approx(-3.0)
    assert (ci.ci_low, ci.ci_high) == pytest.approx((-3.0, -3.0)) and ci.placebo == pytest.approx(0.0)
    z = causal_impact(ctrl, ctrl, T=4)
    assert z.did == 0.0 and z.table.cumulative.abs().max() == 0.0
    assert causal_impact(ctrl + 2.0, ctrl, T=4).did == pytest.approx(0.0)   # Eq. 4 removes a constant gap
    assert aggregate(treat, "iqm").shape == (8,)


def test_bad_input_raises():
    x = np.zeros((3, 8))
    with pytest.raises(ValueError, match="T \\(the first shifted episode\\)"): causal_impact(x, x, T=8)
    with pytest.raises(ValueError, match="T \\(the first shifted episode\\)"): causal_impact(x, x, T=0)
    with pytest.raises(ValueError, match="at least 2 seeds"): causal_impact(x[:1], x[:1], T=4)
    bad = x.copy(); bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"): causal_impact(bad, x, T=4)
    with pytest.raises(ValueError, match="misaligned"): causal_impact(x, x[:2], T=4)
    with pytest.raises(ValueError, match="NaN"): damped_trend_forecast([1.0, np.nan, 2, 3, 4])
    with pytest.raises(ValueError, match=">= 2 seeds"): TimeSeriesConfig(seeds=(0,))
    with pytest.raises(ValueError, match="seed and episode"): episode_seed(-1, 0)


def test_series_alignment_and_bad_series_args(tiny):
    a = performance_series(tiny, "toybox/Breakout", seeds=[0, 1], n_episodes=2, max_steps=30)
    b = performance_series(tiny, "toybox/Breakout", seeds=[0, 2], n_episodes=2, max_steps=30)
    with pytest.raises(ValueError, match="misaligned"): causal_impact(a, b, T=1)
    with pytest.raises(ValueError, match="start_episode"): performance_series(tiny, "toybox/Breakout", [0], 2, start_episode=3)
    with pytest.raises(ValueError, match="repeat_action_probability"):
        performance_series(tiny, "ALE/Pong-v5", [0], 1, env_kwargs={"repeat_action_probability": 0.25})
    both = PerformanceSeries.concat([a, PerformanceSeries(a.table.assign(condition="again"), a.env_id)])
    assert both.conditions == ["control", "again"] and both.matrix(condition="again").shape == (2, 2)


@pytest.mark.parametrize("env_id", ["ALE/Pong-v5", "ALE/Breakout-v5"])
def test_zoo_actor_critic_agents_repeat_on_ale(env_id):
    """The study's real agents on the real emulator: a sampled PPO policy (seeded per episode) repeats exactly on
    seeded ALE episodes (sticky actions off), in both engines; a second seed plays differently."""
    from rlexplain.agents import load_best_agent
    pol, card = load_best_agent(env_id, "ppo", device="cpu")
    assert pol.stochastic
    kw = dict(seeds=[0, 1], n_episodes=1, max_steps=150, env_kwargs=card["env_kwargs"])
    a = performance_series(pol, env_id, **kw)
    b = performance_series(pol, env_id, engine="rollout", **kw)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.table.actions_hash.nunique() == 2
    assert check_fixed_seed(pol, env_id, seeds=[3], n_episodes=1, max_steps=150, env_kwargs=card["env_kwargs"]).ok


def test_demo_outputs_names_and_pong_finding():
    "demo_outputs prefixes names by game and reads Figure 5's Pong finding off the forecast intervals."
    from rlexplain.timeseries import TimeSeriesStudy, _forecast_finding
    fc = forecast({"ppo": np.linspace(5, 6, 30), "a2c": np.linspace(-15, -14, 30)}, horizon=5, window=3)
    ok, text = _forecast_finding("pong_ppo_better", fc)
    assert ok and "ppo" in text
    fc2 = forecast({"ppo": np.linspace(-15, -14, 30), "a2c": np.linspace(5, 6, 30)}, horizon=5, window=3)
    assert _forecast_finding("pong_ppo_better", fc2)[0] is False
