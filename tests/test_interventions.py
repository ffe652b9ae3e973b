"Integration tests of rlexplain.interventions on real Toybox games: catalogue sizes, edits on sampled states, errors."
import json

import numpy as np
import pytest

from rlexplain.envs import ToyboxEnv, collect_rollout
from rlexplain.interventions import (GAMES, InterventionNotApplicable, catalogue, get, registry, render_state,
                                     state_diff)
from rlexplain.ir import IRState, intervened_observations


def test_catalogue_sizes_match_the_paper():
    assert {g: len(registry(g)) for g in GAMES} == {"breakout": 38, "amidar": 69, "spaceinvaders": 88}
    assert [len(registry("breakout", family=f)) for f in
            ("paddle width", "paddle speed", "paddle position", "drop brick row", "drop brick column")] == [4, 6, 4, 6, 18]
    assert sum(catalogue("spaceinvaders").placebo) == 1


@pytest.mark.parametrize("game", GAMES)
def test_interventions_on_sampled_states(game):
    "On states of a real (random-play) episode each intervention either edits only what it declares or says it does not apply."
    env = ToyboxEnv(game)
    ro = collect_rollout(env, None, n_episodes=1, seed=1, record_obs=False, record_states=True, max_steps=150)
    states = [ro.states[i] for i in (10, len(ro.states) - 1)]
    n_applied = 0
    for s in states:
        before = json.dumps(s, sort_keys=True)
        for iv in registry(game):
            try: new = iv.apply(s)
            except InterventionNotApplicable as e:
                assert iv.name in str(e); continue
            n_applied += 1
            d = state_diff(s, new)
            assert iv.placebo or d, iv.name
            assert all(p.split("[")[0].split(".")[0] in iv.touches for p in d), (iv.name, d[:3])
        assert json.dumps(s, sort_keys=True) == before, "an intervention mutated its input"
    assert n_applied >= len(registry(game))  # most apply on these states


def test_intervened_observations_differ_and_skip_honestly():
    env = ToyboxEnv("breakout", noop_max=0)
    start = env.start_state()
    cleared = get("breakout", "drop_row_0").apply(start)
    states = [IRState((start,), -1), IRState((cleared,), 5)]
    ivs = [get("breakout", "drop_row_0"), get("breakout", "paddle_width_48")]
    obs, valid, skipped = intervened_observations(env, states, ivs)
    assert obs.shape == (3, 2, 4, 84, 84) and valid.tolist() == [[True, True], [True, False], [True, True]]
    assert skipped[0][:2] == ("drop_row_0", 1) and "already gone" in skipped[0][2]
    assert not np.array_equal(obs[0, 0], obs[1, 0]) and not np.array_equal(obs[0, 0], obs[2, 0])
    # "start" semantics: every intervened row uses the start state, so drop_row_0 applies to column 1 as well
    _, valid_start, _ = intervened_observations(env, states, ivs, base="start")
    assert valid_start.all()


def test_render_and_errors():
    frame = render_state("SpaceInvaders", ToyboxEnv("spaceinvaders", noop_max=0).start_state())
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.max() > 0
    with pytest.raises(ValueError, match="interventions exist for"): registry("pong")
    with pytest.raises(ValueError, match="no intervention"): get("amidar", "remove_tile_r99")
    with pytest.raises(TypeError): get("amidar", "drop_enemy_0").apply("not a state")
