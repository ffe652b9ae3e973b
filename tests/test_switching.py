"Ad hoc switching (rlexplain.switching): the causal design's hand checks on random-weight teams, and the zoo's teams."
import numpy as np
import pandas as pd
import pytest
import torch

from rlexplain.core import Policy
from rlexplain.envs import team_returns
from rlexplain.switching import SwitchingConfig, SwitchingStudy, run_switching_study, switching_series
from rlexplain.timeseries import causal_impact


def team(seed: int) -> Policy:
    torch.manual_seed(seed)
    return Policy.from_module(torch.nn.Sequential(torch.nn.Linear(18, 16), torch.nn.Tanh(), torch.nn.Linear(16, 5)), (18,),
                              kind="logits", name=f"team{seed}")


def test_team_returns_batched_equals_one_by_one():
    a, b = team(0), team(1)
    together = team_returns("mpe2/simple_spread_v3", [a, a, b], seeds=[7, 8, 9])
    alone = np.concatenate([team_returns("mpe2/simple_spread_v3", [a, a, b], seeds=[s]) for s in (7, 8, 9)])
    np.testing.assert_allclose(together, alone)
    # sampled actions repeat with the same seeds, and differ from the greedy ones
    s1 = team_returns("mpe2/simple_spread_v3", [a, a, b], seeds=[7, 8], deterministic=False)
    np.testing.assert_array_equal(s1, team_returns("mpe2/simple_spread_v3", [a, a, b], seeds=[7, 8], deterministic=False))
    assert not np.allclose(s1, together[:2])


def test_switch_to_untrained_random_play_is_measured_not_assumed():
    a = team(0)
    ctl = switching_series(a, None, 0, seeds=[0, 1, 2, 3], n_episodes=6, T=3)
    rnd = switching_series(a, None, 3, seeds=[0, 1, 2, 3], n_episodes=6, T=3, condition="random")
    ci = causal_impact(rnd, ctl, T=3, n_boot=300)
    assert ci.pre_gap == 0.0                      # the treatment's pre-period was played and repeats the control
    post = rnd.table[rnd.table.episode >= 3]
    assert post.shifted.all() and np.allclose(post.attacked, 1.0)
    assert ci.ci_low <= ci.did <= ci.ci_high


def test_config_errors():
    with pytest.raises(ValueError, match=">= 2 seeds"): SwitchingConfig(seeds=(0,))
    with pytest.raises(ValueError, match="T must be in"): SwitchingConfig(T=30, n_episodes=30)
    with pytest.raises(ValueError, match="different zoo seeds"): SwitchingConfig(team=1, donor=1)
    assert SwitchingConfig.from_scale("paper").n_episodes == 100


def test_study_on_the_zoo_teams(tmp_path):
    "The shipped teams: a team switched to itself would be the control; an untrained newcomer costs the team return."
    try:
        study = run_switching_study(SwitchingConfig.demo(seeds=tuple(range(6)), n_episodes=16, T=8, n_boot=500))
    except LookupError as e:
        pytest.fail(f"the zoo lacks the simple_spread teams: {e}")
    assert set(study.impacts.label) == {"1 from team 1", "2 from team 1", "1 untrained"}
    assert (study.impacts.pre_gap == 0).all() and (study.impacts.placebo == 0).all()
    unt = study.impacts.set_index("label").loc["1 untrained"]
    assert unt.ci_high < 0, unt.to_dict()         # an untrained agent hurts the team (the paper's right column)
    study.save(tmp_path / "s")
    again = SwitchingStudy.load(tmp_path / "s")
    assert again.impacts.equals(study.impacts) and again.cfg == study.cfg


def test_config_rejects_bad_sizes_and_switches():
    for kw, msg in [(dict(n_boot=0), "n_boot"), (dict(horizon=-1), "horizon"), (dict(window=-3), "window"),
                    (dict(ks=(0,)), "ks"), (dict(ks=(), untrained_ks=()), "at least one switch"), (dict(interval="x"), "interval")]:
        with pytest.raises(ValueError, match=msg): SwitchingConfig(**kw)


def test_plots_label_units_and_seeds():
    "Every panel has a y-label in team-return units; the effects plot says which interval and how many seeds."
    import matplotlib.pyplot as plt
    a, b = team(0), team(1)
    cfg = SwitchingConfig(seeds=(0, 1, 2), n_episodes=6, T=3, window=2, horizon=2, ks=(1,), untrained_ks=())
    study = run_switching_study(cfg, teams={"team": a, "donor": b, "untrained": b})
    assert (study.impacts.n_seeds == 3).all() and (study.impacts.interval == "t").all()
    fig = study.plot(); assert isinstance(fig, plt.Figure)                     # multi-panel: the Figure
    assert all("team return" in ax.get_ylabel() for ax in fig.axes)
    ax = study.plot_effects()
    assert "95% t interval, 3 seeds" in ax.get_xlabel()
    plt.close("all")


from hypothesis import given, settings, strategies as st


@settings(max_examples=80, deadline=None)
@given(st.integers(-3, 40), st.integers(-3, 40), st.integers(-2, 5), st.one_of(st.none(), st.integers(-3, 45)),
       st.integers(-2, 5), st.lists(st.integers(-1, 6), max_size=4), st.floats(-0.5, 1.5) | st.just(float("nan")))
def test_config_valid_or_clear_error(n_episodes, T, n_boot, window, horizon, seeds, ci_level):
    "Random sizes: a config whose every field is usable, or a ValueError (never a config that fails later)."
    try:
        c = SwitchingConfig(n_episodes=n_episodes, T=T, n_boot=n_boot, window=window, horizon=horizon, seeds=tuple(seeds),
                            ci_level=ci_level)
    except ValueError:
        return
    assert 1 <= c.T < c.n_episodes and c.n_boot >= 1 and c.horizon >= 1 and 0 < c.ci_level < 1
    assert c.window is None or 1 <= c.window <= c.n_episodes
    assert len(set(c.seeds)) == len(c.seeds) >= 2 and min(c.seeds) >= 0


def test_pre_period_reused_from_the_control_is_what_replaying_gives(monkeypatch):
    "Before T every condition runs the unswitched team: `pre` (the control's series) gives those episodes without replaying them."
    import rlexplain.switching as sw
    a, b = team(0), team(1)
    kw = dict(seeds=[3, 1, 2], n_episodes=4, T=2)
    ctl = switching_series(a, None, 0, **kw)
    played = switching_series(a, b, 1, condition="1 from b", **kw)
    episodes, tr = [], sw.team_returns
    monkeypatch.setattr(sw, "team_returns", lambda env_id, pols, seeds, *r: (episodes.append(len(seeds)), tr(env_id, pols, seeds, *r))[1])
    reused = switching_series(a, b, 1, condition="1 from b", pre=ctl, **kw)
    assert episodes == [3 * 2]                      # only the post-period (3 seeds x 2 episodes) is played
    pd.testing.assert_frame_equal(reused.table, played.table)
    with pytest.raises(ValueError, match="same team, T"): switching_series(b, a, 1, pre=ctl, **kw)
    with pytest.raises(ValueError, match="lacks"): switching_series(a, b, 1, pre=ctl, **{**kw, "seeds": [3, 9]})
    with pytest.raises(ValueError, match=r"deterministic True \(wanted False\)"):   # a greedy control, a sampled run
        switching_series(a, b, 1, pre=ctl, deterministic=False, **kw)
    with pytest.raises(ValueError, match="env_kwargs"):                # the control played with other environment arguments
        switching_series(a, b, 1, pre=switching_series(a, None, 0, env_kwargs={"max_cycles": 5}, **kw), **kw)
    twice = type(ctl)(pd.concat([ctl.table, ctl.table.iloc[:1]], ignore_index=True), ctl.env_id, ctl.params)
    with pytest.raises(ValueError, match="repeats"): switching_series(a, b, 1, pre=twice, **kw)
