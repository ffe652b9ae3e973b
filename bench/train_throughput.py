"""Training throughput of every pipeline the zoo campaign trains, against its bound, printed (never asserted) with the
machine, its load, torch's version and threads.

The bound of a run at one thread is the sum of its parts per env step (1 env step = 4 emulator frames):
- emulator: the pipeline's vector env stepped with random actions (CPU s per env step; ALE through gymnasium, and ale-py's
  `AtariVectorEnv` printed beside it where ale-py has it; envpool only if installed);
- acting: one no-grad forward `policy.predict` on the `(n_envs, 4, 84, 84)` observations, divided by n_envs, times the
  share of greedy steps (1 - the pipeline's final epsilon for value-based pipelines: exploration is held there);
- update: one `model.train(...)` call at the pipeline's hyperparameters, divided by the env steps between calls
  (off-policy: `train_freq` x n_envs env steps per call of `gradient_steps` updates at `batch_size`; on-policy: n_steps x
  n_envs env steps per call of n_epochs over the rollout).
`bound frames/s` = 4 / (sum of the parts); `measured` = env steps x 4 / CPU seconds of `model.learn` on the real pipeline
(SB3's loop, replay buffer, callbacks included) over `--steps` env steps after `--warmup` (value-based: replay start lowered
to the warm-up). `measured/bound` < 1 is SB3's overhead beside the three parts.

Compute settings (`rlexplain.agents.set_compute`; they change how, not what, a run computes, same hyperparameters):
`before` = float32, contiguous, torch's default Adam loop (the code before issue 52); `fused` = float32 with torch's fused
Adam (the default now); `fused+cl` = plus channels_last; `bf16` = fused plus bfloat16 autocast around the update
(opt-in `precision="bf16-update"`); `bf16+cl`. Parts are timed for every setting, end to end for `--e2e` (default
before,fused,bf16), all on ONE model per pipeline switched between settings in interleaved rotated rounds; medians.

    python bench/train_throughput.py [--quick] [--pipelines tb-dqn-nature,ale-ddqn-frequent] [--steps 200] [--rounds 2]
"""
import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, rotated

TB = (("fire_on_life_loss", True),)
# label: (pipeline, env_id, features, env_kwargs), as CAMPAIGN (rlexplain.agent_zoo) trains them (plus the Nature-CNN Toybox runs)
PIPES = {
    "tb-dqn-compact": ("dqn", "toybox/Breakout", "compact", TB), "tb-dqn-nature": ("dqn", "toybox/Breakout", "nature", TB),
    "tb-qrdqn-compact": ("qrdqn", "toybox/Breakout", "compact", TB), "tb-qrdqn-nature": ("qrdqn", "toybox/Breakout", "nature", TB),
    "tb-ppo": ("ppo", "toybox/Breakout", "compact", TB), "tb-a2c": ("a2c", "toybox/Breakout", "compact", TB),
    "ale-dqn": ("dqn", "ALE/SpaceInvaders-v5", "compact", ()),
    "ale-ddqn": ("ddqn", "ALE/Freeway-v5", "nature-conv", ()), "ale-ddqn-frequent": ("ddqn-frequent", "ALE/Pong-v5", "nature-conv", ()),
}
CONFIGS = {"before": ("contiguous", "fp32", False), "fused": ("contiguous", "fp32", True), "fused+cl": ("channels_last", "fp32", True),
           "bf16": ("contiguous", "bf16-update", True), "bf16+cl": ("channels_last", "bf16-update", True)}
COLUMNS = ["pipeline", "config", "n_envs", "emu_fps", "act_ms", "update_ms", "bound_fps", "measured_fps", "measured/bound",
           "emu_share", "act_share", "update_share", "load"]


def build(label: str, root: str, warmup: int):
    "(model, pipeline, job) as `train_agent` builds them; value-based: replay start at `warmup`, exploration held at its final epsilon."
    from rlexplain.agents import TrainJob, _apply_schedules, _build_model, _make_vec_env, get_pipeline
    p, env_id, feats, kw = PIPES[label]
    job = TrainJob(p, env_id, 0, (10_000_000,), root=root, features=feats, env_kwargs=kw)
    pipe = get_pipeline(p, env_id)
    model = _build_model(job, _make_vec_env(job, pipe.n_envs))
    _apply_schedules(model, pipe, 2_500_000)
    if pipe.value_based:
        eps = float(pipe.hyperparams.get("exploration_final_eps", 0.01))
        for a, s in pipe.schedules:
            if a == "exploration_schedule": eps = s.final
        model.learning_starts = int(warmup); model.exploration_schedule = lambda _p, e=eps: e; model._rlx_eps = eps
    return model, pipe, job


def emulator_fps(job, n_envs: int, steps: int) -> float:
    "CPU frames/s of the pipeline's vector env with random actions (no network)."
    from rlexplain.agents import _make_vec_env
    env = _make_vec_env(job, n_envs); env.reset(); rng = np.random.default_rng(0); k = max(1, steps // n_envs)
    c0 = time.process_time()
    for _ in range(k): env.step(rng.integers(0, env.action_space.n, n_envs))
    dc = time.process_time() - c0; env.close()
    return k * n_envs * 4 / dc


def ale_vector_fps(env_id: str, steps: int):
    "CPU frames/s of ale-py's `AtariVectorEnv` (1 env, its 84x84 grey, 4-stack, frameskip-4 defaults), or None without it."
    try:
        from ale_py.vector_env import AtariVectorEnv
    except ImportError: return None
    game = env_id.split("/")[1].split("-")[0]
    game = "".join("_" + ch.lower() if ch.isupper() and i else ch.lower() for i, ch in enumerate(game))
    env = AtariVectorEnv(game=game, num_envs=1, num_threads=1); env.reset(seed=0); rng = np.random.default_rng(0)
    c0 = time.process_time()
    for _ in range(steps): env.step(rng.integers(0, env.single_action_space.n, 1))
    dc = time.process_time() - c0; env.close()
    return steps * 4 / dc


def envpool_fps(env_id: str, steps: int):
    "CPU frames/s of envpool's Atari env (1 env), or None where envpool is not installed (it is never installed for this)."
    try: import envpool
    except ImportError: return None
    env = envpool.make_gymnasium(env_id.split("/")[1], num_envs=1); env.reset(); rng = np.random.default_rng(0)
    c0 = time.process_time()
    for _ in range(steps): env.step(rng.integers(0, env.action_space.n, 1))
    return steps * 4 / (time.process_time() - c0)


def _cpu(fn, n: int) -> float:
    "Median CPU seconds of `fn()` over `n` calls after one untimed call."
    fn(); ts = []
    for _ in range(n): c0 = time.process_time(); fn(); ts.append(time.process_time() - c0)
    return statistics.median(ts)


def parts(model, pipe, calls: int) -> tuple:
    "(acting s per vector step, update s per `train` call) at the model's current compute settings."
    obs = model._last_obs
    act = _cpu(lambda: model.policy.predict(obs, deterministic=True), calls * 4)
    if pipe.value_based: upd = _cpu(lambda: model.train(gradient_steps=model.gradient_steps, batch_size=model.batch_size), calls)
    else: upd = _cpu(model.train, max(1, calls // 4))
    return act, upd


def bound(model, pipe, emu_fps: float, act_s: float, upd_s: float) -> dict:
    "The bound's parts in s per env step and frames/s (see the module docstring)."
    n = pipe.n_envs; emu = 4 / emu_fps
    if pipe.value_based: act, upd = act_s / n * (1 - model._rlx_eps), upd_s / (model.train_freq.frequency * n)
    else: act, upd = act_s / n, upd_s / (model.n_steps * n)
    tot = emu + act + upd
    return dict(bound_fps=4 / tot, emu_share=emu / tot, act_share=act / tot, update_share=upd / tot)


def measure(label: str, configs: list, e2e: list, steps: int, warmup: int, rounds: int, calls: int, root: str) -> list:
    from rlexplain.agents import set_compute
    model, pipe, job = build(label, root, warmup)
    model.learn(total_timesteps=warmup, reset_num_timesteps=False, progress_bar=False)
    emu = emulator_fps(job, pipe.n_envs, max(steps, 200))
    got = {c: {"act": [], "upd": [], "e2e": []} for c in configs}
    for r in range(rounds):
        for c in rotated(configs, r):
            set_compute(model, *CONFIGS[c])
            a, u = parts(model, pipe, calls); got[c]["act"].append(a); got[c]["upd"].append(u)
            if c in e2e:
                n0, c0 = model.num_timesteps, time.process_time()
                model.learn(total_timesteps=steps, reset_num_timesteps=False, progress_bar=False)
                got[c]["e2e"].append((model.num_timesteps - n0) * 4 / (time.process_time() - c0))
    model.get_env().close()
    rows = []
    for c in configs:
        a, u = statistics.median(got[c]["act"]), statistics.median(got[c]["upd"])
        b = bound(model, pipe, emu, a, u); m = statistics.median(got[c]["e2e"]) if got[c]["e2e"] else float("nan")
        rows.append(dict(pipeline=label, config=c, n_envs=pipe.n_envs, emu_fps=emu, act_ms=a * 1e3, update_ms=u * 1e3, **b,
                         measured_fps=m, **{"measured/bound": m / b["bound_fps"]}, load=os.getloadavg()[0]))
    return rows


def fmt(r: dict) -> str:
    f = lambda v: f"{v:.2f}" if isinstance(v, float) and abs(v) < 10 else (f"{v:.0f}" if isinstance(v, float) else str(v))
    return "| " + " | ".join(f(r[k]) for k in COLUMNS) + " |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pipelines", default=",".join(PIPES), help=f"labels among {list(PIPES)}")
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"compute settings whose parts are timed, among {list(CONFIGS)}")
    ap.add_argument("--e2e", default="before,fused,bf16", help="settings also timed end to end")
    ap.add_argument("--steps", type=int, default=200, help="env steps (all envs together) per end-to-end segment")
    ap.add_argument("--warmup", type=int, default=600, help="untimed env steps first (value-based: the lowered replay start)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (settings rotated each round); medians")
    ap.add_argument("--calls", type=int, default=6, help="timed update calls per setting and round (acting: 4x as many)")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one round (numbers are not measurements)")
    args = ap.parse_args(argv)
    if args.quick: args.steps, args.warmup, args.rounds, args.calls = 16, 80, 1, 1
    pipes, configs = args.pipelines.split(","), args.configs.split(",")
    e2e = [c for c in args.e2e.split(",") if c in configs]
    bad = [p for p in pipes if p not in PIPES] + [c for c in configs + args.e2e.split(",") if c not in CONFIGS]
    if bad: ap.error(f"unknown pipelines or settings {bad}; expected pipelines {list(PIPES)} and settings {list(CONFIGS)}")
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        configs = [c for c in configs if "bf16" not in c]; e2e = [c for c in e2e if "bf16" not in c]
        print("this CPU has no native bfloat16: the bf16 settings are skipped")
    torch.set_num_threads(1)
    import stable_baselines3, sb3_contrib
    print("machine:", machine())
    print(f"torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}, bf16 native "
          f"{torch.ops.mkldnn._is_mkldnn_bf16_supported()}), {torch.get_num_threads()} thread | stable-baselines3 "
          f"{stable_baselines3.__version__}, sb3-contrib {sb3_contrib.__version__} | load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.rounds} round(s); {args.steps} env steps per end-to-end segment after {args.warmup} warm-up steps; CPU-time rates\n")
    print("| " + " | ".join(COLUMNS) + " |"); print("|" + "---|" * len(COLUMNS), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for p in pipes:
            for r in measure(p, configs, e2e, args.steps, args.warmup, args.rounds, args.calls, root):
                rows.append(r); print(fmt(r), flush=True)
        for env_id in sorted({PIPES[p][1] for p in pipes if PIPES[p][1].startswith("ALE/")}):
            v, e = ale_vector_fps(env_id, max(args.steps, 200)), envpool_fps(env_id, max(args.steps, 200))
            print(f"{env_id}: ale-py AtariVectorEnv (1 env, 1 thread) {'not in this ale-py' if v is None else f'{v:.0f} CPU frames/s'}; "
                  f"envpool {'not installed' if e is None else f'{e:.0f} CPU frames/s'}")
    print(f"\nload after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    by = {(r["pipeline"], r["config"]): r for r in rows}
    for p in pipes:
        b = by.get((p, "before"))
        if b is None: continue
        best = min((r for r in rows if r["pipeline"] == p and "bf16" not in r["config"]), key=lambda r: r["update_ms"])
        line = ", ".join(f"{c} x{b['measured_fps'] and by[(p, c)]['measured_fps'] / b['measured_fps']:.2f}" for c in e2e if (p, c) in by and c != "before")
        print(f"{p}: end to end vs before: {line}; fastest float32 update here: {best['config']} ({best['update_ms']:.1f} ms)")
    return rows


if __name__ == "__main__":
    main()
