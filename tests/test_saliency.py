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
from rlexplain.saliency import (LIME_SEGMENTATIONS, PAPER_PARAMS, RISE, SARFA, LIMESlic, NoiseSensitivity, Occlusion, gaussian_blur,
                                segment)

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
    np.testing.assert_array_equal(Occlusion(patch=1).explain(px, ONES).pixels(), one)
    patch = np.zeros((1, 32, 32), np.float32); patch[0, 10:12, 20:22] = 1
    np.testing.assert_array_equal(Occlusion(patch=2, upsample="nearest").explain(px, ONES).pixels(), patch)
    m = Occlusion(patch=2).explain(px, ONES).pixels()[0]                     # bilinear: the patch is the set of maxima
    assert np.argwhere(m == m.max()).tolist() == [[10, 20], [10, 21], [11, 20], [11, 21]]
    assert m.max() == pytest.approx(0.5625)
    np.testing.assert_allclose(Occlusion(patch=3, score="diff", softmax=True, upsample="nearest").explain(px, ONES).pixels()[0, 9:12, 21:24],
                               1 / (1 + np.exp(-0.5)) - 1 / (1 + np.exp(0.5)), rtol=1e-5)


def test_uint8_batches_and_actions(px):
    u8 = np.full((2, *SHAPE), 255, np.uint8)
    a = Occlusion(patch=4).explain(px, u8)
    b = Occlusion(patch=4).explain(px, torch.ones(2, *SHAPE))
    np.testing.assert_array_equal(a.pixels(), b.pixels())
    assert a.actions.tolist() == [0, 0]
    c = Occlusion(patch=4).explain(px, u8, np.array([0, 1]))
    assert c.actions.tolist() == [0, 1]
    np.testing.assert_allclose(c.pixels()[1], 0.5)                    # action 1 is the constant 0.5


def test_noise_sensitivity(px):
    const = Policy.from_module(Constant(), SHAPE, device="cpu")
    rnd = np.random.default_rng(0).random((2, *SHAPE), dtype=np.float32)
    np.testing.assert_array_equal(NoiseSensitivity().explain(const, rnd).pixels(), 0)
    plus = np.zeros((32, 32), np.float32); plus[10, 20:23] = plus[9:12, 21] = 0.5
    np.testing.assert_allclose(NoiseSensitivity(radius=1, perturbation="black").explain(px, ONES).pixels()[0], plus)
    m = NoiseSensitivity(radius=2, blur_frames=True).explain(px, rnd).pixels()
    assert m.shape == (2, 32, 32) and (m >= 0).all() and np.isfinite(m).all()


def test_blur_equals_scipy():
    img = np.random.default_rng(1).random((4, 17, 23)).astype(np.float32)
    np.testing.assert_allclose(gaussian_blur(torch.from_numpy(img), 3.0).numpy(),
                               scipy.ndimage.gaussian_filter(img, sigma=(0, 3, 3)), atol=1e-5)
    np.testing.assert_allclose(gaussian_blur(torch.from_numpy(img), 2.0, frames=True).numpy(),
                               scipy.ndimage.gaussian_filter(img, sigma=2), atol=1e-5)


def test_sarfa_one_region(reg):
    m = SARFA(radius=2).explain(reg, ONES)
    soft0 = lambda v: np.exp(v) / (np.exp(v) + np.e + 1)
    dp = soft0(4.0) - soft0(4 * (1 - 13 / 144))                    # a 13-pixel black disk inside the region, K = 1
    assert m.pixels().max() == pytest.approx(2 * dp / (1 + dp), rel=1e-5)
    assert (m.pixels()[0, 15:, :] == 0).all() and (m.pixels()[0, :, 15:] == 0).all()
    rnd = np.random.default_rng(3).random((1, *SHAPE), dtype=np.float32)   # blurring a constant image changes nothing
    mb = SARFA(radius=3, perturbation="blur").explain(reg, rnd).pixels()[0]          # masks end 4 sigma = 12 px from the disk
    assert mb.max() > 0 and (mb[28:, :] == 0).all() and (mb[:, 28:] == 0).all()
    # K < 1 and the KL direction: hand-computed
    p_rem, h = np.exp([1, 0]) / np.exp([1, 0]).sum(), np.array([0.5, 0.5])
    dp = np.exp(2) / np.exp([2, 1, 0]).sum() - 1 / 3
    for kl, d in [("paper", (h * np.log(h / p_rem)).sum()), ("code", (p_rem * np.log(p_rem / h)).sum())]:
        k = 1 / (1 + d)
        got = SARFA.score(torch.tensor([2.0, 1, 0]), torch.tensor([[1.0, 1, 1]]), 0, kl=kl).item()
        assert got == pytest.approx(2 * k * dp / (k + dp), rel=1e-6)


def test_rise(reg, px):
    np.testing.assert_allclose(RISE(n_samples=16, s=4, p=1.0).explain(reg, ONES).pixels(), 4.0, rtol=1e-6)
    ex = RISE(n_samples=200, s=4, p=0.5, seed=2)
    m = ex.masks(32, 32)
    assert ex.masks(32, 32) is m and torch.equal(RISE(n_samples=200, s=4, p=0.5, seed=2).masks(32, 32), m)
    assert not torch.equal(RISE(n_samples=200, s=4, p=0.5, seed=3).masks(32, 32), m)
    r1, r2 = ex.explain(px, ONES), ex.explain(px, ONES)
    np.testing.assert_array_equal(r1.pixels(), r2.pixels())
    assert r1.pixels()[0, 10, 21] == pytest.approx((m[:, 10, 21] ** 2).sum().item() / 100, rel=1e-4)


def test_lime_recovers_the_superpixel_and_matches_lime_image(px, reg):
    m = LIMESlic(segmentation=squares, n_samples=1000).explain(px, ONES)
    sq = squares(np.zeros((32, 32, 1)))
    np.testing.assert_allclose(m.pixels()[0][sq == 6], 1.0, atol=0.05)
    np.testing.assert_allclose(m.pixels()[0][sq != 6], 0.0, atol=0.05)
    from lime.lime_image import LimeImageExplainer
    img = np.random.default_rng(4).random((1, *SHAPE), dtype=np.float32)
    ours = LIMESlic(segmentation=squares, n_samples=200, seed=5).explain(reg, img)
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


METHODS = [Occlusion(), NoiseSensitivity(), SARFA(), RISE(n_samples=8, s=4), LIMESlic()]


@pytest.mark.parametrize("ex", METHODS, ids=["occlusion", "noise", "sarfa", "rise", "lime"])
def test_bad_input_raises(ex, px):
    with pytest.raises(ValueError, match="channel-first"): ex.explain(px, np.ones((1, 32, 32, 4), np.float32))
    nan = ONES.copy(); nan[0, 1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"): ex.explain(px, nan)
    with pytest.raises(ValueError, match="out of range"): ex.explain(px, ONES, 5)
    with pytest.raises(ValueError, match="out of range"): ex.explain(px, ONES, -1)
    with pytest.raises(ValueError, match=r"shape \(1,\)"): ex.explain(px, ONES, [0, 1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"): ex.explain(px, ONES * 2)


def test_bad_parameters_raise(px):
    with pytest.raises(ValueError, match=r"patch must be in \[1, 32\]"): Occlusion(patch=40).explain(px, ONES)
    with pytest.raises(ValueError, match="radius must be"): NoiseSensitivity(radius=33).explain(px, ONES)
    with pytest.raises(ValueError, match="radius must be"): SARFA(radius=0).explain(px, ONES)
    with pytest.raises(ValueError, match="score must be"): Occlusion(score="ratio").explain(px, ONES)
    with pytest.raises(ValueError, match="kl must be"): SARFA(kl="js").explain(px, ONES)
    with pytest.raises(ValueError, match="larger than the image"): RISE(n_samples=4, s=40).explain(px, ONES)
    with pytest.raises(ValueError, match="p must be"): RISE(n_samples=4, p=1.5).explain(px, ONES)
    with pytest.raises(ValueError, match="unknown segmentation"): LIMESlic(segmentation="watershed").explain(px, ONES)
    with pytest.raises(ValueError, match="at least 2 actions"):
        SARFA().explain(Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(4 * 32 * 32, 1)), SHAPE, device="cpu"), ONES)
    with pytest.raises(ValueError, match="image states only"):
        Occlusion().explain(Policy.from_module(nn.Linear(8, 2), (8,), device="cpu"), np.zeros((1, 8), np.float32))
    with pytest.raises(TypeError, match="patch must be an int"): Occlusion(patch=2.5).explain(px, ONES)


def test_saliency_map_result(tmp_path, px):
    "A pixel-map function returns an Attribution: values (B, C, H, W), pixels() the method's map; save/load, normalized, plot."
    m = NoiseSensitivity(radius=1, perturbation="black").explain(px, np.ones((2, *SHAPE), np.float32))
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
    m = Occlusion(patch=4).explain(px, ONES)
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
    s = SARFA(radius=radius).explain(pol, obs).pixels()
    assert ((s >= 0) & (s < 1)).all()
    assert (NoiseSensitivity(radius=radius).explain(pol, obs).pixels() >= 0).all()
    o = Occlusion(patch=radius, score="diff", softmax=True).explain(pol, obs).pixels()
    assert ((o >= -1) & (o <= 1)).all()
    n = RISE(n_samples=20, s=3).explain(pol, obs).normalized().pixels()
    assert n.min() >= 0 and n.max() <= 1


def test_paper_parameters_on_a_small_cnn():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(4, 8, 8, 4), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 20 * 20, 4))
    pol = Policy.from_module(net, (4, 84, 84), device="cpu")
    obs = np.zeros((1, 4, 84, 84), np.uint8); obs[:, :, 60:62, 30:40] = 200; obs[:, :, 20:24, 10:70] = 120
    for key, (name, params) in PAPER_PARAMS.items():
        m = explain(name, pol, obs, **params)
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
    for m in (Occlusion(patch=4).explain(agent, obs), SARFA(radius=4).explain(agent, obs), RISE(n_samples=100, s=8).explain(agent, obs)):
        assert m.pixels().shape == (1, 84, 84) and np.isfinite(m.pixels()).all()
        assert m.actions[0] == int(agent.act(obs[None], deterministic=True)[0])
