"""Week 3 (speed): a shorter cited answer, the first signal. Fewer generated tokens, and does the short answer hold?

    python -m experiments.short_probe --limit 20 --json results/short_probe_dev.json   # dev questions only

A candidate for issue 31's "no more sentences than the answer needs", not used by the lab. The cited answer writes
80-270 tokens at ~20 tokens/s: up to four sentences of up to 300 characters (generate.answer_schema), some of them a
passage copied whole. The candidate's schema allows SHORT_SENTENCES sentences of up to SHORT_CHARS characters. Both
replies are asked of the same llama.cpp server (the lab's parameters), in turn, for the same prompt: the json-style
answer over the four best passages (experiments/spec_probe.prompts, read once), on dev golden questions
(golden.split_of).
Only the first signal: the seconds and tokens generated, the short answer's F1 and the sentences' count; not the
citation figures or verified precision, which need the judge (a full run of verify_citations.py on the adopted code).
"""
import json
import statistics
import sys

from experiments import probe_cli, spec_probe

SHORT_SENTENCES = 2
SHORT_CHARS = 160


def short_schema(ids):
    """generate.answer_schema with at most SHORT_SENTENCES sentences of at most SHORT_CHARS characters."""
    import generate
    schema = json.loads(json.dumps(generate.answer_schema(ids)))
    sentences = schema["properties"]["sentences"]
    sentences["maxItems"] = SHORT_SENTENCES
    sentences["items"]["properties"]["text"]["maxLength"] = SHORT_CHARS
    return schema


def parsed(text):
    """(short answer, sentences) of a reply; ("", 0) when it is not JSON."""
    try:
        reply = json.loads(text)
        return str(reply.get("answer", "")).strip(), len(reply.get("sentences") or [])
    except (ValueError, AttributeError):
        return "", 0


def summary(rows):
    """Sums, ratios and means over the rows ({"full": {...}, "short": {...}} each)."""
    out = {"n": len(rows)}
    for v in ("full", "short"):
        out[v] = {"gen_seconds": sum(r[v]["gen_s"] for r in rows), "generated": sum(r[v]["generated"] for r in rows),
                  "f1": statistics.mean(r[v]["f1"] for r in rows),
                  "sentences": statistics.mean(r[v]["sentences"] for r in rows)}
    out["ratio_gen"] = out["short"]["gen_seconds"] / out["full"]["gen_seconds"] if out["full"]["gen_seconds"] else None
    out["ratio_tokens"] = out["short"]["generated"] / out["full"]["generated"] if out["full"]["generated"] else None
    out["same_answer"] = sum(r["full"]["answer"] == r["short"]["answer"] for r in rows)
    return out


def main():
    args = probe_cli.parse("short_probe", "The cited answer with the lab's schema and a shorter one: seconds and "
                           "tokens generated, and the short answer's F1, on dev golden questions.", limit=20,
                           limit_help="dev golden questions (half single, half multi)")
    import llm
    from lab import cache
    from lab.answers import f1
    from golden import split_of
    from retrieve import CORPUS_DIR, GOLDEN, eval_items
    from tqdm import tqdm
    from vector_index import CorpusError
    try:
        items = [i for i in eval_items(GOLDEN, 0, CORPUS_DIR) if split_of(i) == "dev"]
    except (CorpusError, ValueError) as e:
        sys.exit(f"short_probe: {e}")
    singles, multis = ([i for i in items if i["type"] == t] for t in ("single", "multi"))
    items = (singles[:args.limit // 2] + multis[:args.limit - args.limit // 2])
    asked = spec_probe.prompts(items)   # retrieval once: both variants read the same prompt
    reqs = {"full": [spec_probe.request(p) for p in asked],
            "short": [spec_probe.request(p, short_schema) for p in asked]}
    srv = spec_probe.servers(("plain",))["plain"]
    srv.handle_chat_completions({**reqs["full"][0], "max_tokens": 4})   # the system prompt in its cache
    rows = []
    for n, item in enumerate(tqdm(items, desc="short_probe", unit="q", file=sys.stderr)):
        got = {}
        for v in spec_probe.in_turn(n, ("full", "short")):
            reply = spec_probe.timed(srv, reqs[v][n])
            answer, sentences = parsed(reply["text"])
            got[v] = {"answer": answer, "sentences": sentences, "f1": f1(answer, item),
                      **{f: reply[f] for f in ("seconds", "gen_s", "generated")}}
        rows.append({"id": item["id"], "type": item["type"], **got})
    fig = summary(rows)
    info = llm.engine_info(portable=True)
    print(f"\nengine {info['engine']} {info['model']} build {info.get('build')}  n={len(rows)} (dev)  short schema: "
          f"<= {SHORT_SENTENCES} sentences of <= {SHORT_CHARS} characters")
    print(f"{'schema':7} {'gen s':>7} {'tokens':>7} {'F1':>6} {'sentences':>9}")
    for v in ("full", "short"):
        f = fig[v]
        print(f"{v:7} {f['gen_seconds']:7.1f} {f['generated']:7} {f['f1']:6.3f} {f['sentences']:9.2f}")
    print(f"short / full: generation seconds {fig['ratio_gen']:.2f}, tokens {fig['ratio_tokens']:.2f}; the same short "
          f"answer on {fig['same_answer']} of {fig['n']}")
    if args.json:
        cache.write_json(args.json, {"engine": info, "short": {"sentences": SHORT_SENTENCES, "chars": SHORT_CHARS},
                                     "figures": fig, "rows": rows})


if __name__ == "__main__":
    main()
