"Integration tests of rlexplain.shifts: budgets and action flips on a hand-solvable linear model, natural shifts, rollouts."
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from rlexplain.core import Policy
from rlexplain.runs import load_result
from rlexplain.envs import collect_rollout
from rlexplain.shifts import (ADVERSARIAL_SHIFTS, FGSM, JPEG, NATURAL_SHIFTS, PGD, SHIFTS, Blur, BrightnessContrast,
                              CarliniWagnerL2, DeepFool, ElasticNet, Identity, NesterovMomentum, Perspective, Rotation,
                              ShiftedObservation, ShiftedRollout, action_change_rate, collect_shifted_rollout, make_shift)

torch.set_num_threads(1)


class Lin(nn.Module):
    "Q = W x + b on a (1, 2, 2) image; greedy action 0 at x = 0.5 with margin 0.001, boundary distance 0.0447."
    def __init__(self):
        super().__init__(); self.fc = nn.Linear(4, 2)
        with torch.no_grad():
            self.fc.weight.copy_(torch.tensor([[1.0, -1.0, 2.0, 0.5], [0.98, -1.0, 1.99, 0.5]]))
            self.fc.bias.copy_(torch.tensor([0.0, 0.014]))
    def forward(self, x): return self.fc(x.flatten(1))


@pytest.fixture(scope="module")
def lin():
    return Policy.from_module(Lin(), obs_shape=(1, 2, 2), device="cpu", name="lin")


X = torch.full((1, 1, 2, 2), 0.5)
DW = np.array([0.02, 0.0, 0.01, 0.0]); M = 0.001; DIST = M / np.linalg.norm(DW)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.4])
def test_fgsm_budget_and_exact_margin(lin, eps):
    xa = FGSM(eps=eps)(X, lin)
    assert float((xa - X).abs().max()) <= eps + 1e-6
    q = lin.outputs(xa)[0].numpy()
    new_margin = M - eps * np.abs(DW).sum()                   # FGSM moves each pixel by eps against dw
    assert q[0] - q[1] == pytest.approx(new_margin, abs=1e-5)
    assert int(lin.act(xa)[0]) == (1 if new_margin < 0 else 0)  # eps = 0.01 is too small to flip (margin 0.0007)


def test_pgd_budget_and_flip(lin):
    xa = PGD(eps=0.1, eps_step=0.02, max_iter=10)(X, lin)
    assert float((xa - X).abs().max()) <= 0.1 + 1e-6 and int(lin.act(xa)[0]) == 1


def test_minimal_attacks_flip(lin):
    assert int(lin.act(DeepFool()(X, lin))[0]) == 1
    assert float((DeepFool()(X, lin) - X).norm()) == pytest.approx(1.02 * DIST, abs=1e-4)
    assert int(lin.act(CarliniWagnerL2(confidence=0, max_iter=50, binary_search_steps=3)(X, lin))[0]) == 1
    assert int(lin.act(ElasticNet(max_iter=50, binary_search_steps=3, initial_const=10)(X, lin))[0]) == 1


def test_nesterov_l2_budget(lin):
    xa = NesterovMomentum(eps=1.5 * DIST)(X, lin)
    assert float((xa - X).norm()) <= 1.5 * DIST + 1e-6 and int(lin.act(xa)[0]) == 1
    xb = NesterovMomentum()(X, lin)           # paper default eps = 0.001
    assert float((xb - X).norm()) <= 0.001 + 1e-6


def test_nesterov_conv_batch_budget():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(4, 4, 8, 4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3))
    pol = Policy.from_module(net, obs_shape=(4, 36, 36), device="cpu")
    x = torch.rand(5, 4, 36, 36)
    xa = NesterovMomentum(eps=0.5, n_iter=5)(x, pol)
    assert (xa - x).flatten(1).norm(dim=1).max() <= 0.5 + 1e-5
    assert xa.min() >= 0 and xa.max() <= 1 and xa.shape == x.shape


@settings(max_examples=15, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(0, 1000))
def test_fgsm_linf_budget_property(eps, seed):
    g = torch.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Flatten(), nn.Linear(2 * 6 * 6, 3))
    pol = Policy.from_module(net, obs_shape=(2, 6, 6), device="cpu")
    x = torch.rand(3, 2, 6, 6, generator=g)
    xa = FGSM(eps=eps)(x, pol)
    assert float((xa - x).abs().max()) <= eps + 1e-6 and xa.min() >= 0 and xa.max() <= 1


@pytest.mark.parametrize("name", NATURAL_SHIFTS)
def test_natural_shape_range_identity(name):
    x = torch.rand(2, 4, 20, 20)
    cls = SHIFTS[name]
    assert torch.equal(cls(strength=0.0)(x), x)
    y = make_shift(name)(x)
    assert y.shape == x.shape and y.dtype == torch.float32 and 0 <= float(y.min()) and float(y.max()) <= 1
    assert not torch.equal(y, x)


def test_natural_hand_checks():
    x = torch.rand(1, 4, 16, 16)
    assert torch.allclose(Rotation(90)(x), torch.rot90(x, 1, dims=(-2, -1)), atol=1e-5)
    c = torch.full((1, 2, 12, 12), 0.25)
    assert torch.allclose(Blur(2.0)(c), c, atol=1e-6)
    assert torch.allclose(BrightnessContrast(0.5, brightness=0.0)(c), c * 1.5)
    assert JPEG(0.9).quality == 10 and JPEG(1.0).quality == 1
    assert float((Perspective(0.3)(x) - x).abs().mean()) > float((Perspective(0.05)(x) - x).abs().mean())


def test_bad_input(lin):
    with pytest.raises(ValueError, match="unknown shift"): make_shift("fog")
    with pytest.raises(TypeError, match="accepts"): make_shift("fgsm", strength=1)
    with pytest.raises(ValueError, match="NaN"): Blur()(torch.full((1, 1, 4, 4), float("nan")))
    with pytest.raises(ValueError, match=r"\[0, 1\]"): Blur()(torch.full((1, 1, 4, 4), 2.0))
    assert torch.equal(Blur()(torch.zeros((1, 1, 4, 4), dtype=torch.uint8)), torch.zeros(1, 1, 4, 4))   # uint8 accepted (divided by 255)
    with pytest.raises(ValueError, match="B, C, H, W"): Rotation()(torch.rand(1, 4, 4))
    with pytest.raises(ValueError, match="policy"): FGSM()(X)
    with pytest.raises(ValueError, match=">= 0"): Blur(-0.5)
    with pytest.raises(ValueError, match="non-negative"): PGD(eps=-0.1)


def test_registry_complete():
    assert set(ADVERSARIAL_SHIFTS) == {"fgsm", "pgd", "carlini_wagner", "deepfool", "elastic_net", "nesterov"}
    assert set(NATURAL_SHIFTS) == {"brightness_contrast", "jpeg", "rotation", "perspective", "blur"}
    assert make_shift("cw").confidence == 10 and make_shift("ead").beta == 1e-4 and make_shift("nesterov").eps == 0.001


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(4, 4, 8, 8), nn.ReLU(), nn.Flatten(), nn.Linear(400, 4))
    return Policy.from_module(net, obs_shape=(4, 84, 84), device="cpu", name="tiny")


def test_shifted_rollout(tiny, tmp_path):
    plain = collect_rollout("toybox/Breakout", tiny, seed=2, max_steps=30)
    same = collect_shifted_rollout("toybox/Breakout", tiny, "pgd", seed=2, max_steps=30, attack_prob=0.0)
    assert np.array_equal(same.actions, plain.actions) and not same.attacked.any()
    ro = collect_shifted_rollout("toybox/Breakout", tiny, FGSM(eps=2 / 255), seed=2, max_steps=40, attack_prob=0.5)
    assert isinstance(ro, ShiftedRollout) and ro.observed.shape == (40, 4, 84, 84) and 0 < ro.attacked.mean() < 1
    d = np.abs(ro.observed - ro.obs / 255.0).reshape(40, -1).max(1)
    assert (d[ro.attacked] <= 2 / 255 + 1e-5).all() and (d[~ro.attacked] < 1e-6).all()
    ro.save(tmp_path / "ro"); back = load_result(tmp_path / "ro")
    assert np.array_equal(back.attacked, ro.attacked) and back.shift == "fgsm"
    with pytest.raises(ValueError, match="attack_prob"): collect_shifted_rollout("toybox/Breakout", tiny, "blur", attack_prob=-0.1)


def test_wrapper_and_change_rate(tiny):
    from rlexplain.envs import make_env
    env = ShiftedObservation(make_env("toybox/Breakout"), "fgsm", policy=tiny, attack_prob=1.0, seed=0)
    o, _ = env.reset(seed=0)
    assert o.shape == (4, 84, 84) and o.dtype == np.float32 and env.last_attacked
    frames = np.random.default_rng(0).integers(0, 255, (6, 4, 84, 84), dtype=np.uint8)
    assert action_change_rate(tiny, frames, Identity()) == 0.0
    assert 0.0 <= action_change_rate(tiny, frames, FGSM(eps=0.2)) <= 1.0


def _conv_policy(seed: int, obs_shape=(4, 12, 12), n_actions=5):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(obs_shape[0], 6, 3, 2), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 5 * 5, n_actions))
    return Policy.from_module(net, obs_shape=obs_shape, device="cpu", name=f"conv{seed}")


@pytest.mark.parametrize("eps,temperature,batch_size", [(0.5 / 255, 1.0, 128), (2 / 255, 1.0, 3), (8 / 255, 2.0, 128), (0.3, 0.5, 2)])
def test_fgsm_torch_path_equals_art(eps, temperature, batch_size):
    "FGSM.apply (torch) gives ART FastGradientMethod's output bit for bit: images on the 1/255 grid and at the clip bounds, and tabular states."
    from rlexplain.shifts import _ARTShift
    pol = _conv_policy(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (7, 4, 12, 12), generator=g).float() / 255   # frames: values on the 1/255 grid, 0 and 1 included
    x[0] = 0.0; x[1] = 1.0
    sh = FGSM(eps=eps, temperature=temperature, batch_size=batch_size)
    ours, art = sh(x, pol), _ARTShift.apply(sh, x, pol).clamp(0, 1)
    assert torch.equal(ours, art), float((ours - art).abs().max())
    assert float((ours - x).abs().max()) > 0                                 # the attack moved the frames
    tab = Policy.from_module(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)), obs_shape=(6,), device="cpu")
    s = torch.randn(9, 6, generator=g) * 3                                     # tabular: no [0, 1] clip
    assert torch.equal(sh(s, tab), _ARTShift.apply(sh, s, tab))


def test_fgsm_does_not_build_art_per_call(monkeypatch):
    "The per-step FGSM of rollouts skips ART's estimator (the time series attack every step); PGD still uses it."
    import rlexplain.shifts as S
    def no_art(*a, **k): raise AssertionError("FGSM built an ART classifier")
    monkeypatch.setattr(S, "art_classifier", no_art)
    pol = _conv_policy(1)
    x = torch.rand(2, 4, 12, 12)
    assert FGSM(eps=2 / 255)(x, pol).shape == x.shape
    with pytest.raises(AssertionError, match="ART classifier"): PGD(eps=2 / 255)(x, pol)


def test_fgsm_one_forward_per_chunk_and_hand_values():
    """FGSM's labels come from the forward whose backward gives the gradient: one network call per chunk of
    `batch_size` states (the old code ran a second, no-grad forward for the labels). Hand check on a linear model:
    Q = W x with greedy action 1; each pixel moves by eps along the sign of the loss gradient (0: stays)."""
    calls = []
    class Count(nn.Module):
        def __init__(self):
            super().__init__(); self.fc = nn.Linear(4, 2, bias=False)
            with torch.no_grad(): self.fc.weight.copy_(torch.tensor([[1.0, -2.0, 0.0, 0.0], [-1.0, 1.0, 0.0, 0.0]]))
        def forward(self, x): calls.append(len(x)); return self.fc(x.flatten(1))
    pol = Policy.from_module(Count(), obs_shape=(1, 2, 2), n_actions=2, device="cpu")
    calls.clear()
    x = torch.full((5, 1, 2, 2), 0.5)
    out = FGSM(eps=0.1, batch_size=2)(x, pol)
    assert calls == [2, 2, 1]
    # q = (0.5 - 1, -0.5 + 0.5) = (-0.5, 0): greedy action 1; grad of CE(label 1) = W^T (p0, p1 - 1) = (p0 - p1 + 1, -2 p0 - p1 + 1, 0, 0)
    # = (2 p0, -3 p0, 0, 0) as p1 = 1 - p0: pixels 1 and 2 move by +eps and -eps, pixels 3 and 4 (zero weights) stay
    sign = torch.tensor([1.0, -1.0, 0.0, 0.0]).reshape(1, 1, 2, 2)
    assert torch.equal(out, (x + 0.1 * sign).expand(5, 1, 2, 2))           # (0.6, 0.4, 0.5, 0.5) in float32


@given(st.integers(0, 10_000), st.sampled_from([1e-6, 0.5 / 255, 1 / 255, 0.05, 0.5, 3.0]))
@settings(max_examples=60, deadline=None)
def test_fgsm_float32_projection_equals_art_float64(seed, eps):
    """ART's projection `float32(float64(x) + sign(d) * min(|d|, float64(float32(eps))))` equals FGSM's float32
    `x + clamp(d, -eps32, eps32)` bit for bit (double rounding of a float32 sum through float64 is innocuous), over
    values spread across many binades (tabular states) and both signs."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4000, generator=g) * torch.exp2(torch.randint(-30, 20, (4000,), generator=g).float())
    step = torch.sign(torch.randn(4000, generator=g)) * float(np.float32(eps))
    d = (x + step) - x
    e32 = float(np.float32(eps))
    art = (x.double() + torch.sign(d).double() * torch.minimum(d.abs().double(), torch.tensor(e32, dtype=torch.float64))).float()
    ours = x + d.clamp(-e32, e32)
    assert torch.equal(art, ours)
