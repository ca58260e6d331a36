"""The committed tables: each results file that a lab page, the README or the design record quotes, the command that
makes it, and the cache entries it was made from (results/keys/), so that a replay and a test can tell whether the
figures still come from today's code.

    from grading.tables import TABLES, keys_of, stale_keys
    stale_keys(TABLES[0])   # -> [] when every cache entry the table was made from is current for today's code

A table that replays is re-made from the committed cache (results/cache/) with every model call refused
(grading/replay.py --all); the keys its run read are kept in results/keys/NAME.json by `replay --all --record`. A
table that cannot be re-made in reason (days of model time, or figures of time that no cache holds) names the commit
that made it instead (`made_at`), and its page says so.
Not handled: tables written without --json.
"""
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).parent.parent   # the repository (this file is in grading/)
KEYS = ROOT / "results" / "keys"       # per table: the cache keys its replay read
SNAPSHOT = ROOT / "results" / "cache"  # the committed cache


@dataclass(frozen=True)
class Table:
    file: str              # the results file, from the repository's top: results/benchmark.json
    command: str           # what makes it, without --json: "benchmark.py --patterns single,smart" or "-m pkg.mod ..."
    made_at: str = ""      # a commit: the table is not replayable from today's code, and its page names the commit
    setup: str = ""        # run first, as the page says (a graph the command searches, built from the cache)

    @property
    def name(self):
        return Path(self.file).stem

    @property
    def keys_file(self):
        return KEYS / f"{self.name}.json"

    @property
    def module(self):
        """The module its command runs: 'retrieve' for "retrieve.py --eval", 'experiments.chain_eval' for "-m ..."."""
        first, *rest = self.command.split()
        return rest[0] if first == "-m" else first.removesuffix(".py").replace("/", ".")


GRAPH_300 = "graphrag.py --build --docs 300 --split multi"   # the LLM graph of the benchmark and week 8 (cached)
TABLES = [   # the commands as the pages give them (fresh_clone_replays.txt replayed these at 2699488)
    Table("results/retrieval.json", "retrieve.py --eval"),
    Table("results/retrieval_chain.json", "-m experiments.chain_eval"),
    Table("results/retrieval_chain_test.json", "-m experiments.chain_eval --split test"),
    Table("results/citations_json_30.json", "verify_citations.py --limit 30 --styles json"),
    Table("results/benchmark.json", "benchmark.py", setup=GRAPH_300),
    Table("results/benchmark_catalogue.json", "benchmark.py --patterns single,chain,smart --limit 16 "
          "--corpus catalogue/docs --golden catalogue/golden.json"),
    Table("results/router_eval.json", "router_eval.py --limit 50 --router-limit 60"),
    Table("results/flare_eval.json", "flare.py --eval 20"),
    Table("results/self_rag_eval.json", "self_rag.py --eval 20"),
    Table("results/crag_eval.json", "crag.py --eval 20"),
    Table("results/disputes_golden.json", "-m experiments.disputes_eval --golden 60"),
    Table("results/injection.json", "-m experiments.injection"),
    Table("results/graphrag_eval.json", "graphrag.py --eval 20 --split multi", setup=GRAPH_300),
    Table("results/graphrag_eval_titles.json", "graphrag.py --eval 20 --split multi --extractor titles",
          setup="graphrag.py --build --extractor titles"),
]


def keys_of(table):
    """{cache name: [keys]} that the table's last recorded replay read (results/keys/NAME.json), {} if none."""
    path = table.keys_file
    return json.loads(path.read_text(encoding="utf-8"))["keys"] if path.exists() else {}


@lru_cache(maxsize=None)
def _meta(folder, name):
    """{key: (module, inputs hash)} of the keyed() entries of one cache file, and the set of all its keys."""
    from lab.cache import Cache
    store = Cache(name, folder)
    return dict(store.meta), set(store.data)


def made_by(table):
    """{module: code key} of the command's own module when its replay was recorded, {} if none: what a table that
    reads no cache (retrieval, no model) was made by."""
    path = table.keys_file
    return json.loads(path.read_text(encoding="utf-8")).get("code", {}) if path.exists() else {}


def stale_keys(table, folder=SNAPSHOT, root=None):
    """[(cache name, key, why)] of the cache entries the table was made from that today's code would not read:
    missing from the snapshot, or keyed by older code of their module (lab.cache.code_key); and ("code", module,
    why) when the command's own module has changed since its replay was recorded."""
    from lab.cache import Cache, code_key
    out = [("code", m, f"made by older code of {m}") for m, k in made_by(table).items() if code_key(m, root) != k]
    for name, keys in sorted(keys_of(table).items()):
        meta, present = _meta(str(folder), name)
        for k in keys:
            if k not in present:
                out.append((name, k, "not in the snapshot"))
            elif k in meta and k != Cache.key(code_key(meta[k][0], root), meta[k][1]):
                out.append((name, k, f"made by older code of {meta[k][0]}"))
    return out


def write_snapshot(sources, folder=SNAPSHOT):
    """Rewrite the committed cache `folder` to hold exactly the entries the recorded tables read (results/keys/),
    each taken from the first of `sources` (cache folders) that holds it, with its module and inputs hash.
    -> ({cache name: entries written}, [(cache name, key) found in no source]); with any missing, nothing is written."""
    from lab.cache import Cache
    wanted = {}
    for t in TABLES:
        for name, keys in keys_of(t).items():
            wanted.setdefault(name, set()).update(keys)
    stores = [{n: Cache(n, src) for n in wanted} for src in sources]
    lines, missing = {}, []
    for name, keys in sorted(wanted.items()):
        for k in sorted(keys):
            store = next((s[name] for s in stores if k in s[name].data), None)
            if store is None:
                missing.append((name, k))
            else:
                lines.setdefault(name, []).append(store.line(k))
    if missing:   # nothing written: a snapshot that lacks an entry a table read would not replay it
        return {}, missing
    written = {}
    for name, kept in lines.items():
        path = Path(folder) / f"{name}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        tmp.replace(path)
        written[name] = len(kept)
    for stale in set(p.stem for p in Path(folder).glob("*.jsonl")) - set(wanted):
        (Path(folder) / f"{stale}.jsonl").unlink()   # a cache no table reads
    _meta.cache_clear()
    return written, missing

