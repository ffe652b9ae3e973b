"Integration tests of rlexplain.ranld (closed-form gradients, the SVD routes, Lambda's bounds, results) and rlexplain.ranld_study (the protocol, tables, comparison)."
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from rlexplain.core import Policy
from rlexplain.runs import load_result
from rlexplain.ranld import (PD_METHODS, PrincipalDirection, feature_correlation_quotient, nld_gradients, principal_direction,
                             ranld, rayleigh, top_eigenvalues)
from rlexplain.ranld_study import QuotientTable, RANLDConfig, ranld_protocol

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def lin():
    torch.manual_seed(0)
    return Policy.from_module(nn.Linear(8, 4), obs_shape=(8,), device="cpu", name="lin")


@pytest.mark.parametrize("T", [0.3, 1.0, 5.0])
def test_linear_closed_form(lin, T):
    S = torch.randn(33, 8)
    g = nld_gradients(lin, S, temperature=T, batch_size=10)
    with torch.no_grad():
        q = lin.module(S); p = torch.softmax(q / T, -1)
        closed = (p - torch.nn.functional.one_hot(q.argmax(-1), 4)) @ lin.module.weight / T
    assert torch.allclose(g, closed, atol=1e-6)


@pytest.mark.parametrize("margin", [5.0, 40.0, 60.0])
def test_confident_state_exact_gradient(margin):
    net = nn.Linear(2, 2, bias=False)
    with torch.no_grad(): net.weight.copy_(torch.tensor([[margin, 0.0], [0.0, 1.0]]))
    pol = Policy.from_module(net, obs_shape=(2,), device="cpu")
    g = nld_gradients(pol, torch.tensor([[1.0, 0.0]])).double()   # = pi_1 (w_1 - w_0) = pi_1 (-margin, 1)
    p1 = 1 / (1 + np.exp(margin))
    assert torch.allclose(g[0] / p1, torch.tensor([-margin, 1.0], dtype=torch.float64), rtol=1e-4)


@pytest.mark.parametrize("method", [m for m in PD_METHODS])
def test_svd_routes_equal_dense(method):
    g = torch.Generator().manual_seed(3)
    A = torch.randn(60, 24, generator=g) + 1.5 * torch.randn(1, 24, generator=g)
    L = A.double().T @ A.double() / 60
    w, V = torch.linalg.eigh(L)
    ref = V[:, -1].float(); ref = ref if float((A @ ref).sum()) >= 0 else -ref
    z, lam = principal_direction(A, method=method)
    assert torch.allclose(z, ref, atol=1e-4) and lam == pytest.approx(float(w[-1]), rel=1e-4)


def test_large_n_lanczos_and_eigenvalues():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(2100, 30, generator=g) + torch.randn(1, 30, generator=g)
    z_auto, lam = principal_direction(A)                  # n > 2048: lanczos
    z_gram, lam_g = principal_direction(A, method="gram")
    assert torch.allclose(z_auto, z_gram, atol=1e-4) and lam == pytest.approx(lam_g, rel=1e-5)
    w = np.linalg.eigvalsh((A.double().T @ A.double() / 2100).numpy())[::-1][:4]
    assert np.allclose(top_eigenvalues(A, 4), w, rtol=1e-5)


def test_lambda_identity_and_dense_formula(lin):
    Sa, Sb = torch.randn(40, 8), torch.randn(30, 8) * 2
    ra, rb = ranld(lin, Sa), ranld(lin, Sb, keep_gradients=False)
    assert feature_correlation_quotient(ra, ra) == pytest.approx(1.0, abs=1e-6)
    L = ra.gradients.astype(np.float64).T @ ra.gradients.astype(np.float64) / 40
    ga, gb = ra.direction.astype(np.float64), rb.direction.astype(np.float64)
    assert feature_correlation_quotient(rb, ra) == pytest.approx(gb @ L @ gb / (ga @ L @ ga), rel=1e-6)
    assert ra.quadratic_form(ra.direction) == pytest.approx(ra.eigenvalue, rel=1e-6)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 15), st.integers(1, 10), st.integers(0, 2**16), st.floats(1e-3, 1e3))
def test_lambda_bounds(n, d, seed, scale):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(n, d, generator=g) * scale
    lam = feature_correlation_quotient(torch.randn(d, generator=g), A)
    assert -1e-6 <= lam <= 1 + 1e-5
    assert feature_correlation_quotient(principal_direction(A)[0], A) == pytest.approx(1.0, abs=1e-5)


def test_bad_input(lin):
    with pytest.raises(ValueError, match="empty"): nld_gradients(lin, torch.zeros(0, 8))
    with pytest.raises(ValueError, match="empty"): principal_direction(torch.zeros(0, 8))
    with pytest.raises(ValueError, match="NaN"): nld_gradients(lin, torch.full((2, 8), float("nan")))
    with pytest.raises(ValueError, match="NaN"): principal_direction(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="shape"): nld_gradients(lin, torch.zeros(3, 7))
    with pytest.raises(ValueError, match="entries"): feature_correlation_quotient(np.ones(7), torch.randn(4, 8))
    with pytest.raises(ValueError, match="zero"): principal_direction(torch.zeros(4, 8))
    with pytest.raises(ValueError, match="method"): principal_direction(torch.ones(4, 8), method="power")
    with pytest.raises(ValueError, match="temperature"): nld_gradients(lin, torch.zeros(2, 8), temperature=-1)
    r = ranld(lin, torch.randn(5, 8), keep_gradients=False)
    with pytest.raises(ValueError, match="kept no gradients"): feature_correlation_quotient(r, r)


def test_result_roundtrip_and_plots(tmp_path):
    torch.manual_seed(1)
    pol = Policy.from_module(nn.Sequential(nn.Flatten(), nn.Linear(2 * 10 * 10, 3)), obs_shape=(2, 10, 10), device="cpu")
    res = ranld(pol, torch.rand(12, 2, 10, 10), name="img")
    assert res.direction.shape == (2, 10, 10) and np.linalg.norm(res.direction) == pytest.approx(1.0, abs=1e-5)
    res.save(tmp_path / "r"); back = load_result(tmp_path / "r")
    assert isinstance(back, PrincipalDirection) and np.allclose(back.direction, res.direction)
    assert res.spectrum().shape == (10, 10) and res.to_frame().shape[0] == 12
    for f in (res.plot, res.plot_spectrum, res.plot_grad_norms): assert f() is not None
    plt.close("all")


def test_protocol_small(tmp_path):
    torch.manual_seed(0)
    tiny = Policy.from_module(nn.Sequential(nn.Conv2d(4, 4, 8, 8), nn.ReLU(), nn.Flatten(), nn.Linear(400, 4)),
                              obs_shape=(4, 84, 84), device="cpu", name="tiny")
    qt = ranld_protocol(tiny, "toybox/Breakout", ["fgsm", "rotation"], RANLDConfig(n_runs=2, n_episodes=1, max_steps=20))
    assert isinstance(qt, QuotientTable) and len(qt.table) == 2 * 3
    assert qt.table.quotient.between(-1e-6, 1 + 1e-5).all()
    assert qt.table.flipped.between(0, 1).all() and (qt.table[qt.table.condition == "unmodified (S-hat)"].flipped == 0).all()
    assert list(qt.summary().condition) == ["unmodified (S-hat)", "fgsm", "rotation"]
    assert qt.directions.shape == (4, 4, 84, 84)
    qt.save(tmp_path / "q"); back = load_result(tmp_path / "q")
    assert back.labels == qt.labels and len(back.table) == len(qt.table)
    qt.plot(); qt.plot_directions(); plt.close("all")
    with pytest.raises(ValueError, match="at least one shift"): ranld_protocol(tiny, "toybox/Breakout", {})


def test_paper_tables_and_shift_budgets():
    from rlexplain.ranld_study import ADVERSARIAL_CONDITIONS, BASELINE, NATURAL_CONDITIONS, paper_shifts, paper_tables
    pt = paper_tables()
    assert set(pt.game) == {"Freeway", "BankHeist", "RoadRunner", "Pong"}
    assert pt[(pt.game == "Pong") & (pt.condition == BASELINE)].paper_mean.tolist() == [0.4934, 0.4934]
    assert set(pt.condition) == {BASELINE, *ADVERSARIAL_CONDITIONS, *NATURAL_CONDITIONS}
    demo, paper = paper_shifts("all", "demo"), paper_shifts("all", "paper")
    assert list(demo) == list(paper) and len(demo) == 9
    assert paper["Carlini&Wagner"].binary_search_steps == 10 and paper["Carlini&Wagner"].confidence == 10.0
    assert demo["Carlini&Wagner"].confidence == 0.0       # ART keeps the clean frame unless the margin kappa is reached
    assert demo["Elastic-Net"].beta == paper["Elastic-Net"].beta == 1e-4
    # issue 37: C&W from the paper's c = 10 with 3 binary-search steps (ART doubles a failed c: 10, 20, 40), EAD 2 steps
    # from c = 10 (x10), DeepFool over every action (ART 1.20's subset branch is wrong), Nesterov's eps read per entry
    assert (demo["Carlini&Wagner"].binary_search_steps, demo["Carlini&Wagner"].initial_const) == (3, 10.0)
    assert (demo["Elastic-Net"].binary_search_steps, demo["Elastic-Net"].initial_const) == (2, 10.0)
    assert demo["DeepFool"].nb_grads is None and paper["DeepFool"].nb_grads is None
    assert demo["Nesterov Momentum"].eps == paper["Nesterov Momentum"].eps == 0.001 and paper["Nesterov Momentum"].per_entry
    with pytest.raises(ValueError, match="scale must be"): paper_shifts("all", "huge")


def test_compare_policies_metrics_by_hand():
    from rlexplain.ranld_study import high_freq_fraction, spectral_entropy, top_mass
    x = np.cos(2 * np.pi * 2 * np.arange(16) / 16)[None, :] * np.ones((16, 1))    # one horizontal frequency (+-2 cycles)
    assert spectral_entropy(x) == pytest.approx(np.log(2) / np.log(256))           # two equal spectral peaks
    assert high_freq_fraction(x) == pytest.approx(0.0)                             # 2/16 cycles/px < 0.25
    y = np.cos(np.pi * 0.75 * np.arange(16))[None, :] * np.ones((16, 1))         # 6/16 cycles/px > 0.25
    assert high_freq_fraction(y) == pytest.approx(1.0)
    assert top_mass(np.r_[np.ones(10), np.zeros(990)], 0.01) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="NaN"): spectral_entropy(np.full((4, 4), np.nan))


def test_ranld_tables_and_comparison_on_zoo_ddqn(tmp_path):
    "RA-NLD on the zoo's RoadRunner DDQN and SA-DDQN agents (Nature CNN, 18 actions); skipped without them."
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.ranld_study import compare_policies, ranld_tables
    try:
        van, _ = load_best_agent("ALE/RoadRunner-v5", "ddqn", device="cpu")
        rob, _ = load_best_agent("ALE/RoadRunner-v5", "sa-ddqn", device="cpu")
    except LookupError as e:
        pytest.skip(str(e))
    cfg = RANLDConfig(n_runs=2, n_episodes=1, max_steps=25)
    tab = ranld_tables({"ALE/RoadRunner-v5": van}, {"Blurred Observations": "blur", "Nesterov Momentum": "nesterov"}, cfg,
                       out=tmp_path, progress=False)
    assert (tmp_path / "RoadRunner" / "result.json").exists()
    t = tab.set_index("condition")
    assert t.paper_mean["Blurred Observations"] == pytest.approx(0.2496)        # Korkmaz (2024) Table 2, RoadRunner
    assert t.quotient_mean.between(0, 1 + 1e-5).all() and t.changed["Blurred Observations"] == 1.0
    assert 0 < t.l2["Nesterov Momentum"] <= 0.001 + 1e-6                          # the paper's L2 budget, eps = 0.001
    cmp = compare_policies({"DDQN": van, "SA-DDQN": rob}, "ALE/RoadRunner-v5", n_episodes=1, max_steps=40)
    assert cmp.directions.shape == (2, 4, 84, 84) and np.allclose(np.diag(cmp.overlap), 1.0, atol=1e-5)
    assert cmp.table[["spectral_entropy", "high_freq_fraction", "top1pct_mass", "grad_norm_cv"]].notna().all().all()
    cmp.save(tmp_path / "cmp"); assert np.allclose(load_result(tmp_path / "cmp").overlap, cmp.overlap)
    cmp.plot(); plt.close("all")


# --- issue 19.3: one decomposition, Lanczos where it is faster ------------------------------------------------------------

def test_ranld_decomposes_once(lin, monkeypatch):
    "ranld() gets G_S and the top eigenvalues from one decomposition (it used to eigh the Gram matrix twice)."
    import rlexplain.ranld as R
    calls = []
    for name in ("_exact_top", "_lanczos_top"):
        f = getattr(R, name)
        monkeypatch.setattr(R, name, lambda *a, _f=f, _n=name, **k: calls.append(_n) or _f(*a, **k))
    r = R.ranld(lin, torch.randn(50, 8), n_eigenvalues=5)
    assert calls == ["_exact_top"] and len(r.eigenvalues) == 5
    L = r.gradients.astype(np.float64).T @ r.gradients.astype(np.float64) / 50
    assert np.allclose(r.eigenvalues, np.linalg.eigvalsh(L)[::-1][:5], rtol=1e-6)


def test_lanczos_equals_gram_and_auto_switch():
    from rlexplain.ranld import LANCZOS_MIN, _auto_method, _decompose
    g = torch.Generator().manual_seed(5)
    A = torch.randn(LANCZOS_MIN + 40, 700, generator=g) + 0.3 * torch.randn(1, 700, generator=g)
    zg, lg, eg = _decompose(A, "gram", 0, 5)
    zl, ll, el = _decompose(A, "lanczos", 0, 5)
    assert float((zg - zl).abs().max()) <= 1e-5 and np.allclose(el, eg, rtol=1e-5) and ll == pytest.approx(lg, rel=1e-6)
    za, _, ea = _decompose(A, "auto", 0, 5)                  # min(n, d) > LANCZOS_MIN: Lanczos
    assert torch.equal(za, zl) and np.array_equal(ea, el)
    assert _auto_method(800, 28224) == "lanczos" and _auto_method(400, 28224) == "gram" and _auto_method(100_000, 8) == "gram"
    B = torch.randn(3000, 6, generator=g)                     # n > d: the d x d Gram matrix
    w = np.linalg.eigvalsh((B.double().T @ B.double() / 3000).numpy())[::-1]
    assert np.allclose(top_eigenvalues(B, 10), w, rtol=1e-6)  # k > d gives d eigenvalues


def test_eigen_counts_are_checked(lin):
    "top_eigenvalues(k=0) used to return one value; ranld(n_eigenvalues=-1) is refused too."
    A = torch.randn(10, 4)
    for k in (0, -1, 2.5):
        with pytest.raises(ValueError, match="k .* must be an integer >= 1"): top_eigenvalues(A, k)
    with pytest.raises(ValueError, match="n_eigenvalues"): ranld(lin, torch.randn(5, 8), n_eigenvalues=-1)
    with pytest.raises(ValueError, match="method"): ranld(lin, torch.randn(5, 8), method="qr")
    assert len(ranld(lin, torch.randn(5, 8), n_eigenvalues=0).eigenvalues) == 0


_vals = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 12), st.integers(0, 9), st.integers(0, 2**16), st.booleans(), st.sampled_from(["auto", "gram", "lanczos", "svd"]))
def test_principal_direction_finite_or_clear_error(n, d, seed, poison, method):
    "Random shapes (empty included), NaN/inf, zeros: a unit, finite direction and eigenvalues, or a ValueError."
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(n, d, generator=g) * (seed % 3)          # seed % 3 == 0: all zeros
    if poison and n * d: A[seed % n, seed % d] = float("nan") if seed % 2 else float("inf")
    try:
        z, lam = principal_direction(A, method=method)
    except ValueError:
        return
    assert torch.isfinite(z).all() and float(z.norm()) == pytest.approx(1.0, abs=1e-5) and np.isfinite(lam) and lam >= 0
    e = top_eigenvalues(A, 3)
    assert np.isfinite(e).all() and len(e) == min(3, n, d) and e[0] == pytest.approx(lam, rel=1e-4, abs=1e-6)


# --- issue 28: the demo's direction is saved by the worker and read by its parent -----------------------------------------

def test_episode_direction_saves_and_reloads(tmp_path, monkeypatch):
    "episode_direction = collect_rollout on a fresh env + ranld; with out it is saved and reloaded, never recomputed."
    import rlexplain.ranld as R
    from rlexplain.envs import collect_rollout, make_env
    torch.manual_seed(3)
    pol = Policy.from_module(nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2)), obs_shape=(4,), device="cpu", name="mlp")
    ro = collect_rollout(make_env("CartPole-v1"), pol, n_episodes=1, seed=0, max_steps=30)
    want = ranld(pol, ro.obs, keep_gradients=False, name="CartPole-v1")
    got = R.episode_direction(pol, "CartPole-v1", max_steps=30, out=tmp_path)
    assert R.direction_path(tmp_path, "CartPole-v1") == tmp_path / "CartPole" / "direction"
    assert (tmp_path / "CartPole" / "direction" / "key.json").exists()
    for k in ("direction", "grad_sq_norms", "actions", "eigenvalues"): np.testing.assert_array_equal(getattr(got, k), getattr(want, k))
    assert got.eigenvalue == want.eigenvalue and got.name == "CartPole-v1" and got.gradients.shape == (0, 4)
    def boom(*a, **k): raise AssertionError("recomputed")
    monkeypatch.setattr(R, "ranld", boom)
    back = R.episode_direction(pol, "CartPole-v1", max_steps=30, out=tmp_path)   # loaded: ranld is not called
    assert isinstance(back, PrincipalDirection) and back.n_states == want.n_states
    for k in ("direction", "grad_sq_norms", "actions", "eigenvalues"): np.testing.assert_array_equal(getattr(back, k), getattr(want, k))
    with pytest.warns(UserWarning, match="other arguments"), pytest.raises(AssertionError, match="recomputed"):
        R.episode_direction(pol, "CartPole-v1", max_steps=20, out=tmp_path)
    monkeypatch.undo()
    with torch.no_grad(): pol.module[0].weight.add_(0.1)                  # other weights, same name: recomputed, replaced
    with pytest.warns(UserWarning, match="other arguments or weights"):
        new = R.episode_direction(pol, "CartPole-v1", max_steps=30, out=tmp_path)
    assert not np.array_equal(new.direction, want.direction)
    np.testing.assert_array_equal(R.episode_direction(pol, "CartPole-v1", max_steps=30, out=tmp_path).direction, new.direction)
    with pytest.raises(TypeError, match="env_id"): R.episode_direction(pol, make_env("CartPole-v1"))


def test_every_state_set_is_played_on_a_fresh_env(monkeypatch):
    """Given an env id, ranld_protocol plays every state set on a fresh make_env: its values equal ranld on rollouts each
    played on its own new environment. ALE's seeded reset does not reset all emulator state: on Freeway, run 1's baseline
    (seed 1000) played after run 0's sets on the same environment differs from step 21 (the old code: Lambda moved)."""
    from rlexplain.envs import make_env
    from rlexplain.shifts import Identity, collect_shifted_rollout, make_shift
    torch.manual_seed(0)
    tiny = Policy.from_module(nn.Sequential(nn.Conv2d(4, 4, 8, 8), nn.ReLU(), nn.Flatten(), nn.Linear(400, 3)),
                              obs_shape=(4, 84, 84), device="cpu", name="tiny")
    cfg = RANLDConfig(n_runs=2, n_episodes=1, max_steps=30)
    import rlexplain.ranld_study as R
    made = []
    def counting_make_env(*a, **k): made.append(a); return make_env(*a, **k)
    monkeypatch.setattr(R, "make_env", counting_make_env)
    qt = ranld_protocol(tiny, "ALE/Freeway-v5", {"blur": "blur"}, cfg)
    assert made == [("ALE/Freeway-v5",)] * 6              # 2 runs x (S, S-hat, blur): one new environment per set
    monkeypatch.undo()
    def one(shift, seed, keep):   # a set on its own new environment, by hand
        ro = collect_shifted_rollout(make_env("ALE/Freeway-v5"), tiny, shift, seed=seed, max_steps=30)
        return ranld(tiny, ro.observed if keep is None else ro.obs, keep_gradients=keep is not None)
    for r in range(2):
        S = one(Identity(), 1000 * r, True); H = one(Identity(), 1000 * r + 500, True); P = one(make_shift("blur"), 1000 * r + 500, None)
        got = qt.table[qt.table.run == r].set_index("condition").quotient
        assert got["unmodified (S-hat)"] == feature_correlation_quotient(H, S)
        assert got["blur"] == feature_correlation_quotient(P, S)
    assert qt.params["envs"] == "fresh per set"
    with pytest.raises(ValueError, match="env_kwargs"): ranld_protocol(tiny, make_env("ALE/Freeway-v5"), ["blur"], cfg, env_kwargs={"mode": 0})


# --- The protocol's ART attacks (C&W, DeepFool, EAD) on `shifts._OneForwardClassifier` (issue 28) -------------------------

def _conv_policy(seed=0, n_actions=4):
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 16), nn.ReLU(),
                        nn.Linear(16, n_actions))
    return Policy.from_module(net, obs_shape=(2, 12, 12), device="cpu", name="conv")


_PROTOCOL_ATTACKS = {"cw": dict(confidence=0.0, binary_search_steps=2, max_iter=10, initial_const=10.0),
                     "deepfool": dict(max_iter=10, nb_grads=4), "ead": dict(binary_search_steps=2, max_iter=20, initial_const=10.0)}
# DeepFool's nb_grads = the 4 actions: ART 1.20's DeepFool with fewer looks logits up by position in its label set, a step
# of 0 on this network (the input never moves, and the comparison would check nothing)


@pytest.mark.parametrize("name", sorted(_PROTOCOL_ATTACKS))
@pytest.mark.parametrize("T", [1.0, 2.5])
def test_one_forward_attacks_equal_art_bit_for_bit(name, T):
    "The shifts' C&W, DeepFool and EAD give the observations of ART's own attack on ART's PyTorchClassifier, bit for bit."
    from rlexplain.shifts import art_classifier, make_shift
    pol = _conv_policy(1); sh = make_shift(name, temperature=T, **_PROTOCOL_ATTACKS[name])
    x = torch.rand(3, 2, 12, 12, generator=torch.Generator().manual_seed(2))
    for i in range(len(x)):                       # one state per call, as in a rollout
        want = np.clip(sh.attack(art_classifier(pol, T)).generate(x[i:i + 1].numpy().copy()), 0, 1)
        np.testing.assert_array_equal(sh(x[i:i + 1], pol).numpy(), want)
    want = np.clip(sh.attack(art_classifier(pol, T)).generate(x.numpy().copy()), 0, 1)   # a batch (ART's batch_size 1)
    np.testing.assert_array_equal(sh(x, pol).numpy(), want)
    assert np.abs(want - x.numpy()).max() > 0             # the attack moved the states: the comparison can fail


def test_one_forward_classifier_matches_art_methods():
    "predict and class_gradient (all, one, per-sample labels) equal PyTorchClassifier's; the weights' .grad stays empty."
    from rlexplain.shifts import _one_forward_classifier, art_classifier
    pol = _conv_policy(2); a, b = art_classifier(pol), _one_forward_classifier(pol)
    x = np.random.default_rng(0).random((3, 2, 12, 12), dtype=np.float32)
    for p in pol.module.parameters(): p.grad = None
    np.testing.assert_array_equal(b.predict(x), a.predict(x))
    np.testing.assert_array_equal(b.predict(x, logits=True, batch_size=1), a.predict(x, batch_size=1))   # > batch_size: ART's batching
    labels = (None, 2, np.array([0, 3, 3]))
    got = [b.class_gradient(x, label=label) for label in labels]
    assert all(p.grad is None for p in pol.module.parameters())          # input gradients only
    for g, label in zip(got, labels): np.testing.assert_array_equal(g, a.class_gradient(x, label=label))
    with pytest.raises(ValueError, match="out of range"): b.class_gradient(x, label=9)
    b.predict(x); x += 0.1                                   # the attacks change their arrays in place: no stale forward
    np.testing.assert_array_equal(b.predict(x), a.predict(x))
    np.testing.assert_array_equal(b.class_gradient(x, label=labels[2]), a.class_gradient(x, label=labels[2]))
    b.clear()


@pytest.mark.parametrize("name", sorted(_PROTOCOL_ATTACKS))
def test_one_forward_per_distinct_input(name):
    """No forward repeats the input of the forward before it (C&W's predict then two class gradients at one x, EAD's, DeepFool's
    predict and nb_grads class gradients: one forward each); ART's own classifier runs one forward per call, so more."""
    from rlexplain.shifts import art_classifier, make_shift
    pol = _conv_policy(3); sh = make_shift(name, **_PROTOCOL_ATTACKS[name]); seen = []
    first = next(m for m in pol.module.modules() if isinstance(m, nn.Conv2d))   # ART runs a Sequential's layers one by one
    hook = first.register_forward_hook(lambda m, inp, out: seen.append(inp[0].detach().numpy().copy()))
    x = torch.rand(1, 2, 12, 12, generator=torch.Generator().manual_seed(4))
    try:
        sh(x, pol); ours = list(seen); seen.clear()
        sh.attack(art_classifier(pol)).generate(x.numpy().copy()); theirs = list(seen)
    finally: hook.remove()
    repeats = lambda xs: sum(np.array_equal(a, b) for a, b in zip(xs, xs[1:]))
    assert repeats(ours) == 0 and repeats(theirs) > 0 and len(ours) < len(theirs)


# --- issue 37 item 5: RA-NLD's attacks move the states ---------------------------------------------------------------------
def _four_action_line():
    "Q(x) = W x + b on x in R^2 with Q(0) = (0, 1, 2, 3): greedy action 3; its nearest boundary is action 2's, at distance 1 along -x_1."
    net = nn.Linear(2, 4)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])); net.bias.copy_(torch.tensor([0.0, 1.0, 2.0, 3.0]))
    return Policy.from_module(net, obs_shape=(2,), device="cpu", name="line4")


def test_deepfool_over_every_action_by_hand():
    """By hand: the boundaries of action 3 at x = 0 are |f_k - f_3| / ||w_k - w_3||: action 2 at 1, action 1 at 2, action 0 at
    3 / sqrt(2); DeepFool steps (-1, 0) onto action 2's and overshoots by 2%: x = (-1.02, 0), action 2. ART 1.20 with
    nb_grads = 3 < 4 actions takes the labels {1, 2, 3}, finds action 3 at position 2 and subtracts f_2 (the logit at index
    2) instead of f_3: action 2's distance reads 0, and the step is 0 (the input comes back unchanged). The RA-NLD
    protocol's DeepFool (nb_grads=3 before issue 37) must move it."""
    from rlexplain.ranld_study import paper_shifts
    from rlexplain.shifts import DeepFool
    pol, x = _four_action_line(), torch.zeros(1, 2)
    y = DeepFool()(x, pol)
    assert torch.allclose(y, torch.tensor([[-1.02, 0.0]]), atol=1e-5) and int(pol.act(y)[0]) == 2
    with pytest.warns(UserWarning, match="subset branch"):
        assert torch.equal(DeepFool(nb_grads=3)(x, pol), x)            # ART's zero step, named by the warning
    for scale in ("demo", "paper"):
        z = paper_shifts("adversarial", scale)["DeepFool"](x, pol)
        assert torch.allclose(z, torch.tensor([[-1.02, 0.0]]), atol=1e-5), scale


def test_protocol_attacks_move_a_real_agent():
    """Every adversarial shift of the demo/reference protocol moves each of 2 Freeway states of the zoo's DDQN by more
    than the scoreboard's no-op threshold (l2 >= 1/255) and changes its greedy action, except Nesterov (an L2 budget of
    0.001 per entry, 0.168, is short of this agent's boundary, about 0.27 away). Before issue 37, C&W (one binary-search
    step at c = 10) and Elastic-Net (one step at c = 10) returned the clean frames (l2 = 0), and Nesterov (eps = 0.001 as
    the whole change's L2 norm) moved them by 0.001. Skipped without the agent."""
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.envs import collect_rollout, make_env
    from rlexplain.ranld_study import paper_shifts
    try: pol, card = load_best_agent("ALE/Freeway-v5", "ddqn", device="cpu", plays=False)
    except LookupError as e: pytest.skip(str(e))
    ro = collect_rollout(make_env("ALE/Freeway-v5", **card.get("env_kwargs", {})), pol, n_episodes=1, seed=500, max_steps=2)
    x = torch.from_numpy(ro.obs.astype(np.float32) / 255.0)
    a0 = pol.act(x)
    for label, shift in paper_shifts("adversarial", "demo").items():
        y = shift(x, pol)
        l2 = (y - x).reshape(len(x), -1).norm(dim=1)
        assert (l2 >= 1 / 255).all(), f"{label} is a no-op: l2 = {l2.tolist()}"
        if label != "Nesterov Momentum": assert (pol.act(y) != a0).all(), label


def test_paper_shifts_readings():
    from rlexplain.ranld_study import NESTEROV_READINGS, paper_shifts
    assert paper_shifts("adversarial", "demo")["Nesterov Momentum"].per_entry
    assert not paper_shifts("adversarial", "paper", nesterov="l2")["Nesterov Momentum"].per_entry
    assert set(NESTEROV_READINGS) == {"per-entry", "l2"}
    with pytest.raises(ValueError, match="nesterov must be"): paper_shifts("adversarial", "demo", nesterov="pixels")
    pol = _conv_policy(); x = torch.rand(3, 2, 12, 12) * 0.5 + 0.25     # away from the box: the whole budget is spent
    d = (paper_shifts("adversarial", "demo")["Nesterov Momentum"](x, pol) - x).reshape(3, -1).norm(dim=1)
    assert torch.allclose(d, torch.full((3,), 0.001 * (2 * 12 * 12) ** 0.5), rtol=1e-3)   # eps * sqrt(d), d = 288


def test_flipped_counts_changed_greedy_actions_by_hand():
    """`_flipped` on the 4-action line: clean states x = 0 (action 3) twice, shifted to (-1.02, 0) (action 2) and to
    (-0.5, 0) (still action 3: Q = (0, 0.5, 2, 2.5)): one of two steps flipped, 0.5."""
    from rlexplain.ranld_study import _flipped
    from rlexplain.shifts import ShiftedRollout
    pol = _four_action_line()
    ro = ShiftedRollout(obs=np.zeros((2, 2), np.float32), actions=np.array([2, 3]), rewards=np.zeros(2), episode=np.zeros(2, int), states=[], env_id="line",
                        observed=np.array([[-1.02, 0.0], [-0.5, 0.0]], np.float32), attacked=np.ones(2, bool))
    assert _flipped(pol, ro) == 0.5
    assert np.isnan(_flipped(pol, ShiftedRollout(obs=np.zeros((2, 2), np.float32), actions=np.array([3, 3]), rewards=np.zeros(2), episode=np.zeros(2, int), states=[], env_id="line")))


# --- issue 36: the demo's state sets sample the whole episode ------------------------------------------------------------

def test_strided_sets_keep_every_kth_step_and_shift_only_there():
    """With `stride` k, a protocol's sets are the steps 0, k, 2k, ... of the played episode: its quotients equal RA-NLD of
    those steps of rollouts played by hand, the shifted rollout moved exactly the kept frames (`_EveryKth`), and S^Psi's
    states are the shifted frames at the kept steps."""
    from rlexplain.envs import make_env
    from rlexplain.ranld_study import _EveryKth, _kept
    from rlexplain.shifts import Identity, collect_shifted_rollout, make_shift
    torch.manual_seed(0)
    tiny = Policy.from_module(nn.Sequential(nn.Conv2d(4, 4, 8, 8), nn.ReLU(), nn.Flatten(), nn.Linear(400, 4)),
                              obs_shape=(4, 84, 84), device="cpu", name="tiny")
    cfg = RANLDConfig(n_runs=1, n_episodes=1, max_steps=24, stride=4)
    qt = ranld_protocol(tiny, "toybox/Breakout", {"blur": "blur"}, cfg)
    assert set(qt.table.n_states) == {6}                                          # steps 0, 4, ..., 20 of 24
    S = ranld(tiny, collect_shifted_rollout(make_env("toybox/Breakout"), tiny, Identity(), seed=0, max_steps=24).obs[::4])
    H = ranld(tiny, collect_shifted_rollout(make_env("toybox/Breakout"), tiny, Identity(), seed=500, max_steps=24).obs[::4])
    ro = collect_shifted_rollout(make_env("toybox/Breakout"), tiny, _EveryKth(make_shift("blur"), 4), seed=500, max_steps=24)
    moved = np.abs(ro.observed - ro.obs / 255.0).reshape(24, -1).max(1) > 1e-6
    assert np.flatnonzero(moved).tolist() == [0, 4, 8, 12, 16, 20]
    P = ranld(tiny, _kept(ro, 4).observed)
    got = qt.table.set_index("condition").quotient
    assert got["unmodified (S-hat)"] == feature_correlation_quotient(H, S) and got["blur"] == feature_correlation_quotient(P, S)
    assert qt.table.set_index("condition").changed["blur"] == 1.0 and qt.params["stride"] == 4
    with pytest.raises(ValueError, match="stride must be"): RANLDConfig(stride=0)
    with pytest.raises(ValueError, match="attack_prob must be 1"): RANLDConfig(stride=3, attack_prob=0.5)


def test_demo_state_sets_of_roadrunner_hold_several_greedy_actions():
    """Issue 36: the RA-NLD demo's sets (`tables_config("demo")`: every 10th of 400 steps) hold more than one greedy action of the
    RoadRunner DDQN. Its former sets, the first 40 steps, saw only the opening's run to the left, and under brightness and
    contrast the agent took UPLEFT (action 7) in all 40 (RA-NLD's one-action warning in the demo log). One run; skipped
    without an agent that passes the gate."""
    import dataclasses
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.ranld_study import paper_shifts, tables_config
    try: pol, card = load_best_agent("ALE/RoadRunner-v5", "ddqn", device="cpu", plays=True)
    except LookupError as e: pytest.skip(str(e))
    cfg = dataclasses.replace(tables_config("demo"), n_runs=1)
    bc = {"Brightness and Contrast": paper_shifts("natural", "demo")["Brightness and Contrast"]}
    t = ranld_protocol(pol, "ALE/RoadRunner-v5", bc, cfg, env_kwargs=card.get("env_kwargs", {})).table.set_index("condition")
    assert (t.n_states == 40).all()
    assert (t.actions_S > 1).all() and (t.actions > 1).all(), t[["actions_S", "actions"]]
