"""Occlusion's exact incremental evaluation (issue 28: `_conv_chain`, `_occlusion_plan`, `_incremental_outputs` in
rlexplain.attribution.explainers.occlusion): hand-checked outputs, the same maps as the plain batched forward on random
conv nets and on the zoo's image agents, and the fall back to the plain forward for every network that is not a plain chain."""
import numpy as np
import pytest
import torch
from torch import nn

from rlexplain.core import Policy
from rlexplain.attribution import Occlusion, explain
from rlexplain.attribution._utils import forward_batches, patch_masks, perturb
import rlexplain.attribution.explainers.occlusion as P


def _sum_net(k: int, s: int, hw: int) -> Policy:
    "Q = the sum of a 1-channel image over the pixels a conv (kernel k, stride s, weights 1) reads: conv, ReLU, Flatten, Linear of ones."
    conv = nn.Conv2d(1, 1, k, s, bias=False); nn.init.ones_(conv.weight)
    n = ((hw - k) // s + 1) ** 2
    lin = nn.Linear(n, 1, bias=False); nn.init.ones_(lin.weight)
    return Policy.from_module(nn.Sequential(conv, nn.ReLU(), nn.Flatten(), lin), (1, hw, hw), device="cpu")


def test_hand_checked_sums():
    ones = np.ones((1, 1, 6, 6), np.float32)
    pol = _sum_net(2, 2, 6)                 # reads every pixel: Q = 36 on ones, a black k x k patch removes k^2 (fewer at the border)
    assert P._conv_chain(pol) is not None
    np.testing.assert_allclose(Occlusion(patch=2, upsample="nearest").explain(pol, ones).pixels(), 1 - 32.0)
    np.testing.assert_allclose(Occlusion(patch=1, upsample="nearest").explain(pol, ones).pixels(), 1 - 35.0)
    m = Occlusion(patch=4, upsample="nearest").explain(pol, ones).pixels()[0]
    assert (m[0, 0], m[0, 5], m[5, 0], m[5, 5]) == (1 - 20.0, 1 - 28.0, 1 - 28.0, 1 - 32.0)
    # kernel 2, stride 3 reads rows and columns {0, 1, 3, 4} only: Q = 16; occluding a pixel in row/column 2 or 5 changes nothing
    pol = _sum_net(2, 3, 6)
    m = Occlusion(patch=1, upsample="nearest").explain(pol, ones).pixels()[0]
    read = np.isin(np.arange(6), [0, 1, 3, 4])
    np.testing.assert_allclose(m, np.where(read[:, None] & read[None, :], 1 - 15.0, 1 - 16.0))
    # grey 0.5: a read pixel drops by 0.5
    np.testing.assert_allclose(Occlusion(patch=1, color=0.5, upsample="nearest").explain(pol, ones).pixels()[0],
                               np.where(read[:, None] & read[None, :], 1 - 15.5, 1 - 16.0))


def test_affected_range_by_hand():
    lo, hi = P._affected_range(torch.tensor([0, 6, 8, 83]), torch.tensor([1, 7, 9, 83]), 8, 4, 20)
    assert lo.tolist() == [0, 0, 1, 19] and hi.tolist() == [0, 1, 2, 19]
    lo, hi = P._affected_range(torch.tensor([2, 2]), torch.tensor([2, 3]), 2, 3, 3)
    assert lo.tolist() == [1, 1] and hi.tolist() == [0, 1]


class _Duel(nn.Module):
    def __init__(self, f, a): super().__init__(); self.v, self.a = nn.Linear(f, 1), nn.Linear(f, a)
    def forward(self, z): a = self.a(z); return self.v(z) + a - a.mean(1, keepdim=True)


def _small(linear: bool, seed: int = 0) -> Policy:
    torch.manual_seed(seed)
    convs = [nn.Conv2d(3, 5, 4, 2), nn.ReLU(), nn.Conv2d(5, 6, 3, 1), nn.ReLU(), nn.Conv2d(6, 4, 2, 2), nn.Flatten()]
    head = [nn.Linear(36, 8), nn.ReLU(), nn.Linear(8, 3)] if linear else [_Duel(36, 3)]
    return Policy.from_module(nn.Sequential(*convs, *head), (3, 21, 18), device="cpu")


@pytest.mark.parametrize("linear", [True, False], ids=["linear", "dueling"])
@pytest.mark.parametrize("patch,color,softmax", [(1, 0.0, False), (2, 0.5, True), (3, 1.0, False), (7, 0.0, True), (18, 0.5, False)])
def test_random_net_same_maps(linear, patch, color, softmax):
    pol = _small(linear)
    assert P._conv_chain(pol) is not None
    obs = np.random.default_rng(patch).random((3, 3, 21, 18), dtype=np.float32)
    for up in ("nearest", "bilinear"):
        a = Occlusion(patch=patch, color=color, softmax=softmax, upsample=up).explain(pol, obs).pixels()
        b = Occlusion(patch=patch, color=color, softmax=softmax, upsample=up, incremental=False).explain(pol, obs).pixels()
        assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()


@pytest.mark.parametrize("batch_size,workers,by_size", [(1, 1, False), (7, 2, False), (1000, 1, False), (5, 2, True)])
def test_outputs_equal_plain_forward(batch_size, workers, by_size):
    pol = _small(True, seed=1)
    net = P._conv_chain(pol)
    x = pol.obs(np.random.default_rng(5).random((1, 3, 21, 18), dtype=np.float32))[0]
    rects = P._patch_rects(21, 18, 2)
    inc = P._incremental_outputs(net, P._occlusion_groups(net, rects, 21, 18, by_size), x, 0.3, batch_size, workers)
    ref = forward_batches(pol, len(rects), lambda i, j: perturb(x, patch_masks(21, 18, 2), i, j, value=0.3), 64)
    assert inc.shape == ref.shape == (len(rects), 3)
    assert float((inc - ref).abs().max()) <= 1e-5 * float(ref.abs().max())


def test_not_a_chain_runs_the_plain_forward(monkeypatch):
    shape = (3, 21, 18)
    assert P._conv_chain(Policy.from_module(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Flatten(), nn.Linear(4 * 21 * 18, 2)), shape, device="cpu")) is None
    assert P._conv_chain(Policy.from_module(nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 9 * 8, 2)), shape, device="cpu")) is None
    assert P._conv_chain(Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(3 * 21 * 18, 2)), shape, device="cpu")) is None
    class MySeq(nn.Sequential): pass
    assert P._conv_chain(Policy.from_module(MySeq(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 19 * 16, 2)), shape, device="cpu")) is None
    pol = _small(True)
    obs = np.random.default_rng(0).random((2, *shape), dtype=np.float32)
    h = pol.module[2].register_forward_hook(lambda m, i, o: o * 2)
    assert P._conv_chain(pol) is None
    hooked = Occlusion(patch=3).explain(pol, obs).pixels()
    h.remove()
    assert np.abs(hooked - Occlusion(patch=3).explain(pol, obs).pixels()).max() > 1e-3      # the hook's effect was kept
    # a chain taken wrongly (here: one ReLU dropped) gives other outputs on the states: the plain forward, bit for bit
    real = P._chain
    monkeypatch.setattr(P, "_chain", lambda m: [l for i, l in enumerate(real(m)) if i != 1])
    np.testing.assert_array_equal(Occlusion(patch=3).explain(pol, obs).pixels(), Occlusion(patch=3, incremental=False).explain(pol, obs).pixels())


def test_bad_batch_size():
    pol = _small(True)
    obs = np.zeros((1, 3, 21, 18), np.float32)
    with pytest.raises(ValueError, match="batch_size must be >= 1"): Occlusion(batch_size=0).explain(pol, obs)
    with pytest.raises(ValueError, match="batch_size must be >= 1"): Occlusion(batch_size=0, incremental=False).explain(pol, obs)


def _zoo(pipelines):
    from rlexplain.agent_zoo import list_zoo
    try: z = list_zoo()
    except FileNotFoundError: return []
    if not len(z): return []
    z = z[z.pipeline.isin(pipelines)]
    return [g.path.iloc[0] for _, g in z.groupby("pipeline")]


@pytest.mark.parametrize("pipeline", ["dqn", "ddqn", "qrdqn", "ppo", "a2c", "a2c-tf", "sa-ddqn"])
def test_zoo_agents_are_chains(pipeline):
    from rlexplain.agent_zoo import load_agent
    paths = _zoo([pipeline])
    if not paths: pytest.skip(f"no {pipeline} agent in the zoo")
    pol = load_agent(paths[0], device="cpu")
    net = P._conv_chain(pol)
    assert net is not None and len(net.convs) == 3
    x = torch.rand(3, *pol.obs_shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert float((net.head(net.features(x)[1]) - pol.forward(x)).abs().max()) <= 1e-5 * float(pol.forward(x).abs().max())


def test_zoo_breakout_dqn_same_maps():
    from rlexplain.agent_zoo import list_zoo, load_agent
    try: z = list_zoo()
    except FileNotFoundError: pytest.skip("no zoo")
    z = z[(z.env_id == "ALE/Breakout-v5") & (z.pipeline == "dqn")] if len(z) else z
    if not len(z): pytest.skip("no ALE Breakout DQN in the zoo")
    pol = load_agent(z.path.iloc[0], device="cpu")
    obs = (np.random.default_rng(0).random((1, 4, 84, 84)) < 0.1).astype(np.float32)   # sparse bright pixels, as Atari frames
    a = explain("occlusion", pol, obs, patch=2, color=0.0, softmax=False).pixels()
    b = explain("occlusion", pol, obs, patch=2, color=0.0, softmax=False, incremental=False).pixels()
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()


def test_patches_that_change_nothing_tie_exactly_as_in_the_plain_forward():
    """A black patch on an already black region leaves the image unchanged, so in the plain forward all such patches get the
    same output bit for bit and tie in the map. The incremental windows once read the old activations from the full forward
    (summed in another order), which gave those patches values about 1e-7 apart: the tie-broken pixel order, and so the
    insertion curves, changed (insertion AUC by up to 0.085 on the zoo's Breakout DQN; 0.003 now). The old window is now
    recomputed by the same crops, so new - old is exactly 0 there and the tie is exact again. On the zoo's ALE Breakout agent."""
    from rlexplain.agent_zoo import load_best_agent
    pol, _ = load_best_agent("ALE/Breakout-v5", "dqn")
    assert P._conv_chain(pol) is not None
    x = np.random.default_rng(0).random((2, 4, 84, 84)).astype(np.float32)
    x[:, :, 20:40, :] = 0.0                       # rows 20-39 black: every 2x2 patch there changes nothing
    m = Occlusion(patch=2, color=0.0, upsample="nearest").explain(pol, x).pixels()
    plain = Occlusion(patch=2, color=0.0, upsample="nearest", incremental=False).explain(pol, x).pixels()
    for b in range(2):
        assert np.unique(plain[b, 20:40]).size == 1
        assert np.unique(m[b, 20:40]).size == 1, np.unique(m[b, 20:40])   # one value, bit for bit
        np.testing.assert_allclose(m[b], plain[b], rtol=0, atol=1e-5)
