"""Speed of the IR pipeline, printed (never asserted): agent-state evaluations per second for the R matrix,
and ToyboxEnv wrapper steps per second next to raw ctoybox steps per second, measured side by side.

    python bench/ir.py [--threads N] [--agents 5] [--states 10]
"""
import argparse
import time

from _common import machine
import numpy as np
import torch

from rlexplain.agent_zoo import list_zoo, load_agent
from rlexplain.envs import ToyboxEnv
from rlexplain.interventions import registry
from rlexplain.ir import intervened_observations, ir_matrix, sample_states


def bench_env(n_steps: int = 5_000) -> None:
    from ctoybox import Toybox
    rng = np.random.default_rng(0)
    tb = Toybox("breakout"); tb.new_game(); legal = tb.get_legal_action_set()
    acts = rng.integers(0, len(legal), n_steps)
    t = time.perf_counter()
    for a in acts:
        for _ in range(4): tb.apply_ale_action(legal[a])   # 4 frames = one agent step, no rendering
        if tb.game_over(): tb.new_game()
    raw = n_steps / (time.perf_counter() - t)
    env = ToyboxEnv("breakout"); env.reset(seed=0)
    t = time.perf_counter()
    for a in acts:
        _, _, term, trunc, _ = env.step(int(a))
        if term or trunc: env.reset()
    wrapped = n_steps / (time.perf_counter() - t)
    print(f"raw ctoybox (4 frames/step, no render): {raw:10,.0f} steps/s  = {4 * raw:,.0f} frames/s  (with rendering: bench/rollouts.py)")
    print(f"ToyboxEnv (render + max-pool + 84x84 + stack): {wrapped:10,.0f} steps/s  ({wrapped / raw:.1%} of raw)")


def bench_ir(n_agents: int, p: int) -> None:
    z = list_zoo()
    z = z[(z.env_id == "toybox/Breakout") & (z.pipeline == "dqn")]
    last = z[z.frames == z.frames.max()].sort_values("seed")
    agents = [load_agent(path, device="auto") for path in last.path.iloc[1:1 + n_agents]]
    env = ToyboxEnv("breakout", fire_on_life_loss=True)
    states = sample_states(load_agent(last.path.iloc[0]), env, p=p, seed=0)
    t = time.perf_counter()
    obs, valid, _ = intervened_observations(env, states, registry("breakout"))
    t_obs = time.perf_counter() - t
    t = time.perf_counter()
    ir_matrix(agents, obs, valid, t=30)
    t_r = time.perf_counter() - t
    n_eval = int(valid.sum()) * len(agents)
    print(f"intervened observations: {valid.size} cells ({valid.sum()} valid) in {t_obs:.2f} s = {valid.size / t_obs:,.0f} cells/s")
    print(f"R matrix: {len(agents)} agents x {valid.sum()} states = {n_eval} agent-state evaluations in {t_r:.3f} s "
          f"= {n_eval / t_r:,.0f} evaluations/s (device {agents[0].device})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--agents", type=int, default=5, help="measured agents")
    ap.add_argument("--states", type=int, default=10, help="sampled states p")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"machine: {machine()}; settings: {a.agents} agents, {a.states} states, t = 30")
    bench_env()
    bench_ir(a.agents, a.states)
