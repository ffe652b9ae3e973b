"""Training throughput (emulator frames per second) of the IR study's pipelines on Toybox Breakout, printed (never
asserted) with the machine, its load before and after, and torch's threads; then what 1e7 frames x 11 seeds per
pipeline would take on this CPU, and a GPU estimate whose assumption is printed beside it.

Pipelines: `rlexplain.agents.TOYBOX_PIPELINES` (dqn, qrdqn, ppo: the autonomous-learning-library 0.7.1 presets) and
a2c (`ATARI_PIPELINES`, RL-Zoo's), each with the compact CNN and with the Nature CNN (`features="nature"`). Each model
is built exactly as `rlexplain.agents.train_agent` builds it (`_build_model`, its vector env and schedules, one torch
thread as in training), then:
- warm-up (untimed): `--warmup` env steps; for the value-based pipelines `learning_starts` is lowered to the warm-up
  (the replay start of a real run is 20k steps; an update costs the same with a smaller buffer), so that
- the timed segment, `--steps` env steps, includes the updates at the pipeline's own `train_freq` / rollout length.
`frames/s` = timed env steps x 4 frames (frame skip) / wall seconds; `CPU frames/s` the same over the process's CPU
seconds (one thread: what the run would reach with a core of its own, so it stands when other jobs load the machine;
the estimates use it). `env only` is the same vector env stepped with random
actions (no network; CPU frames/s): the ceiling any trainer reaches here, and the basis of the GPU estimate.

    python bench/train_throughput.py [--steps 2000] [--warmup 1000] [--pipelines dqn,qrdqn,ppo,a2c] [--features compact,nature]
"""
import argparse
import dataclasses
import os
import tempfile
import time

import numpy as np
import torch

from _common import machine

FRAMES = 1e7      # frames per run of the paper's scale (Mott et al. 2023 train 1e7 frames)
SEEDS = 11        # seeds per pipeline


def build(pipeline: str, features: str, root: str, seed: int = 0, warmup: int = 1000):
    "(model, pipeline) as train_agent builds them, with learning_starts lowered to `warmup` for value-based pipelines."
    from rlexplain.agents import TrainJob, _apply_schedules, _build_model, _make_vec_env, get_pipeline
    job = TrainJob(pipeline, "toybox/Breakout", seed, (int(FRAMES),), root=root, features=features,
                   env_kwargs=(("fire_on_life_loss", True),))
    pipe = get_pipeline(pipeline, job.env_id)
    env = _make_vec_env(job, pipe.n_envs)
    model = _build_model(job, env)
    _apply_schedules(model, pipe, int(FRAMES) // 4)
    if pipe.value_based: model.learning_starts = int(warmup)
    return model, pipe


def env_only(pipeline: str, steps: int, root: str) -> float:
    "Frames/s of the pipeline's vector env with random actions (no network)."
    from rlexplain.agents import TrainJob, _make_vec_env, get_pipeline
    job = TrainJob(pipeline, "toybox/Breakout", 0, (int(FRAMES),), root=root, env_kwargs=(("fire_on_life_loss", True),))
    n = get_pipeline(pipeline, job.env_id).n_envs
    env = _make_vec_env(job, n); env.reset()
    rng = np.random.default_rng(0); k = max(1, steps // n)
    c0 = time.process_time()
    for _ in range(k): env.step(rng.integers(0, env.action_space.n, n))
    dc = time.process_time() - c0; env.close()
    return k * n * 4 / dc


def measure(pipeline: str, features: str, steps: int, warmup: int, root: str) -> dict:
    model, pipe = build(pipeline, features, root, warmup=warmup)
    t0 = time.perf_counter(); model.learn(total_timesteps=warmup, reset_num_timesteps=False, progress_bar=False); tw = time.perf_counter() - t0
    n0 = model.num_timesteps
    c0, t0 = time.process_time(), time.perf_counter()
    model.learn(total_timesteps=steps, reset_num_timesteps=False, progress_bar=False)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    done = model.num_timesteps - n0
    updates = getattr(model, "_n_updates", None)
    model.get_env().close()
    return dict(pipeline=pipeline, features=features, n_envs=pipe.n_envs, steps=done, seconds=dt, fps=done * 4 / dt,
                cpu_fps=done * 4 / dc,
                warmup_fps=n0 * 4 / tw if tw > 0 else float("nan"), updates=updates,
                params=sum(p.numel() for p in model.policy.parameters()))


def zoo_card_rates() -> dict:
    """{(pipeline, features): [frames/s]} from the shipped Toybox Breakout zoo's cards (frames / wall_clock_s of whole
    training runs, resumed runs included): measured on this kind of machine at another time and load, and with the
    pipeline's settings of that time (the card's `init` says whether ALL's presets were used)."""
    import glob, json
    from rlexplain.agents import ZOO_DIR
    out = {}
    for f in glob.glob(str(ZOO_DIR / "toybox-breakout" / "*" / "seed*" / "*" / "card.json")):
        c = json.load(open(f)); w = c.get("wall_clock_s")
        if w and c["frames"] > 50_000: out.setdefault((c["pipeline"], c.get("features"), c.get("init")), []).append(c["frames"] / w)
    return out


def hours(fps: float, parallel: int) -> float:
    "Hours for FRAMES x SEEDS at `fps` per run, `parallel` runs side by side."
    return FRAMES * SEEDS / fps / parallel / 3600


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2000, help="timed env steps per pipeline (all envs together)")
    ap.add_argument("--warmup", type=int, default=1000, help="untimed env steps first (value-based: the lowered replay start)")
    ap.add_argument("--pipelines", default="dqn,qrdqn,ppo,a2c")
    ap.add_argument("--features", default="compact,nature")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (train_agent uses 1: one run per core)")
    ap.add_argument("--parallel", type=int, default=None, help="runs side by side for the estimate (default: cores / threads)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    par = args.parallel or max(1, (os.cpu_count() or 1) // args.threads)
    la = os.getloadavg()
    print("machine:", machine())
    print(f"load average before: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} | torch threads {torch.get_num_threads()} | "
          f"timed {args.steps} env steps after {args.warmup} warm-up steps per run")
    import stable_baselines3, sb3_contrib
    print(f"stable-baselines3 {stable_baselines3.__version__}, sb3-contrib {sb3_contrib.__version__}")
    rows, envfps = [], {}
    with tempfile.TemporaryDirectory() as root:
        for p in args.pipelines.split(","):
            envfps[p] = env_only(p, max(args.steps, 2000), root)
            for f in args.features.split(","):
                r = measure(p, f, args.steps, args.warmup, root); rows.append(r)
                print(f"  {p:<6} {f:<8} {r['fps']:8.0f} frames/s, {r['cpu_fps']:8.0f} CPU frames/s ({r['steps']} steps in {r['seconds']:.1f} s; warm-up {r['warmup_fps']:.0f}; "
                      f"updates {r['updates']}; {r['params']:,} parameters) | load {os.getloadavg()[0]:.2f}", flush=True)
    la = os.getloadavg()
    print(f"load average after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}\n")
    print(f"{FRAMES:.0e} frames x {SEEDS} seeds per pipeline; CPU: {par} run(s) side by side at 1 thread each (this machine's cores);")
    print("GPU (an assumption, not measured): a GPU of the T4/V100 class makes the network's forward and update time small "
          "next to the emulator, so a run goes at most as fast as `env only` (this CPU's vector env with random actions, "
          f"one core per run); the estimate uses env-only frames/s with {par} runs side by side (a lower bound on time).")
    cards = zoo_card_rates()
    if cards:
        print("\nshipped zoo cards (whole runs, frames / wall_clock_s; median over seeds and checkpoints > 5e4 frames):")
        for (p, f, init), v in sorted(cards.items(), key=lambda kv: str(kv[0])):
            print(f"  {p:<6} {str(f):<8} init={init}: {np.median(v):.0f} frames/s ({len(v)} entries; CPU days for 1e7 x 11: {hours(np.median(v), par) / 24:.1f})")
    print(f"\n| pipeline | features | n_envs | frames/s (wall, this load) | CPU frames/s (1 thread) | env only CPU frames/s | CPU days for 1e7 x 11 | GPU days (bound) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        e = envfps[r["pipeline"]]
        print(f"| {r['pipeline']} | {r['features']} | {r['n_envs']} | {r['fps']:.0f} | {r['cpu_fps']:.0f} | {e:.0f} | {hours(r['cpu_fps'], par) / 24:.1f} | "
              f"{hours(e, par) / 24:.1f} |")


if __name__ == "__main__":
    main()
