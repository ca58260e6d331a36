"""Week 3 (speed): would llama.cpp's n-gram speculative decoding make the cited answer faster? A measured candidate.

    python -m experiments.spec_probe --limit 12 --json results/spec_probe_native.json
    RAG_ENGINE_BUILD=wheel python -m experiments.spec_probe --limit 12

Not used by the lab (see the figures in results/spec_probe_*.txt). The cited answer copies from its sources, so a
draft taken from the tokens already in the context (llama.cpp's `ngram-simple` speculative type: the tokens that
followed the last occurrence of the current n-gram) is often right, and checking several drafted tokens in one batch
costs less than generating them one by one. With greedy sampling (the lab's temperature 0) the reply should be the
same text. Two llama.cpp servers run the same GGUF with the lab's own parameters (llm.engine_params), one with
`ngram-simple` on; each answer prompt of verify_citations.py's golden questions (retrieve.eval_items, half single,
half multi: the json style over the four best passages) goes to both, in turn A B then B A. Nothing is cached by the
lab: each request is sent to llama.cpp directly (its own prompt cache works as it does for the lab).
Output: a row per question (tokens generated, seconds generating in each, drafted and accepted tokens, same reply or
not), then the sums, the ratio of generation seconds and of whole-request seconds, and how many replies were the same.
"""
import statistics
import sys
import time

from experiments import probe_cli

SPEC_TYPE = "COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE"


def prompts(items):
    """(messages, source IDs) of the json-style cited answer of each golden item, over its four best passages."""
    import generate
    from retrieve import retrieve_chunks
    out = []
    for item in items:
        shown = generate.order_passages(retrieve_chunks(item["question"], 4))
        system, user = generate.prompt(item["question"], shown)
        out.append(([{"role": "system", "content": system}, {"role": "user", "content": user}],
                    [p["id"] for p in shown]))
    return out


def request(prompt, schema_of=None):
    """llama.cpp's request for one of prompts(), as the lab's engine sends it (lab/engine.py); schema_of(ids): another
    reply schema than generate.answer_schema (experiments/short_probe.py)."""
    import generate
    from lab import engine
    messages, ids = prompt
    body = {"options": {"temperature": 0.0, "num_predict": generate.MAX_TOKENS},
            "format": (schema_of or generate.answer_schema)(ids)}
    return engine._openai_request(body, messages)


def timed(server, req):
    """One request to a llama.cpp server: its reply text, the seconds waited, and llama.cpp's own timings."""
    start = time.perf_counter()
    out = server.handle_chat_completions(req)
    t = out.get("timings", {})
    return {"text": out["choices"][0]["message"]["content"], "seconds": time.perf_counter() - start,
            "gen_s": t.get("predicted_ms", 0) / 1e3, "prompt_s": t.get("prompt_ms", 0) / 1e3,
            "generated": t.get("predicted_n", 0), "drafted": t.get("draft_n", 0),
            "accepted": t.get("draft_n_accepted", 0)}


def in_turn(n, pair):
    """The order the two variants take question n in: A B, then B A, so both meet the machine's drift alike."""
    return pair if n % 2 == 0 else pair[::-1]


def servers(names=("plain", "ngram")):
    """{"plain": llama.cpp with the lab's parameters, "ngram": the same with n-gram speculative decoding}."""
    import llm
    from lab import engine, native
    native.activate()
    import xllamacpp
    path = engine.ensure_gguf()
    out = {}
    for name in names:
        params = llm.engine_params(xllamacpp, path)
        if name == "ngram":
            params.speculative.types = [getattr(xllamacpp.common_speculative_type, SPEC_TYPE)]
        out[name] = xllamacpp.Server(params)
    return out


def summary(rows):
    """Sums and ratios over the rows ({"plain": {...}, "ngram": {...}, "same": bool} each)."""
    gen = {v: sum(r[v]["gen_s"] for r in rows) for v in ("plain", "ngram")}
    whole = {v: sum(r[v]["seconds"] for r in rows) for v in ("plain", "ngram")}
    return {"n": len(rows), "same_reply": sum(r["same"] for r in rows),
            "generated_tokens": sum(r["plain"]["generated"] for r in rows),
            "gen_seconds": gen, "seconds": whole,
            "ratio_gen": gen["ngram"] / gen["plain"] if gen["plain"] else None,
            "ratio_seconds": whole["ngram"] / whole["plain"] if whole["plain"] else None,
            "median_ratio_gen": statistics.median(r["ngram"]["gen_s"] / r["plain"]["gen_s"] for r in rows),
            "slower_questions": sum(r["ngram"]["gen_s"] > r["plain"]["gen_s"] for r in rows),
            "accepted_share": (sum(r["ngram"]["accepted"] for r in rows)
                               / max(1, sum(r["ngram"]["drafted"] for r in rows)))}


def main():
    args = probe_cli.parse("spec_probe", "The cited answer with and without llama.cpp's n-gram speculative "
                           "decoding: seconds generating and whether the reply is the same.", limit=12)
    import llm
    from lab import cache
    from retrieve import CORPUS_DIR, GOLDEN, eval_items
    from tqdm import tqdm
    from vector_index import CorpusError
    try:
        reqs = [request(p) for p in prompts(eval_items(GOLDEN, args.limit, CORPUS_DIR))]
    except (CorpusError, ValueError) as e:
        sys.exit(f"spec_probe: {e}")
    engines = servers()
    for srv in engines.values():   # the system prompt in each one's prompt cache, as in a running lab
        srv.handle_chat_completions({**reqs[0], "max_tokens": 4})
    rows = []
    for n, req in enumerate(tqdm(reqs, desc="spec_probe", unit="q", file=sys.stderr)):
        got = {name: timed(engines[name], req) for name in in_turn(n, ("plain", "ngram"))}
        rows.append({**got, "same": got["plain"]["text"] == got["ngram"]["text"]})
    fig = summary(rows)
    info = llm.engine_info(portable=True)
    print(f"\nengine {info['engine']} {info['model']} build {info.get('build')}  n={len(rows)}  spec={SPEC_TYPE}")
    print(f"{'q':>3} {'tokens':>6} {'plain s':>8} {'ngram s':>8} {'drafted':>8} {'accepted':>8} same")
    for n, r in enumerate(rows):
        print(f"{n:3} {r['plain']['generated']:6} {r['plain']['gen_s']:8.1f} {r['ngram']['gen_s']:8.1f} "
              f"{r['ngram']['drafted']:8} {r['ngram']['accepted']:8} {r['same']}")
    print(f"generation: {fig['gen_seconds']['plain']:.1f} s plain, {fig['gen_seconds']['ngram']:.1f} s ngram, ratio "
          f"{fig['ratio_gen']:.2f} (median per question {fig['median_ratio_gen']:.2f}; slower on "
          f"{fig['slower_questions']} of {fig['n']}); whole requests ratio {fig['ratio_seconds']:.2f}; drafted tokens "
          f"accepted {fig['accepted_share']:.2f}; same reply {fig['same_reply']} of {fig['n']}")
    if args.json:
        cache.write_json(args.json, {"engine": info, "spec_type": SPEC_TYPE, "figures": fig,
                                     "rows": [{k: ({f: x for f, x in v.items() if f != "text"}
                                                   if isinstance(v, dict) else v) for k, v in r.items()}
                                              for r in rows]})


if __name__ == "__main__":
    main()
