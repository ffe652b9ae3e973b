"""Speed of the time-series collection (rlexplain.timeseries) next to raw emulator speed.

Prints episodes/s and env steps/s of `performance_series` (control and FGSM-attacked, batched and rollout engines,
sequential and `run_jobs` with 2 workers) and of bare Toybox / ALE step loops with random actions.
`--study` instead times `run_study` (the demo's whole study for one game, 2 workers) at several seed counts, which is how
the demo's 5 seeds were chosen: the seeds play in lock-step, so more seeds add environment steps but few network calls.
The machine and its load are printed before and after (the machine is shared; compare rows of one run only).
Run: `.venv/bin/python bench/timeseries.py [--env ALE/Pong-v5 --algo ppo --seeds 4 --episodes 3 --max-steps 400]`
or `.venv/bin/python bench/timeseries.py --study --env ALE/Breakout-v5 --study-seeds 3 5 10`.
`--cpu` times the demo's study for one game as the CLI's scheduler runs it: one process, one torch thread, max_workers=1,
in CPU seconds (`time.process_time`, less sensitive to the shared machine's load than wall time):
`.venv/bin/python bench/timeseries.py --cpu --env ALE/Pong-v5`. On 2026-11-25 at load 9-12 (CPU seconds inflated by the
contention; old and new ran side by side): Breakout 236 -> 175 CPU s, Pong 260 -> 186 CPU s, from FGSM's one forward per
chunk and float32 projection (results bit for bit the same)."""
import argparse
import os
import time

from _common import machine
import numpy as np
import torch

torch.set_num_threads(1)

from rlexplain.envs import make_env
from rlexplain.shifts import FGSM
from rlexplain.agent_zoo import load_best_agent
from rlexplain.timeseries_study import performance_series


def raw_loop(env_id, n_steps=3000, **kw):
    env = make_env(env_id, **kw); env.reset(seed=0); rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for _ in range(n_steps):
        _, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc: env.reset()
    return n_steps / (time.perf_counter() - t0)


def study_scaling(env_id: str, seed_counts):
    "Seconds and env steps of the demo's `run_study` for one game at each seed count."
    from rlexplain.timeseries_study import TimeSeriesConfig, run_study
    for m in seed_counts:
        cfg = TimeSeriesConfig.demo(env_id=env_id, seeds=tuple(range(m)))
        t0 = time.perf_counter(); st = run_study(cfg, max_workers=2); dt = time.perf_counter() - t0
        print(f"{env_id}: {m} seeds x {cfg.n_episodes} episodes: {dt:.0f} s, {int(st.series.steps.sum()):,} env steps "
              f"(load {os.getloadavg()[0]:.2f})")


def study_cpu(env_id: str):
    "CPU seconds of the demo's `run_study` for one game in this process (max_workers=1, one torch thread)."
    from rlexplain.timeseries_study import TimeSeriesConfig, run_study
    cfg = TimeSeriesConfig.from_scale("demo", env_id=env_id)
    l0, c0, w0 = os.getloadavg()[0], time.process_time(), time.perf_counter()
    st = run_study(cfg, max_workers=1)
    print(f"{env_id}: demo study in one process: {time.process_time() - c0:.1f} CPU s, {time.perf_counter() - w0:.1f} s wall, "
          f"{int(st.series.steps.sum()):,} env steps (load {l0:.2f} -> {os.getloadavg()[0]:.2f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=4); ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--max-steps", type=int, default=400); ap.add_argument("--algo", default="ppo")
    ap.add_argument("--env", default="toybox/Breakout", help="a game the zoo has an --algo agent for")
    ap.add_argument("--study", action="store_true", help="time the demo's run_study at --study-seeds seed counts instead")
    ap.add_argument("--study-seeds", type=int, nargs="+", default=[3, 5, 10])
    ap.add_argument("--cpu", action="store_true", help="CPU seconds of the demo's study for --env in one process (max_workers=1)")
    a = ap.parse_args()
    print(machine())
    if a.cpu:
        study_cpu(a.env if a.env != "toybox/Breakout" else "ALE/Breakout-v5"); print(machine()); return
    if a.study:
        study_scaling(a.env if a.env != "toybox/Breakout" else "ALE/Breakout-v5", a.study_seeds); print(machine()); return
    print(f"raw toybox/Breakout step loop (frameskip 4, 84x84 preprocessing): {raw_loop('toybox/Breakout'):,.0f} steps/s")
    try: print(f"raw ALE/Breakout-v5 step loop (AtariPreprocessing + stack): {raw_loop('ALE/Breakout-v5'):,.0f} steps/s")
    except Exception as e: print(f"ALE skipped: {e}")
    pol, card = load_best_agent(a.env, a.algo, device="cpu")
    print(f"agent {card['id']}; {a.seeds} seeds x {a.episodes} episodes, max_steps {a.max_steps}")
    seeds = list(range(a.seeds))
    for shift, label in ((None, "control"), (FGSM(eps=1 / 255), "fgsm 1/255 (every step)")):
        for engine in ("rollout", "batched"):
            for workers in (1, 2):
                t0 = time.perf_counter()
                s = performance_series(pol, a.env, seeds, a.episodes, shift=shift, env_kwargs=card["env_kwargs"],
                                       max_steps=a.max_steps, engine=engine, max_workers=workers)
                dt = time.perf_counter() - t0; n = int(s.table.steps.sum())
                print(f"{label:26s} engine={engine:8s} workers={workers}: {len(s.table) / dt:6.2f} episodes/s, {n / dt:7,.0f} steps/s "
                      f"({n} steps, {dt:.1f} s)")


if __name__ == "__main__":
    main()
