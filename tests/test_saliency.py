"Integration tests of rlexplain.saliency on hand-checkable networks, the lime package, and (if present) a zoo agent."
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import scipy.ndimage
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from rlexplain.core import Policy
from rlexplain.runs import load_result
from rlexplain.attribution import Attribution, explain
from rlexplain.saliency import (LIME_SEGMENTATIONS, PAPER_PARAMS, RISE, gaussian_blur, lime, noise_sensitivity, occlusion, rise,
                                sarfa, sarfa_score, segment)

SHAPE = (4, 32, 32)
ONES = np.ones((1, *SHAPE), np.float32)


class OnePixel(nn.Module):
    "Q = (I[3, 10, 21], 0.5)."
    def forward(self, x): return torch.stack([x[:, 3, 10, 21], torch.full_like(x[:, 0, 0, 0], 0.5)], -1)


class Region(nn.Module):
    "Q = (4 * mean of the top-left 12x12 region, 1, 0)."
    def forward(self, x): return torch.stack([4 * x[:, :, :12, :12].mean((1, 2, 3)), torch.ones(len(x)), torch.zeros(len(x))], -1)


class Constant(nn.Module):
    def __init__(self): super().__init__(); self.q = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
    def forward(self, x): return self.q.expand(len(x), 3)


def squares(hwc, size=8):
    H, W = hwc.shape[:2]
    return (np.arange(H)[:, None] // size) * math.ceil(W / size) + np.arange(W)[None, :] // size


@pytest.fixture(scope="module")
def px(): return Policy.from_module(OnePixel(), SHAPE, device="cpu")


@pytest.fixture(scope="module")
def reg(): return Policy.from_module(Region(), SHAPE, device="cpu")


def test_occlusion_lights_exactly_the_patch(px):
    one = np.zeros((1, 32, 32), np.float32); one[0, 10, 21] = 1
    np.testing.assert_array_equal(occlusion(px, ONES, patch=1).pixels(), one)
    patch = np.zeros((1, 32, 32), np.float32); patch[0, 10:12, 20:22] = 1
    np.testing.assert_array_equal(occlusion(px, ONES, patch=2, upsample="nearest").pixels(), patch)
    m = occlusion(px, ONES, patch=2).pixels()[0]                     # bilinear: the patch is the set of maxima
    assert np.argwhere(m == m.max()).tolist() == [[10, 20], [10, 21], [11, 20], [11, 21]]
    assert m.max() == pytest.approx(0.5625)
    np.testing.assert_allclose(occlusion(px, ONES, patch=3, score="diff", softmax=True, upsample="nearest").pixels()[0, 9:12, 21:24],
                               1 / (1 + np.exp(-0.5)) - 1 / (1 + np.exp(0.5)), rtol=1e-5)


def test_uint8_batches_and_actions(px):
    u8 = np.full((2, *SHAPE), 255, np.uint8)
    a = occlusion(px, u8, patch=4)
    b = occlusion(px, torch.ones(2, *SHAPE), patch=4)
    np.testing.assert_array_equal(a.pixels(), b.pixels())
    assert a.actions.tolist() == [0, 0]
    c = occlusion(px, u8, actions=np.array([0, 1]), patch=4)
    assert c.actions.tolist() == [0, 1]
    np.testing.assert_allclose(c.pixels()[1], 0.5)                    # action 1 is the constant 0.5


def test_noise_sensitivity(px):
    const = Policy.from_module(Constant(), SHAPE, device="cpu")
    rnd = np.random.default_rng(0).random((2, *SHAPE), dtype=np.float32)
    np.testing.assert_array_equal(noise_sensitivity(const, rnd).pixels(), 0)
    plus = np.zeros((32, 32), np.float32); plus[10, 20:23] = plus[9:12, 21] = 0.5
    np.testing.assert_allclose(noise_sensitivity(px, ONES, radius=1, perturbation="black").pixels()[0], plus)
    m = noise_sensitivity(px, rnd, radius=2, blur_frames=True).pixels()
    assert m.shape == (2, 32, 32) and (m >= 0).all() and np.isfinite(m).all()


def test_blur_equals_scipy():
    img = np.random.default_rng(1).random((4, 17, 23)).astype(np.float32)
    np.testing.assert_allclose(gaussian_blur(torch.from_numpy(img), 3.0).numpy(),
                               scipy.ndimage.gaussian_filter(img, sigma=(0, 3, 3)), atol=1e-5)
    np.testing.assert_allclose(gaussian_blur(torch.from_numpy(img), 2.0, frames=True).numpy(),
                               scipy.ndimage.gaussian_filter(img, sigma=2), atol=1e-5)


def test_sarfa_one_region(reg):
    m = sarfa(reg, ONES, radius=2)
    soft0 = lambda v: np.exp(v) / (np.exp(v) + np.e + 1)
    dp = soft0(4.0) - soft0(4 * (1 - 13 / 144))                    # a 13-pixel black disk inside the region, K = 1
    assert m.pixels().max() == pytest.approx(2 * dp / (1 + dp), rel=1e-5)
    assert (m.pixels()[0, 15:, :] == 0).all() and (m.pixels()[0, :, 15:] == 0).all()
    rnd = np.random.default_rng(3).random((1, *SHAPE), dtype=np.float32)   # blurring a constant image changes nothing
    mb = sarfa(reg, rnd, radius=3, perturbation="blur").pixels()[0]          # masks end 4 sigma = 12 px from the disk
    assert mb.max() > 0 and (mb[28:, :] == 0).all() and (mb[:, 28:] == 0).all()
    # K < 1 and the KL direction: hand-computed
    p_rem, h = np.exp([1, 0]) / np.exp([1, 0]).sum(), np.array([0.5, 0.5])
    dp = np.exp(2) / np.exp([2, 1, 0]).sum() - 1 / 3
    for kl, d in [("paper", (h * np.log(h / p_rem)).sum()), ("code", (p_rem * np.log(p_rem / h)).sum())]:
        k = 1 / (1 + d)
        got = sarfa_score(torch.tensor([2.0, 1, 0]), torch.tensor([[1.0, 1, 1]]), 0, kl=kl).item()
        assert got == pytest.approx(2 * k * dp / (k + dp), rel=1e-6)


def test_rise(reg, px):
    np.testing.assert_allclose(rise(reg, ONES, n_masks=16, s=4, p=1.0).pixels(), 4.0, rtol=1e-6)
    ex = RISE(200, 4, 0.5, seed=2)
    m = ex.masks(32, 32)
    assert ex.masks(32, 32) is m and torch.equal(RISE(200, 4, 0.5, seed=2).masks(32, 32), m)
    assert not torch.equal(RISE(200, 4, 0.5, seed=3).masks(32, 32), m)
    r1, r2 = ex(px, ONES), ex(px, ONES)
    np.testing.assert_array_equal(r1.pixels(), r2.pixels())
    assert r1.pixels()[0, 10, 21] == pytest.approx((m[:, 10, 21] ** 2).sum().item() / 100, rel=1e-4)


def test_lime_recovers_the_superpixel_and_matches_lime_image(px, reg):
    m = lime(px, ONES, segmentation=squares, num_samples=1000)
    sq = squares(np.zeros((32, 32, 1)))
    np.testing.assert_allclose(m.pixels()[0][sq == 6], 1.0, atol=0.05)
    np.testing.assert_allclose(m.pixels()[0][sq != 6], 0.0, atol=0.05)
    from lime.lime_image import LimeImageExplainer
    img = np.random.default_rng(4).random((1, *SHAPE), dtype=np.float32)
    ours = lime(reg, img, segmentation=squares, num_samples=200, seed=5)
    a = int(ours.actions[0])
    ref = LimeImageExplainer(random_state=5).explain_instance(
        np.moveaxis(img[0], 0, -1).astype(np.float64), lambda ims: reg.outputs(np.moveaxis(ims, -1, 1).astype(np.float32)).numpy(),
        labels=(a,), top_labels=None, hide_color=0, num_samples=200, batch_size=200, segmentation_fn=squares, random_seed=0)
    w = np.zeros(16)
    for f, v in ref.local_exp[a]: w[f] = v
    np.testing.assert_allclose(ours.pixels()[0], w[sq], atol=1e-6)


@pytest.mark.parametrize("name", list(LIME_SEGMENTATIONS))
def test_segmentations_are_numbered_from_zero(name):
    sg = segment(np.random.default_rng(0).random(SHAPE), name)
    assert sg.shape == (32, 32) and sg.min() == 0
    np.testing.assert_array_equal(np.unique(sg), np.arange(sg.max() + 1))


METHODS = [occlusion, noise_sensitivity, sarfa, RISE(8, 4), lime]


@pytest.mark.parametrize("fn", METHODS, ids=["occlusion", "noise", "sarfa", "rise", "lime"])
def test_bad_input_raises(fn, px):
    with pytest.raises(ValueError, match="channel-first"): fn(px, np.ones((1, 32, 32, 4), np.float32))
    nan = ONES.copy(); nan[0, 1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"): fn(px, nan)
    with pytest.raises(ValueError, match="out of range"): fn(px, ONES, actions=5)
    with pytest.raises(ValueError, match="out of range"): fn(px, ONES, actions=-1)
    with pytest.raises(ValueError, match=r"shape \(1,\)"): fn(px, ONES, actions=[0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"): fn(px, ONES * 2)


def test_bad_parameters_raise(px):
    with pytest.raises(ValueError, match=r"patch must be in \[1, 32\]"): occlusion(px, ONES, patch=40)
    with pytest.raises(ValueError, match="radius must be"): noise_sensitivity(px, ONES, radius=33)
    with pytest.raises(ValueError, match="radius must be"): sarfa(px, ONES, radius=0)
    with pytest.raises(ValueError, match="score must be"): occlusion(px, ONES, score="ratio")
    with pytest.raises(ValueError, match="kl must be"): sarfa(px, ONES, kl="js")
    with pytest.raises(ValueError, match="larger than the image"): RISE(4, s=40)(px, ONES)
    with pytest.raises(ValueError, match="p must be"): RISE(4, p=1.5)
    with pytest.raises(ValueError, match="unknown segmentation"): lime(px, ONES, segmentation="watershed")
    with pytest.raises(ValueError, match="at least 2 actions"):
        sarfa(Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(4 * 32 * 32, 1)), SHAPE, device="cpu"), ONES)
    with pytest.raises(ValueError, match="image observations"):
        occlusion(Policy.from_module(nn.Linear(8, 2), (8,), device="cpu"), np.zeros((1, 8), np.float32))
    with pytest.raises(TypeError, match="patch must be an int"): occlusion(px, ONES, patch=2.5)


def test_saliency_map_result(tmp_path, px):
    "A pixel-map function returns an Attribution: values (B, C, H, W), pixels() the method's map; save/load, normalized, plot."
    m = noise_sensitivity(px, np.ones((2, *SHAPE), np.float32), radius=1, perturbation="black")
    assert type(m) is Attribution and m.values.shape == (2, *SHAPE) and m.pixels().shape == (2, 32, 32)
    np.testing.assert_array_equal(m.states, np.ones((2, *SHAPE), np.float32))
    back = load_result(m.save(tmp_path / "m"))
    assert isinstance(back, Attribution) and back.method == m.method and back.params == m.params
    np.testing.assert_array_equal(back.values, m.values); np.testing.assert_array_equal(back.actions, m.actions)
    n = m.normalized()
    assert n.pixels().min() == 0 and n.pixels().max() == pytest.approx(1) and n.params["normalized"]
    assert len(m.to_frame()) == 2 * 32 * 32 and isinstance(m.summary(), pd.DataFrame) and len(m.summary()) == 2
    ax = m.plot(index=1, obs=np.full((2, *SHAPE), 128, np.uint8))
    assert isinstance(ax, plt.Axes) and ax.get_title().startswith("noise_sensitivity"); plt.close("all")
    with pytest.raises(IndexError): m.plot(index=2)


def test_pixel_maps_are_attributions_built_by_from_pixels(px):
    "A method's map is an Attribution; from_pixels rebuilds it from its pixels, value for value, and refuses a map without its actions."
    m = occlusion(px, ONES, patch=4)
    new = Attribution.from_pixels(m.pixels(), m.actions, m.method, m.params, channels=m.values.shape[1])
    assert type(m) is Attribution and type(new) is Attribution
    np.testing.assert_array_equal(new.values, m.values); np.testing.assert_array_equal(new.pixels(), m.pixels())
    with pytest.raises(ValueError, match="actions"): Attribution.from_pixels(np.zeros((2, 3, 3)), [0], "x")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_bounds_on_random_linear_agents(seed, radius):
    g = torch.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Flatten(), nn.Linear(4 * 12 * 12, 3))
    with torch.no_grad():
        for p_ in net.parameters(): p_.copy_(torch.randn(p_.shape, generator=g))
    pol = Policy.from_module(net, (4, 12, 12), device="cpu")
    obs = torch.rand(1, 4, 12, 12, generator=g)
    s = sarfa(pol, obs, radius=radius).pixels()
    assert ((s >= 0) & (s < 1)).all()
    assert (noise_sensitivity(pol, obs, radius=radius).pixels() >= 0).all()
    o = occlusion(pol, obs, patch=radius, score="diff", softmax=True).pixels()
    assert ((o >= -1) & (o <= 1)).all()
    n = rise(pol, obs, n_masks=20, s=3).normalized().pixels()
    assert n.min() >= 0 and n.max() <= 1


def test_paper_parameters_on_a_small_cnn():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(4, 8, 8, 4), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 20 * 20, 4))
    pol = Policy.from_module(net, (4, 84, 84), device="cpu")
    obs = np.zeros((1, 4, 84, 84), np.uint8); obs[:, :, 60:62, 30:40] = 200; obs[:, :, 20:24, 10:70] = 120
    for key in PAPER_PARAMS:
        m = explain(key, pol, obs, **PAPER_PARAMS[key][1])
        assert m.pixels().shape == (1, 84, 84) and np.isfinite(m.pixels()).all(), key
    with pytest.raises(LookupError, match="gradcam"): explain("gradcam", pol, obs)


def test_zoo_agent_if_present():
    from rlexplain.agent_zoo import list_zoo, load_agent
    from rlexplain.envs import ToyboxEnv
    z = list_zoo()
    z = z[z.env_id == "toybox/Breakout"] if len(z) else z
    if not len(z): pytest.skip("no toybox/Breakout agent in the zoo")
    agent = load_agent(z.path.iloc[0], device="cpu")
    obs, _ = ToyboxEnv("breakout").reset(seed=0)
    for m in (occlusion(agent, obs, patch=4), sarfa(agent, obs, radius=4), RISE(100, 8)(agent, obs)):
        assert m.pixels().shape == (1, 84, 84) and np.isfinite(m.pixels()).all()
        assert m.actions[0] == int(agent.act(obs[None], deterministic=True)[0])
