"""The batched gradient explainers (issue 28.1) give the values of the library code they replaced, on fixed states.

Each reference below is the code rlexplain ran before: captum's IntegratedGradients over (state, reference) pairs, shap's
GradientExplainer once per state seeded by `state_seed`, shap's DeepExplainer on `_pick`. Each comparison is also run
against a deliberately wrong implementation, and must fail there: the tolerance is tight enough to see a real mistake.
No test here times anything or depends on the machine's threads or load."""
import copy
import threading

import numpy as np
import pytest
import torch
from torch import nn

from rlexplain.attribution import explain
from rlexplain.attribution._utils import state_seed
from rlexplain.attribution.explainers import gradient as G
from rlexplain.core import ComputeSettings, Policy

torch.set_num_threads(1)
RTOL = 1e-5   # of the largest |value|: float32 rounding of a different batch or summation order is ~1e-7


def close(a, b, rtol=RTOL) -> bool:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-12)


def _cnn(act=nn.ReLU):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), act(), nn.Conv2d(4, 4, 3), act(), nn.Flatten(), nn.Linear(4 * 5 * 5, 8),
                        act(), nn.Linear(8, 3)).eval()
    return Policy.from_module(net, (2, 16, 16), device="cpu")


def _mlp():
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    return Policy.from_module(net, (5,), device="cpu")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    img = dict(x=rng.random((5, 2, 16, 16)).astype(np.float32), bg=rng.random((12, 2, 16, 16)).astype(np.float32))
    tab = dict(x=rng.normal(size=(9, 5)).astype(np.float32), bg=rng.normal(size=(30, 5)).astype(np.float32))
    return {"img": (_cnn(), img), "tab": (_mlp(), tab)}


def _actions(pol, x):
    a = pol.outputs(x).numpy().argmax(1)
    a[1] = (a[1] + 1) % pol.n_actions   # two action groups at least
    return a


# ------------------------------------------------------------- the code rlexplain ran before (references)
def old_ig(pol, x, a, refs, n_steps, method, rows=128):
    from captum.attr import IntegratedGradients
    out = np.zeros(x.shape, np.float64); M = len(refs); r = torch.as_tensor(refs)
    for act in np.unique(a):
        idx = np.flatnonzero(a == act); xc = torch.as_tensor(x[idx])
        ig = IntegratedGradients(lambda z: pol.forward(z)[:, int(act)].sum().reshape(1))
        att = ig.attribute(xc.repeat_interleave(M, 0), baselines=r.repeat(len(xc), *[1] * (r.ndim - 1)), n_steps=n_steps,
                           method=method, internal_batch_size=max(len(xc) * M, rows))
        out[idx] = att.detach().reshape(len(xc), M, *x.shape[1:]).mean(1).numpy()
    return out


def old_gradient_shap(pol, x, a, refs, nsamples, seed=0):
    import shap
    from rlexplain.attribution.explainers.fitted import _pick
    out = np.zeros(x.shape, np.float64)
    for act in np.unique(a):
        e = shap.GradientExplainer(_pick(pol, int(act)), torch.as_tensor(refs), batch_size=200)
        for i in np.flatnonzero(a == act):
            out[i] = np.asarray(e.shap_values(torch.as_tensor(x[i:i + 1]), nsamples=nsamples, rseed=state_seed(seed, x[i]))).reshape(x.shape[1:])
    return out


def old_deep_shap(pol, x, a, refs):
    import shap
    from rlexplain.attribution.explainers.fitted import _pick
    out = np.zeros(x.shape, np.float64)
    for act in np.unique(a):
        idx = np.flatnonzero(a == act)
        e = shap.DeepExplainer(_pick(pol, int(act), copy_module=True), torch.as_tensor(refs))
        out[idx] = np.asarray(e.shap_values(torch.as_tensor(x[idx]), check_additivity=True)).reshape(len(idx), *x.shape[1:])
    return out


# ------------------------------------------------------------- new == old
@pytest.mark.parametrize("kind", ["img", "tab"])
@pytest.mark.parametrize("method", ["riemann_left", "gausslegendre", "riemann_trapezoid"])
def test_integrated_gradients_equal_captums(data, kind, method):
    pol, d = data[kind]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    new = explain("integrated_gradients", pol, x, a, background=bg, n_background=7, n_steps=9, method=method).values
    old = old_ig(pol, x, a, G.IntegratedGradients(pol, bg, n_background=7).references(), 9, method)
    assert close(new, old)
    summed = explain("integrated_gradients", pol, x, a, background=bg, n_background=7, n_steps=9, method=method, sum_first_layer=True).values
    assert close(summed, old)   # the first-layer sum (the fast path on both networks) agrees with captum too
    zeros = explain("integrated_gradients", pol, x, a, baseline="zeros", n_steps=9, method=method).values
    assert close(zeros, old_ig(pol, x, a, np.zeros((1, *x.shape[1:]), np.float32), 9, method))


@pytest.mark.parametrize("kind", ["img", "tab"])
def test_gradient_shap_equals_shaps_draws_and_values(data, kind):
    pol, d = data[kind]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    new = explain("gradient_shap", pol, x, a, background=bg, n_background=10, nsamples=37, seed=3).values
    old = old_gradient_shap(pol, x, a, G.GradientSHAP(pol, bg, n_background=10).references(), 37, seed=3)
    assert close(new, old)


@pytest.mark.parametrize("kind", ["img", "tab"])
def test_deep_shap_equals_shaps_deep_explainer(data, kind):
    pol, d = data[kind]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    new = explain("deep_shap", pol, x, a, background=bg, n_background=10).values
    assert close(new, old_deep_shap(pol, x, a, G.DeepSHAP(pol, bg, n_background=10).references()))


def test_base_values_and_every_action_are_kept(data):
    "all_actions: per-action values equal each action explained alone; base values are the references' mean output."
    pol, d = data["tab"]; x, bg = d["x"], d["bg"]
    for cls, kw in ((G.DeepSHAP, {}), (G.GradientSHAP, dict(nsamples=11)), (G.IntegratedGradients, dict(n_steps=6))):
        ex = cls(pol, bg, n_background=10, all_actions=True, **kw)
        att = ex.explain(x)
        refs = ex.references()
        np.testing.assert_allclose(att.params["base_values"], pol.outputs(refs).double().mean(0).numpy(), rtol=1e-6)
        for act in range(pol.n_actions):
            alone = cls(pol, bg, n_background=10, **kw).explain(x, act).values
            assert close(att._per_action[:, act] if hasattr(att, "_per_action") else att.per_action[:, act], alone), (cls.name, act)


def test_deep_shap_falls_back_to_shap_for_other_layers(data):
    "A network with nn.Tanh is not a ReLU network: shap's own DeepExplainer runs, with its values."
    pol = _cnn(nn.Tanh); d = data["img"][1]; x, bg = d["x"][:3], d["bg"]
    assert not G._rescale_ok(pol.module) and G._rescale_ok(data["img"][0].module)
    a = _actions(pol, x)
    new = explain("deep_shap", pol, x, a, background=bg, n_background=6).values
    assert close(new, old_deep_shap(pol, x, a, G.DeepSHAP(pol, bg, n_background=6).references()))


def test_values_do_not_depend_on_workers_or_pass_size(data):
    "Chunks on 1 or 2 workers, large or tiny passes: the same values (to float rounding)."
    pol, d = data["img"]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    p1, p2 = copy.deepcopy(pol), copy.deepcopy(pol)
    p1.apply_settings(ComputeSettings(1, 1, "contiguous", 64, "override", grad_batch_size=512))
    p2.apply_settings(ComputeSettings(1, 2, "contiguous", 64, "override", grad_batch_size=3))
    for m, kw in (("integrated_gradients", dict(n_steps=5)), ("gradient_shap", dict(nsamples=9)), ("deep_shap", {})):
        v1 = explain(m, p1, x, a, background=bg, n_background=6, **kw).values
        v2 = explain(m, p2, x, a, background=bg, n_background=6, **kw).values
        assert close(v1, v2), m


# ------------------------------------------------------------- the comparisons have teeth
def test_a_wrong_implementation_fails_the_comparisons(data, monkeypatch):
    pol, d = data["img"]; x, bg = d["x"][:3], d["bg"]; a = _actions(pol, x)
    refs = G.DeepSHAP(pol, bg, n_background=10).references()
    ok = explain("deep_shap", pol, x, a, background=bg, n_background=10, check_additivity=False).values
    assert close(ok, old_deep_shap(pol, x, a, refs))
    # DeepSHAP as "gradient at the reference times (x - r)": the plain gradient instead of DeepLIFT's multipliers
    def plain(self, x_acts, idx, delta, acts):
        z = self.refs.repeat(len(idx), *[1] * (self.refs.ndim - 1)).requires_grad_(True)
        rows = acts[idx].repeat_interleave(len(self.refs)).view(-1, 1)
        return torch.autograd.grad(self.module(z).gather(1, rows).sum(), z)[0]
    monkeypatch.setattr(G._DeepLift, "gradients", plain)
    bad = explain("deep_shap", pol, x, a, background=bg, n_background=10, check_additivity=False).values
    assert not close(bad, old_deep_shap(pol, x, a, refs))
    monkeypatch.undo()
    # GradientSHAP with t and 1 - t swapped (the same draws, the wrong end of the path)
    real_draws = G._shap_draws
    monkeypatch.setattr(G, "_shap_draws", lambda s, m, n: (lambda i, t: (i, 1.0 - t))(*real_draws(s, m, n)))
    bad = explain("gradient_shap", pol, x, a, background=bg, n_background=10, nsamples=15).values
    assert not close(bad, old_gradient_shap(pol, x, a, G.GradientSHAP(pol, bg, n_background=10).references(), 15))
    monkeypatch.undo()
    # IG on captum's right Riemann points under the left rule's name
    from captum.attr._utils import approximation_methods as am
    real_params = am.approximation_parameters
    monkeypatch.setattr(am, "approximation_parameters", lambda m: real_params("riemann_right" if m == "riemann_left" else m))
    bad = explain("integrated_gradients", pol, x, a, baseline="zeros", n_steps=6).values
    monkeypatch.undo()
    assert not close(bad, old_ig(pol, x, a, np.zeros((1, *x.shape[1:]), np.float32), 6, "riemann_left"))


# ------------------------------------------------------------- side effects and errors
def test_deep_shap_leaves_no_hooks_and_its_hooks_act_in_its_thread_only(data):
    pol, d = data["img"]; x, bg = d["x"], d["bg"]
    relus = [m for m in pol.module.modules() if isinstance(m, nn.ReLU)]
    explain("deep_shap", pol, x, background=bg, n_background=5)
    assert all(not m._forward_hooks for m in relus)
    lift = G._DeepLift(pol.module, torch.as_tensor(bg[:4]))
    try:
        want = pol.outputs(x).numpy()
        seen = []
        G._LIFT.run = lambda i, o: torch.zeros_like(o)       # this thread's pass would zero every ReLU
        t = threading.Thread(target=lambda: seen.append(pol.outputs(x).numpy())); t.start(); t.join()
    finally:
        G._LIFT.run = None; lift.close()
    np.testing.assert_array_equal(seen[0], want)             # another thread's forward is untouched
    assert all(not m._forward_hooks for m in relus)


def test_deep_shap_in_two_threads_on_one_network(data):
    "Two explain calls on the same network at once (one hook per ReLU, each thread's pass its own): the values of one call alone."
    pol, d = data["img"]; x, bg = d["x"], d["bg"]
    want = explain("deep_shap", pol, x, background=bg, n_background=6).values
    out = {}
    def run(k): out[k] = explain("deep_shap", pol, x, background=bg, n_background=6).values
    ts = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in ts: t.start()
    for t in ts: t.join()
    assert sorted(out) == [0, 1] and all(close(v, want) for v in out.values())
    assert not any(m._forward_hooks for m in pol.module.modules() if isinstance(m, nn.ReLU)) and not G._HOOKS


def test_deep_shap_raises_on_functional_activations():
    class Functional(nn.Module):
        def __init__(self):
            super().__init__(); torch.manual_seed(0); self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)
        def forward(self, x): return self.b(torch.relu(self.a(x)))
    pol = Policy.from_module(Functional().eval(), (4,), device="cpu")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="F.relu"):
        explain("deep_shap", pol, rng.normal(size=(6, 4)).astype(np.float32) * 3, background=rng.normal(size=(20, 4)).astype(np.float32) * 3)


def test_gradient_shap_leaves_numpys_global_stream_alone(data):
    pol, d = data["tab"]
    np.random.seed(123); want = np.random.random(3)
    np.random.seed(123); explain("gradient_shap", pol, d["x"], background=d["bg"], nsamples=5); got = np.random.random(3)
    np.testing.assert_array_equal(got, want)


def test_shap_draws_are_shaps(data):
    "`_shap_draws` replays the global-stream calls of shap's loop: choice(M), uniform(), interleaved."
    np.random.seed(77)
    want = [(np.random.choice(13), np.random.uniform()) for _ in range(20)]
    idx, t = G._shap_draws(77, 13, 20)
    assert [int(i) for i, _ in want] == idx.tolist() and [u for _, u in want] == t.tolist()


def test_integrated_gradients_rejects_bad_settings(data):
    pol, d = data["tab"]
    with pytest.raises(ValueError, match="method must be one of"): G.IntegratedGradients(pol, d["bg"], method="simpson")
    with pytest.raises(ValueError, match="n_steps must be >= 2"): G.IntegratedGradients(pol, d["bg"], n_steps=1)
    with pytest.raises(ValueError, match="rows_per_pass"): G.IntegratedGradients(pol, d["bg"], rows_per_pass=0)
    G.IntegratedGradients(pol, d["bg"], n_steps=1, method="gausslegendre")
    with pytest.raises(ValueError, match="nsamples"): G.GradientSHAP(pol, d["bg"], nsamples=0)


# ------------------------------------------------------------- IG's first-layer sum (sum_first_layer)
def _count_ig_paths(monkeypatch) -> dict:
    "Counts of the first layer's transposed calls (the summed path) and of plain input-gradient passes during IG."
    n = {"summed": 0, "plain": 0}
    real_layer, real_plain = G._layer_input_grad, G.IntegratedGradients._input_grad
    def layer(*a): n["summed"] += 1; return real_layer(*a)
    def plain(*a): n["plain"] += 1; return real_plain(*a)
    monkeypatch.setattr(G, "_layer_input_grad", layer); monkeypatch.setattr(G.IntegratedGradients, "_input_grad", plain)
    return n


def _no_hooks(module) -> bool:
    return not G._HOOKS and all(not m._forward_hooks and not m._forward_pre_hooks for m in module.modules())


def test_ig_first_layer_sum_on_a_hand_checked_linear_net(monkeypatch):
    """f_0 = sum of a 2x2 convolution (kernel [[1, 2], [3, 4]]) over a 3x3 image: its gradient is each pixel's summed kernel
    weights, [[1, 3, 2], [4, 10, 6], [3, 7, 4]], so IG from the zero baseline is x times that (left Riemann weights sum to 1);
    f_1 reads the top-left output (gradient: the kernel in the top-left corner). The summed path must be the one taken."""
    conv = nn.Conv2d(1, 1, 2, bias=True); head = nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        conv.weight.copy_(torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])); conv.bias.fill_(0.5)
        head.weight.copy_(torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]]))
    pol = Policy.from_module(nn.Sequential(conv, nn.Flatten(), head).eval(), (1, 3, 3), device="cpu")
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3) / 10
    n = _count_ig_paths(monkeypatch)
    v0 = explain("integrated_gradients", pol, x, 0, baseline="zeros", n_steps=8, sum_first_layer=True).values
    v1 = explain("integrated_gradients", pol, x, 1, baseline="zeros", n_steps=8, sum_first_layer=True).values
    np.testing.assert_allclose(v0[0, 0], x[0, 0] * np.array([[1, 3, 2], [4, 10, 6], [3, 7, 4]]), rtol=1e-6)
    np.testing.assert_allclose(v1[0, 0], x[0, 0] * np.array([[1, 2, 0], [3, 4, 0], [0, 0, 0]]), rtol=1e-6)
    assert n == {"summed": 2, "plain": 0} and _no_hooks(pol.module)
    plain = explain("integrated_gradients", pol, x, 0, baseline="zeros", n_steps=8, sum_first_layer=False).values   # captum's order
    assert n == {"summed": 2, "plain": 1} and G.IntegratedGradients(pol, baseline="zeros").params()["sum_first_layer"] is True
    default = explain("integrated_gradients", pol, x, 0, baseline="zeros", n_steps=8).values   # the default: the summed path
    assert n == {"summed": 3, "plain": 1}
    np.testing.assert_allclose(default, v0, rtol=1e-6)
    np.testing.assert_allclose(plain, v0, rtol=1e-6)


def _ig_by_eq3(pol, x, a, refs, n_steps, method="riemann_left"):
    """Eq. 3 one point at a time: (x - x0) * sum_k w_k grad f_a(x0 + alpha_k (x - x0)), each gradient a separate one-row backward
    pass through the whole network, then the mean over the references (captum's weights and points)."""
    from captum.attr._utils.approximation_methods import approximation_parameters
    sizes, alphas = approximation_parameters(method)
    out = np.zeros(x.shape, np.float64)
    for i in range(len(x)):
        for r in refs:
            xi, r = torch.as_tensor(x[i]), torch.as_tensor(r)
            tot = torch.zeros_like(xi, dtype=torch.float64)
            for wk, ak in zip(sizes(n_steps), alphas(n_steps)):
                z = (r + ak * (xi - r)).unsqueeze(0).requires_grad_(True)
                tot += wk * torch.autograd.grad(pol.forward(z)[0, int(a[i])], z)[0][0].double()
            out[i] += ((xi - r).double() * tot).numpy() / len(refs)
    return out


@pytest.mark.parametrize("kind,layout", [("img", "contiguous"), ("img", "channels_last"), ("tab", "contiguous")])
def test_ig_first_layer_sum_equals_eq3_and_the_plain_path(data, kind, layout, monkeypatch):
    "A ReLU network (conv or linear first layer, either memory layout): the summed path is Eq. 3's value and the plain path's."
    pol, d = data[kind]; x, bg = d["x"][:3], d["bg"]; a = _actions(pol, x)
    pol = copy.deepcopy(pol).apply_settings(ComputeSettings(1, 1, layout, 64, "override", grad_batch_size=20))
    refs = G.IntegratedGradients(pol, bg, n_background=4).references()
    want = _ig_by_eq3(pol, x, a, refs, 6)
    n = _count_ig_paths(monkeypatch)
    fast = explain("integrated_gradients", pol, x, a, background=bg, n_background=4, n_steps=6, sum_first_layer=True).values
    assert n["summed"] > 0 and n["plain"] == 0 and _no_hooks(pol.module)
    plain = explain("integrated_gradients", pol, x, a, background=bg, n_background=4, n_steps=6, sum_first_layer=False).values
    assert n["plain"] > 0
    assert close(fast, want) and close(plain, want) and close(fast, plain, 1e-6)
    # teeth: the first layer transposed with a slightly wrong weight is seen
    real = G._layer_input_grad
    monkeypatch.setattr(G, "_layer_input_grad", lambda layer, g, shape: real(layer, g * 1.001, shape))
    bad = explain("integrated_gradients", pol, x, a, background=bg, n_background=4, n_steps=6, sum_first_layer=True).values
    assert not close(bad, want)


def test_ig_first_layer_sum_with_an_in_place_activation_after_the_layer(data, monkeypatch):
    "nn.ReLU(inplace=True) right after the first conv writes to the layer's output: the summed path still runs, with Eq. 3's values."
    pol = _cnn(lambda: nn.ReLU(inplace=True)); d = data["img"][1]; x, bg = d["x"][:2], d["bg"]; a = _actions(pol, x)
    n = _count_ig_paths(monkeypatch)
    fast = explain("integrated_gradients", pol, x, a, background=bg, n_background=3, n_steps=5, sum_first_layer=True).values
    assert n["summed"] > 0 and n["plain"] == 0 and _no_hooks(pol.module)
    assert close(fast, _ig_by_eq3(pol, x, a, G.IntegratedGradients(pol, bg, n_background=3).references(), 5))


class _Skip(nn.Module):
    "The input reaches the output through the first conv and also through a linear map of the raw pixels (a skip connection)."
    def __init__(self):
        super().__init__(); torch.manual_seed(2)
        self.conv, self.head, self.skip = nn.Conv2d(2, 3, 3, stride=2), nn.Linear(3 * 7 * 7, 3), nn.Linear(2 * 16 * 16, 3)
    def forward(self, x): return self.head(torch.relu(self.conv(x)).flatten(1)) + self.skip(x.flatten(1))


class _Scaled(nn.Module):
    "The first conv sees `x * 2`, not the input itself (as an SB3 network's x / 255)."
    def __init__(self):
        super().__init__(); torch.manual_seed(3); self.conv, self.head = nn.Conv2d(2, 3, 3, stride=2), nn.Linear(3 * 7 * 7, 3)
    def forward(self, x): return self.head(torch.relu(self.conv(x * 2.0)).flatten(1))


class _Twice(nn.Module):
    "The first conv is called twice (on the input and on its mirror image)."
    def __init__(self):
        super().__init__(); torch.manual_seed(4); self.conv, self.head = nn.Conv2d(2, 3, 3, stride=2), nn.Linear(3 * 7 * 7, 3)
    def forward(self, x): return self.head(torch.relu(self.conv(x) + self.conv(x.flip(-1))).flatten(1))


class _OwnForward(Policy):
    "A policy that preprocesses in its own `forward`: the cut cannot see what the network is given."
    def forward(self, obs): return super().forward(obs * 0.5)


@pytest.mark.parametrize("net", ["skip", "scaled", "twice", "own_forward"])
def test_ig_first_layer_sum_falls_back_where_it_does_not_hold(data, net, monkeypatch):
    "Where the input does not reach the output through one call of the first layer only, IG runs the plain path: its exact values."
    d = data["img"][1]; x, bg = d["x"][:3], d["bg"]
    if net == "own_forward":
        base = data["img"][0]; pol = _OwnForward(copy.deepcopy(base.module), base.n_actions, base.obs_shape, device="cpu")
    else: pol = Policy.from_module({"skip": _Skip, "scaled": _Scaled, "twice": _Twice}[net]().eval(), (2, 16, 16), device="cpu")
    pol.apply_settings(ComputeSettings(1, 1, "contiguous", 64, "override", grad_batch_size=20))
    a = _actions(pol, x)
    plain = explain("integrated_gradients", pol, x, a, background=bg, n_background=4, n_steps=6, sum_first_layer=False).values
    n = _count_ig_paths(monkeypatch)
    got = explain("integrated_gradients", pol, x, a, background=bg, n_background=4, n_steps=6, sum_first_layer=True).values
    np.testing.assert_array_equal(got, plain)
    assert n["summed"] == 0 and n["plain"] > 0 and _no_hooks(pol.module)
    if net != "own_forward": assert close(plain, _ig_by_eq3(pol, x, a, G.IntegratedGradients(pol, bg, n_background=4).references(), 6))
