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

    @property
    def name(self):
        return Path(self.file).stem

    @property
    def keys_file(self):
        return KEYS / f"{self.name}.json"


TABLES = [   # the commands as the pages give them (fresh_clone_replays.txt replayed these at 2699488)
    Table("results/citations_json_30.json", "verify_citations.py --limit 30 --styles json"),
    Table("results/benchmark.json", "benchmark.py"),
    Table("results/benchmark_catalogue.json", "benchmark.py --patterns single,chain,smart --limit 16 "
          "--corpus catalogue/docs --golden catalogue/golden.json"),
    Table("results/router_eval.json", "router_eval.py --limit 50 --router-limit 60"),
    Table("results/flare_eval.json", "flare.py --eval 20"),
    Table("results/self_rag_eval.json", "self_rag.py --eval 20"),
    Table("results/crag_eval.json", "crag.py --eval 20"),
    Table("results/disputes_golden.json", "-m experiments.disputes_eval --golden 60"),
    Table("results/injection.json", "-m experiments.injection"),
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


def stale_keys(table, folder=SNAPSHOT, root=None):
    """[(cache name, key, why)] of the cache entries the table was made from that today's code would not read:
    missing from the snapshot, or keyed by older code of their module (lab.cache.code_key)."""
    from lab.cache import Cache, code_key
    out = []
    for name, keys in sorted(keys_of(table).items()):
        meta, present = _meta(str(folder), name)
        for k in keys:
            if k not in present:
                out.append((name, k, "not in the snapshot"))
            elif k in meta and k != Cache.key(code_key(meta[k][0], root), meta[k][1]):
                out.append((name, k, f"made by older code of {meta[k][0]}"))
    return out
