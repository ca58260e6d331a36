"""What the lab keeps on disk: one small cache shared by every script (judge verdicts, benchmark rows, graph
extractions), the rule that ties cached results to the code (code_key), and the results files (write_json).

    from cache import Cache
    verdicts = Cache("judge")
    key = Cache.key("supports", model, claim, source)   # a content hash of whatever decides the value
    if key not in verdicts:
        verdicts.put(key, {"verdict": True})
    verdicts.get(key)   # -> {'verdict': True}

A cache is an append-only JSON-lines file under `.rag/cache/` (or `$RAG_INDEX_DIR/cache/`), one
`{"k": key, "v": value}` per line, so a run killed mid-write loses at most the line it was writing.
On load, lines that do not parse (a torn write, a corrupted file) are dropped with one warning and the
file is rewritten clean. Writes take a file lock, so two processes can share a cache.
Not handled: eviction (delete the file to start over) and values that are not JSON.
"""
import ast
import functools
import hashlib
import json
import os
import sys
from pathlib import Path

from filelock import FileLock

from vector_index import index_dir

HERE = Path(__file__).parent


class Cache:
    def __init__(self, name, folder=None):
        self.path = Path(folder or index_dir() / "cache") / f"{name}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = FileLock(str(self.path) + ".lock")
        self.data = {}
        self.hits = self.misses = 0
        self._load()

    @staticmethod
    def key(*parts):
        """Content hash of any JSON-able parts: key('a', 1) -> '9c6c...' (64 hex)."""
        return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _load(self):
        if not self.path.exists():
            return
        bad = 0
        with self.lock:
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    item = json.loads(line)
                    self.data[item["k"]] = item["v"]
                except (ValueError, KeyError, TypeError):
                    bad += 1
            if bad:
                print(f"warning: cache {self.path}: {bad} corrupted line(s) dropped, file rewritten "
                      f"({len(self.data)} entries kept)", file=sys.stderr)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text("".join(self._line(k, v) for k, v in self.data.items()), encoding="utf-8")
                os.replace(tmp, self.path)

    @staticmethod
    def _line(k, v):
        return json.dumps({"k": k, "v": v}, ensure_ascii=False) + "\n"

    def __contains__(self, key):
        return key in self.data

    def __len__(self):
        return len(self.data)

    def get(self, key, default=None):
        if key in self.data:
            self.hits += 1
            return self.data[key]
        self.misses += 1
        return default

    def put_many(self, items):
        """put() for many (key, value) pairs under one lock and one write."""
        items = list(items)
        if items:
            self.data.update(items)
            with self.lock, open(self.path, "a", encoding="utf-8") as f:
                f.write("".join(self._line(k, v) for k, v in items))

    def put(self, key, value):
        self.data[key] = value
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(self._line(key, value))
        return value


def portable(value):
    """The payload with machine-specific paths made portable, for results committed from any machine: a path
    inside the repository becomes relative to it, a GGUF file its file name. Other values are unchanged."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        if value.endswith(".gguf"):
            return Path(value).name
        root = str(HERE.resolve())
        if value == root or value.startswith(root + "/"):
            return str(Path(value).relative_to(root))
    return value


def write_json(path, payload):
    """Write a results file (portable paths, see portable()) and say where."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(portable(payload), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def _imports(tree, known):
    """The project modules an AST imports, anywhere in the file (a lazy import still runs that code)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out & known


def _code(tree):
    """The AST without docstrings, as text: what runs, not how it is written or explained."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


@functools.lru_cache(maxsize=None)
def code_key(module, root=HERE):
    """The one rule by which cached results follow the code: a hash of `module`'s source and of every project
    module it imports, directly or through others, each read as its syntax tree without docstrings, so a
    comment, a docstring or a re-wrapped line keeps the key and any change to code or prompt text changes it.
    code_key("flare") -> '3f9a...' (16 hex). Modules are the .py files in `root` (the repository)."""
    root = Path(root)
    known = {p.stem for p in root.glob("*.py")}
    if module not in known:
        raise ValueError(f"{module!r} is not a module of {root}")
    seen, todo, parts = set(), [module], []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse((root / f"{name}.py").read_text(encoding="utf-8"))
        todo += sorted(_imports(tree, known) - seen)
        parts.append((name, _code(tree)))
    return Cache.key(sorted(parts))[:16]
