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
from rlexplain.attribution import DeepSHAP, GradientSHAP, IntegratedGradients
from rlexplain.attribution.explainers import gradient as G
from rlexplain.core import Policy


def _fit(cls, policy, background, **params):
    "`cls(**params)` fitted to `policy` and `background`."
    return cls(**params).fit(policy, background)
from rlexplain.compute import ComputeSettings

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


def old_gradient_shap(pol, x, a, refs, n_samples, seed=0):
    import shap
    from rlexplain.attribution.explainers.fitted import _pick
    out = np.zeros(x.shape, np.float64)
    for act in np.unique(a):
        e = shap.GradientExplainer(_pick(pol, int(act)), torch.as_tensor(refs), batch_size=200)
        for i in np.flatnonzero(a == act):
            out[i] = np.asarray(e.shap_values(torch.as_tensor(x[i:i + 1]), nsamples=n_samples, rseed=state_seed(seed, x[i]))).reshape(x.shape[1:])
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
    assert close(new, old_ig(pol, x, a, _fit(IntegratedGradients, pol, bg, n_background=7).references(), 9, method))
    zeros = explain("integrated_gradients", pol, x, a, baseline="zeros", n_steps=9, method=method).values
    assert close(zeros, old_ig(pol, x, a, np.zeros((1, *x.shape[1:]), np.float32), 9, method))


@pytest.mark.parametrize("kind", ["img", "tab"])
def test_gradient_shap_equals_shaps_draws_and_values(data, kind):
    pol, d = data[kind]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    new = explain("gradient_shap", pol, x, a, background=bg, n_background=10, n_samples=37, seed=3).values
    old = old_gradient_shap(pol, x, a, _fit(GradientSHAP, pol, bg, n_background=10).references(), 37, seed=3)
    assert close(new, old)


@pytest.mark.parametrize("kind", ["img", "tab"])
def test_deep_shap_equals_shaps_deep_explainer(data, kind):
    pol, d = data[kind]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    new = explain("deep_shap", pol, x, a, background=bg, n_background=10).values
    assert close(new, old_deep_shap(pol, x, a, _fit(DeepSHAP, pol, bg, n_background=10).references()))


def test_base_values_and_every_action_are_kept(data):
    "all_actions: per-action values equal each action explained alone; base values are the references' mean output."
    pol, d = data["tab"]; x, bg = d["x"], d["bg"]
    for cls, kw in ((DeepSHAP, {}), (GradientSHAP, dict(n_samples=11)), (IntegratedGradients, dict(n_steps=6))):
        ex = _fit(cls, pol, bg, n_background=10, all_actions=True, **kw)
        att = ex.explain(pol, x)
        refs = ex.references()
        np.testing.assert_allclose(att.base_values, pol.outputs(refs).double().mean(0).numpy(), rtol=1e-6)
        for act in range(pol.n_actions):
            alone = _fit(cls, pol, bg, n_background=10, **kw).explain(pol, x, act).values
            assert close(att.per_action[:, act], alone), (cls.name, act)


def test_deep_shap_falls_back_to_shap_for_other_layers(data):
    "A network with nn.Tanh is not a ReLU network: shap's own DeepExplainer runs, with its values."
    pol = _cnn(nn.Tanh); d = data["img"][1]; x, bg = d["x"][:3], d["bg"]
    assert not G._rescale_ok(pol.module) and G._rescale_ok(data["img"][0].module)
    a = _actions(pol, x)
    new = explain("deep_shap", pol, x, a, background=bg, n_background=6).values
    assert close(new, old_deep_shap(pol, x, a, _fit(DeepSHAP, pol, bg, n_background=6).references()))


def test_values_do_not_depend_on_workers_or_pass_size(data):
    "Chunks on 1 or 2 workers, large or tiny passes: the same values (to float rounding)."
    pol, d = data["img"]; x, bg = d["x"], d["bg"]; a = _actions(pol, x)
    p1, p2 = copy.deepcopy(pol), copy.deepcopy(pol)
    p1.apply_settings(ComputeSettings(1, 1, "contiguous", 64, "override", grad_batch_size=512))
    p2.apply_settings(ComputeSettings(1, 2, "contiguous", 64, "override", grad_batch_size=3))
    for m, kw in (("integrated_gradients", dict(n_steps=5)), ("gradient_shap", dict(n_samples=9)), ("deep_shap", {})):
        v1 = explain(m, p1, x, a, background=bg, n_background=6, **kw).values
        v2 = explain(m, p2, x, a, background=bg, n_background=6, **kw).values
        assert close(v1, v2), m


# ------------------------------------------------------------- the comparisons have teeth
def test_a_wrong_implementation_fails_the_comparisons(data, monkeypatch):
    pol, d = data["img"]; x, bg = d["x"][:3], d["bg"]; a = _actions(pol, x)
    refs = _fit(DeepSHAP, pol, bg, n_background=10).references()
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
    import rlexplain.attribution.explainers.gradient_shap as GS   # the module that calls it
    monkeypatch.setattr(GS, "_shap_draws", lambda s, m, n: (lambda i, t: (i, 1.0 - t))(*real_draws(s, m, n)))
    bad = explain("gradient_shap", pol, x, a, background=bg, n_background=10, n_samples=15).values
    assert not close(bad, old_gradient_shap(pol, x, a, _fit(GradientSHAP, pol, bg, n_background=10).references(), 15))
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
    np.random.seed(123); explain("gradient_shap", pol, d["x"], background=d["bg"], n_samples=5); got = np.random.random(3)
    np.testing.assert_array_equal(got, want)


def test_shap_draws_are_shaps(data):
    "`_shap_draws` replays the global-stream calls of shap's loop: choice(M), uniform(), interleaved."
    np.random.seed(77)
    want = [(np.random.choice(13), np.random.uniform()) for _ in range(20)]
    idx, t = G._shap_draws(77, 13, 20)
    assert [int(i) for i, _ in want] == idx.tolist() and [u for _, u in want] == t.tolist()


def test_integrated_gradients_rejects_bad_settings(data):
    pol, d = data["tab"]
    with pytest.raises(ValueError, match="method must be one of"): _fit(IntegratedGradients, pol, d["bg"], method="simpson")
    with pytest.raises(ValueError, match="n_steps must be >= 2"): _fit(IntegratedGradients, pol, d["bg"], n_steps=1)
    with pytest.raises(ValueError, match="rows_per_pass"): _fit(IntegratedGradients, pol, d["bg"], rows_per_pass=0)
    _fit(IntegratedGradients, pol, d["bg"], n_steps=1, method="gausslegendre")
    with pytest.raises(ValueError, match="n_samples"): _fit(GradientSHAP, pol, d["bg"], n_samples=0)
