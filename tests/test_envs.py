"Environments: clear errors for unknown ids, seeded ALE resets without reloading the ROM, JSON states only on request."
import gymnasium as gym
import numpy as np
import pytest

from rlexplain.envs import ToyboxEnv, collect_rollout, make_env


@pytest.mark.parametrize("env_id,hint", [("ALE/NoSuch-v5", "list the ALE ids"), ("ALE/Pong-v9", "list the ALE ids"),
                                         ("NoSuchGame-v0", "pprint_registry"), ("Foo/Bar-v0", "pprint_registry"),
                                         ("toybox/Pacman", "unknown Toybox game")])
def test_unknown_ids_get_a_clear_error(env_id, hint):
    with pytest.raises(ValueError, match=hint) as e:
        make_env(env_id)
    assert env_id.split("/")[-1].split("-")[0] in str(e.value) or "Toybox" in str(e.value)


def test_env_id_must_be_a_string():
    with pytest.raises(TypeError, match="env_id must be a string"):
        make_env(None)


def _episode(env, seed, n=120):
    o, _ = env.reset(seed=seed); rng = np.random.default_rng(seed); obs, rew = [o], []
    for _ in range(n):
        o, r, term, trunc, _ = env.step(int(rng.integers(env.action_space.n))); obs.append(o); rew.append(r)
        if term or trunc: break
    return np.stack(obs), np.array(rew)


@pytest.mark.parametrize("game", ["ALE/Breakout-v5", "ALE/Pong-v5"])
def test_seeded_ale_reset_without_reload_repeats_ale_pys_episode(game):
    plain = gym.wrappers.FrameStackObservation(gym.wrappers.AtariPreprocessing(
        gym.make(game, frameskip=1, repeat_action_probability=0.0, max_num_frames_per_episode=108_000),
        noop_max=30, frame_skip=4, screen_size=84), 4)
    fast = make_env(game); _episode(fast, 99)                    # a used env, then seeded resets
    for s in (3, 11):
        a, b = _episode(fast, s), _episode(plain, s)
        np.testing.assert_array_equal(a[0], b[0]); np.testing.assert_array_equal(a[1], b[1])
    load = fast.unwrapped.load_game; calls = []
    fast.unwrapped.load_game = lambda: (calls.append(1), load())
    fast.reset(seed=5)
    assert calls == []                                           # no ROM reload


def test_sticky_actions_keep_ale_pys_reset():
    env = make_env("ALE/Breakout-v5", repeat_action_probability=0.25)
    assert not any(type(w).__name__ == "ALESeedWithoutReload" for w in _wrappers(env))


def _wrappers(env):
    while hasattr(env, "env"): yield env; env = env.env


def test_json_states_only_on_request():
    env = ToyboxEnv("breakout")
    assert collect_rollout(env, None, seed=1, max_steps=5).states == []
    ro = collect_rollout(env, None, seed=1, max_steps=5, record_states=True)
    assert len(ro.states) == len(ro.actions) == 5 and isinstance(ro.states[0], dict)
    with pytest.raises(ValueError, match="needs a Toybox environment"):
        collect_rollout("CartPole-v1", None, max_steps=3, record_states=True)


@pytest.mark.parametrize("env_id,digest,n", [("toybox/Breakout", "6861de7a9098a2ad", 152), ("ALE/Breakout-v5", "9e0380dc32a49426", 200)])
def test_faster_rollouts_keep_the_observations(env_id, digest, n):
    """Two seeded random-play episodes hash to what rlexplain 2762fb3 recorded (before the no-op frames went unrendered,
    the ALE reset stopped reloading the ROM and the frame stack was shifted in place)."""
    import hashlib
    ro = collect_rollout(make_env(env_id), None, n_episodes=2, seed=5, max_steps=100)
    assert len(ro.actions) == n
    assert hashlib.sha256(np.asarray(ro.obs).tobytes()).hexdigest()[:16] == digest
