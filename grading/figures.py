"""The figures of a results file that are not answer rows, checked: retrieve.py's recall table, recomputed from its
per-question rows, and router_eval.py's routing and mode figures, recomputed from its per-question decisions and
rows; and the comparison of nested figures every check uses (differences, close, whole). checks.py calls these.

    from grading.figures import differences
    differences({"a": {"b": 0.5}}, {"a": {"b": 0.25}}, "")   # -> ['a.b: 0.5 in the file, 0.25 recomputed']

A file written before its script wrote rows gets consistency checks only (retrieve.py) or none (router_eval.py).
"""
from golden import split_of
from lab.answers import exact_match, f1
from retrieve import DRAW_ENV, draw_seed, recall_table, sample_golden

NUM = (int, float)


def whole(x):
    return abs(x - round(x)) < 1e-6 * max(1.0, abs(x))


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def differences(have, want, path):
    """Where two nested dicts of numbers differ: ['table.all.flare.answer_f1: 0.6 in the file, 0.4 recomputed']"""
    if isinstance(want, dict):
        if not isinstance(have, dict) or set(have) != set(want):
            return [f"{path}: holds {sorted(have) if isinstance(have, dict) else have!r}, expected {sorted(want)}"]
        return [d for k in want for d in differences(have[k], want[k], f"{path}.{k}" if path else k)]
    ok = isinstance(have, NUM) and isinstance(want, NUM) and close(have, want) or have == want
    return [] if ok else [f"{path}: {have!r} in the file, {want!r} recomputed"]


def split_counts(items):
    out = {}
    for g in items:
        for s in ("all", g["type"], f"{g['source']}/{g['type']}"):
            out[s] = out.get(s, 0) + 1
    return out


def parts_of(split, keys):
    """The splits one is made of: all <- single, multi; multi <- hotpotqa/multi, musique/multi; a leaf: []."""
    if "/" in split:
        return []
    return [s for s in ("single", "multi") if s in keys] if split == "all" else [s for s in keys
                                                                               if s.endswith("/" + split)]


def retrieval_rows(data, course):
    """retrieve.py --eval's rows ("rows": per question, recall per method and k) -> (shape problems, wrong figures,
    the golden items they are, the table recomputed from them)."""
    rows, recall = data["rows"], data["recall"]
    shape = {m: sorted(by_k) for m, by_k in recall.items()}
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(
            r.get("recall"), dict) and {m: sorted(v) for m, v in r["recall"].items() if isinstance(v, dict)} == shape
            and all(isinstance(x, NUM) for v in r["recall"].values() for x in v.values()) for r in rows):
        return [f"rows: each must be {{id, type, source, recall: method -> k -> a number}} for {shape}"], [], None, None
    wrong, items = [], [course.by_id.get(r["id"]) for r in rows]
    wrong += [f"rows.{i}: {r['id']!r} is not a golden question" for i, (r, g) in enumerate(zip(rows, items)) if not g]
    wrong += [f"rows.{i}: {r['id']} is {r.get('source')}/{r.get('type')}, the golden set says {g['source']}/"
              f"{g['type']}" for i, (r, g) in enumerate(zip(rows, items)) if g and (r.get("type"), r.get("source"))
              != (g["type"], g["source"])]
    wrong += [f"rows.{i}: {r['id']} {m}@{k} recall {x} is not a share of its {len(g['supporting_docs'])} documents"
              for i, (r, g) in enumerate(zip(rows, items)) if g for m, v in r["recall"].items() for k, x in v.items()
              if not (0 <= x <= 1 and whole(x * len(g["supporting_docs"])))]
    if wrong:
        return [], wrong, None, None
    made = recall_table([{**r, "type": g["type"], "source": g["source"]} for r, g in zip(rows, items)],
                        list(recall), sorted({int(k) for v in recall.values() for k in v}))
    return [], differences({"recall": recall, "n": data["n"]}, made, ""), items, made


def check_retrieval(data, course):
    """retrieve.py --eval: recall[method][k][split] and n[split], recomputed from its per-question rows; a file
    written before it held them is checked for consistency."""
    recall, n = data.get("recall"), data.get("n")
    ok = isinstance(recall, dict) and isinstance(n, dict) and all(isinstance(v, int) for v in n.values())
    ok = ok and all(isinstance(by_k, dict) and all(isinstance(sp, dict) and set(sp) == set(n) and all(
        isinstance(x, NUM) for x in sp.values()) for sp in by_k.values()) for by_k in recall.values())
    if not ok:
        return ["'recall' must map method -> k -> every split of 'n' -> a number"], None, data, []
    halves = [course.golden] + [[g for g in course.golden if split_of(g) == h] for h in ("dev", "test")]
    unit = lambda items: [{"family": "retrieval", "method": "eval", "id": "all", "items": items}] if items else []
    if "rows" in data:
        valid, wrong, items, made = retrieval_rows(data, course)
        if items and not any(items == base[:len(items)] for base in halves):
            wrong.append(f"rows: their {len(items)} questions are not a part of the golden set that retrieve.py "
                         f"--eval scores (all, a --split half, the first --limit), in its order")
        return valid, None if valid else wrong, {**data, **made} if made else data, unit(items)
    wrong = [f"n.{t}: {n[t]}, its parts add up to {sum(n[s] for s in ps)}" for t in n
             if (ps := parts_of(t, n)) and sum(n[s] for s in ps) != n[t]]
    for m, by_k in recall.items():
        for k, sp in by_k.items():
            where = f"recall.{m}.{k}"
            wrong += [f"{where}.{s}: {x} is outside [0, 1]" for s, x in sp.items() if not 0 <= x <= 1]
            wrong += [f"{where}.{s}: {x} times {n[s]} questions is not a whole count of documents"
                      for s, x in sp.items() if not whole(x * n[s] * course.lcm)]
            for t, ps in ((t, parts_of(t, sp)) for t in sp):
                mean = sum(sp[s] * n[s] for s in ps) / max(1, n[t])
                if ps and not close(mean, sp[t]):
                    wrong.append(f"{where}.{t}: {sp[t]:.4f}, its parts average {mean:.4f}")
        ks = sorted(by_k, key=lambda k: int(k) if k.isdigit() else 0)
        if m in ("bm25", "dense"):   # their top-k lists are prefixes of each other: recall cannot fall with k
            wrong += [f"recall.{m}: falls from k={a} to k={b} on {s}" for a, b in zip(ks, ks[1:])
                      for s in by_k[a] if by_k[b][s] < by_k[a][s] - 1e-9]
    items = next((p for base in halves for p in (base, base[:n.get("all", 0)]) if split_counts(p) == n), None)
    if items is None:
        wrong.append(f"n {n} matches no part of the golden set that retrieve.py --eval scores "
                     f"(all, a --split half, the first --limit)")
    return [], wrong, data, unit(items)


DRAWN = "the script samples from"   # in every problem that says a file's questions are not the student's draw


def whose(course):
    """How a wrong sample is named: "alice's draw of the golden set (RAG_STUDENT=alice)", or the default draw."""
    student = getattr(course, "student", "")
    return f"{student}'s draw of the golden set ({DRAW_ENV}={student})" if student \
        else f"the course's golden set (the default draw: {DRAW_ENV} unset)"


def sampled_ids(golden, n, student=""):
    """The question lists a script sampling n golden questions evaluates, in `student`'s draw: of all types, of
    single-hop or of multi-hop ones (--split, router_eval.py's modes)."""
    seed = draw_seed(student)
    return [[g["id"] for g in sample_golden([g for g in golden if kind in ("all", g["type"])], n, seed)]
            for kind in ("all", "single", "multi")]


def router_draws(routes, rows, course):
    """router_eval.py's sampled questions against the student's draw: each mode's rows the first multi-hop questions
    of it, the LLM router's the first questions. Checked when the file routed the whole golden set (no --split)."""
    if len(routes.get("learned") or {}) != len(course.golden):
        return []
    drawn = lambda n: sampled_ids(course.golden, n, getattr(course, "student", ""))   # [all, single, multi]
    out = [f"rows.{m}: its {len(rs)} questions are not the ones {DRAWN} {whose(course)}" for m, rs in rows.items()
           if [r["id"] for r in rs] != drawn(len(rs))[2]]
    if "llm" in routes and list(routes["llm"]) != drawn(len(routes["llm"]))[0]:
        out.append(f"routes.llm: its {len(routes['llm'])} questions are not the ones {DRAWN} {whose(course)}")
    return out


def check_router(data, course):
    """router_eval.py: each router's accuracy, matrix, n and by-source accuracy from its decisions ("routes": router
    -> question id -> multi?), each mode's figures from its rows (router_eval.summarize; "rows": mode -> rows) and
    each row's F1 and EM from its answer. A file written before it held them has nothing to recompute."""
    import router_eval
    routes, rows = data.get("routes"), data.get("rows")
    if routes is None and rows is None:
        return [], None, data, []
    fields = ("f1", "em", "recall", "recall_all", "llm_calls", "seconds")
    if not (isinstance(routes, dict) and isinstance(rows, dict) and all(
            isinstance(d, dict) and all(isinstance(v, bool) for v in d.values()) for d in routes.values()) and all(
            isinstance(rs, list) and all(isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(
                r.get("source"), str) and ("error" in r or all(isinstance(r.get(k), NUM) for k in fields))
                for r in rs) for rs in rows.values())):
        return ["'routes' must map router -> question id -> true/false, 'rows' mode -> rows with id, source and "
                f"{', '.join(fields)}"], None, data, []
    wrong, made = router_draws(routes, rows, course), {"router": {}, "modes": {}}
    for name, decided in routes.items():
        items = [course.by_id.get(i) for i in decided]
        if None in items:
            wrong.append(f"routes.{name}: {items.count(None)} question(s) not in the golden set")
        else:
            made["router"][name] = router_eval.confusion(items, list(decided.values()))
    for m, rs in rows.items():
        for i, r in enumerate(rs):
            g = course.by_id.get(r["id"])
            if g is None:
                wrong.append(f"rows.{m}[{i}]: {r['id']!r} is not a golden question")
            elif "error" not in r and not (close(r["em"], exact_match(r.get("answer") or "", g))
                                           and close(r["f1"], f1(r.get("answer") or "", g))):
                wrong.append(f"rows.{m}[{i}]: {r['id']} EM {r['em']}, F1 {r['f1']:.3f}: not what its answer gives")
        made["modes"][m] = {**router_eval.summarize(rs), "by_source": {
            src: router_eval.summarize([r for r in rs if r["source"] == src]) for src in sorted({r["source"]
                                                                                               for r in rs})}}
    theirs = data["router"] if isinstance(data.get("router"), dict) else {}
    have = {"router": {n: {k: (theirs.get(n) or {}).get(k) for k in r} for n, r in made["router"].items()},
            "modes": data.get("modes")}
    wrong += differences(have, made, "")
    figures = {**data, "router": {**theirs, **{n: {**(theirs.get(n) or {}), **r} for n, r in made["router"].items()}},
               "modes": made["modes"]}
    return [], wrong, figures, []
