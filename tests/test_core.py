"Integration tests of rlexplain.core: adapters on real RL-Zoo agents, observations, results I/O, executors."
import numpy as np
import pandas as pd
import pytest
import torch

from rlexplain.core import Policy, RunDir, load_sb3, run_jobs, sb3_algo_of_zip, to_obs_tensor
from rlexplain.envs import collect_rollout, make_env


@pytest.mark.parametrize("algo", ["dqn", "qrdqn", "ppo", "a2c"])
@pytest.mark.parametrize("env", ["CartPole-v1", "LunarLander-v2"])
def test_sb3_zoo_adapter_matches_sb3_predict(shared_agents, algo, env):
    zip_path = shared_agents / "sb3-zoo" / algo / env / f"{env}.zip"
    assert sb3_algo_of_zip(zip_path) == algo
    model = load_sb3(zip_path, device="cpu")
    pol = Policy.from_sb3(model, device="cpu")
    obs = np.random.default_rng(0).normal(size=(16, *model.observation_space.shape)).astype(np.float32)
    sb3_actions, _ = model.predict(obs, deterministic=True)
    assert pol.forward(obs).shape == (16, model.action_space.n)
    np.testing.assert_array_equal(pol.act(obs, deterministic=True).numpy(), sb3_actions)
    assert pol.kind == ("q" if algo in ("dqn", "qrdqn") else "logits")
    if algo in ("ppo", "a2c"):   # raw actor logits: SB3's action probabilities after a softmax
        with torch.no_grad():
            probs = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.probs.numpy()
        np.testing.assert_allclose(torch.softmax(torch.as_tensor(pol.forward(obs)).detach(), 1).numpy(), probs, atol=1e-5)


def test_actor_critic_image_agent_gives_sb3_action_probabilities():
    "An image actor-critic's [0, 1] input goes straight to its CNN: softmax of the raw logits = SB3's probabilities on x * 255."
    from rlexplain.agents import load_best_agent
    pol, card = load_best_agent("ALE/Pong-v5", "ppo", device="cpu")
    x = torch.rand(4, 4, 84, 84)
    with torch.no_grad():
        ours = torch.softmax(pol.module(x), 1); sb3 = pol.module.policy.get_distribution(x * 255).distribution.probs
    torch.testing.assert_close(ours, sb3, atol=1e-5, rtol=0)


def test_sb3_zoo_agent_is_competent_on_cartpole(shared_agents):
    pol = Policy.from_sb3(shared_agents / "sb3-zoo" / "dqn" / "CartPole-v1" / "CartPole-v1.zip", device="cpu")
    ret = collect_rollout(make_env("CartPole-v1"), pol, n_episodes=2, seed=0, record_obs=False).returns()
    assert ret.mean() > 400


def test_obs_conversion_errors():
    with pytest.raises(ValueError, match="channel-first"):
        to_obs_tensor(np.zeros((2, 84, 84, 4), np.uint8), (4, 84, 84))
    with pytest.raises(ValueError, match="NaN"):
        to_obs_tensor(np.array([[np.nan, 0.0]]), (2,))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        to_obs_tensor(np.full((1, 4, 84, 84), 255.0, np.float32), (4, 84, 84))
    with pytest.raises(TypeError):
        to_obs_tensor("frames", (2,))


def _slow_square(x):
    return x * x


def test_run_jobs_process_pool_and_resume(tmp_path):
    rd = RunDir(tmp_path)
    out = run_jobs(_slow_square, [1, 2, 3], max_workers=2, names=["a", "b", "c"], run_dir=rd)
    assert out == [1, 4, 9]
    (tmp_path / "units" / "b.json").unlink()          # "interrupted": b is lost, a and c survive
    calls = run_jobs(_slow_square, [10, 20, 30], names=["a", "b", "c"], run_dir=rd)
    assert calls == [1, 400, 9]                         # only b was recomputed


def test_run_jobs_on_dask_local_cluster():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert run_jobs(_slow_square, range(4), executor=client.get_executor()) == [0, 1, 4, 9]


def test_policy_from_module_errors():
    net = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="kind"):
        Policy(net, 2, (3,), kind="value")
    pol = Policy.from_module(net, (3,), device="cpu")
    with pytest.raises(ValueError, match="shape"):
        pol.forward(np.zeros((1, 4), np.float32))
    with pytest.raises(TypeError, match="policy agent"):
        Policy.from_module(net, (3,), kind="logits", device="cpu").q_values(np.zeros((1, 3), np.float32))


def test_scaled_config_picks_demo_or_paper(monkeypatch):
    import dataclasses
    from rlexplain.core import ScaledConfig

    @dataclasses.dataclass(frozen=True)
    class Cfg(ScaledConfig):
        n: int = 1
        @classmethod
        def demo(cls, **kw): return cls(**kw)
        @classmethod
        def paper(cls, **kw): return cls(**{"n": 100, **kw})

    assert Cfg.from_scale("demo").n == 1 and Cfg.from_scale("paper").n == 100
    assert Cfg.from_scale("paper", n=7).n == 7
    monkeypatch.setenv("RLEXPLAIN_SCALE", "paper"); assert Cfg.from_scale().n == 100
    monkeypatch.setenv("RLEXPLAIN_SCALE", "demo"); assert Cfg.from_scale().n == 1
    with pytest.raises(ValueError, match="scale must be one of"):
        Cfg.from_scale("huge")


def test_policy_runs_conv_nets_channels_last_with_unchanged_values():
    "Policy switches conv nets to channels-last memory order for speed: outputs and input gradients stay the same."
    import copy
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 8, 4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 20 * 20, 3))
    ref = copy.deepcopy(net)
    pol = Policy.from_module(net, (4, 84, 84), device="cpu")
    assert pol.channels_last and pol.module[0].weight.is_contiguous(memory_format=torch.channels_last)
    x = torch.rand(5, 4, 84, 84, requires_grad=True)
    torch.testing.assert_close(pol.forward(x), ref(x), rtol=1e-5, atol=1e-5)
    g, = torch.autograd.grad(pol.forward(x)[:, 1].sum(), x)
    g_ref, = torch.autograd.grad(ref(x)[:, 1].sum(), x)
    torch.testing.assert_close(g, g_ref, rtol=1e-5, atol=1e-6)
    assert g.shape == x.shape and g.view(5, -1).shape == (5, 4 * 84 * 84)
    mlp = Policy.from_module(torch.nn.Linear(4, 2), (4,), device="cpu")
    assert not mlp.channels_last
