"""A rerun of a finished training run trains nothing (a campaign restarted on a fresh machine retrained, and forked, the
last stretch of every finished run: A2C from its 2.4e6-frame entry to 3e6 frames again, 150 s a seed)."""
import json

import pytest

from rlexplain import agents
from rlexplain.agents import TrainJob, entry_dir, train_agent


def _entries(root, job, frames):
    for f in frames:
        d = entry_dir(root, job.env_id, job.pipeline, job.seed, f); d.mkdir(parents=True)
        (d / "card.json").write_text(json.dumps({"id": f"x/{f}", "env_steps": f // 4, "frames": f}))


def _no_training(*a, **k): raise AssertionError("train_agent built an environment for a finished run")


def test_a_finished_run_returns_its_entries_without_training(tmp_path, monkeypatch):
    monkeypatch.setattr(agents, "_make_vec_env", _no_training)
    job = TrainJob("a2c", "toybox/Breakout", 0, (50_000, 960_000, 3_000_000), str(tmp_path))
    _entries(tmp_path, job, job.checkpoints)
    got = train_agent(job)
    assert got == sorted(str(entry_dir(tmp_path, job.env_id, job.pipeline, 0, f)) for f in job.checkpoints)
    assert not (tmp_path / "_resume").exists()      # no snapshot written either


def test_an_earlier_checkpoint_after_the_last_one_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(agents, "_make_vec_env", _no_training)
    job = TrainJob("a2c", "toybox/Breakout", 0, (50_000, 960_000, 3_000_000), str(tmp_path))
    _entries(tmp_path, job, (50_000, 3_000_000))
    with pytest.raises(ValueError, match=r"has its last checkpoint \(3,000,000 frames\) but not \[960000\]"):
        train_agent(job)
