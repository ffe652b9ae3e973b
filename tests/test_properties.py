"""Property tests (hypothesis) of rlexplain.core's public entry points: random shapes, dtypes, ranges, NaN/inf, empty
batches and out-of-range sizes give a valid, finite result or a clear error (ValueError / TypeError) naming what was
expected; never a silent NaN, a silent reshape, or a library's internal error."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from rlexplain.core import Policy, to_obs_tensor
from rlexplain.runs import RunDir, encode_unit_name

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,   # the same examples on every run (CI)
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
DTYPES = st.sampled_from([np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_])
CLEAR = (ValueError, TypeError)


def arrays(shape_st):
    "Arrays of any of DTYPES, including NaN, inf and huge floats where the dtype allows them."
    return DTYPES.flatmap(lambda dt: hnp.arrays(dt, shape_st, elements=None if np.dtype(dt).kind == "f" else None))


@SETTINGS
@given(obs=arrays(hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=6)),
       obs_shape=st.one_of(st.none(), hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)))
@example(obs=np.full((1, 1, 1, 1), -1, np.int32), obs_shape=None)          # an integer image outside [0, 1] (found by hypothesis)
@example(obs=np.full((2, 1, 2, 2), 1e300), obs_shape=(1, 2, 2))            # float64 too large for float32
@example(obs=np.zeros((3, 0)), obs_shape=None)                             # zero features
def test_to_obs_tensor_gives_a_finite_batch_or_a_clear_error(obs, obs_shape):
    try:
        t = to_obs_tensor(obs, obs_shape)
    except CLEAR as e:
        assert str(e)                                       # a message, naming what was wrong
        return
    assert t.dtype == torch.float32 and bool(torch.isfinite(t).all())
    if obs_shape is not None:
        assert tuple(t.shape[1:]) == tuple(obs_shape)       # never a silent reshape
        assert t.numel() == np.asarray(obs).size
    if t.ndim == 4 and t.numel(): assert 0.0 <= float(t.min()) and float(t.max()) <= 1.0
    if np.asarray(obs).dtype.kind == "f" and obs.size and not np.isfinite(obs.astype(np.float64)).all():
        raise AssertionError("NaN or inf went through")


@SETTINGS
@given(b=st.integers(0, 5), d=st.integers(1, 6),
       values=st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")), st.just(float("inf")), st.just(-float("inf"))))
def test_to_obs_tensor_refuses_nonfinite_floats(b, d, values):
    x = np.full((b, d), values, np.float32)
    if b and not np.isfinite(values):
        with pytest.raises(ValueError, match="NaN or infinite"): to_obs_tensor(x, (d,))
    else:
        assert to_obs_tensor(x, (d,)).shape == (b, d)


def _mlp(d, a):
    torch.manual_seed(0); return torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Tanh(), torch.nn.Linear(8, a))


def _cnn(c, a):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(c, 2, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(),
                               torch.nn.Linear(8, a))


@SETTINGS
@given(d=st.integers(1, 5), a=st.integers(1, 5), b=st.integers(0, 7), scale=st.floats(0, 1e3),
       kind=st.sampled_from(["q", "logits"]), batch_size=st.one_of(st.none(), st.integers(-2, 4)),
       temperature=st.one_of(st.floats(-1, 10), st.just(float("nan")), st.just(float("inf"))), seed=st.integers(0, 2**16))
def test_tabular_policy_outputs_are_finite_or_a_clear_error(d, a, b, scale, kind, batch_size, temperature, seed):
    pol = Policy.from_module(_mlp(d, a), (d,), kind=kind, device="cpu")
    x = (np.random.default_rng(seed).standard_normal((b, d)) * scale).astype(np.float32)
    try: out = pol.outputs(x, batch_size=batch_size)
    except CLEAR as e:
        assert batch_size is not None and batch_size < 1 and "batch_size" in str(e); return
    assert out.shape == (b, a) and bool(torch.isfinite(out).all())
    torch.testing.assert_close(out, pol.forward(x).detach(), rtol=1e-5, atol=1e-5)
    try: p = pol.action_probs(x, temperature=temperature)
    except CLEAR as e:
        assert not (0 < temperature < float("inf")) and "temperature" in str(e); return
    assert p.shape == (b, a) and bool(torch.isfinite(p).all())
    if b: torch.testing.assert_close(p.sum(-1), torch.ones(b), rtol=0, atol=1e-5)
    assert pol.act(x).shape == (b,)


@SETTINGS
@given(c=st.integers(1, 3), hw=st.integers(3, 9), a=st.integers(1, 4), b=st.integers(0, 5),
       dtype=st.sampled_from([np.uint8, np.float32, np.float64]), lo=st.floats(-0.5, 1), span=st.floats(0, 1.5),
       channel_last=st.booleans(), seed=st.integers(0, 2**16))
def test_image_policy_forward_is_finite_or_a_clear_error(c, hw, a, b, dtype, lo, span, channel_last, seed):
    pol = Policy.from_module(_cnn(c, a), (c, hw, hw), device="cpu")
    rng = np.random.default_rng(seed)
    if dtype == np.uint8: x = rng.integers(0, 256, (b, c, hw, hw)).astype(np.uint8)
    else: x = (lo + span * rng.random((b, c, hw, hw))).astype(dtype)
    if channel_last: x = np.moveaxis(x, 1, -1)
    try: out = pol.outputs(x)
    except CLEAR as e:
        msg = str(e)
        assert ("channel-first" in msg or "shape" in msg) if channel_last and c != hw else "[0, 1]" in msg
        return
    assert not channel_last or c == hw                     # a channel-last batch passes only when (C, H, W) == (W, C, H)
    assert out.shape == (b, a) and bool(torch.isfinite(out).all())


@SETTINGS
@given(obs_shape=st.one_of(st.tuples(st.integers(-2, 4)), st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
                           st.just(()), st.just("84x84")),
       n_actions=st.one_of(st.integers(-2, 4), st.just(2.5), st.just(True)))
def test_policy_construction_validates_its_arguments(obs_shape, n_actions):
    try: pol = Policy(torch.nn.Identity(), n_actions, obs_shape, device="cpu")
    except CLEAR as e:
        assert str(e); return
    assert pol.n_actions >= 1 and all(s >= 1 for s in pol.obs_shape) and pol.obs_shape


@SETTINGS
@given(names=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=6, unique=True))
def test_unit_names_round_trip_and_never_share_a_file(tmp_path_factory, names):
    assume(all(not any(s == "" for s in n.split("/")[:-1]) or True for n in names))
    # a name that is a folder of another ("a" and "a/b") can both be stored: files get suffixes, folders do not
    encoded = [encode_unit_name(n) for n in names]
    assert len(set(encoded)) == len(encoded)
    assert all(".." not in e.split("/") and "." not in e.split("/") and not e.startswith("/") for e in encoded)
    assert all(len(p.encode()) <= 200 for e in encoded for p in e.split("/"))
    rd = RunDir(tmp_path_factory.mktemp("units"))
    for i, n in enumerate(names): rd.save_unit(n, {"i": i})
    for i, n in enumerate(names): assert rd.load_unit(n) == {"i": i}, n
