"Integration tests of rlexplain.ir on hand-checkable cases and on real Toybox states."
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from rlexplain.core import Policy
from rlexplain.envs import ToyboxEnv
from rlexplain.ir import (IRMatrix, interventional_robustness, intervened_observations, ir_from_agents, ir_matrix,
                          js_divergence, sample_states)


def test_known_values():
    assert js_divergence(np.eye(2)) == pytest.approx(1.0)
    assert js_divergence([[1, 0], [0.5, 0.5]]) == pytest.approx(0.311278, abs=1e-5)
    assert interventional_robustness(np.tile([0.2, 0.8], (5, 1))) == pytest.approx(1.0)
    assert interventional_robustness(np.eye(6)) == pytest.approx(0.0, abs=1e-9)
    # 4 agents, actions (0, 0, 1, 1): histogram (1/2, 1/2) -> JSD = 1 bit, R = 1 - 1/2
    assert interventional_robustness(np.eye(3)[[0, 0, 1, 1]]) == pytest.approx(0.5)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 10), st.integers(2, 8), st.integers(0, 10_000))
def test_r_bounds_and_sampling(n, a, seed):
    p = np.random.default_rng(seed).dirichlet(np.ones(a), size=(3, n))
    r = ir_from_agents(p, True, t=5, seed=seed)
    assert ((r >= 0) & (r <= 1)).all()


@pytest.mark.parametrize("bad,match", [
    (np.eye(3)[[0]], "n >= 2"),
    (np.array([[0.5, 0.4], [1.0, 0.0]]), "sum to 1"),
    (np.array([[np.nan, 1.0], [1.0, 0.0]]), "NaN"),
    (np.array([1.0, 0.0]), "shape"),
])
def test_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        interventional_robustness(bad)


def test_matrix_on_real_states_and_save_load(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 84 * 84, 4))
    a = Policy.from_module(net, (4, 84, 84), kind="q", device="cpu")
    env = ToyboxEnv("breakout")
    states = sample_states(None, env, p=3, seed=1, max_steps=100)

    class Wide:
        name = "wide"
        def apply(self, s):
            s = dict(s); s["paddle_width"] = 48.0; return s

    class Never:
        name = "never"
        def apply(self, s):
            raise ValueError("does not fit")

    obs, valid, skipped = intervened_observations(env, states, [Wide(), Never()])
    assert obs.shape == (3, 3, 4, 84, 84) and valid[:2].all() and not valid[2].any() and len(skipped) == 3
    assert not np.array_equal(obs[0], obs[1])             # the wider paddle is visible
    m = ir_matrix([a, a], obs, valid, interventions=["none", "wide", "never"], pipeline="x", frames=1)
    assert np.allclose(m.R[:2], 1.0) and np.isnan(m.R[2]).all()
    m.save(tmp_path / "m")
    m2 = IRMatrix.load(tmp_path / "m")
    np.testing.assert_array_equal(m2.R, m.R)
    assert m2.summary()["original"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same action count"):
        ir_matrix([a, Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 84 * 84, 3)), (4, 84, 84), device="cpu")], obs)
