"""Issue 41.4: a property test of the run-folder contract (`core.RunDir`, `core.run_lock`). Hypothesis plays random
sequences of runs into one folder: opening it with one of two configurations (with or without `force`), computing units,
killed writes (a leftover temporary file), corrupted unit files, a held lock. After every step, no finished result is lost
or mixed: each saved unit holds the value of the configuration the folder records, another configuration is refused
while the folder holds results, and a corrupt unit is computed again, never returned."""
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rlexplain.core import ConfigMismatchError, RunDir, RunFolderBusy, run_lock

NAMES = ("a", "b", "c/d")


def value(cfg: int, name: str):
    "What unit `name` computes under configuration `cfg`: arrays for `a` (an .npz unit), JSON for the others."
    return {"x": np.array([cfg, len(name)])} if name == "a" else {"cfg": cfg, "name": name}


def same(v, w) -> bool:
    if isinstance(v, dict) and "x" in v: return isinstance(w, dict) and "x" in w and np.array_equal(v["x"], w["x"])
    return v == w


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
    s = settings(max_examples=40, stateful_step_count=25, deadline=None)
    RunFolder.TestCase.settings = s
    RunFolder.TestCase().runTest()
