"""Rollout speed, printed (never asserted): raw emulator steps with rendering, the package's environment step, and
`collect_rollout` (with and without Toybox JSON states), for Toybox Breakout and ALE Breakout, plus the cost of a
seeded ALE reset. One agent step = 4 emulator frames; "raw with rendering" = 4 emulator frames and one rendered
grey frame per step; "raw obs" = 4 emulator frames, the last two rendered and max-pooled, and one INTER_AREA resize
to 84x84, the least work the observation needs. Medians of `--repeats` interleaved runs.

    python bench/rollouts.py [--steps 2000] [--repeats 5] [--threads 1]
"""
import argparse
import statistics
import time

from _common import machine
import numpy as np
import torch

from rlexplain.envs import ToyboxEnv, collect_rollout, make_env


def raw_toybox(n: int) -> float:
    from ctoybox import Toybox
    tb = Toybox("breakout", grayscale=True); tb.new_game(); legal = tb.get_legal_action_set()
    acts = np.random.default_rng(0).integers(0, len(legal), n)
    t = time.perf_counter()
    for a in acts:
        for _ in range(4): tb.apply_ale_action(legal[a])
        tb.get_state()                       # one rendered frame per agent step
        if tb.game_over(): tb.new_game()
    return n / (time.perf_counter() - t)


def raw_toybox_obs(n: int) -> float:
    "The least work of one observation: 4 frames, the last two rendered and max-pooled, one INTER_AREA resize to 84x84."
    import cv2
    from ctoybox import Toybox
    tb = Toybox("breakout", grayscale=True); tb.new_game(); legal = tb.get_legal_action_set()
    acts = np.random.default_rng(0).integers(0, len(legal), n)
    t = time.perf_counter()
    for a in acts:
        for k in range(4):
            tb.apply_ale_action(legal[a])
            if k == 2: f = tb.get_state()[..., 0]
        f = np.maximum(f, tb.get_state()[..., 0])
        cv2.resize(f, (84, 84), interpolation=cv2.INTER_AREA)
        if tb.game_over(): tb.new_game()
    return n / (time.perf_counter() - t)


def env_steps(env, n: int) -> float:
    acts = np.random.default_rng(0).integers(0, env.action_space.n, n)
    env.reset(seed=0)
    t = time.perf_counter()
    for a in acts:
        _, _, term, trunc, _ = env.step(int(a))
        if term or trunc: env.reset()
    return n / (time.perf_counter() - t)


def rollout(env, n: int, **kw) -> float:
    "Whole seeded episodes (a reset each) until `n` steps: what a study's rollouts cost."
    t, steps, ep = time.perf_counter(), 0, 0
    while steps < n:
        steps += len(collect_rollout(env, None, n_episodes=1, seed=ep, max_steps=n - steps, **kw).actions); ep += 1
    return steps / (time.perf_counter() - t)


def raw_ale(n: int) -> float:
    env = make_env("ALE/Breakout-v5"); ale = env.unwrapped.ale; env.reset(seed=0)
    legal = ale.getMinimalActionSet()
    acts = np.random.default_rng(0).integers(0, len(legal), n)
    t = time.perf_counter()
    for a in acts:
        for _ in range(4): ale.act(legal[a])
        ale.getScreenGrayscale()
        if ale.game_over(): ale.reset_game()
    return n / (time.perf_counter() - t)


def seeded_resets(env, k: int = 5) -> float:
    env.reset(seed=0)
    t = time.perf_counter()
    for s in range(1, k + 1): env.reset(seed=s)
    return (time.perf_counter() - t) / k * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("machine:", machine()); print(f"settings: {a.steps} random-action steps per measurement, median of {a.repeats}")
    tb, ale = ToyboxEnv("breakout"), make_env("ALE/Breakout-v5")
    rows = {k: [] for k in ("toybox raw+render", "toybox raw+2 renders+resize", "ToyboxEnv.step", "collect_rollout toybox (default)",
                            "collect_rollout toybox record_states=True", "ale raw+render", "ALE env.step",
                            "collect_rollout ale (default)", "ALE seeded reset ms")}
    for _ in range(a.repeats):
        rows["toybox raw+render"].append(raw_toybox(a.steps))
        rows["toybox raw+2 renders+resize"].append(raw_toybox_obs(a.steps))
        rows["ToyboxEnv.step"].append(env_steps(tb, a.steps))
        rows["collect_rollout toybox (default)"].append(rollout(tb, a.steps))
        rows["collect_rollout toybox record_states=True"].append(rollout(tb, a.steps, record_states=True))
        rows["ale raw+render"].append(raw_ale(a.steps))
        rows["ALE env.step"].append(env_steps(ale, a.steps))
        rows["collect_rollout ale (default)"].append(rollout(ale, a.steps))
        rows["ALE seeded reset ms"].append(seeded_resets(ale))
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"{'what':45s} {'steps/s':>10s} {'of raw+render':>14s} {'of raw obs':>11s}")
    for k, v in med.items():
        if k.endswith("ms"): print(f"{k:45s} {v:10.1f} ms"); continue
        toy = "oybox" in k
        raw = med["toybox raw+render"] if toy else med["ale raw+render"]
        obs = f"{v / med['toybox raw+2 renders+resize']:11.0%}" if toy else ""
        print(f"{k:45s} {v:10,.0f} {v / raw:14.0%} {obs}")

if __name__ == "__main__":
    main()
