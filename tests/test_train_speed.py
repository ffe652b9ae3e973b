"""Issue 52.2: the compute settings of a training run (`rlexplain.agents.set_compute`) change how it computes, not what
it learns, and are recorded apart from its hyperparameters; the throughput bench runs and prints its columns. No timing
is asserted here (speed figures come from bench/train_throughput.py)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rlexplain.agents import TrainJob, _build_model, _make_vec_env, _train_command, _policy_state, set_compute

ROOT = Path(__file__).resolve().parent.parent
TB = (("fire_on_life_loss", True),)


def _model(tmp_path, pipeline="dqn", features="nature"):
    job = TrainJob(pipeline, "toybox/Breakout", 0, (4_000,), root=str(tmp_path), features=features, env_kwargs=TB)
    return _build_model(job, _make_vec_env(job, 1))


def test_bad_settings_raise(tmp_path):
    m = _model(tmp_path, features="compact")
    with pytest.raises(ValueError, match="layout must be one of"): set_compute(m, "nhwc")
    with pytest.raises(ValueError, match="precision must be one of"): set_compute(m, precision="fp16")


def test_channels_last_acts_as_contiguous_and_saves_contiguous(tmp_path):
    m = _model(tmp_path); x = torch.rand(5, 4, 84, 84, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(): ref = m.q_net(x * 255).clone()
    rec = set_compute(m, "channels_last")
    assert rec["layout"] == "channels_last" and m.q_net.features_extractor.cnn[0].weight.is_contiguous(memory_format=torch.channels_last)
    with torch.no_grad(): got = m.q_net(x * 255)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    sd = _policy_state(m)                                   # the zoo's weights: contiguous, and load into a contiguous model
    assert all(v.is_contiguous() for v in sd.values())
    fresh = _model(tmp_path / "b"); fresh.policy.load_state_dict({**fresh.policy.state_dict(), **{k: v.float() for k, v in sd.items()}})
    with torch.no_grad(): torch.testing.assert_close(fresh.q_net(x * 255), m.q_net(x * 255), atol=2e-2, rtol=2e-2)  # float16 weights


def test_fused_adam_learns_what_the_default_step_learns(tmp_path):
    a = _model(tmp_path, "dqn-frequent", "compact"); a.learning_starts = 10 ** 9
    a.learn(120, progress_bar=False)
    b = _model(tmp_path / "b", "dqn-frequent", "compact"); b.replay_buffer = a.replay_buffer   # same seed: same weights; same transitions
    from stable_baselines3.common.logger import configure
    b.set_logger(configure(None, [""]))
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()): assert torch.equal(pa, pb)
    assert set_compute(a, fused=False)["optimizer"] == "Adam" and set_compute(b)["optimizer"] == "Adam fused"
    for m in (a, b):
        np.random.seed(0); torch.manual_seed(0); m.replay_buffer.sample = _fixed(m.replay_buffer)
        m.train(gradient_steps=3, batch_size=16)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters()): torch.testing.assert_close(pa, pb, atol=1e-5, rtol=1e-5)
    assert any((pa != pa0).any() for pa, pa0 in zip(a.policy.parameters(), _model(tmp_path / "c", "dqn-frequent", "compact").policy.parameters()))


def _fixed(buf):
    "A replay buffer's `sample` that returns the same batches in the same order on every model (numpy seeded per call)."
    rng = np.random.default_rng(1)
    idx = [rng.integers(0, buf.pos, 16) for _ in range(3)]; it = iter(idx)
    return lambda batch_size, env=None: buf._get_samples(next(it), env=env)


def test_bf16_update_autocasts_the_update_only(tmp_path):
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported(): pytest.skip("no native bfloat16 on this CPU")
    m = _model(tmp_path, features="compact"); m.learning_starts = 40
    seen = {True: 0, False: 0}
    m.q_net.register_forward_pre_hook(lambda mod, inp: seen.__setitem__(torch.is_autocast_enabled("cpu"), seen[torch.is_autocast_enabled("cpu")] + 1))
    m.exploration_schedule = lambda _p: 0.0     # act greedily: every step runs the acting forward
    assert set_compute(m, precision="bf16-update")["update_precision"] == "bf16-update"
    m.learn(60, progress_bar=False)
    assert seen[True] > 0 and seen[False] > 0   # updates under autocast, acting outside it
    seen[True] = 0; set_compute(m); m.learn(20, progress_bar=False)
    assert seen[True] == 0                       # back to float32


def test_the_card_records_compute_apart_from_hyperparams(tmp_path):
    from rlexplain.agents import TrainJob, train_agent, load_card
    job = TrainJob("dqn-mlp", "CartPole-v1", 0, (300,), root=str(tmp_path), eval_episodes=1)
    d, = train_agent(job); card = load_card(d)
    assert card["compute"]["update_precision"] == "fp32" and card["compute"]["layout"] == "contiguous"
    assert "compute" not in card["hyperparams"] and not any("fused" in str(v) for v in card["hyperparams"].values())
    later = TrainJob("dqn-mlp", "CartPole-v1", 0, (300, 600), root=str(tmp_path), eval_episodes=1, precision="bf16-update")
    with pytest.raises(ValueError, match="resumes a snapshot updated in 'fp32'"): train_agent(later)
    for z in (tmp_path / "_resume").rglob("*.zip"): z.unlink()       # no snapshot: continued from the entry
    with pytest.raises(ValueError, match="precision fp32; now .* bf16-update"): train_agent(later)
    assert "--precision bf16-update" in _train_command(later) and "--precision" not in _train_command(job)


def test_the_throughput_bench_prints_its_columns():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "train_throughput.py"), "--quick", "--pipelines", "tb-dqn-compact",
                          "--configs", "before,fused", "--e2e", "before,fused"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    head = next(l for l in out.stdout.splitlines() if l.startswith("| pipeline"))
    sys.path.insert(0, str(ROOT / "bench")); from train_throughput import COLUMNS
    assert [c.strip() for c in head.strip("|").split("|")] == COLUMNS
    rows = [l for l in out.stdout.splitlines() if l.startswith("| tb-dqn-compact")]
    assert [r.split("|")[2].strip() for r in rows] == ["before", "fused"]
    assert "machine:" in out.stdout and "load after" in out.stdout


def test_zoo_train_passes_precision_and_layout_to_every_job(monkeypatch, tmp_path):
    """`rlexplain zoo train --precision/--layout` reach `train_zoo`, which puts them on every `TrainJob` (the card's `compute`);
    an unknown value is refused at the parser and at `train_zoo`, before anything trains."""
    import rlexplain.agent_zoo as Z
    from rlexplain.cli_options import build_parser
    seen = []
    monkeypatch.setattr(Z, "run_jobs", lambda fn, jobs, **kw: seen.extend(jobs) or [[] for _ in jobs])
    Z.train_zoo("CartPole-v1", ["dqn-mlp"], [0, 1], [300], root=tmp_path, precision="bf16-update", layout="channels_last")
    jobs = [j for j in seen if hasattr(j, "precision")]
    assert len(jobs) == 2 and {(j.precision, j.layout) for j in jobs} == {("bf16-update", "channels_last")}
    with pytest.raises(ValueError, match="precision must be one of"): Z.train_zoo("CartPole-v1", ["dqn-mlp"], [0], [300], root=tmp_path, precision="fp16")
    with pytest.raises(ValueError, match="layout must be one of"): Z.train_zoo("CartPole-v1", ["dqn-mlp"], [0], [300], root=tmp_path, layout="nhwc")
    a = build_parser().parse_args(["zoo", "train", "--precision", "bf16-update", "--layout", "channels_last"])
    assert (a.precision, a.layout) == ("bf16-update", "channels_last")
    with pytest.raises(SystemExit): build_parser().parse_args(["zoo", "train", "--precision", "fp16"])
