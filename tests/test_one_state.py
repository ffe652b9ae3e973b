"""Issue 54.1: one state explained alone equals the same state explained inside a batch, or a clear error names the
`background=` to pass; never an all-zero map without a word. Also `explain_episode`: one background for every batch."""
import numpy as np
import pytest
import torch
from torch import nn

from rlexplain.attribution import EXPLAINERS, explain
from rlexplain.core import Policy, linear_policy
from rlexplain.envs import Rollout

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

def _tab():
    torch.manual_seed(0)
    return Policy.from_module(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)), (4,), device="cpu")

X_TAB = np.random.default_rng(0).normal(size=(200, 4)).astype(np.float32)   # TabularSHAP's LightGBM student needs more than a handful
X_IMG = np.random.default_rng(1).random((6, 2, 6, 6), np.float32)
BACKGROUND = [k for k, cls in EXPLAINERS.items() if cls.uses_background]
DETERMINISTIC = ("integrated_gradients", "deep_shap")   # no random draws: alone and in a batch agree to float precision
FAST = dict(tabular_lime=dict(n_samples=200), gradient_shap=dict(n_samples=8))


@pytest.mark.parametrize("method", [m for m in BACKGROUND if "tabular" in EXPLAINERS[m].modalities])
def test_one_tabular_state_without_background_is_refused_or_not_zero(method):
    "Alone, with its default background (the explained states): a clear error naming background=, or a map that is not all zero."
    p = _tab()
    try: att = explain(method, p, X_TAB[:1], **FAST.get(method, {}))
    except ValueError as e:
        assert "background=" in str(e) and "equal the input" in str(e), str(e); return
    assert np.abs(att.values).max() > 0, f"{method}: one state gives an all-zero map without a word"


@pytest.mark.parametrize("method", [m for m in BACKGROUND if "tabular" in EXPLAINERS[m].modalities])
def test_one_tabular_state_with_background_equals_it_inside_a_batch(method):
    p, kw = _tab(), dict(FAST.get(method, {}), background=X_TAB)
    alone, batch = explain(method, p, X_TAB[3:4], **kw), explain(method, p, X_TAB[:6], **kw)
    assert np.abs(alone.values).max() > 0
    if method in DETERMINISTIC: np.testing.assert_allclose(alone.values[0], batch.values[3], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", [m for m in DETERMINISTIC + ("gradient_shap",)])
def test_one_image_state(method):
    p = linear_policy((2, 6, 6), 3)
    with pytest.raises(ValueError, match="background="): explain(method, p, X_IMG[:1], **FAST.get(method, {}))
    kw = dict(FAST.get(method, {}), background=X_IMG)
    alone, batch = explain(method, p, X_IMG[2:3], **kw), explain(method, p, X_IMG[:4], **kw)
    assert np.abs(alone.values).max() > 0
    if method in DETERMINISTIC: np.testing.assert_allclose(alone.values[0], batch.values[2], rtol=1e-4, atol=1e-6)


def test_a_background_that_is_the_explained_state_is_refused():
    with pytest.raises(ValueError, match="one distinct state is an explained state"):
        explain("integrated_gradients", _tab(), X_TAB[:1], background=np.repeat(X_TAB[:1], 3, 0))
    explain("integrated_gradients", _tab(), X_TAB[:1], background=np.zeros((1, 4), np.float32))   # captum's zero baseline: fine


def test_episode_explains_its_last_short_batch_against_the_episode():
    "33 steps in batches of 32: the 33rd frame is explained against the episode's states, not against itself (no all-zero map)."
    from rlexplain.episode import explain_episode
    T = 33; obs = np.random.default_rng(2).random((T, 2, 6, 6), np.float32)
    ro = Rollout(obs, np.zeros(T, np.int64), np.zeros(T, np.float32), np.zeros(T, np.int64), [], "toy")
    ep = explain_episode(linear_policy((2, 6, 6), 3), ro, "integrated_gradients", batch_size=32)
    assert len(ep.values) == T and (np.abs(ep.values).reshape(T, -1).max(1) > 0).all()
    with pytest.raises(ValueError, match="background="):
        explain_episode(linear_policy((2, 6, 6), 3), ro, "integrated_gradients", max_steps=1)
