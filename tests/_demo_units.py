"""Demo sections for the scheduler tests of tests/test_cli.py, in a module of their own so that spawned worker processes can
import them (pytest puts tests/ on sys.path, and a spawned process starts with its parent's sys.path)."""
import os
from pathlib import Path

from rlexplain.compute import run_jobs
from rlexplain.demo import saved_units
from rlexplain.runs import RunDir

NAMES = ["a", "bbb", "cc"]

def job(arg):
    "One unit's work: leaves a mark per computation in `<section>/calls/` and returns len(name)**2."
    folder, name = arg
    (Path(folder) / "calls").mkdir(exist_ok=True); (Path(folder) / "calls" / f"{name}.{os.getpid()}").touch()
    return {"name": name, "square": len(name) ** 2}

def units(sec, scale):
    "The split section's units: one `job` per name not saved yet."
    rd = RunDir(sec.dir / "run", config={"scale": scale})
    return saved_units(rd, [(n, job, (str(sec.dir), n)) for n in NAMES])

def section(sec, scale, executor=None, max_workers=1):
    "The split section's function: the same jobs through `run_jobs` and the same folder, so saved units are loaded."
    rd = RunDir(sec.dir / "run", config={"scale": scale})
    res = run_jobs(job, [(str(sec.dir), n) for n in NAMES], run_dir=rd, names=NAMES)
    sec.note(" ".join(f"{r['name']}={r['square']}" for r in res))

def whole(sec, scale, executor=None, max_workers=1):
    "A section run as one unit: notes the process it ran in."
    sec.note(f"pid {os.getpid()}")
