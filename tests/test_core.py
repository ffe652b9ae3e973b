"Integration tests of rlexplain.core, .compute and .runs: adapters on real RL-Zoo agents, observations, settings, results I/O, executors."
import dataclasses
import os
import numpy as np
import pandas as pd
import pytest
import torch

from rlexplain.core import Policy, load_sb3, sb3_algo_of_zip, to_obs_tensor
from rlexplain.compute import run_jobs
from rlexplain.runs import RunDir
from rlexplain.envs import collect_rollout, make_env


@pytest.mark.parametrize("algo", ["dqn", "qrdqn", "ppo", "a2c"])
@pytest.mark.parametrize("env", ["CartPole-v1", "LunarLander-v2"])
def test_sb3_zoo_adapter_matches_sb3_predict(shared_agents, algo, env):
    zip_path = shared_agents / "sb3-zoo" / algo / env / f"{env}.zip"
    assert sb3_algo_of_zip(zip_path) == algo
    model = load_sb3(zip_path, device="cpu")
    pol = Policy.from_sb3(model, device="cpu")
    obs = np.random.default_rng(0).normal(size=(16, *model.observation_space.shape)).astype(np.float32)
    sb3_actions, _ = model.predict(obs, deterministic=True)
    assert pol.forward(obs).shape == (16, model.action_space.n)
    np.testing.assert_array_equal(pol.act(obs, deterministic=True).numpy(), sb3_actions)
    assert pol.kind == ("q" if algo in ("dqn", "qrdqn") else "logits")
    if algo in ("ppo", "a2c"):   # raw actor logits: SB3's action probabilities after a softmax
        with torch.no_grad():
            probs = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.probs.numpy()
        np.testing.assert_allclose(torch.softmax(torch.as_tensor(pol.forward(obs)).detach(), 1).numpy(), probs, atol=1e-5)


def test_actor_critic_image_agent_gives_sb3_action_probabilities():
    "An image actor-critic's [0, 1] input goes straight to its CNN: softmax of the raw logits = SB3's probabilities on x * 255."
    from rlexplain.agent_zoo import load_best_agent
    pol, card = load_best_agent("ALE/Pong-v5", "ppo", device="cpu")
    x = torch.rand(4, 4, 84, 84)
    with torch.no_grad():
        ours = torch.softmax(pol.module(x), 1); sb3 = pol.module.policy.get_distribution(x * 255).distribution.probs
    torch.testing.assert_close(ours, sb3, atol=1e-5, rtol=0)


def test_sb3_zoo_agent_is_competent_on_cartpole(shared_agents):
    pol = Policy.from_sb3(shared_agents / "sb3-zoo" / "dqn" / "CartPole-v1" / "CartPole-v1.zip", device="cpu")
    ret = collect_rollout(make_env("CartPole-v1"), pol, n_episodes=2, seed=0, record_obs=False).returns()
    assert ret.mean() > 400


def test_obs_conversion_errors():
    with pytest.raises(ValueError, match="channel-first"):
        to_obs_tensor(np.zeros((2, 84, 84, 4), np.uint8), (4, 84, 84))
    with pytest.raises(ValueError, match="NaN"):
        to_obs_tensor(np.array([[np.nan, 0.0]]), (2,))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        to_obs_tensor(np.full((1, 4, 84, 84), 255.0, np.float32), (4, 84, 84))
    with pytest.raises(TypeError):
        to_obs_tensor("frames", (2,))


def _slow_square(x):
    return x * x


def test_run_jobs_process_pool_and_resume(tmp_path):
    rd = RunDir(tmp_path)
    out = run_jobs(_slow_square, [1, 2, 3], max_workers=2, names=["a", "b", "c"], run_dir=rd)
    assert out == [1, 4, 9]
    (tmp_path / "units" / "b.json").unlink()          # "interrupted": b is lost, a and c survive
    calls = run_jobs(_slow_square, [10, 20, 30], names=["a", "b", "c"], run_dir=rd)
    assert calls == [1, 400, 9]                         # only b was recomputed


def test_run_jobs_on_dask_local_cluster():
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert run_jobs(_slow_square, range(4), executor=client.get_executor()) == [0, 1, 4, 9]


def test_policy_from_module_errors():
    net = torch.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="kind"):
        Policy(net, 2, (3,), kind="value")
    pol = Policy.from_module(net, (3,), device="cpu")
    with pytest.raises(ValueError, match="shape"):
        pol.forward(np.zeros((1, 4), np.float32))
    with pytest.raises(TypeError, match="policy agent"):
        Policy.from_module(net, (3,), kind="logits", device="cpu").q_values(np.zeros((1, 3), np.float32))


def test_scaled_config_picks_demo_or_paper(monkeypatch):
    import dataclasses
    from rlexplain.compute import ScaledConfig

    @dataclasses.dataclass(frozen=True)
    class Cfg(ScaledConfig):
        n: int = 1
        @classmethod
        def demo(cls, **kw): return cls(**kw)
        @classmethod
        def paper(cls, **kw): return cls(**{"n": 100, **kw})

    assert Cfg.from_scale("demo").n == 1 and Cfg.from_scale("paper").n == 100
    assert Cfg.from_scale("paper", n=7).n == 7
    from rlexplain.compute import use_settings
    with use_settings(scale="paper"): assert Cfg.from_scale().n == 100
    with use_settings(scale="demo"): assert Cfg.from_scale().n == 1
    with pytest.raises(ValueError, match="scale must be one of"):
        Cfg.from_scale("huge")


# --- run folders: configuration, unit names, atomic writes (issue 18.3) ---

def test_rundir_records_config_and_refuses_another(tmp_path):
    from rlexplain.runs import ConfigMismatchError, load_json
    rd = RunDir(tmp_path, config={"states": 10, "agents": (1, 2), "mode": "sample"})
    rd.unit("a", lambda: {"x": 1})
    assert load_json(tmp_path / "config.json") == {"agents": [1, 2], "mode": "sample", "states": 10}
    assert RunDir(tmp_path, config={"states": 10, "agents": [1, 2], "mode": "sample"}).done("a")   # same: resumes
    with pytest.raises(ConfigMismatchError) as e:
        RunDir(tmp_path, config={"states": 20, "agents": (1, 2, 3), "mode": "sample"})
    msg = str(e.value)
    assert "states: saved=10, given=20" in msg and "agents: saved=[1, 2], given=[1, 2, 3]" in msg and "--force" in msg
    assert "mode" not in msg and isinstance(e.value, ValueError)
    assert RunDir(tmp_path).done("a")                       # config=None: no check, as before


def test_rundir_force_removes_units_and_records_new_config(tmp_path):
    from rlexplain.runs import load_json
    RunDir(tmp_path, config={"n": 1}).unit("a", lambda: [1])
    calls = []
    rd = RunDir(tmp_path, config={"n": 2}, force=True)
    assert rd.unit("a", lambda: calls.append(1) or [2]) == [2] and calls == [1]
    assert load_json(tmp_path / "config.json") == {"n": 2}


def test_rundir_refuses_units_of_unknown_configuration(tmp_path):
    from rlexplain.runs import ConfigMismatchError
    RunDir(tmp_path).unit("a", lambda: 1)                   # an older run: units, no config.json
    with pytest.raises(ConfigMismatchError, match="no recorded configuration"):
        RunDir(tmp_path, config={"n": 1})


def test_rundir_records_run_metadata(tmp_path):
    from rlexplain.runs import load_json
    RunDir(tmp_path, config={"n": 1})
    meta = load_json(tmp_path / "meta.json")
    assert {"torch_threads", "compute_settings", "cpus", "load_average", "torch"} <= set(meta)


@pytest.mark.parametrize("kind", ["json", "frame", "arrays"])
def test_unit_names_of_any_characters_round_trip(tmp_path, kind):
    rd = RunDir(tmp_path)
    names = ["fgsm eps=0.5/255", "p=0.5", "p=0.25", "a.b.c", "..", ".hidden", "50%", "x/", "tab\tname", "über"]
    make = {"json": lambda i: {"i": i}, "frame": lambda i: pd.DataFrame({"i": [i]}),
            "arrays": lambda i: {"i": np.array([i])}}[kind]
    for i, n in enumerate(names): rd.save_unit(n, make(i))
    for i, n in enumerate(names):
        assert rd.done(n), n
        v = rd.load_unit(n)
        got = v["i"] if kind == "json" else int(np.asarray(v["i"])[0])
        assert got == i, n                                  # two names never share a file
    assert not any(p.resolve() == tmp_path.parent.resolve() or not p.resolve().is_relative_to(tmp_path.resolve())
                   for p in tmp_path.rglob("*"))
    assert not rd.done("p=0")


def test_rundir_reads_units_only_under_their_encoded_paths(tmp_path):
    "One path per unit: a file under the raw name of a unit whose name is encoded (`a:b` -> `a%3Ab`) is not read."
    (tmp_path / "units").mkdir()
    (tmp_path / "units" / "a:b.json").write_text("[1]")
    rd = RunDir(tmp_path)
    assert not rd.done("a:b")
    rd.save_unit("a:b", [2])
    assert rd.load_unit("a:b") == [2] and (tmp_path / "units" / "a%3Ab.json").exists()


def test_atomic_write_fsyncs_before_replace(tmp_path, monkeypatch):
    import os
    from rlexplain import runs
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(runs.os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(runs.os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    runs.atomic_write(tmp_path / "f.txt", "hello")
    assert (tmp_path / "f.txt").read_text() == "hello"
    assert "fsync" in events and events.index("fsync") < events.index("replace")
    events.clear(); runs.atomic_write(tmp_path / "g.bin", lambda p: p.write_bytes(b"x"))
    assert events.index("fsync") < events.index("replace")


def test_atomic_write_failure_keeps_old_file_and_rundir_removes_killed_temporaries(tmp_path):
    from rlexplain.runs import atomic_write
    atomic_write(tmp_path / "units" / "a.json", "[1]")
    def boom(p): p.write_text("half"); raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "units" / "a.json", boom)
    assert (tmp_path / "units" / "a.json").read_text() == "[1]"
    assert not list(tmp_path.rglob("*.tmp"))
    (tmp_path / "units" / ".b.json.x1y2.tmp").write_text("half")   # what a SIGKILL leaves behind
    RunDir(tmp_path)
    assert not list(tmp_path.rglob("*.tmp"))
    with pytest.raises(TypeError, match="data must be"):
        atomic_write(tmp_path / "c", 3)


def test_load_json_names_a_truncated_file(tmp_path):
    from rlexplain.runs import load_json
    (tmp_path / "card.json").write_text('{"id": "x", "eval')
    with pytest.raises(ValueError, match="card.json"):
        load_json(tmp_path / "card.json")


# --- progress bars (issue 18.5) ---

def test_progress_is_quiet_in_logs():
    import io
    from rlexplain.compute import Settings, progress, use_settings
    with use_settings(progress="auto"):
        buf = io.StringIO()                                      # not a terminal: log mode
        for _ in progress(range(2000), desc="units", file=buf): pass
        out = buf.getvalue()
        assert "\r" not in out and out.count("\n") == 1 and "2000/2000" in out
        buf = io.StringIO()
        for _ in progress(range(10), file=buf, leave=False): pass
        assert buf.getvalue() == ""
    with use_settings(progress="off"):
        buf = io.StringIO()
        for _ in progress(range(10), file=buf): pass
        assert buf.getvalue() == ""
    with pytest.raises(ValueError, match="RLEXPLAIN_PROGRESS must be one of"):
        Settings.from_env({"RLEXPLAIN_PROGRESS": "widgets"})


def test_public_names_replace_private_imports():
    from rlexplain import core, runs
    assert core.sb3_class("dqn").__name__ == "DQN" and not hasattr(core, "_sb3_class")
    assert not hasattr(core, "_SB3Head") and not hasattr(runs, "_json_default")   # no private name is imported across modules
    assert runs.json_default(np.float32(0.5)) == 0.5 and runs.json_default({2, 1}) == [1, 2]


# --- the Policy contract and its errors (issues 16.3, 18.1) ---

def _conv_net(in_ch=4, n=3):
    return torch.nn.Sequential(torch.nn.Conv2d(in_ch, 8, 8, 4), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 20 * 20, n))


def test_from_module_channel_last_obs_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"channel-first.*obs_shape=\(4, 84, 84\)"):
        Policy.from_module(_conv_net(), (84, 84, 4), device="cpu")
    with pytest.raises(ValueError, match="channel-first"):
        Policy.from_module(_conv_net(), (84, 84, 4), n_actions=3, device="cpu")


def test_from_module_output_of_wrong_rank_is_a_clear_error():
    class Bad(torch.nn.Module):
        def forward(self, x): return torch.zeros(len(x), 3, 1)
    with pytest.raises(ValueError, match=r"must return \(B, n_actions\).*returned \(1, 3, 1\)"):
        Policy.from_module(Bad(), (5,), device="cpu")
    with pytest.raises(ValueError, match=r"obs_shape must be"):
        Policy.from_module(torch.nn.Linear(3, 2), (3, -1), device="cpu")


def test_forward_rejects_nonfinite_outputs():
    net = torch.nn.Linear(3, 2)
    with torch.no_grad(): net.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite outputs"):
        Policy.from_module(net, (3,), n_actions=2, device="cpu").outputs(np.ones((2, 3), np.float32))


def test_obs_uint8_is_scaled_for_images_only():
    x = to_obs_tensor(np.array([[3, 255]], np.uint8), (2,))
    assert x.tolist() == [[3.0, 255.0]]                     # tabular counts keep their values
    img = to_obs_tensor(np.full((1, 1, 2, 2), 255, np.uint8), (1, 2, 2))
    assert float(img.max()) == 1.0
    assert to_obs_tensor(np.zeros((0, 4, 84, 84), np.uint8), (4, 84, 84)).shape == (0, 4, 84, 84)
    with pytest.raises(TypeError, match="real-valued"):
        to_obs_tensor(np.zeros((1, 2), np.complex64), (2,))


def test_policy_like_lists_what_methods_use():
    from rlexplain.core import PolicyLike
    pol = Policy.from_module(torch.nn.Linear(3, 2), (3,), device="cpu")
    assert isinstance(pol, PolicyLike)
    members = {"name", "kind", "n_actions", "obs_shape", "stochastic", "device", "module", "obs", "forward", "outputs",
               "action_probs", "act"}
    assert members <= set(dir(PolicyLike)) | set(PolicyLike.__annotations__)

    class NoOutputs:   # the old protocol's members only
        n_actions, obs_shape, kind, module = 2, (3,), "q", torch.nn.Linear(3, 2)
        def forward(self, obs): ...
        def action_probs(self, obs, temperature=1.0): ...
        def act(self, obs, deterministic=True): ...
    assert not isinstance(NoOutputs(), PolicyLike)


def _dqn_zip(tmp_path):
    from stable_baselines3 import DQN
    model = DQN("MlpPolicy", "CartPole-v1", learning_starts=0, buffer_size=100, device="cpu")
    model.save(tmp_path / "dqn.zip")
    return tmp_path / "dqn.zip"


def test_from_sb3_errors_name_the_file(tmp_path):
    import zipfile
    bad = tmp_path / "corrupt.zip"; bad.write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match=r"corrupt\.zip.*not a zip"):
        Policy.from_sb3(bad, device="cpu")
    nodata = tmp_path / "nodata.zip"
    with zipfile.ZipFile(nodata, "w") as z: z.writestr("policy.pth", b"")
    with pytest.raises(ValueError, match=r"nodata\.zip has no 'data'"):
        Policy.from_sb3(nodata, device="cpu")
    with pytest.raises(FileNotFoundError, match="missing.zip"):
        Policy.from_sb3(tmp_path / "missing.zip", device="cpu")
    dqn = _dqn_zip(tmp_path)
    with pytest.raises(ValueError, match=r"dqn\.zip holds a DQN model; got algo='ppo'"):
        Policy.from_sb3(dqn, algo="ppo", device="cpu")
    assert Policy.from_sb3(dqn, device="cpu").kind == "q"
    with pytest.raises(TypeError, match="stable-baselines3"):
        Policy.from_sb3(torch.nn.Linear(3, 2), device="cpu")


# --- thread, layout and batch policy (issue 19.1) ---

def test_torch_threads_policy_and_overrides():
    from rlexplain.compute import Settings, torch_threads, use_settings
    old = torch.get_num_threads()
    try:
        with use_settings(threads=2): assert torch_threads() == 2 == torch.get_num_threads()
        with use_settings(threads=None): assert torch_threads() == 1
        assert torch_threads(2) == 2
        with pytest.raises(ValueError, match="positive integer"):
            torch_threads(0)
        with pytest.raises(ValueError, match="RLEXPLAIN_THREADS must be a positive integer; got 'many'"):
            Settings.from_env({"RLEXPLAIN_THREADS": "many"})
    finally:
        torch.set_num_threads(old)


@pytest.fixture
def calibrating(tmp_path):
    "Settings that let `compute_settings` calibrate (conftest fixes batch, workers and layout) into a cache in `tmp_path`."
    from rlexplain.compute import use_settings
    with use_settings(cache=tmp_path, batch=None, workers=None, layout=None) as s: yield s


def test_compute_settings_calibrate_cache_and_override(tmp_path, monkeypatch, calibrating):
    from rlexplain import compute
    from rlexplain.compute import use_settings
    calls = []
    monkeypatch.setattr(compute, "_load_average", lambda: 0.0)   # the same condition throughout: this test is about the cache
    monkeypatch.setattr(compute, "_calibrate", lambda *a, **k: calls.append(1) or {"layout": "channels_last", "batch_size": 64, "img_per_s": 1000.0,
                                                                                 "grad_batch_size": 32, "grad_img_per_s": 100.0})
    pol = Policy.from_module(_conv_net(), (4, 84, 84), device="cpu")
    s = compute.compute_settings(pol, refresh=True)
    assert (s.layout, s.batch_size, s.source) == ("channels_last", 64, "calibrated") and s.threads >= 1 and s.workers >= 1
    compute._SETTINGS.clear(); compute._BY_CONDITION.clear()
    assert compute.compute_settings(pol).source == "cache" and calls == [1]        # read back from the disk cache
    assert compute.compute_settings(pol, layout="contiguous", batch_size=32).layout == "contiguous"
    with use_settings(batch=16, workers=1): o = compute.compute_settings(pol)
    assert (o.batch_size, o.workers, o.source) == (16, 1, "override")
    with pytest.raises(ValueError, match="layout must be one of"):
        compute.compute_settings(pol, layout="nhwc")
    mlp = compute.compute_settings(Policy.from_module(torch.nn.Linear(3, 2), (3,), device="cpu"))
    assert mlp.source in ("rule", "override") and mlp.layout == "contiguous"


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_policy_outputs_same_values_in_every_layout_batch_and_worker_count(layout):
    "Layout, chunking and worker threads change speed only: outputs and input gradients stay the same."
    import copy
    from rlexplain.compute import ComputeSettings
    torch.manual_seed(0)
    net = _conv_net(); ref = copy.deepcopy(net)
    pol = Policy.from_module(net, (4, 84, 84), device="cpu")
    pol.apply_settings(ComputeSettings(1, 2, layout, 3, "override"))
    assert pol.channels_last == (layout == "channels_last")
    x = torch.rand(10, 4, 84, 84, requires_grad=True)
    with torch.no_grad(): want = ref(x)
    torch.testing.assert_close(pol.outputs(x), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pol.outputs(x, batch_size=4), want, rtol=1e-5, atol=1e-5)
    g, = torch.autograd.grad(pol.forward(x)[:, 1].sum(), x)
    g_ref, = torch.autograd.grad(ref(x)[:, 1].sum(), x)
    torch.testing.assert_close(g, g_ref, rtol=1e-5, atol=1e-6)
    assert g.is_contiguous()


def test_map_batches_nested_call_does_not_deadlock():
    from rlexplain.compute import map_batches
    x = torch.arange(12.)
    out = map_batches(lambda c: torch.cat(map_batches(lambda d: d * 2, c, 1, 2)), x, 3, 2)
    assert torch.equal(torch.cat(out), x * 2)
    with pytest.raises(ValueError, match="batch_size"):
        map_batches(lambda c: c, x, 0)


def test_no_module_imports_a_private_name_from_another():
    "Issue 16.3: modules talk through public names only (`from .core import _x` would tie them to internals); multi-line imports too."
    import ast
    from pathlib import Path
    pkg = Path(__file__).resolve().parent.parent / "rlexplain"
    bad = []
    for f in sorted(pkg.glob("*.py")):
        if f.name == "_modidx.py": continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("rlexplain")):
                bad += [f"{f.name}: {a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert bad == []
    assert ast.parse("from .core import (\n    Policy,\n    _x,\n)").body[0].names[1].name == "_x"   # the form a line regex missed


def test_a_killed_run_resumes_to_the_uninterrupted_results_bit_for_bit(tmp_path):
    "Issue 18: SIGKILL a run of units at an arbitrary point, rerun it: the results equal an uninterrupted run's, no temporaries left."
    import signal, subprocess, sys, time
    script = tmp_path / "job.py"
    script.write_text(
        "import sys, time\nimport numpy as np\nfrom rlexplain.compute import run_jobs\nfrom rlexplain.runs import RunDir\n"
        "import os\n"
        "def work(i):\n"
        "    if i >= 20 and os.environ.get('HOLD'):\n        time.sleep(3600)   # units 20.. wait to be killed: no race with the test\n"
        "    return {'x': np.random.default_rng(i).normal(size=20_000)}\n"
        "if __name__ == '__main__':\n"
        "    rd = RunDir(sys.argv[1], config={'n': 60})\n"
        "    res = run_jobs(work, range(60), names=[f'unit p={i / 10}' for i in range(60)], run_dir=rd)\n"
        "    np.save(sys.argv[2], np.stack([r['x'] for r in res]))\n")
    run = lambda d: [sys.executable, str(script), str(tmp_path / d), str(tmp_path / f"{d}.npy")]
    env = {**__import__("os").environ, "RLEXPLAIN_PROGRESS": "off"}
    subprocess.run(run("a"), check=True, env=env)
    p = subprocess.Popen(run("b"), env={**env, "HOLD": "1"})   # saves units 0-19, then blocks in unit 20 until killed
    deadline = time.time() + 300   # a safety net against a hang only: how fast the machine is does not decide the outcome
    while time.time() < deadline and len(list((tmp_path / "b").rglob("*.npz"))) < 15 and p.poll() is None: time.sleep(0.01)
    p.send_signal(signal.SIGKILL); p.wait()
    done = {f: f.stat().st_mtime_ns for f in (tmp_path / "b").rglob("*.npz")}
    assert 15 <= len(done) <= 20, len(done)     # killed mid-run (at 15..20 saved units, wherever the kill lands)
    subprocess.run(run("b"), check=True, env=env)
    assert all(f.stat().st_mtime_ns == t for f, t in done.items())   # finished units were loaded, not redone
    assert len(list((tmp_path / "b").rglob("*.npz"))) == 60
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    assert not [f for f in (tmp_path / "b").rglob("*") if f.name.endswith(".tmp")]


def _map_in_child():
    from rlexplain.compute import map_batches
    return [t.tolist() for t in map_batches(lambda c: c * 2, torch.arange(6), 2, 2)]


def test_map_batches_works_in_a_forked_child_after_the_parent_used_its_pool():
    "A process pool's forked worker inherits the parent's thread-pool object but not its threads: it must build its own (the demo hung here)."
    import multiprocessing as mp
    from rlexplain.compute import map_batches
    map_batches(lambda c: c + 1, torch.arange(6), 2, 2)          # the parent's pool now exists
    with mp.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_map_in_child).get(timeout=60) == [[0, 2], [4, 6], [8, 10]]


def test_no_module_uses_an_undefined_name_or_drops_a_value():
    "A renamed helper must be renamed at every caller: pyflakes finds names used but never defined (the demo once called a removed `_load_policy`), and locals computed but never read."
    import subprocess, sys
    from pathlib import Path
    pkg = Path(__file__).resolve().parent.parent / "rlexplain"
    pytest.importorskip("pyflakes")
    r = subprocess.run([sys.executable, "-m", "pyflakes", *map(str, sorted(pkg.glob("*.py")))], capture_output=True, text=True)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr and "No module named" not in r.stderr, r.stderr   # pyflakes ran
    assert [l for l in r.stdout.splitlines() if "undefined name" in l or "is assigned to but never used" in l] == []


# --- issue 27.3 / 28.2: plain progress lines in logs, calibration that does not stick under load ---

def test_progress_in_a_log_writes_plain_lines_without_control_codes(monkeypatch):
    "A nested bar makes tqdm move the cursor (ESC[A) between redraws; a redirected log must get none of it."
    import io
    from rlexplain.compute import progress
    from rlexplain.compute import use_settings
    buf = io.StringIO()
    with use_settings(progress="log", progress_interval=0), progress(total=3, desc="outer", file=buf) as o:   # a line per update
        for _ in progress(range(5), desc="inner", position=1, file=buf): pass
        o.update(3)
    text = buf.getvalue()
    assert "\x1b" not in text and "\r" not in text and "inner" in text and "3/3" in text, repr(text)
    assert all(line.strip() for line in text.splitlines())


class _Clock:
    "A fake timer: the network below advances it by a modelled cost, so the calibration's choice is known in advance."
    t = 0.0


class _Tick(torch.autograd.Function):
    "Identity whose forward and backward add their modelled costs (per call + per image) to `_Clock.t`."
    @staticmethod
    def forward(ctx, x):
        ctx.b = x.shape[0]
        cl = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        _Clock.t += 10.0 + x.shape[0] * (0.5 if cl else 1.0)     # channels-last twice as fast per image; a fixed cost per call
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        _Clock.t += 10.0 + ctx.b * (1.0 if ctx.b <= 32 else 5.0)   # backward slows down above 32 images (cache)
        return g


class _TickNet(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.conv = torch.nn.Conv2d(2, 1, 3); self.fc = torch.nn.Linear(36, 2)
    def forward(self, x): return self.fc(self.conv(_Tick.apply(x)).flatten(1))


def test_calibration_choices_follow_measured_costs_not_the_machine():
    """`_calibrate` with an injected clock: the forward picks channels-last at the largest batch (the fixed cost per call
    amortised), the backward its own batch, 32 (above it each image costs 5x): the two passes differ, so both are kept."""
    from rlexplain.compute import _calibrate
    c = _calibrate(_TickNet(), (2, 8, 8), torch.device("cpu"), seconds=1.0, rounds=2, clock=lambda: _Clock.t)
    assert (c["layout"], c["batch_size"], c["grad_batch_size"]) == ("channels_last", 256, 32)
    # the forward of the backward pass runs at the chosen layout: 32 images cost (10 + 16) + (10 + 32) per pass
    assert c["img_per_s"] == pytest.approx(256 / (10 + 128)) and c["grad_img_per_s"] == pytest.approx(32 / (26 + 42))


def test_a_calibration_made_under_load_is_used_only_under_that_load(tmp_path, monkeypatch, calibrating):
    "Issue 28.2: the cache records the load; another condition is calibrated when first met, then each is reused."
    from rlexplain import compute
    monkeypatch.setattr(compute, "_cores", lambda: 2)
    load = {"now": 0.2}; calls = []
    monkeypatch.setattr(compute, "_load_average", lambda: load["now"])
    def fake(module, obs_shape, device, **kw):   # a busy machine's calibration picks small batches
        calls.append(load["now"]); b = 64 if load["now"] >= 1.5 else 256
        return {"layout": "contiguous", "batch_size": b, "img_per_s": 1.0, "grad_batch_size": b // 4, "grad_img_per_s": 1.0}
    monkeypatch.setattr(compute, "_calibrate", fake)
    monkeypatch.setattr(compute, "_SETTINGS", {}); monkeypatch.setattr(compute, "_BY_CONDITION", {})
    pol = Policy.from_module(_conv_net(), (4, 84, 84), device="cpu")
    quiet = compute.compute_settings(pol)
    assert (quiet.batch_size, quiet.grad_batch_size, quiet.busy, quiet.load, quiet.source) == (256, 64, 0, 0.2, "calibrated")
    load["now"] = 2.3                                           # a busy process appeared
    busy = compute.compute_settings(pol)
    assert (busy.batch_size, busy.busy, busy.source) == (64, 2, "calibrated") and calls == [0.2, 2.3]
    load["now"] = 0.4; compute._BY_CONDITION.clear()              # quiet again, in a new process: the quiet choice from disk
    again = compute.compute_settings(pol)
    assert (again.batch_size, again.source) == (256, "cache") and calls == [0.2, 2.3]
    load["now"] = 1.8
    assert compute.compute_settings(pol).batch_size == 64 and calls == [0.2, 2.3]
    import json
    cache = json.loads((tmp_path / "compute.json").read_text())
    key = compute._net_key(pol.module, (4, 84, 84), torch.device("cpu"))
    assert set(cache[key]) == {"0", "2"} and cache[key]["2"]["load"] == 2.3


def test_an_old_cache_entry_without_its_load_is_calibrated_again(tmp_path, monkeypatch, calibrating):
    "rlexplain <= 0.1.0 cached one entry per network with no load: it may have been made under load, so it is not used."
    import json
    from rlexplain import compute
    monkeypatch.setattr(compute, "_load_average", lambda: 0.0)
    monkeypatch.setattr(compute, "_SETTINGS", {}); monkeypatch.setattr(compute, "_BY_CONDITION", {})
    pol = Policy.from_module(_conv_net(), (4, 84, 84), device="cpu")
    key = compute._net_key(pol.module, (4, 84, 84), torch.device("cpu"))
    (tmp_path / "compute.json").write_text(json.dumps({key: {"threads": 1, "workers": 2, "layout": "channels_last", "batch_size": 32,
                                                             "source": "calibrated", "img_per_s": 5.0}}))
    monkeypatch.setattr(compute, "_calibrate", lambda *a, **k: {"layout": "contiguous", "batch_size": 128, "img_per_s": 9.0,
                                                             "grad_batch_size": 32, "grad_img_per_s": 3.0})
    s = compute.compute_settings(pol)
    assert (s.layout, s.batch_size, s.source) == ("contiguous", 128, "calibrated")


def test_action_probs_are_detached():
    "Issue 27.5: action_probs returned a tensor that still tracked gradients."
    pol = Policy.from_module(torch.nn.Linear(3, 2), (3,), device="cpu")
    p = pol.action_probs(torch.rand(4, 3, requires_grad=True))
    assert p.grad_fn is None and not p.requires_grad and torch.allclose(p.sum(-1), torch.ones(4))


def test_calibration_runs_under_no_grad():
    "Policy.outputs runs under no_grad: the gradient pass of the calibration must enable grad itself (IR crashed on it)."
    import torch
    from rlexplain.compute import _calibrate
    net = torch.nn.Sequential(torch.nn.Conv2d(4, 2, 8, 4), torch.nn.Flatten(), torch.nn.LazyLinear(3))
    net(torch.zeros(1, 4, 84, 84))
    ticks = iter(range(10**6))
    with torch.no_grad():
        s = _calibrate(net, (4, 84, 84), torch.device("cpu"), seconds=0.0, rounds=1, clock=lambda: float(next(ticks)))
    assert s["grad_batch_size"] in (16, 32, 64, 128)


def test_process_pool_is_spawned_at_one_torch_thread(monkeypatch):
    """`run_jobs`' own pool (`process_pool`): spawned workers (a fork of a process whose torch started its OpenMP pool fails:
    "Invalid thread pool"), each at rlexplain's one torch thread, not torch's default (every core: 2 job processes x 2
    threads oversubscribed the 2-core machine), and one `Policy.outputs` worker unless the settings say otherwise."""
    import pytest
    import torch
    from rlexplain.compute import process_pool, settings, use_settings
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_workers"): process_pool(bad)
    with use_settings(threads=None, workers=None), process_pool(2) as pool:
        assert pool._mp_context.get_start_method() == "spawn"
        assert pool.submit(torch.get_num_threads).result(timeout=300) == 1
        assert pool.submit(settings).result(timeout=300).workers == 1   # one Policy.outputs worker each
    w = min(2, len(os.sched_getaffinity(0)))
    with use_settings(workers=w), process_pool(1) as pool:           # the program's choice wins
        assert pool.submit(settings).result(timeout=300).workers == w


def _conv_sum(seed):
    "A job that runs torch's intra-op pool: a fork of a process whose pool has started deadlocks here (measured: hung)."
    g = torch.Generator().manual_seed(seed)
    return float(torch.nn.functional.conv2d(torch.rand(8, 4, 32, 32, generator=g), torch.rand(8, 4, 3, 3, generator=g)).sum())


def test_run_jobs_own_pool_works_after_torch_has_run():
    """A process that has used torch's thread pool (any network forward) can still run `run_jobs(max_workers=2)` on torch
    jobs: its pool is spawned, so the workers do not inherit a started OpenMP pool (a forked pool hangs here); results come
    back in job order and equal the in-process ones (to float rounding: the sum is reduced over other thread counts). Run in a thread with a time limit, so that a hang fails the test."""
    import threading
    n0 = torch.get_num_threads()
    try:
        torch.set_num_threads(2); torch.nn.Conv2d(4, 8, 3)(torch.rand(8, 4, 32, 32))   # start torch's intra-op pool here
        out = []
        t = threading.Thread(target=lambda: out.append(run_jobs(_conv_sum, [3, 1], max_workers=2)), daemon=True)
        t.start(); t.join(600)
        assert out, "run_jobs' pool did not return (a forked pool deadlocks after torch's pool has started)"
        assert out[0] == pytest.approx([_conv_sum(3), _conv_sum(1)], rel=1e-5)   # 1 thread in the workers, 2 here: sums round apart
    finally: torch.set_num_threads(n0)


def test_run_jobs_sends_a_notebooks_own_function_and_objects_by_value():
    """A spawned worker imports what pickle names, so it cannot find what a notebook defines (module `__main__`): before,
    a lesson's own `run_study(max_workers=2)` broke the pool ("Can't get attribute '<the lesson's job function>' on
    <module '__main__'>"). `run_jobs` sends its own pool's jobs with cloudpickle: a `__main__` function, the `__main__` helper it
    calls, a job object of a `__main__` class and a result of that class go by value, and the results come back in job
    order, as instances of the notebook's own class."""
    ns = {"__name__": "__main__"}
    exec("class Box:\n    def __init__(self, v): self.v = v\n"
         "def _helper(v): return 10 * v\n"
         "def work(box): return _helper(box.v) + 1\n"
         "def boxed(box): return Box(box.v * 2)\n", ns)
    assert ns["work"].__module__ == ns["Box"].__module__ == "__main__"
    assert run_jobs(ns["work"], [ns["Box"](v) for v in (3, 1, 2)], max_workers=2) == [31, 11, 21]
    out = run_jobs(ns["boxed"], [ns["Box"](v) for v in (3, 1)], max_workers=2)
    assert [type(b) is ns["Box"] for b in out] == [True, True] and [b.v for b in out] == [6, 2]
    assert run_jobs(_slow_square, [4, 5], max_workers=2) == [16, 25]   # a package-level function still goes by reference


# --- issue 39.4: one explicit settings object instead of environment variables read all over ---

def _worker_scale() -> str:
    "Run in a `process_pool` worker: the scale that worker's settings hold."
    from rlexplain.compute import settings
    return settings().scale


def test_settings_validate_with_errors_naming_the_field_or_variable():
    from pathlib import Path
    from rlexplain.compute import Settings
    s = Settings.from_env({"RLEXPLAIN_SCALE": "Reference", "RLEXPLAIN_WORKERS": "2", "RLEXPLAIN_ZOO": "/z", "RLEXPLAIN_BATCH": " ",
                           "RLEXPLAIN_PROGRESS_INTERVAL": "2.5"})
    assert (s.scale, s.workers, s.zoo, s.batch, s.progress_interval) == ("reference", 2, Path("/z"), None, 2.5)
    assert Settings.from_env({}) == Settings()
    for kw, msg in [({"scale": "huge"}, "Settings.scale must be one of"), ({"threads": 0}, "Settings.threads must be a positive"),
                    ({"batch": True}, "Settings.batch must be a positive"), ({"layout": "nhwc"}, "Settings.layout must be one of"),
                    ({"progress": "loud"}, "Settings.progress must be one of"), ({"progress_interval": -1}, "Settings.progress_interval")]:
        with pytest.raises(ValueError, match=msg): Settings(**kw)
    with pytest.raises(TypeError, match="Settings.cache must be a folder path"): Settings(cache=3)
    with pytest.raises(ValueError, match="RLEXPLAIN_SCALE must be one of .* got 'huge'"): Settings.from_env({"RLEXPLAIN_SCALE": "huge"})
    with pytest.raises(ValueError, match=r"RLEXPLAIN_WORKERS must be a positive integer; got -2\."): Settings.from_env({"RLEXPLAIN_WORKERS": "-2"})
    with pytest.raises(ValueError, match="RLEXPLAIN_PROGRESS_INTERVAL must be a number"): Settings.from_env({"RLEXPLAIN_PROGRESS_INTERVAL": "soon"})
    with pytest.raises(dataclasses.FrozenInstanceError): s.scale = "paper"


def test_use_settings_replaces_and_as_a_context_restores():
    from rlexplain.compute import get_scale, settings, use_settings
    before = settings()
    with use_settings(scale="paper", batch=32) as s:
        assert settings() is s and (s.scale, s.batch, get_scale()) == ("paper", 32, "paper")
        with use_settings(scale="reference"): assert (settings().scale, settings().batch) == ("reference", 32)
        assert settings().scale == "paper"
    assert settings() == before
    change = use_settings(progress="off")                     # called plainly: lasts until replaced again
    try: assert settings().progress == "off"
    finally: change.__exit__(None, None, None)
    assert settings() == before
    with pytest.raises(TypeError, match="unknown field"): use_settings(sacle="paper")
    with pytest.raises(ValueError, match="Settings.scale"): use_settings(scale="huge")
    assert settings() == before                               # a refused change changes nothing


def test_a_process_pool_worker_sees_the_parents_settings():
    "The parent's `use_settings(scale=...)` reaches a spawned worker without any environment variable."
    import os
    from rlexplain.compute import process_pool, settings, use_settings
    other = "paper" if settings().scale != "paper" else "reference"
    with use_settings(scale=other), process_pool(1) as pool:
        assert pool.submit(_worker_scale).result(timeout=300) == other
        assert os.environ.get("RLEXPLAIN_SCALE") != other         # not passed through the environment


def test_only_settings_reads_rlexplain_variables():
    "No module reads or writes `RLEXPLAIN_*` environment variables except `Settings.from_env` (child environments excepted)."
    import re
    from pathlib import Path
    pkg = Path(__file__).resolve().parent.parent / "rlexplain"
    pat = re.compile(r"""(os\.environ(\.get|\.setdefault|\.pop)?\s*[\[(]|getenv\()\s*["']RLEXPLAIN_""")
    bad = [f"{f.name}:{i}" for f in sorted(pkg.rglob("*.py")) if "zoo" not in f.parts
           for i, line in enumerate(f.read_text().splitlines(), 1) if pat.search(line)]
    assert bad == []


def test_thread_counts_are_bounded_by_the_cores():
    "Issue 54.5: RLEXPLAIN_THREADS=999999 ended in a segmentation fault and =5000 ran 30 times slower, without a word."
    from rlexplain.compute import Settings, _cores
    n = _cores()
    for var in ("RLEXPLAIN_THREADS", "RLEXPLAIN_WORKERS"):
        assert getattr(Settings.from_env({var: str(n)}), var.split("_")[1].lower()) == n     # every core: fine
        for bad in (n + 1, 999_999):
            with pytest.raises(ValueError, match=rf"{var} must be at most {n}, the cores this process may run on; got {bad}"):
                Settings.from_env({var: str(bad)})
    with pytest.raises(ValueError, match=rf"Settings.threads must be at most {n}"): Settings(threads=n + 1)
