"""Time and peak memory of the principal non-Lipschitz direction G_S (rlexplain.ranld.principal_direction) on
Atari-shaped gradient matrices, next to what Algorithm 1's dense d x d matrix L(S) would need.

Each (n, method) runs in a fresh subprocess so that its peak memory is its own. The gradient matrix A (n, d) float32
is synthetic (a rank-8 signal plus noise: the timings depend on the sizes, not on the values), filled in place so
that building it costs little more than A itself. Reported per run:

* seconds for `principal_direction(A, method)`;
* tracemalloc peak (Python and NumPy allocations; torch's CPU allocator is invisible to tracemalloc);
* extra peak RSS over the resident A (ru_maxrss after - RSS before, after a warm-up call on a tiny matrix so that
  loading the linear-algebra libraries is not counted; this sees torch, NumPy and LAPACK alike; note that ru_maxrss
  also holds the peak of building A, so an extra below that build overhead reads as about 0);
* |cos| with the first method's direction (agreement).

Nothing is asserted. The machine is shared with other jobs: the load average is printed.

`--switch` instead measures where `method="auto"` should switch from the exact Gram route to Lanczos (ARPACK
`eigsh` on a LinearOperator): for each n, the median of `--repeats` in-process timings of what `ranld()` does with its
gradient matrix (the direction and the top 5 eigenvalues) by each route, the double decomposition that `ranld()`
did before (the Gram eigh twice: once for G_S, once for the eigenvalues), and the largest absolute difference of the
directions (up to sign) and the relative difference of the eigenvalues against the Gram route. `--real` uses the
gradients of the zoo's Toybox Breakout DQN on its own visited states instead of the synthetic matrix (`--spectrum
flat` makes the synthetic top eigenvalues nearly equal, the hard case for Lanczos).

    python bench/ranld.py [--n 1000 10000] [--d 28224] [--threads 1] [--grads 256]
    python bench/ranld.py --switch [--n 25 50 100 200 400 800 1600] [--d 28224] [--real] [--spectrum flat]
    python bench/ranld.py --shifts [--env ALE/RoadRunner-v5] [--steps 10]
    python bench/ranld.py --attacks [--env ALE/Freeway-v5] [--steps 6]

`--shifts` breaks down where the demo's `ranld_tables` job spends its CPU (issue 28): for the zoo's DDQN agent of `--env`,
the CPU milliseconds per step (`time.process_time`, one torch thread) of a `collect_shifted_rollout` under each shift of
`paper_shifts("all", "demo")` (every step attacked, as in the protocol), of an identity rollout and of `ranld` on 40
states, and the job's estimated CPU seconds: `tables_config("demo")` plays each shift on n_runs x max_steps = 80 steps,
plus 4 identity rollouts, 22 `ranld` calls and the 300-step direction episode. Episodes that end early make it an upper bound.

`--attacks` compares, for the demo protocol's three ART attacks (C&W, DeepFool, Elastic-Net) on `--steps` states the zoo's DDQN
agent of `--env` visits (seed 500), ART's own `PyTorchClassifier` (`shift.attack(art_classifier(policy)).generate(x)`) with the
shift itself (`shift(x, policy)`, on `shifts._OneForwardClassifier`): CPU ms per state (one torch thread) and the largest
absolute difference of the adversarial observations (0: bit-equal).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc

from _common import machine
import numpy as np

DEFAULT_METHODS = {"small": ["gram", "lanczos", "lowrank", "svd"], "large": ["lanczos", "lowrank"]}


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024
    return 0


SPECTRA = {"steep": [8.0, 4, 3, 2, 1.5, 1.2, 1.1, 1.0], "flat": [1.0, 0.98, 0.96, 0.95, 0.94, 0.93, 0.92, 0.91]}


def synthetic(n: int, d: int, seed: int = 0, spectrum: str = "steep"):
    import torch
    g = torch.Generator().manual_seed(seed)
    basis = torch.randn(8, d, generator=g) / d ** 0.5
    A = torch.empty(n, d)
    for i in range(0, n, 500):            # in place: no (n, d) temporaries, so building A barely raises the peak
        m = min(500, n - i); rows = A[i:i + m]
        torch.randn(m, d, generator=g, out=rows); rows.mul_(0.01)
        rows.addmm_(torch.randn(m, 8, generator=g) * torch.tensor(SPECTRA[spectrum]), basis)
    return A


def real_gradients(n: int):
    "nld_gradients of the zoo's Toybox Breakout DQN on n of its own visited states ((n, 28224) float32)."
    from pathlib import Path
    from rlexplain.agent_zoo import list_zoo, load_agent
    from rlexplain.runs import load_json
    from rlexplain.envs import collect_rollout, make_env
    from rlexplain.ranld import nld_gradients
    zoo = list_zoo(); z = zoo[(zoo.algo == "dqn") & (zoo.env_id == "toybox/Breakout")].sort_values("frames", ascending=False)
    if not len(z): raise SystemExit("--real needs the zoo's toybox/Breakout DQN")
    pol = load_agent(z.iloc[0].path, device="cpu"); card = load_json(Path(z.iloc[0].path) / "card.json")
    env = make_env(card["env_id"], **card.get("env_kwargs", {}))
    ro = collect_rollout(env, pol, n_episodes=50, seed=0, max_steps=max(200, n // 4), record_states=False, epsilon=0.05)
    return nld_gradients(pol, ro.obs[:n]), z.iloc[0].id


def switch_point(ns, d: int, threads: int, repeats: int, real: bool, spectrum: str):
    "Median seconds per route and n, and the agreement of the routes (see the module docstring)."
    import torch
    torch.set_num_threads(threads)
    from rlexplain.ranld import _decompose, _exact_top, principal_direction
    print(machine())
    if real:
        A_all, who = real_gradients(max(ns)); print(f"gradients of {who} on its own visited states, d = {A_all.shape[1]:,}")
    hdr = (f"{'n':>6} {'d':>6} {'2x Gram (before)':>17} {'Gram once':>10} {'Lanczos':>8} {'faster':>8} "
           f"{'max|dz| L vs G':>15} {'max rel dλ':>11} {'λ2/λ1':>7}")
    print(hdr); print("-" * len(hdr))
    rows = []
    for n in ns:
        A = A_all[:n].contiguous() if real else synthetic(n, d, spectrum=spectrum)
        def t(f):
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter(); out = f(); ts.append(time.perf_counter() - t0)
            return float(np.median(ts)), out
        tb, _ = t(lambda: (principal_direction(A, "gram"), _exact_top(A, 5)))
        tg, (zg, _, eg) = t(lambda: _decompose(A, "gram", 0, 5))
        tl, (zl, _, el) = t(lambda: _decompose(A, "lanczos", 0, 5))
        dz = float(min((zl - zg).abs().max(), (zl + zg).abs().max()))
        de = float(np.max(np.abs(el - eg) / np.maximum(eg, 1e-30)))
        print(f"{n:>6} {A.shape[1]:>6} {tb:>16.3f}s {tg:>9.3f}s {tl:>7.3f}s {'lanczos' if tl < tg else 'gram':>8} "
              f"{dz:>15.2e} {de:>11.2e} {eg[1] / eg[0]:>7.3f}")
        rows.append((n, tg, tl))
    sw = [n for n, tg, tl in rows if tl < tg]
    print(f"Lanczos faster from n = {min(sw) if sw else 'never'} in this run; ranld's 'auto' switches at "
          f"min(n, d) > LANCZOS_MIN (rlexplain.ranld).")
    print(machine())


def one(n: int, d: int, method: str, out: str, threads: int):
    import torch
    torch.set_num_threads(threads)
    from rlexplain.ranld import principal_direction
    principal_direction(synthetic(50, 40), method=method)   # warm-up: loads BLAS/LAPACK/ARPACK code, not counted
    A = synthetic(n, d)
    before = rss_bytes()
    tracemalloc.start()
    t = time.perf_counter()
    z, lam = principal_direction(A, method=method)
    sec = time.perf_counter() - t
    _, tm_peak = tracemalloc.get_traced_memory(); tracemalloc.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    np.save(out, z.numpy())
    print(json.dumps({"n": n, "d": d, "method": method, "seconds": sec, "tracemalloc_peak": tm_peak,
                      "extra_peak_rss": max(0, peak - before), "A_bytes": A.numel() * 4, "eigenvalue": lam}))


def grads_timing(n: int, threads: int):
    "Seconds for nld_gradients on n random Atari frame stacks through a Nature-CNN Q-network (4 actions)."
    import torch
    from torch import nn
    torch.set_num_threads(threads)
    from rlexplain.core import Policy
    from rlexplain.ranld import nld_gradients
    net = nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(), nn.Conv2d(64, 64, 3, 1),
                        nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 4))
    pol = Policy.from_module(net, obs_shape=(4, 84, 84), device="cpu")
    x = torch.rand(n, 4, 84, 84)
    t = time.perf_counter(); G = nld_gradients(pol, x, batch_size=128); sec = time.perf_counter() - t
    return sec, tuple(G.shape)


def shifts_timing(env_id: str, steps: int) -> None:
    "Per-step CPU cost of each of the demo protocol's shifts on the zoo's DDQN agent of env_id (see the module docstring)."
    import torch
    torch.set_num_threads(1)
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.envs import make_env
    from rlexplain.ranld import ranld
    from rlexplain.ranld_study import paper_shifts, tables_config
    from rlexplain.shifts import Identity, collect_shifted_rollout
    pol, card = load_best_agent(env_id, "ddqn"); env = make_env(env_id, **card.get("env_kwargs", {}))
    cfg = tables_config("demo"); n_set = cfg.n_runs * cfg.max_steps
    collect_shifted_rollout(env, pol, Identity(), seed=500, max_steps=3)   # warm-up (imports, first calls)
    print(machine()); print(f"{env_id}, agent {card['id']}, {steps} steps per shift, seed 500 (run 0's S-hat seed)")
    total = 0.0
    for label, sh in {"identity": Identity(), **paper_shifts("all", "demo")}.items():
        t = time.process_time(); collect_shifted_rollout(env, pol, sh, seed=500, max_steps=steps)
        ms = 1e3 * (time.process_time() - t) / steps
        reps = n_set * (2 if label == "identity" else 1)
        total += ms * reps / 1e3
        print(f"{label:26s} {ms:8.1f} ms CPU/step  x {reps:4d} steps in the job = {ms * reps / 1e3:6.1f} s")
    ro = collect_shifted_rollout(env, pol, Identity(), seed=500, max_steps=cfg.max_steps)
    t = time.process_time(); ranld(pol, ro.obs, keep_gradients=True); g = time.process_time() - t
    n_ranld = cfg.n_runs * (2 + len(paper_shifts("all", "demo")))
    print(f"ranld on {len(ro.obs)} states {1e3 * g:.0f} ms x {n_ranld} = {g * n_ranld:.1f} s; "
          f"estimated job CPU (without the 300-step direction episode) {total + g * n_ranld:.0f} s; load {os.getloadavg()[0]:.2f}")


def attacks_timing(env_id: str, steps: int) -> None:
    "ART's PyTorchClassifier against the shifts' one-forward classifier on the demo protocol's attacks (see the module docstring)."
    import torch
    torch.set_num_threads(1)
    from rlexplain.agent_zoo import load_best_agent
    from rlexplain.envs import collect_rollout, make_env
    from rlexplain.ranld_study import paper_shifts
    from rlexplain.shifts import art_classifier
    pol, card = load_best_agent(env_id, "ddqn")
    ro = collect_rollout(make_env(env_id, **card.get("env_kwargs", {})), pol, n_episodes=1, seed=500, max_steps=20 * steps,
                         record_states=False)
    X = pol.obs(ro.obs[::max(1, len(ro.obs) // steps)][:steps])
    print(machine()); print(f"{env_id}, agent {card['id']}, {len(X)} states")
    for label, sh in paper_shifts("adversarial", "demo").items():
        if not hasattr(sh, "attack"): continue   # Nesterov momentum: no ART attack
        t_art = t_new = 0.0; diff = 0.0
        for i in range(len(X)):
            x = X[i:i + 1]
            t = time.process_time(); a = np.clip(sh.attack(art_classifier(pol, sh.temperature)).generate(x.numpy().copy()), 0, 1)
            t_art += time.process_time() - t
            t = time.process_time(); b = sh(x, pol).numpy(); t_new += time.process_time() - t
            diff = max(diff, float(np.abs(a - b).max()))
        print(f"{label:16s} ART PyTorchClassifier {1e3 * t_art / len(X):7.0f} ms CPU/state, one-forward {1e3 * t_new / len(X):7.0f} "
              f"ms CPU/state ({t_art / max(t_new, 1e-9):.2f}x), max |diff| {diff:.3g}; load {os.getloadavg()[0]:.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000], help="numbers of gradient rows")
    ap.add_argument("--d", type=int, default=4 * 84 * 84, help="features per row (Atari: 28,224)")
    ap.add_argument("--methods", nargs="+", default=None, help="default: gram lanczos lowrank svd for n <= 2048, "
                    "lanczos lowrank above (the exact routes cost O(n^2 d))")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--grads", type=int, default=256, help="also time nld_gradients on this many states (0 skips)")
    ap.add_argument("--switch", action="store_true", help="measure the Gram / Lanczos switch point instead")
    ap.add_argument("--repeats", type=int, default=3, help="--switch: timings per route and n (median)")
    ap.add_argument("--real", action="store_true", help="--switch: real gradients of the zoo's Toybox Breakout DQN")
    ap.add_argument("--spectrum", choices=sorted(SPECTRA), default="steep", help="--switch: synthetic top spectrum")
    ap.add_argument("--shifts", action="store_true", help="per-step CPU cost of each shift of the demo's ranld_tables job instead")
    ap.add_argument("--attacks", action="store_true", help="ART's classifier against the one-forward classifier on the demo's attacks instead")
    ap.add_argument("--env", default="ALE/RoadRunner-v5", help="--shifts, --attacks: the game (its zoo DDQN agent)")
    ap.add_argument("--steps", type=int, default=10, help="--shifts: steps timed per shift; --attacks: states attacked")
    ap.add_argument("--one", nargs=3, metavar=("N", "METHOD", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return one(int(a.one[0]), a.d, a.one[1], a.one[2], a.threads)
    if a.shifts:
        return shifts_timing(a.env, a.steps)
    if a.attacks:
        return attacks_timing(a.env, a.steps)
    if a.switch:
        return switch_point(a.n if a.n != [1000, 10000] else [25, 50, 100, 200, 400, 800, 1600], a.d, a.threads, a.repeats,
                            a.real, a.spectrum)

    env = {**os.environ, "OMP_NUM_THREADS": str(a.threads), "OPENBLAS_NUM_THREADS": str(a.threads),
           "MKL_NUM_THREADS": str(a.threads)}
    print(f"load average before: {os.getloadavg()[0]:.2f}; threads: {a.threads}; d = {a.d:,}")
    dense = a.d * a.d * 4
    print(f"dense route (Algorithm 1): L(S) is d x d = {a.d:,}^2 -> {dense / 2**30:.2f} GiB in float32 "
          f"({2 * dense / 2**30:.2f} GiB in float64 for eigh), eigh ~ {a.d ** 3 / 1e12:.0f} Tflop; not run.\n")
    hdr = f"{'n':>7} {'method':>8} {'seconds':>8} {'A (MiB)':>8} {'extra peak RSS (MiB)':>21} {'tracemalloc (MiB)':>18} {'|cos| vs first':>15} {'dense L / extra':>16}"
    print(hdr); print("-" * len(hdr))
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.n:
            methods = a.methods or DEFAULT_METHODS["small" if n <= 2048 else "large"]
            ref = None
            for m in methods:
                out = os.path.join(tmp, f"{n}_{m}.npy")
                r = subprocess.run([sys.executable, __file__, "--d", str(a.d), "--threads", str(a.threads), "--one", str(n), m, out],
                                   capture_output=True, text=True, env=env)
                if r.returncode != 0:
                    print(f"{n:>7} {m:>8} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"); continue
                res = json.loads(r.stdout.strip().splitlines()[-1])
                z = np.load(out); ref = z if ref is None else ref
                extra = res["extra_peak_rss"]
                print(f"{n:>7} {m:>8} {res['seconds']:>8.2f} {res['A_bytes'] / 2**20:>8.0f} {extra / 2**20:>21.0f} "
                      f"{res['tracemalloc_peak'] / 2**20:>18.1f} {abs(float(z @ ref)):>15.6f} {dense / max(extra, 1):>15.0f}x")
    if a.grads:
        sec, shape = grads_timing(a.grads, a.threads)
        print(f"\nnld_gradients, Nature-CNN (4 actions), {a.grads} states -> {shape}: {sec:.2f} s "
              f"({1000 * sec / a.grads:.1f} ms per state)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
