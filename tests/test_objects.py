"Issue 51: object masks from the emulator's RAM, aligned to the agent's frames, and the localisation measures against them."
import numpy as np
import pytest

from rlexplain.envs import make_env
from rlexplain.objects import (OBJECT_READERS, ObjectMasks, chance_level, object_reader, pointing_game, relevance_mass,
                               relevance_rank, to_agent_grid, where_it_looks)

# where only the ball is bright on the agent's 84 x 84 grid: below the bricks, above the paddle, inside the walls
# (Breakout); the court between the two paddles (Pong)
BALL_ONLY = {"ALE/Breakout-v5": (slice(38, 75), slice(5, 79)), "ALE/Pong-v5": (slice(14, 77), slice(11, 73))}


@pytest.mark.parametrize("env_id", sorted(BALL_ONLY))
def test_the_balls_mask_covers_the_ball_and_moves_with_it(env_id):
    """Every lit cell of the newest frame where only the ball can be lit lies in the ball's mask, the mask is small (a
    ball, not the court), and its centre moves from step to step as the ball flies; a random agent, 150 steps."""
    env = ObjectMasks(make_env(env_id, seed=3)); obs, info = env.reset(seed=3); rng = np.random.default_rng(3)
    region = BALL_ONLY[env_id]; seen = moved = 0; last = None
    for t in range(150):
        obs, _, term, trunc, info = env.step(1 if t % 20 == 0 else int(rng.integers(env.action_space.n)))
        frame, ball = obs[-1], info["objects"]["ball"]
        assert ball.shape == obs.shape and ball.dtype == bool          # one mask per stacked frame, aligned with them
        lit = np.zeros_like(ball[-1]); lit[region] = frame[region] > frame[region].min() + 20
        if lit.any():
            seen += 1
            assert (lit & ~ball[-1]).sum() == 0, (env_id, t, np.argwhere(lit & ~ball[-1])[:3])
            assert 0 < ball[-1].sum() <= 40, ball[-1].sum()
            c = np.argwhere(ball[-1]).mean(0)
            if last is not None and np.abs(c - last).max() > 0: moved += 1
            last = c
        else: last = None
        if term or trunc: obs, info = env.reset(seed=3); last = None
    assert seen >= 30 and moved >= 0.8 * (seen - 2), (seen, moved)


def test_the_paddles_follow_the_ram_and_the_stack_is_oldest_first():
    "The agent's paddle mask moves when the agent moves it, and the stack's last mask is the newest frame's."
    env = ObjectMasks(make_env("ALE/Breakout-v5", seed=0)); obs, info = env.reset(seed=0)
    assert all((m[0] == m[-1]).all() for m in info["objects"].values())       # after reset: the reset frame four times
    cols = []
    for a in [2] * 6 + [3] * 12:                                              # RIGHT, then LEFT
        obs, _, _, _, info = env.step(a)
        cols.append(np.argwhere(info["objects"]["paddle"][-1])[:, 1].mean())
        assert (info["objects"]["paddle"][-2] == env._masks[-2]["paddle"]).all()
    assert cols[5] > cols[0] and cols[-1] < cols[6]


def test_a_game_without_masks_and_bad_maps_are_refused():
    with pytest.raises(LookupError, match="the games with masks are ALE/Breakout-v5, ALE/Pong-v5"): object_reader("ALE/Qbert-v5")
    with pytest.raises(LookupError, match="no object masks for 'toybox/Breakout'"): ObjectMasks(make_env("toybox/Breakout"), "toybox/Breakout")
    m = np.zeros((2, 4, 84, 84), bool); m[:, :, 1, 1] = True
    with pytest.raises(ValueError, match="must have one shape"): relevance_mass(np.ones((2, 84, 84)), m)
    with pytest.raises(ValueError, match="masks must be bool"): relevance_rank(np.ones(m.shape), m.astype(np.uint8))
    with pytest.raises(ValueError, match="NaN or infinite"): pointing_game(np.full(m.shape, np.nan), m)
    with pytest.raises(ValueError, match="unknown localisation measure"): where_it_looks(np.ones(m.shape), {"ball": m}, measures=("mass",))
    with pytest.raises(ValueError, match="expects one"): to_agent_grid(m[0])
    with pytest.warns(UserWarning, match="2 of 2 saliency maps are zero everywhere"): assert np.isnan(relevance_mass(np.zeros(m.shape), m)).all()


def test_measures_by_hand_and_their_chance_levels():
    "The object's own mask scores 1; a uniform map's mass is the chance level |M|/N; a random map's rank averages it."
    rng = np.random.default_rng(0)
    m = np.zeros((400, 4, 84, 84), bool); m[:, :, 10:30, 20:40] = True      # 1,600 of 28,224 cells
    test = m.astype(float)
    assert (relevance_mass(test, m) == 1).all() and (relevance_rank(test, m) == 1).all() and (pointing_game(test, m) == 1).all()
    np.testing.assert_allclose(relevance_mass(np.ones(m.shape), m), 1600 / 28224)
    np.testing.assert_allclose(chance_level(m), 1600 / 28224)
    noise = rng.random(m.shape)
    assert abs(relevance_rank(noise, m).mean() - 1600 / 28224) < 0.01        # random maps: chance, within 1 point
    assert abs(pointing_game(noise, m).mean() - 1600 / 28224) < 0.03
    a = np.array([[0.5, -0.1, 0.9, 0.0]]); mm = np.array([[True, True, False, False]])
    assert relevance_mass(a, mm)[0] == pytest.approx(0.4) and relevance_rank(a, mm)[0] == 0.5 and pointing_game(a, mm)[0] == 0.0
    t = where_it_looks(np.vstack([a, a]), {"ball": np.vstack([mm, np.zeros_like(mm)])}, episodes=np.array([0, 1]))
    assert len(t) == 6 and set(t.measure) == {"relevance_mass", "relevance_rank", "pointing_game"}
    assert t[t.state == 1].value.isna().all() and not t[t.state == 1].present.any() and t[t.state == 0].chance.eq(0.5).all()


def test_the_measures_equal_quantus_where_the_definitions_coincide():
    """Quantus' RelevanceMassAccuracy, RelevanceRankAccuracy and PointingGame (abs=True) on the same random maps and masks
    (maps without ties, so that the top-K cells are the same whatever the sort)."""
    quantus = pytest.importorskip("quantus")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 1, 84, 84)).astype(np.float32)
    s = np.zeros(a.shape, bool)
    for i in range(6):
        y, x = rng.integers(0, 70, 2); s[i, :, y:y + rng.integers(2, 14), x:x + rng.integers(2, 14)] = True
    s[5, :, 40:44, 40:44] = True; a[5, 0, 41, 41] = 99.0                       # one map whose maximum is on the object
    kw = dict(model=None, x_batch=rng.random(a.shape).astype(np.float32), y_batch=np.zeros(6, int), a_batch=a,
              s_batch=s.astype(np.float32), device="cpu")
    for ours, Q in ((relevance_mass, quantus.RelevanceMassAccuracy), (relevance_rank, quantus.RelevanceRankAccuracy),
                    (pointing_game, quantus.PointingGame)):
        theirs = np.asarray(Q(abs=True, disable_warnings=True)(**kw), dtype=float)
        np.testing.assert_allclose(ours(a, s), theirs, rtol=1e-5, atol=1e-7, err_msg=Q.__name__)
    assert pointing_game(a, s)[5] == 1.0


def test_every_reader_returns_screen_masks():
    "Each game's reader maps (RAM, screen) to (210, 160) bool masks; on a real frame the paddle and score are present."
    for env_id, read in OBJECT_READERS.items():
        env = make_env(env_id, seed=0); env.reset(seed=0); ale = env.unwrapped.ale
        masks = read(ale.getRAM(), ale.getScreenRGB())
        assert all(m.shape == (210, 160) and m.dtype == bool for m in masks.values()), env_id
        assert masks["paddle"].any() and masks["score"].any() and masks["walls"].any(), env_id


def test_score_knows_the_localisation_metrics_per_object_with_their_chance_level():
    """`score("relevance_mass" | "relevance_rank" | "pointing_game", policy, states, attribution, masks=, object=)` gives
    the functions' per-state values, NaN where the object is absent, and the chance level in its params and raw."""
    from rlexplain.attribution import METRICS, Attribution, score
    from rlexplain.core import linear_policy
    assert {"relevance_mass", "relevance_rank", "pointing_game"} <= set(METRICS)
    rng = np.random.default_rng(2)
    X = rng.random((5, 4, 84, 84)).astype(np.float32); pol = linear_policy((4, 84, 84), 3, seed=0)
    att = Attribution(rng.normal(size=X.shape).astype(np.float32), np.zeros(5, int), "noise", {}, X)
    m = np.zeros(X.shape, bool); m[:4, :, 30:40, 30:40] = True                 # the last state has no such object
    for name, fn in (("relevance_mass", relevance_mass), ("relevance_rank", relevance_rank), ("pointing_game", pointing_game)):
        r = score(name, pol, X, att, masks=m, object="ball")
        np.testing.assert_allclose(r.per_state, fn(att.values, m), equal_nan=True)
        assert np.isnan(r.per_state[4]) and r.value == pytest.approx(np.nanmean(fn(att.values, m)))
        assert r.params["object"] == "ball" and r.params["chance"] == pytest.approx(400 / 28224) and r.params["n_present"] == 4
        assert np.isnan(r.raw["chance"][4])
    with pytest.raises(ValueError, match="needs masks="): score("pointing_game", pol, X, att)
