"""Issue 49: layers a newcomer can see. The contract lives in `pyproject.toml` (`[tool.importlinter]`, shown on
nbs/architecture.md); `lint-imports` (import-linter, a well-kept tool built on grimp) checks it, and these tests add what it
does not: no import cycle at all, imports made inside functions counted; no such import of an rlexplain module outside a
short list, each with its reason; every module placed in a layer; and the two entry points a user waits on (`import
rlexplain.scoreboard`, `rlexplain --help`) free of torch."""
import ast
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "rlexplain"

# Imports of an rlexplain module made inside a function, outside `rlexplain.cli`, that remain, each with its reason.
# The test fails on any other one, and on an entry of this list that no longer occurs (so that the list only shrinks).
# The command line may import a command's module inside the command: `rlexplain --help` then imports no study.
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("rlexplain.demo", "rlexplain.agent_zoo"): "zoo_state: the scheduler's parent process loads the zoo (and SB3) only when a section finishes",
}


def _module(p: Path) -> str:
    return "rlexplain." + p.relative_to(LIB).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__") \
        if p.name != "__init__.py" or p.parent != LIB else "rlexplain"


def local_imports(lib: Path, package: str = "rlexplain") -> dict[tuple[str, str], list[int]]:
    """`{(importer, imported module): [line numbers]}` of every import of a module of `package` made inside a function of
    the package in folder `lib` (relative imports resolved; `from package import name` counts as importing
    `package.name` when that is a module)."""
    out: dict[tuple[str, str], list[int]] = {}
    for p in sorted(lib.rglob("*.py")):
        if p.name == "_modidx.py": continue
        rel = p.relative_to(lib).with_suffix("").as_posix().replace("/", ".")
        me = package if rel == "__init__" else f"{package}.{rel.removesuffix('.__init__')}"
        pkg = me if p.name == "__init__.py" else me.rsplit(".", 1)[0]
        for fn in [n for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for n in ast.walk(fn):
                if isinstance(n, ast.ImportFrom):
                    base = pkg.rsplit(".", n.level - 1)[0] if n.level > 1 else pkg
                    mod = (base + (f".{n.module}" if n.module else "")) if n.level else (n.module or "")
                    names = [mod] + [f"{mod}.{a.name}" for a in n.names]
                    names = [x for x in names if (lib.parent / (x.replace(".", "/") + ".py")).exists()
                             or (lib.parent / x.replace(".", "/") / "__init__.py").exists()][-1:] or [mod]
                elif isinstance(n, ast.Import): names = [a.name for a in n.names]
                else: continue
                for t in names:
                    if (t == package or t.startswith(package + ".")) and t != me:
                        out.setdefault((me, t), []).append(n.lineno)
    return out


def cycles(graph, package: str = "rlexplain") -> list[list[str]]:
    """The import cycles of `graph` (a grimp graph): its strongly connected components of more than one module (Tarjan),
    each sorted, imports inside functions included."""
    mods = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    def visit(v):
        index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for m in mods:
        if m not in index: visit(m)
    return out


def _graph():
    return grimp.build_graph("rlexplain", exclude_type_checking_imports=True)


def test_no_import_cycle_among_rlexplain_modules():
    found = cycles(_graph())
    assert found == [], f"import cycles (imports inside functions count): {found}"


def test_the_cycle_check_finds_a_cycle_closed_inside_a_function(tmp_path, monkeypatch):
    "The check can fail: a package whose module a imports b at the top and b imports a inside a function has one cycle."
    pkg = tmp_path / "cyc"; pkg.mkdir(); (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc import a\n    return a\n")
    (pkg / "c.py").write_text("from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    g = grimp.build_graph("cyc", cache_dir=None)
    assert cycles(g, "cyc") == [["cyc.a", "cyc.b"]]
    assert local_imports(pkg, "cyc") == {("cyc.b", "cyc.a"): [2]}


def test_the_layer_contract_holds():
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists(): pytest.skip("import-linter is not installed (dev extras)")
    r = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "1 kept, 0 broken" in r.stdout


def _layers() -> list[str]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (c,) = [c for c in cfg if c["id"] == "layers"]
    return c["layers"]


def test_every_module_is_in_a_layer():
    named = {m.strip() for layer in _layers() for m in layer.replace("|", ":").split(":")}
    top = {p.stem for p in LIB.glob("*.py") if p.stem not in ("__init__", "_modidx")} | {p.name for p in LIB.iterdir() if (p / "__init__.py").exists()}
    missing = sorted(f"rlexplain.{m}" for m in top if f"rlexplain.{m}" not in named)
    assert missing == [], f"modules in no layer of pyproject.toml's contract: {missing}"


def test_imports_inside_functions_are_only_the_listed_ones():
    found = {k: v for k, v in local_imports(LIB).items() if k[0] != "rlexplain.cli"}
    new = {k: v for k, v in found.items() if k not in LOCAL_IMPORTS_ALLOWED}
    assert new == {}, ("imports of rlexplain modules inside functions (import at the top of the module; only heavy third-party "
                       f"libraries are imported where they are used): {new}")
    gone = [k for k in LOCAL_IMPORTS_ALLOWED if k not in found]
    assert gone == [], f"entries of LOCAL_IMPORTS_ALLOWED that no longer occur (delete them): {gone}"


_NO_TORCH = textwrap.dedent("""
    import sys, contextlib, io
    {code}
    heavy = sorted(m for m in ("torch", "stable_baselines3", "nbformat", "jsonschema") if m in sys.modules)
    print("HEAVY", heavy)
""")


@pytest.mark.parametrize("code", ["import rlexplain.scoreboard",
                                  "import rlexplain.cli\nwith contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()): rlexplain.cli.main(['--help'])"],
                         ids=["import rlexplain.scoreboard", "rlexplain --help"])
def test_the_board_and_the_help_load_no_torch(code):
    r = subprocess.run([sys.executable, "-c", _NO_TORCH.format(code=code)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "HEAVY []" in r.stdout, f"{code!r} loaded {r.stdout.strip()}"


def test_the_top_level_api_is_small_lazy_and_complete():
    "`rlexplain.__all__` is about 15 names; `import rlexplain` loads no torch; every name resolves; another is an AttributeError."
    code = ("import sys, rlexplain\nassert 'torch' not in sys.modules, 'import rlexplain loaded torch'\n"
            "assert 10 <= len(rlexplain.__all__) <= 16, rlexplain.__all__\n"
            "assert set(rlexplain.__all__) <= set(dir(rlexplain))\n"
            "vals = {n: getattr(rlexplain, n) for n in rlexplain.__all__}\n"
            "from rlexplain.attribution import explain; from rlexplain.core import Policy\n"
            "assert vals['explain'] is explain and vals['Policy'] is Policy\n"
            "try: rlexplain.no_such_name\nexcept AttributeError as e: assert 'no_such_name' in str(e)\nelse: raise SystemExit('no AttributeError')\n"
            "print('OK')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]
