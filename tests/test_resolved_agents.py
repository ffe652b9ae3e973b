"""Issue 36: a study whose agents are left to the zoo ("the zoo's best agent that passes the quality gate") records the agents
it resolved, by zoo id, in the configuration its run folder checks, so that a run resumed after the zoo gained a better
checkpoint is refused (`ConfigMismatchError` naming `agents`) instead of mixing two agents in one table.

The zoo here is a temporary folder of cards (no weights): every check happens before an agent's network is loaded."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from rlexplain import agent_zoo, saliency_study as ss
from rlexplain.agents import entry_dir, env_slug
from rlexplain.core import Policy
from rlexplain.runs import ConfigMismatchError, RunDir, load_json, save_json

GAME = "ALE/Breakout-v5"
OLD, NEW = "ale-breakout-v5/dqn/seed0/400000", "ale-breakout-v5/dqn/seed0/1200000"


def _entry(root, frames: int, mean: float, env_id: str = GAME, algo: str = "dqn"):
    "A card-only zoo entry of `env_id`'s `algo` agent (seed 0) at `frames`, evaluated at `mean` and passing the quality gate."
    d = entry_dir(root, env_id, algo, 0, frames); d.mkdir(parents=True)
    save_json(d / "card.json", {"id": f"{env_slug(env_id)}/{algo}/seed0/{frames}", "env_id": env_id, "pipeline": algo, "algo": algo,
                                "seed": 0, "frames": frames, "env_steps": frames // 4, "n_actions": 4,
                                "observation_shape": [4, 84, 84], "evaluation": {"mean": mean, "std": 1.0},
                                "gate": {"plays": True}})
    return d


@pytest.fixture
def zoo(tmp_path, monkeypatch):
    "A temporary zoo as the default zoo (`agent_zoo.ZOO_DIR`: `best_zoo_entry` and `zoo_entry_dir` look there)."
    root = tmp_path / "zoo"; root.mkdir()
    monkeypatch.setattr(agent_zoo, "ZOO_DIR", root)
    return root


CFG = ss.BenchConfig.demo(games=(GAME,), methods=("occlusion",), n_states=2, n_sanity=0, n_timing=2, stream_steps=10)


def test_a_resumed_benchmark_refuses_a_new_best_zoo_agent(zoo, tmp_path):
    run = tmp_path / "run"
    _entry(zoo, 400_000, 5.0)
    assert ss.bench_run_config(CFG).agents == (OLD,)
    RunDir(run, config=ss.bench_run_config(CFG)).save_unit("stream/ale-breakout-v5", {"obs": np.zeros(3, np.uint8)})   # a first run's unit
    text = (run / "config.json").read_text()
    assert json.loads(text)["agents"] == [OLD] and str(tmp_path) not in text      # a zoo id: relative, never a path

    _entry(zoo, 1_200_000, 9.0)                                                   # the zoo gains a better checkpoint
    assert ss.bench_run_config(CFG).agents == (NEW,)
    mixed = rf"agents: saved=\['{OLD}'\], given=\['{NEW}'\]"
    for start in (lambda: ss.benchmark_jobs(CFG, run), lambda: ss.run_benchmark(CFG, run_dir=run),
                  lambda: ss.tuning_jobs(CFG, run), lambda: ss.timing_jobs(CFG, run)):
        with pytest.raises(ConfigMismatchError, match=mixed): start()
    assert (run / "config.json").read_text() == text                              # nothing recorded over the first run
    assert RunDir(run).done("stream/ale-breakout-v5")
    RunDir(run, config=ss.bench_run_config(dataclasses.replace(CFG, agents=(OLD,))))   # the old agent, pinned by its id, resumes


def test_agents_are_recorded_by_zoo_id_or_name_and_ids_resolve_under_the_zoo(zoo):
    d = _entry(zoo, 400_000, 5.0)
    assert ss.bench_run_config(dataclasses.replace(CFG, agents=(str(d),))).agents == (OLD,)   # an absolute folder: its id
    assert ss.bench_run_config(dataclasses.replace(CFG, agents=(OLD,))).agents == (OLD,)      # an id: the zoo's entry
    assert agent_zoo.zoo_entry_dir(OLD) == d
    with pytest.raises(FileNotFoundError, match="has no entry 'ale-breakout-v5/dqn/seed0/999'"):
        ss.bench_run_config(dataclasses.replace(CFG, agents=("ale-breakout-v5/dqn/seed0/999",)))
    with pytest.raises(ValueError, match="zoo id"):
        ss.bench_run_config(dataclasses.replace(CFG, agents=("no/such/agent",)))
    pol = Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2)), (4,), device="cpu", name="tiny")
    assert ss.bench_run_config(CFG, agents={GAME: pol}).agents == ("tiny",)                  # a Policy: its name


class _Recomputed(Exception): pass
class _Reloaded(Exception): pass


def test_ranld_tables_never_reload_another_agents_table(tmp_path, monkeypatch):
    """RA-NLD's per-game tables (`ranld_tables(out=...)`) are reloaded only for the agent that made them (its `name`, the zoo id):
    a table of the zoo's former best agent is recomputed, with a warning, for a new one."""
    from rlexplain import ranld_study as rs
    cfg, shifts = rs.RANLDConfig(n_runs=1, n_episodes=1, max_steps=5), {"Blurred Observations": "blur"}
    params = {**rs._protocol_params(cfg, rs._shift_items(shifts), True), "policy": OLD, "env_id": GAME}
    rs.QuotientTable(pd.DataFrame({"condition": ["x"]}), np.zeros((1, 2)), ("x",), np.zeros(1), params).save(tmp_path / "Breakout")
    monkeypatch.setattr(rs.QuotientTable, "summary", lambda self: (_ for _ in ()).throw(_Reloaded()))
    monkeypatch.setattr(rs, "ranld_protocol", lambda *a, **k: (_ for _ in ()).throw(_Recomputed()))
    agent = lambda name: Policy.from_module(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2)), (4,), device="cpu", name=name)
    with pytest.raises(_Reloaded):                                                 # the same agent: its saved table
        rs.ranld_tables({GAME: (agent(OLD), {})}, shifts, cfg, out=tmp_path, progress=False)
    with pytest.warns(UserWarning, match="another agent"), pytest.raises(_Recomputed):   # another agent: computed anew
        rs.ranld_tables({GAME: (agent(NEW), {})}, shifts, cfg, out=tmp_path, progress=False)


def test_xrlbench_demo_records_its_agents_and_refuses_a_new_best_one(zoo, tmp_path):
    "XRL-Bench's demo run folder records each job's agent by zoo id; each job names the agent it loads; a new best agent is refused."
    from rlexplain import xrlbench
    from rlexplain.demo import Section
    _entry(zoo, 60_000, 100.0, "CartPole-v1")
    sec = Section(tmp_path, "xrlbench", "XRL-Bench")
    units = xrlbench.demo_units(sec, "demo")
    assert [(n, arg[1][3]) for n, _, arg in units] == [("tabular/cartpole", "cartpole-v1/dqn/seed0/60000")]   # (fn, job, ...)
    assert load_json(sec.dir / "run" / "config.json")["agents"] == {"tabular/cartpole": "cartpole-v1/dqn/seed0/60000"}
    RunDir(sec.dir / "run").save_unit("tabular/cartpole", [1])                    # a first run's result
    _entry(zoo, 120_000, 200.0, "CartPole-v1")
    with pytest.raises(ConfigMismatchError, match="agents.tabular/cartpole: saved='cartpole-v1/dqn/seed0/60000', "
                                                  "given='cartpole-v1/dqn/seed0/120000'"):
        xrlbench.demo_units(sec, "demo")


def test_timeseries_demo_records_its_agents_and_refuses_a_new_best_one(zoo, tmp_path):
    "The time-series demo's run folder per game records its A2C and PPO agents by zoo id; a new best agent is refused, not mixed."
    from rlexplain import timeseries_study as ts
    for algo in ("a2c", "ppo"): _entry(zoo, 400_000, 5.0, algo=algo)
    cfg, rd, agents = ts._demo_run(tmp_path, "demo", GAME)
    assert agents == {"a2c": "ale-breakout-v5/a2c/seed0/400000", "ppo": "ale-breakout-v5/ppo/seed0/400000"}
    assert load_json(rd.path / "config.json")["agents"] == agents
    rd.save_unit("series/x", [1])
    _entry(zoo, 1_200_000, 9.0, algo="ppo")
    with pytest.raises(ConfigMismatchError, match="agents.ppo: saved='ale-breakout-v5/ppo/seed0/400000', "
                                                  "given='ale-breakout-v5/ppo/seed0/1200000'"):
        ts._demo_run(tmp_path, "demo", GAME)
