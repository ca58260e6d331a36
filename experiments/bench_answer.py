"""Week 3 (speed): seconds per verified answer, this code against another version of it, in one alternating run.

    python -m experiments.bench_answer --ref 2b1f0c3 --limit 20   # a git ref (e.g. before a change) against this tree
    python -m experiments.bench_answer --limit 20                 # this tree alone
    RAG_ENGINE_BUILD=wheel python -m experiments.bench_answer --ref 2b1f0c3 --limit 20

What is timed, per golden question (verify_citations.py's items: retrieve.eval_items, half single, half multi): the
verified answer as the page and verify_citations make it: generate() (retrieval and the cited answer), then
citations.verify() (the sentence judge, with the dispute check when a cited passage could lose) and
answer_check.check() (the answer-level check). Each version runs in its own long-lived worker process (its tree's
code, the same llama.cpp build, RAG_THREADS and GGUF) with empty caches (its own RAG_INDEX_DIR holding a copy of the
vector index only), so nothing is read back from a cache; the workers take the questions in turn, A B B A ...,
so both meet the machine's drift alike. A worker answers one warm-up question first (not counted), as a running
page or benchmark has its system prompts in llama.cpp's prompt cache.
Output: a row per question (seconds of answer, checks and total, calls, prompt tokens, the tokens llama.cpp read anew
rather than from its prompt cache, the answer, sentence verdicts and status), then per version the p50 / p90 / mean
total seconds, and the ratio of the p50s, the median of per-question ratios and how many questions got the same
answer, verdicts and status;
--json writes it (results/bench_answer*.json). ~1 minute per question and version on the embedded engine.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments import probe_cli
from lab import cache
from retrieve import CORPUS_DIR, GOLDEN, eval_items
from vector_index import CorpusError

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
WARMUP = "Where was the designer of the Eiffel Tower born?"
WORKER = r"""
import json, os, sys, time
out, sys.stdout = sys.stdout, sys.stderr   # whatever the code prints stays off the reply line
import llm
from layers import answer_check
from assembly import FULL
from generate import generate
trace = os.environ["RAG_TRACE"]            # llama.cpp's tokens read anew and from its prompt cache, per call
for line in sys.stdin:
    q = json.loads(line)
    llm.reset_stats()
    open(trace, "w").close()
    t0 = time.perf_counter()
    r = generate(q)
    t1 = time.perf_counter()
    v = FULL.verify(r)
    c = answer_check.check(r, v)
    t2 = time.perf_counter()
    s = llm.stats()
    with open(trace) as f:
        calls = [json.loads(x) for x in f]
    print(json.dumps({"answer_s": t1 - t0, "checks_s": t2 - t1, "seconds": t2 - t0, "calls": s["calls"],
                      "prompt_tokens": s["prompt_tokens"], "completion_tokens": s["completion_tokens"],
                      "prompt_new": sum(x["prompt_new"] or 0 for x in calls),
                      "answer": r["answer"], "verdicts": [x["supported"] for x in v], "status": c["status"]}),
          file=out, flush=True)
"""


class Worker:
    """One version's code answering questions in its own process, with empty caches."""

    def __init__(self, name, tree, store):
        self.name, self.store = name, store
        shutil.copytree(cache.index_dir() / "chroma", store / "chroma")
        for lock in cache.index_dir().glob("*.lock"):
            shutil.copy(lock, store / lock.name)
        env = {**os.environ, "RAG_INDEX_DIR": str(store), "PYTHONPATH": str(tree), "TQDM_DISABLE": "1",
               "RAG_TRACE": str(store / "trace.jsonl")}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], cwd=tree, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(self, question):
        self.proc.stdin.write(json.dumps(question) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench_answer: the {self.name} worker died (run it alone to see why)")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def tree_of(ref, where):
    """A checkout of `ref` (git worktree, detached) at where/<ref>."""
    path = where / "tree"
    run = subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], cwd=ROOT, capture_output=True,
                         text=True)
    if run.returncode:
        raise SystemExit(f"bench_answer: git worktree add {ref} failed: {run.stderr.strip()}")
    (path / ".venv").symlink_to(ROOT / ".venv")   # the same llama.cpp builds (lab/native.py looks beside the code)
    return path


def summary(rows):
    secs = sorted(r["seconds"] for r in rows)
    q = lambda p: secs[min(len(secs) - 1, int(p * len(secs)))]
    return {"n": len(rows), "p50": statistics.median(secs), "p90": q(0.9), "mean": statistics.mean(secs),
            "answer_p50": statistics.median(r["answer_s"] for r in rows),
            "checks_p50": statistics.median(r["checks_s"] for r in rows),
            "calls_mean": statistics.mean(r["calls"] for r in rows),
            "prompt_tokens_mean": statistics.mean(r["prompt_tokens"] for r in rows),
            "prompt_new_mean": statistics.mean(r.get("prompt_new", 0) for r in rows),
            "completion_tokens_mean": statistics.mean(r["completion_tokens"] for r in rows)}


def same_results(a, b):
    """How many questions two versions' rows (in the same order) gave the same answer, sentence verdicts and status."""
    return sum(all(x.get(f) == y.get(f) for f in ("answer", "verdicts", "status")) for x, y in zip(a, b))


def main():
    args = probe_cli.parse("bench_answer", "Seconds per verified answer (answer + checks, empty caches): the working "
                           "tree, against another git ref when given, alternating question by question.", limit=20,
                           golden=GOLDEN, extra=[("--ref", {"help": "a git ref to compare with (e.g. the commit "
                                                                     "before a change)"})])
    try:
        items = eval_items(args.golden, args.limit, CORPUS_DIR)
    except (CorpusError, ValueError) as e:
        sys.exit(f"bench_answer: {e}")
    import llm
    info = llm.engine_info(portable=True)
    from tqdm import tqdm
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        versions = {"this": ROOT}
        if args.ref:
            versions = {args.ref: tree_of(args.ref, tmp), "this": ROOT}
        workers = {}
        try:
            for i, (name, tree) in enumerate(versions.items()):
                (tmp / f"store{i}").mkdir()
                workers[name] = Worker(name, tree, tmp / f"store{i}")
            for w in workers.values():
                w.ask(WARMUP)
            rows = {name: [] for name in workers}
            names = list(workers)
            for n, item in enumerate(tqdm(items, desc="bench_answer", unit="q", file=sys.stderr)):
                for name in (names if n % 2 == 0 else names[::-1]):   # A B, then B A
                    rows[name].append({"id": item["id"], "type": item["type"], **workers[name].ask(item["question"])})
        finally:
            for w in workers.values():
                w.close()
            if args.ref:
                subprocess.run(["git", "worktree", "remove", "--force", str(versions[args.ref])], cwd=ROOT,
                               capture_output=True)
    figures = {name: summary(rs) for name, rs in rows.items()}
    out = {"engine": info, "threads": os.environ.get("RAG_THREADS", "all cores"), "limit": args.limit,
           "versions": {name: str(args.ref if name != "this" else "working tree") for name in rows},
           "figures": figures, "rows": rows}
    print(f"\nengine {info['engine']} {info['model']} build {info.get('build')}  n={args.limit}")
    print(f"{'version':14} {'p50 s':>7} {'p90 s':>7} {'mean s':>7} {'answer':>7} {'checks':>7} {'calls':>6} "
          f"{'prompt tok':>10} {'read anew':>9}")
    for name, f in figures.items():
        print(f"{name[:14]:14} {f['p50']:7.1f} {f['p90']:7.1f} {f['mean']:7.1f} {f['answer_p50']:7.1f} "
              f"{f['checks_p50']:7.1f} {f['calls_mean']:6.1f} {f['prompt_tokens_mean']:10.0f} "
              f"{f['prompt_new_mean']:9.0f}")
    if args.ref:
        a, b = rows[args.ref], rows["this"]
        out["ratio_p50"] = figures["this"]["p50"] / figures[args.ref]["p50"]
        out["ratio_median_per_question"] = statistics.median(y["seconds"] / x["seconds"] for x, y in zip(a, b))
        out["same_results"] = same_results(a, b)
        print(f"this / {args.ref}: p50 ratio {out['ratio_p50']:.2f}, median per-question ratio "
              f"{out['ratio_median_per_question']:.2f}; the same answer, verdicts and status on "
              f"{out['same_results']} of {len(a)} questions")
    if args.json:
        cache.write_json(args.json, out)


if __name__ == "__main__":
    main()
