"RA-NLD's agents: dueling Double DQN and SA-DDQN train, warm-start, save as zoo entries and load as Policies."
import dataclasses

import numpy as np
import pytest
import torch

import rlexplain.agents as A
import rlexplain.agent_zoo as Z
from rlexplain.core import sb3_policy
from rlexplain.runs import load_json


@pytest.fixture
def tiny_pipelines(monkeypatch):
    "The ddqn / sa-ddqn pipelines with a few hundred steps instead of 250k (same classes, networks and regulariser)."
    d = A.PIPELINES["ddqn"]; s = A.PIPELINES["sa-ddqn"]
    monkeypatch.setitem(A.PIPELINES, "ddqn", dataclasses.replace(d, hyperparams={**d.hyperparams, "learning_starts": 100}))
    monkeypatch.setitem(A.PIPELINES, "sa-ddqn", dataclasses.replace(s, hyperparams={**s.hyperparams, "sa_start": 200, "learning_starts": 250,
                                                                                    "sa_ramp": 50}))


def test_double_q_target_uses_online_argmax(monkeypatch):
    """DDQN.train's TD target on one hand-set transition: the online network picks the next action, the target network
    values it: r + gamma * Q_target(s', argmax Q_online(s')) = 1 + 0.5 * (-1) = 0.5 (plain DQN's max would give 1.5)."""
    import gymnasium as gym
    from stable_baselines3.common.logger import configure
    m = A.DDQN("MlpPolicy", gym.make("CartPole-v1"), learning_starts=0, buffer_size=10, batch_size=1, gamma=0.5,
               learning_rate=0.0, seed=0, device="cpu")
    m.set_logger(configure(None, []))
    with torch.no_grad():   # Q = V + A - mean A with V = 0: online (-0.5, 0.5) prefers 1; target (1, -1) prefers 0
        for net, adv in ((m.q_net, (0.0, 1.0)), (m.q_net_target, (2.0, 0.0))):
            for p in net.parameters(): p.zero_()
            net.q_net.advantage[2].bias.copy_(torch.tensor(adv))
    o = np.zeros((1, 4), np.float32)
    m.replay_buffer.add(o, o, np.array([0]), np.array([1.0]), np.array([False]), [{}])
    seen = {}
    def loss(q, target): seen["target"] = target.detach().clone(); return ((q - target) ** 2).mean()
    monkeypatch.setattr(A.F, "smooth_l1_loss", loss)
    m.train(gradient_steps=1, batch_size=1)
    assert float(seen["target"]) == pytest.approx(0.5)


def test_ddqn_and_sa_ddqn_zoo_round_trip(tmp_path, tiny_pipelines):
    root = str(tmp_path)
    with pytest.raises(FileNotFoundError, match="starts from the ddqn agent"):
        A.train_agent(A.TrainJob("sa-ddqn", "ALE/RoadRunner-v5", 0, (1200,), root=root))
    A.train_agent(A.TrainJob("ddqn", "ALE/RoadRunner-v5", 0, (800,), root=root))
    A.train_agent(A.TrainJob("sa-ddqn", "ALE/RoadRunner-v5", 0, (1200,), root=root))
    z = Z.list_zoo(root).set_index("pipeline")
    for pipe, steps in (("ddqn", 200), ("sa-ddqn", 300)):
        card = load_json(f"{z.loc[pipe, 'path']}/card.json")
        assert (card["algo"], card["features"], card["env_steps"]) == (pipe, "nature-conv", steps)
    model = A.SADDQN.load(tmp_path / "_resume" / "ale-roadrunner-v5" / "sa-ddqn" / "seed0.zip", device="cpu")
    assert isinstance(model.q_net.q_net, A.DuelingHead) and model.sa_budget() == pytest.approx(1 / 255)
    pol = Z.load_agent(z.loc["sa-ddqn", "path"], device="cpu")
    x = torch.rand(3, 4, 84, 84)
    with torch.no_grad():
        ref = sb3_policy(model, device="cpu").outputs(x)
    torch.testing.assert_close(pol.outputs(x), ref, rtol=1e-2, atol=1e-2)   # float16 weights in the zoo
    assert pol.act(np.zeros((2, 4, 84, 84), np.uint8)).shape == (2,)


def test_sa_regulariser_stays_in_budget_and_raises_the_margin():
    "PGD's point stays in the eps-ball and [0, 1]; the regulariser at eps > 0 is at least its value at eps = 0."
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    x = torch.rand(5, 1, 4, 4)
    r0 = A.sa_regulariser(net, x, eps=0.0, hinge=100.0); r1 = A.sa_regulariser(net, x, eps=0.05, steps=10, hinge=100.0)
    assert float(r1) >= float(r0)
    with pytest.raises(ValueError, match="steps must be"): A.sa_regulariser(net, x, eps=0.1, steps=0)


def test_resumed_off_policy_run_refills_its_replay_buffer(tmp_path, monkeypatch):
    """SB3 saves no replay buffer, so a run resumed from its snapshot must collect `learning_starts` fresh transitions
    before its first update (here 300 steps after resuming at 400), instead of fitting a handful of transitions."""
    from stable_baselines3 import DQN
    d = A.PIPELINES["dqn"]
    monkeypatch.setitem(A.PIPELINES, "dqn", dataclasses.replace(d, hyperparams={**d.hyperparams, "learning_starts": 300,
                                                                                 "buffer_size": 1_000}))
    assert A._refill_steps(A.PIPELINES["dqn"]) == 300 and A._refill_steps(A.PIPELINES["ppo"]) == 0
    assert A._refill_steps(A.PIPELINES["sa-ddqn"]) == 5_000   # counted from sa_start, where the SA-DDQN run begins
    snap = tmp_path / "_resume" / "cartpole-v1" / "dqn" / "seed0.zip"
    Z.train_zoo("CartPole-v1", ["dqn"], [0], [400], root=tmp_path, eval_episodes=1)
    first = DQN.load(snap, device="cpu"); assert first.num_timesteps == 400 and first._n_updates > 0
    Z.train_zoo("CartPole-v1", ["dqn"], [0], [400, 600], root=tmp_path, eval_episodes=1)
    resumed = DQN.load(snap, device="cpu")
    assert resumed.num_timesteps == 600 and resumed.learning_starts == 700
    assert resumed._n_updates == first._n_updates   # 200 steps after resuming, still refilling: no update yet
    Z.train_zoo("CartPole-v1", ["dqn"], [0], [400, 600, 1000], root=tmp_path, eval_episodes=1)
    last = DQN.load(snap, device="cpu")   # each resume loses the buffer again: this one refills 600..900, then learns
    assert last.learning_starts == 900 and last._n_updates == first._n_updates + 100 // 4


def test_resume_refuses_checkpoints_it_has_already_passed(tmp_path):
    """A run resumed at 400 steps with a checkpoint list that now includes 200 (never written) would save its 400-step
    weights under the 200-step name; train_agent refuses and names the checkpoint instead."""
    Z.train_zoo("CartPole-v1", ["ppo"], [0], [512], root=tmp_path, eval_episodes=1)
    job = A.TrainJob(pipeline="ppo", env_id="CartPole-v1", seed=0, checkpoints=(200, 512, 1024), root=str(tmp_path))
    with pytest.raises(ValueError, match=r"past checkpoints \[200\] that it never wrote"):
        A.train_agent(job)
    assert not A.entry_dir(tmp_path, "CartPole-v1", "ppo", 0, 200).exists()
