"""Issue 41.4: a property test of the run-folder contract (`runs.RunDir`, `runs.run_lock`). Hypothesis plays random
sequences of runs into one folder: opening it with one of two configurations (with or without `force`), computing units,
killed writes (a leftover temporary file), runs in another process killed with SIGKILL in the middle of their writes,
corrupted unit files, a held lock. After every step, no finished result is lost or mixed: each saved unit holds the value
of the configuration the folder records, another configuration is refused while the folder holds results, a corrupt unit
is computed again, never returned, and a unit a killed process wrote is either whole or absent."""
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rlexplain.runs import ConfigMismatchError, RunDir, RunFolderBusy, run_lock

NAMES = ("a", "b", "c/d")


def value(cfg: int, name: str):
    "What unit `name` computes under configuration `cfg`: arrays for `a` (an .npz unit), JSON for the others."
    return {"x": np.array([cfg, len(name)])} if name == "a" else {"cfg": cfg, "name": name}


def same(v, w) -> bool:
    if isinstance(v, dict) and "x" in v: return isinstance(w, dict) and "x" in w and np.array_equal(v["x"], w["x"])
    return v == w


BIG = 200_000                                             # values of a killed run's large units: a write a kill lands inside
PLAN = ("big/0", "a", "big/1", "b", "big/2", "c/d", "big/0", "big/1")   # a killed run's writes, in order
KILL_AFTER = tuple(i for i, u in enumerate(PLAN) if u.startswith("big/"))  # kill points: each while a large unit is written


def _writer(path: str, cfg: int, conn):
    """A run in its own process: opens the folder with configuration `cfg` and writes the units of PLAN (the small ones
    through `RunDir.unit`, each when the test says "go"; the large ones at once, rewritten), reporting each write; the test
    kills it with SIGKILL while it writes a large unit, and it never passes a small unit the test has not allowed."""
    rng = np.random.default_rng(cfg); big = {"x": np.full(BIG, float(cfg)), "noise": rng.random(BIG)}   # made before: a kill lands in the write
    rd = RunDir(path, config={"cfg": cfg}); conn.send("open")
    for u in PLAN:
        if u.startswith("big/"): rd.save_unit(u, big)
        else: conn.recv(); rd.unit(u, lambda u=u: value(cfg, u))
        conn.send(u)
    conn.close()


class RunFolder(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.path = Path(tempfile.mkdtemp(prefix="rlx-contract-"))
        self.rd, self.cfg = None, None          # the run now writing (the last one that opened the folder) and its configuration
        self.recorded = None                    # the configuration the folder records
        self.saved: dict[str, int] = {}         # unit -> configuration it was computed under
        self.corrupted: set[str] = set()        # units whose files were cut short (still files: the folder holds something)
        self.computed: list[tuple[int, str]] = []

    def teardown(self): shutil.rmtree(self.path, ignore_errors=True)

    @rule(cfg=st.sampled_from([1, 2]), force=st.booleans())
    def open_run(self, cfg, force):
        "A new run opens the folder (the previous one has ended)."
        if not force and self.recorded not in (None, cfg) and (self.saved or self.corrupted):
            with pytest.raises(ConfigMismatchError): RunDir(self.path, config={"cfg": cfg})
            self.rd = None; return
        self.rd, self.cfg = RunDir(self.path, config={"cfg": cfg}, force=force), cfg
        if force: self.saved, self.corrupted = {}, set()
        self.recorded = cfg

    @precondition(lambda self: self.rd is not None)
    @rule(name=st.sampled_from(NAMES))
    def compute(self, name):
        def fn(): self.computed.append((self.cfg, name)); return value(self.cfg, name)
        n = len(self.computed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # a corrupt unit's warning
            got = self.rd.unit(name, fn)
        assert same(got, value(self.cfg, name))                              # never another configuration's result
        assert (len(self.computed) > n) == (name not in self.saved)          # a readable saved unit is never computed twice
        self.saved[name] = self.cfg; self.corrupted.discard(name)

    @precondition(lambda self: self.saved)
    @rule(data=st.data(), keep=st.integers(0, 40))
    def corrupt(self, data, keep):
        "A unit file cut short (a disk full, a copy killed midway)."
        name = data.draw(st.sampled_from(sorted(self.saved)))
        p = self.rd._unit_path(name) if self.rd is not None else RunDir(self.path)._unit_path(name)
        if p.is_dir(): p = p / "result.json"
        b = p.read_bytes(); p.write_bytes(b[:min(keep, len(b) // 2)])   # at most half: never a readable file again
        del self.saved[name]; self.corrupted.add(name)                                                 # lost to the corruption: must be computed again

    @rule()
    def killed_write(self):
        "A write killed before its rename leaves a temporary file; the next opening removes it."
        (self.path / "units").mkdir(parents=True, exist_ok=True)
        (self.path / "units" / ".a.npz.123.tmp").write_bytes(b"partial")

    @rule(cfg=st.sampled_from([1, 2]), stop=st.sampled_from(KILL_AFTER), pause=st.sampled_from([0.0, 0.005, 0.02, 0.05]))
    def killed_process(self, cfg, stop, pause):
        """A run in another process (forked: no second import of torch) killed with SIGKILL `pause` seconds after it has
        reported `stop` writes of PLAN: before, inside (its temporary file half written) or after its next large write; the
        pause only picks the point, nothing asserted depends on it. Afterwards every unit it saved is whole and of its configuration,
        every unit saved before is untouched, and the next opening removes its half-written temporary file."""
        cfg = self.recorded if self.recorded is not None else cfg   # a run of another configuration is refused (open_run)
        ctx = multiprocessing.get_context("fork"); conn, child = ctx.Pipe()
        proc = ctx.Process(target=_writer, args=(str(self.path), cfg, child), daemon=True); proc.start(); child.close()
        try:
            assert conn.recv() == "open"                              # the folder records the run's configuration
            for u in PLAN[:stop]:
                if not u.startswith("big/"): conn.send("go")
                assert conn.recv() == u
            time.sleep(pause)
        finally:
            os.kill(proc.pid, signal.SIGKILL); proc.join(); conn.close()
        assert proc.exitcode == -signal.SIGKILL
        self.rd, self.recorded = None, cfg                           # the killed run was the writer
        rd = RunDir(self.path)                                       # the next opening: a reader
        assert not list(self.path.rglob(".*.tmp"))                   # the killed write's temporary file is gone
        reported = set(PLAN[:stop])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in NAMES:
                if name in self.saved: assert self.saved[name] == cfg   # saved before, same configuration: untouched (invariant)
                elif name in reported:                                  # saved by the killed run: whole, of its configuration
                    assert same(rd.load_unit(name), value(cfg, name)); self.saved[name] = cfg; self.corrupted.discard(name)
                else: assert (name in self.corrupted) == rd.done(name)  # not reached: absent, or still the cut file of before
            for u in dict.fromkeys(x for x in PLAN if x.startswith("big/")):
                if rd.done(u):
                    assert np.array_equal(rd.load_unit(u)["x"], np.full(BIG, float(cfg)))   # whole, or absent
                    rd._unit_path(u).unlink()   # forget it: the model's state must not depend on when the kill landed

    @rule()
    def second_writer_is_refused(self):
        with run_lock(self.path, "first"):
            with pytest.raises(RunFolderBusy, match="first"):
                with run_lock(self.path, "second"): pass
        assert not (self.path / ".rlexplain.lock").exists()

    @invariant()
    def nothing_lost_or_mixed(self):
        if self.recorded is None: return
        rd = RunDir(self.path)                                               # a reader, no configuration
        for name, cfg in self.saved.items():
            assert cfg == self.recorded and same(rd.load_unit(name), value(cfg, name))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_run_folder_contract():
    s = settings(max_examples=30, stateful_step_count=20, deadline=None)
    RunFolder.TestCase.settings = s
    RunFolder.TestCase().runTest()


# --- issue 41.1: saved units carry their configuration's fingerprint and are checked on load ---

import dataclasses

import pandas as pd

from rlexplain.runs import Result, config_fingerprint, load_result


@dataclasses.dataclass(frozen=True)
class ContractResult(Result):
    x: np.ndarray
    label: str


@dataclasses.dataclass(frozen=True)
class OwnSaveResult(ContractResult):
    "A result with its own `save(path)`, as `Attribution` and `IRStudy` have: units of it carry a fingerprint too."
    def save(self, path): return Result.save(self, path)


UNIT_VALUES = {"result": lambda: ContractResult(np.arange(3.0), "r"), "own_save": lambda: OwnSaveResult(np.arange(2.0), "o"), "table": lambda: pd.DataFrame({"a": [1, 2]}),
               "arrays": lambda: {"x": np.arange(4)}, "json": lambda: {"k": [1, 2]}}


def _same_unit(v, w) -> bool:
    if isinstance(v, ContractResult): return type(w) is type(v) and np.array_equal(v.x, w.x) and v.label == w.label
    if isinstance(v, pd.DataFrame): return isinstance(w, pd.DataFrame) and v.equals(w) and w.attrs == {}
    return same(v, w)


def _copy_unit(src: RunDir, dst: RunDir, name: str) -> Path:
    "Copy unit `name`'s files (folder or file) from one run folder into another, as a user's `cp` would."
    p = next(q for q in (src.path / "units").iterdir() if q.name == name or q.name.startswith(name + "."))
    to = dst.path / "units" / p.name; to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(p, to) if p.is_dir() else shutil.copy(p, to)
    return to


@pytest.mark.parametrize("kind", sorted(UNIT_VALUES))
def test_a_unit_of_another_configuration_is_refused_on_load(tmp_path, kind):
    "A unit copied from a folder of configuration A into one of configuration B is refused, naming its path and both fingerprints."
    a, b = RunDir(tmp_path / "a", config={"eps": 0.1}), RunDir(tmp_path / "b", config={"eps": 0.2})
    v = a.unit("u", UNIT_VALUES[kind])
    assert _same_unit(v, a.load_unit("u")) and _same_unit(v, RunDir(tmp_path / "a").load_unit("u"))   # its own folder: loads
    to = _copy_unit(a, b, "u")
    for load in (lambda: b.load_unit("u"), lambda: b.unit("u", UNIT_VALUES[kind]), lambda: RunDir(tmp_path / "b").load_unit("u")):
        with pytest.raises(ConfigMismatchError) as e: load()
        assert str(to) in str(e.value) and a.fingerprint in str(e.value) and b.fingerprint in str(e.value)


def test_a_unit_saved_without_a_fingerprint_loads_with_one_warning(tmp_path):
    "Units of older runs (no fingerprint in their files) still load, with one warning per folder."
    rd = RunDir(tmp_path, config={"n": 1})
    (tmp_path / "units").mkdir(exist_ok=True)
    (tmp_path / "units" / "old.json").write_text("[1, 2]")
    np.savez_compressed(tmp_path / "units" / "arr.npz", x=np.arange(3))
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "units" / "tab.parquet", index=False)
    ContractResult(np.ones(2), "old").save(tmp_path / "units" / "res")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert rd.load_unit("old") == [1, 2] and np.array_equal(rd.load_unit("arr")["x"], np.arange(3))
        assert rd.load_unit("tab")["a"].tolist() == [1] and rd.load_unit("res").label == "old"
    fp_warnings = [x for x in w if "no configuration fingerprint" in str(x.message)]
    assert len(fp_warnings) == 1 and "old.json" in str(fp_warnings[0].message)


def test_fingerprints_are_canonical_and_results_still_save_and_load(tmp_path):
    "One configuration, however written, has one fingerprint; `Result.save` / `load` / `load_result` work with it recorded."
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        sizes: tuple = (1, 2)
        eps: float = 0.5
    assert config_fingerprint(Cfg()) == config_fingerprint({"eps": 0.5, "sizes": [1, 2]}) != config_fingerprint({"eps": 0.25, "sizes": [1, 2]})
    assert len(config_fingerprint({})) == 16
    rd = RunDir(tmp_path, config=Cfg())
    rd.save_unit("r", ContractResult(np.arange(2.0), "x"))
    folder = tmp_path / "units" / "r"
    assert ContractResult.load(folder).label == "x" and load_result(folder).label == "x"
    r = ContractResult(np.arange(2.0), "plain"); r.save(tmp_path / "plain")          # saved outside a run folder: no fingerprint
    assert ContractResult.load(tmp_path / "plain").label == "plain"
    with pytest.raises(ValueError, match="may not be named"):
        rd.save_unit("bad", {"rlexplain_fingerprint": np.zeros(1)})
