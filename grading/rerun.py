"""Re-run sampled rows of a hand-in with the reference code (grade.py's re-run item): first the rows that differ from
the course's reference run (reference.py), then the rows drawn, seeded, across
the hand-in's files within a budget of their recorded cost; each re-made in scratch caches, so every model call is
made again, and compared with the file's row ("reproduced" / "differs", never an accusation).

    python -m grading.grade SUBMISSIONS --rerun 3 [--budget 120] [--seed 0]   # grade.py's module; no CLI

What is re-run: a retrieve.py report whole (retrieve.evaluate on its questions, to 1e-9, but for the rubric's
retrieval_tolerance share of questions: an index built here is an approximate one); rows of benchmark.py, the
pattern scripts and verify_citations.py by the registry pattern or harness.run_args() that makes them, with
fresh=True; an older verify_citations file without rows, some of its questions, against bounds on its totals.
"""
import itertools
import json
import math
import random
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import assembly
import harness
from generate import DEFAULT_STYLE
from grading.checks import NUM, close, differences, row_changes, summary_bounds
from lab.cache import moved, portable
from retrieve import DEFAULT_CHUNKER
from vector_index import CorpusError
from verify_citations import ROW_TIMING


# ---- re-running with the reference code ----

SCRATCH = ("answers", "rows", "judge", "injection_screen")
"""The caches a re-run keeps in its scratch folder (cache.moved): it makes every model call again instead of reading
a value back (the student's or anyone's). Retrieval's own stores (the index, chain's links) hold no model output
and stay."""


def answerer(unit, course):
    """(cache name, settings, answer function) that re-makes a unit's row, or why it cannot: "generate" and
    verify_citations' styles are harness.run_args() (in the order a newer verify_citations file names); other rows
    name a registry pattern (benchmark.py by name, a pattern script's --eval by cache name), run with its defaults."""
    import patterns
    method, settings = unit["method"], unit["data"].get("settings") or {}
    if unit["family"] == "summary" or method == "generate":
        style, order = (method, settings.get("order", "best_first")) if unit["family"] == "summary" \
            else (DEFAULT_STYLE, "best_first")
        name, fn, key = harness.run_args(style, order, course.corpus)
        return name, key, fn
    for p in patterns.PATTERNS.values():
        if method in (p.name, p.cache):
            try:
                key, fn = assembly.answerer(p, course.corpus, settings.get("chunker", DEFAULT_CHUNKER),
                                            extractor=settings.get("graph_extractor") or settings.get("extractor"))
            except CorpusError as e:
                return f"{method} cannot run here: {e}"
            theirs, ours = ({k: v for k, v in d.items() if k != "corpus"} for d in (settings, portable(key)))
            if "run" not in unit["data"] and theirs != ours:   # benchmark.py's settings are the run's, not a pattern's
                return f"{method} ran with settings {theirs}, not the script's defaults {ours}"
            return p.cache, key, fn
    return f"no pattern of the registry makes rows named {method!r}"


class Reruns:
    """Re-runs with the reference code, each once per grading run: identical hand-ins share the result."""
    def __init__(self, course, folder):
        self.course, self.folder, self.done, self.shared = course, Path(folder), {}, 0
        self._lock, self._gates = threading.Lock(), {}   # one re-run per key, also when re-runs run in parallel

    def _once(self, key, compute):
        """-> (result or None, why it failed or None, a note: the seconds it took, or that it is shared)"""
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            if key in self.done:
                with self._lock:
                    self.shared += 1
                return (*self.done[key][:2], "re-run once this grading run, shared with an earlier hand-in or file")
            start = time.perf_counter()
            try:
                result, problem = compute(), None
            except Exception as e:   # the reference code failing on a row is a line in the report, never the end
                result, problem = None, f"the re-run failed: {type(e).__name__}: {e}"
            self.done[key] = result, problem, f"re-run in {time.perf_counter() - start:.0f} s"
            return self.done[key]

    @staticmethod
    def key(unit, spec):
        """What a re-made row is shared by: the answer's name and settings (less the corpus) and the question."""
        name, settings, _ = spec
        return json.dumps([name, {k: v for k, v in settings.items() if k != "corpus"}, unit["id"]], default=str)

    def row(self, unit, spec):
        name, settings, fn = spec
        key = self.key(unit, spec)

        def compute():
            with moved(SCRATCH, self.folder):
                return harness.evaluate(name, fn, [self.course.by_id[unit["id"]]], settings, fresh=True,
                                        progress=False)[0]
        return self._once(key, compute)

    def retrieval(self, unit):
        """retrieve.evaluate() on the report's questions, methods, ks, chunker and depth (no cache involved)."""
        import retrieve
        from vector_index import build_index
        d = unit["data"]
        methods, chunker, depth = tuple(d["recall"]), d.get("chunker", DEFAULT_CHUNKER), d.get("depth", 12)
        ks = [int(k) for k in next(iter(d["recall"].values()))]

        def compute():
            build_index(self.course.corpus, chunker, progress=False)
            return retrieve.evaluate(unit["items"], ks, self.course.corpus, chunker, depth, methods)
        return self._once(json.dumps(["retrieval", methods, ks, chunker, depth, [g["id"] for g in unit["items"]]]),
                          compute)


def cost(unit):
    """A row's recorded cost, from its own file: the seconds its answer and its judging took (None: not recorded)."""
    r = unit.get("row") or {}
    return r["seconds"] + r["judge_seconds"] if all(isinstance(r.get(k), NUM) for k in ROW_TIMING) else None


def dealt(units, seed):
    """The order the draw takes rows in: each file's rows shuffled (seeded), the files dealt in turn."""
    rng, files = random.Random(seed), {}
    for u in units:
        files.setdefault(u["file"], []).append(u)
    queues = [rng.sample(us, len(us)) for _, us in sorted(files.items())]
    rng.shuffle(queues)
    return [u for tier in itertools.zip_longest(*queues) for u in tier if u]


def pick(runnable, n, seed, budget):
    """N rows, seeded -> (rows, their recorded cost, the rows that claim more than the whole budget). The draw deals
    each file's rows, shuffled, in turn, so re-runs spread over files; a row is taken while its recorded cost fits
    what is left of the budget (0: no budget); an untimed row counts the median of the timed ones. When nothing
    fits, the cheapest drawn is re-run anyway. Rows dearer than the whole budget are named in the output: a row
    cannot keep itself out of the draw unseen by claiming to be dear."""
    timed = [c for c in map(cost, runnable) if c is not None]
    price = {id(u): c if (c := cost(u)) is not None else statistics.median(timed or [0.0]) for u in runnable}
    picked, spent, drawn = [], 0.0, []
    for u in dealt(runnable, seed):
        if len(picked) == n:
            break
        drawn.append((price[id(u)], len(drawn), u))
        if not budget or spent + price[id(u)] <= budget:
            picked.append(u)
            spent += price[id(u)]
    if not picked and drawn and n > 0:
        c, _, u = min(drawn, key=lambda d: d[:2])
        picked, spent = [u], c
    taken = {id(u) for u in picked}
    return picked, spent, sorted((u for u in runnable if budget and price[id(u)] > budget and id(u) not in taken),
                                 key=lambda u: -price[id(u)])


def remake(u, reruns, spec):
    """Re-make one row -> (reproduced?, its output line, or the row made for an older file's bounds)."""
    row, problem, note = reruns.row(u, spec)
    where = f"{u['file']} {u['method']} {u['id']} ({note})"
    if not u.get("row"):   # an older verify_citations file: no rows to compare, its totals are bounded
        return None, f"re-run: {where}: " + (problem or f"answer {row['answer']!r}"), row
    changes = [problem] if problem else row_changes(u["row"], row)
    return not changes, f"{'differs' if changes else 'reproduced'}: {where}" + (": " + "; ".join(changes) if changes
                                                                              else ""), row


def first(differing, n, seed, budget, reruns, specs, price):
    """The rows that differ from the course's reference (reference.py), re-run before the draw and besides it: dealt
    like it, while fewer than n and their cost (the reference row's recorded seconds, else the file's) fits a budget
    of their own; once one of a file's does not reproduce, its file's points are lost and its other differing rows
    are not re-run. A row already re-made this grading run (the same question and answer settings in another file
    or hand-in: the answer to musique-sub-71269 is in five committed files) is shared: it costs nothing and does not
    count. The draw that follows is the one an identical hand-in gets (its re-runs shared).
    -> (rows re-run, cost, {id(row): (reproduced?, line)}, rows not re-run)"""
    done, spent, made, lost, counted = [], 0.0, {}, set(), 0
    for u in dealt(differing, seed):
        shared = Reruns.key(u, specs[u["file"], u["method"]]) in reruns.done
        if u["file"] in lost or not shared and (counted == n or budget and spent + price(u) > budget):
            continue
        ok, line, _ = remake(u, reruns, specs[u["file"], u["method"]])
        done.append(u)
        counted, spent = counted + (not shared), spent + (0 if shared else price(u))
        made[id(u)] = ok, line + " [differs from the reference: re-run first]"
        lost |= set() if ok else {u["file"]}
    return done, spent, made, [u for u in differing if id(u) not in made]


def rerun_test(units, reruns, n, seed, spec, model_ok, budget=0, jobs=1):
    """The re-run item of one hand-in -> (score, max score, output lines, {"outcomes": {(file, method, id): True
    when the re-run reproduced the row}, "drawn": {(file, method, id) of the rows the random draw re-ran},
    "retrieval", "model": the outcomes scored() reads, "keys": each model outcome's (file, method, id)}). Units
    whose "class" is "differs" (reference.classify) are re-run first (first()), then the draw (pick())."""
    lines, retrieval, model, keys, outcomes = [], [], [], [], {}
    for u in (u for u in units if u["family"] == "retrieval"):
        report, problem, note = reruns.retrieval(u)
        got, mine = ({r["id"]: r["recall"] for r in report["rows"]} if report else {}), u["data"].get("rows", ())
        moves = {r["id"]: [f"{m}@{k} {x} -> {got[r['id']][m][k]}" for m, v in r["recall"].items()
                           for k, x in v.items() if not close(x, got[r["id"]][m][k])] for r in mine if report}
        moves = {i: changes for i, changes in moves.items() if changes}   # question -> what moved
        outcomes.update({(u["file"], "recall", r["id"]): not problem and r["id"] not in moves for r in mine if report})
        diffs = [problem] if problem else [f"{i}: {c}" for i, cs in moves.items() for c in cs] + differences(
            {"recall": u["data"]["recall"], "n": u["data"]["n"]}, {"recall": report["recall"], "n": report["n"]}, "")
        share = len(moves) / max(1, len(mine))
        within = bool(mine) and not problem and share <= spec.get("retrieval_tolerance", 0)   # an index built here
        retrieval.append(not diffs or within)
        lines.append(f"{'reproduced' if not diffs or within else 'differs'}: {u['file']}, retrieve.py --eval whole "
                     f"({note})" + (f"; {share:.1%} of its questions moved, within the "
                                    f"{spec.get('retrieval_tolerance', 0):.0%} a dense index built elsewhere may move"
                                    if diffs and within else "")
                     + (": " + "; ".join(diffs[:3]) + (f" (and {len(diffs) - 3} more)" if len(diffs) > 3 else "")
                        if diffs else ""))
    specs = {}
    for u in (u for u in units if u["family"] != "retrieval"):
        if (u["file"], u["method"]) not in specs:
            specs[u["file"], u["method"]] = answerer(u, reruns.course)
    skipped = sorted({s for s in specs.values() if isinstance(s, str)})
    runnable = sorted((u for u in units if u["family"] != "retrieval" and u["id"] in reruns.course.by_id
                       and not isinstance(specs[u["file"], u["method"]], str)),
                      key=lambda u: (u["file"], u["method"], u["id"]))
    if runnable and not model_ok:
        skipped, runnable = skipped + ["model rows: the grading machine's model is not the course's (--model)"], []
    groups = {}
    timed = [c for c in map(cost, runnable) if c is not None]
    price = lambda u: next((c for c in (cost({"row": u.get("ref")}), cost(u)) if c is not None),
                           statistics.median(timed or [0.0]))
    differing = [u for u in runnable if u.get("class") == "differs"]
    ahead, first_cost, made, left = first(differing, n, seed, budget, reruns, specs, price)
    picked, spent, dear = pick(runnable, n, seed, budget)
    picked = [u for u in picked if id(u) not in made]   # drawn, and already re-run first
    if differing:
        lines.append(f"first: {len(ahead)} of {len(differing)} row(s) that differ from the course's reference run "
                     f"re-run before the draw, recorded cost {first_cost:.0f} s" + (
                         f"; {len(left)} not (--rerun {n}, the {budget:g} s budget, or their file already lost its "
                         f"points)" if left else ""))
    if budget and runnable:
        lines.append(f"drawn: {len(picked)} of {len(runnable)} runnable rows, recorded cost {spent:.0f} s of the "
                     f"{budget:g} s budget" + (" (none fitted: the cheapest re-run anyway)" if spent > budget else ""))
    if dear:
        skipped.append(f"{len(dear)} row(s) that recorded more than the whole {budget:g} s budget, the dearest "
                       f"{dear[0]['file']} {dear[0]['method']} {dear[0]['id']} ({cost(dear[0]) or 0:.0f} s)")
    todo = [u for u in picked if id(u) not in made]   # the drawn rows are independent: `jobs` at a time (a server
    # that takes parallel requests: OLLAMA_NUM_PARALLEL); the scratch caches stay moved while any of them runs
    with moved(SCRATCH, reruns.folder), ThreadPoolExecutor(max(1, jobs)) as pool:
        done = dict(zip(map(id, todo), pool.map(lambda u: remake(u, reruns, specs[u["file"], u["method"]]), todo)))
    for u in sorted(ahead + picked, key=lambda u: (u["file"], u["method"], u["id"])):
        ok, line, row = made[id(u)] + (None,) if id(u) in made else done[id(u)]
        if ok is None:
            groups.setdefault((u["file"], u["method"]), [u["summary"], []])[1].append(row)
        else:
            model.append(ok)
            keys.append((u["file"], u["method"], u["id"]))
            outcomes[keys[-1]] = ok
        lines.append(line)
    for (path, style), (summary, rows) in groups.items():
        bad = summary_bounds(summary, [r for r in rows if r]) + (["a re-run failed"] if None in rows else [])
        model.append(not bad)
        keys.append(None)
        lines.append(f"{'differs' if bad else 'reproduced'}: {path} {style} totals against {len(rows)} re-run "
                     f"question(s) (bounds on its summary)" + (": " + "; ".join(bad) if bad else ""))
    lines += [f"not re-run: {why}" for why in skipped]
    score, head = scored(spec, retrieval, model)
    drawn = {(u["file"], u["method"], u["id"]) for u in picked}
    return score, spec["points"], [head] + lines, {"outcomes": outcomes, "drawn": drawn, "retrieval": retrieval,
                                                   "model": model, "keys": keys}


def scored(spec, retrieval, model, drifted=0):
    """The re-run item's score and head line from its re-runs' outcomes (True: reproduced): full marks when the
    retrieval re-runs reproduced and at most the rubric's tolerance share of model rows differ. drifted: rows
    counted as reproduced because the course's reference vouches for them (grade.honest_reruns)."""
    allowed, done = math.floor(spec.get("tolerance", 0) * len(model)), retrieval + model
    full = done and all(retrieval) and model.count(False) <= allowed   # nothing re-run: nothing shown to reproduce
    score = spec["points"] if full else round(spec["points"] * sum(done) / max(1, len(done)), 2)
    head = (f"{sum(done) - drifted} of {len(done)} re-runs reproduced" + (
        f", and {drifted} that differ{'s' if drifted == 1 else ''} not held against it (a row the course's "
        f"reference holds, or one that drifted from it honestly by drift.py's checks)" if drifted
        else "") + f"; {allowed} differing model row(s) of {len(model)} allowed (llama.cpp's sums drift across "
        f"thread counts and builds): a row that differs is worth a look, not proof")
    return score, head if done else "nothing in this hand-in could be re-run"
