"""Model speed, measured: tokens/s against llama.cpp's own, what the prompt cache saves, and whether answers repeat.

    python -m experiments.bench_llm   # writes results/bench_llm.json; both builds once `make native` made one
    python -m experiments.bench_llm --repeats 5 --rounds 3
    python -m experiments.bench_llm --builds wheel   # one build only

Expected output (~2 minutes per run on the embedded engine, 2 cores; 4 runs per build by default): one table, e.g.
    generation tokens/s                                  17.9      19.0
    ...
    engine / llama.cpp's own
      generation_tok_s                                   1.00      0.99
What is timed: a `judge.supports()`-style verdict with the verdict cache bypassed, first on a system
prompt the engine has never seen, then on the same instructions with a different claim and source (only
the new tail is read), then again after another prompt used the engine (llama.cpp keeps evicted prompt
states in RAM, so the judge's prefix comes back); a 4-passage cited answer from `generate()` twice (identical
output expected, the second one served mostly from the prompt cache), then its verification
(citations.verify); prompt reading tokens/s on a ~1,050-token prompt never seen before; generation tokens/s of a
96-token reply through the lab's door (llm.chat: the ollama client and the engine's API), plain, constrained by a
JSON schema and with logprobs (FLARE's call), as llama.cpp counts them and as the caller waits.
llama.cpp's own speed: its server (xllamacpp.Server) on the same GGUF, threads and build, with llama.cpp's default
parameters (only the context, threads and quiet logs set) and plain requests (no schema, logprobs or seed), called
directly; `ratio_engine_raw` in the JSON is the lab's figure over llama.cpp's own (1.0: nothing lost on the way).
With the embedded engine every figure comes from child processes, one per build and round, alternating
wheel and native (RAG_ENGINE_BUILD), the lab's engine then llama.cpp's own, each with empty caches (its own
RAG_INDEX_DIR), so they share the machine's state alike; the table gives each build's median and the ratio
native/wheel.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import llm
from generate import generate
from lab import cache, native

ROOT = Path(__file__).parent.parent   # the repository (this file is in experiments/)
PASSAGES = [{"id": f"S{i}", "chunk_id": f"bench#{i}", "doc": "bench", "title": t, "text": x}
            for i, (t, x) in enumerate([
    ("Ashford Bridge", "Ashford Bridge is a stone arch bridge over the River Lente in the town of Corran. "
                       "It was designed by the engineer Tomas Vell and opened in 1872."),
    ("Tomas Vell", "Tomas Vell (1831-1899) was a civil engineer born in the village of Hartmoor."),
    ("Hartmoor", "Hartmoor is a village in the county of Wessmark. Its population was 1,240 at the last census."),
    ("Medra", "Medra is a small island off Port Sallow with about 300 residents. The island has no cars.")], 1)]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def judge_call(claim, source, salt):
    """One uncached supports()-style verdict; `salt` makes the system prompt new to the engine."""
    from judge import VERDICT, support_system
    system = f"(run {salt})\n" + support_system("verdict")  # the salt first: nothing of it is cached yet
    return llm.complete_json(f"Source: {source}\nClaim: {claim}", {"type": "object", "properties": {"verdict": VERDICT},
                             "required": ["verdict"]}, system=system, max_tokens=16)


def reading_prompt(salt, words=780):
    """A ~1,050-token prompt no engine has seen yet (the salt comes first)."""
    text = " ".join(p["text"] for p in PASSAGES)
    body = (text + " ") * (words // len(text.split()) + 1)
    return f"({salt}) {' '.join(body.split()[:words])}\nSay OK."


def prompt_reading(salt):
    """Prompt tokens/s on a ~1,050-token prompt the engine has never seen."""
    r = llm.chat([{"role": "user", "content": reading_prompt(salt)}], max_tokens=1)
    return r.prompt_eval_count / (r.prompt_eval_duration / 1e9) if r.prompt_eval_duration else None


def measure(repeats):
    """Every figure on the engine this process uses -> dict."""
    import assembly
    info = llm.engine_info()
    llm.complete("Say OK.", max_tokens=4)  # load the model outside the timings
    cold, warm, switched, reading = [], [], [], []
    for r in range(repeats):
        salt = f"{time.time_ns()}-{r}"
        cold.append(timed(lambda: judge_call("Medra has about 300 residents.", PASSAGES[3]["text"], salt))[1])
        warm.append(timed(lambda: judge_call("Tomas Vell was born in Hartmoor.", PASSAGES[1]["text"], salt))[1])
        llm.complete(f"({salt}) Name three colours.", max_tokens=8)  # another prompt takes the engine's slot
        switched.append(timed(lambda: judge_call("Medra has no cars.", PASSAGES[3]["text"], salt))[1])
        reading.append(prompt_reading(salt))
    with llm.counting() as c1:
        first = generate("Where was the designer of Ashford Bridge born?", passages=PASSAGES)
    with llm.counting() as c2:
        second = generate("Where was the designer of Ashford Bridge born?", passages=PASSAGES)
    identical = (first["answer"], first["sentences"]) == (second["answer"], second["sentences"])
    # the typical answer's check (fresh judge cache in a child)
    _, verify_s = timed(lambda: assembly.FULL.verify(first))
    return {"engine": info, "judge_cold_s": statistics.median(cold), "judge_warm_s": statistics.median(warm),
            "judge_after_other_prompt_s": statistics.median(switched),
            "answer_first_s": c1["seconds"], "answer_repeat_s": c2["seconds"], "answers_identical": identical,
            "answer_verified_s": c1["seconds"] + verify_s, "prompt_tokens_per_answer": c1["prompt_tokens"],
            "prompt_tok_s": statistics.median(reading), **generation(repeats)}


GEN_MESSAGES = [{"role": "user", "content": "List ten rivers of Europe, one per line, each with its length."}]
GEN_TOKENS = 96
GEN_SCHEMA = {"type": "object", "properties": {"rivers": {"type": "array", "items": {"type": "string"}}},
              "required": ["rivers"]}
GEN_WAYS = {"": {}, "schema_": {"schema": GEN_SCHEMA}, "logprobs_": {"logprobs": True, "top_logprobs": 5}}


def _speeds(runs):
    """[(tokens, generation ms, prompt ms, wall s)] -> medians of llama.cpp's own tokens/s and of the wall clock's
    (tokens over the call's seconds less its prompt reading: what a caller waits per token)."""
    own = statistics.median(n / (ms / 1e3) for n, ms, _, _ in runs)
    wall = statistics.median(n / (w - p / 1e3) for n, _, p, w in runs)
    return own, wall, statistics.median(n for n, *_ in runs)


def generation(repeats):
    """Generation tokens/s through the lab's door (llm.chat: the ollama client, the engine's API): plain, constrained
    by a JSON schema, and with logprobs (FLARE's call), each as llama.cpp counts it and as the caller waits."""
    out = {}
    for prefix, kw in GEN_WAYS.items():
        runs = []
        for _ in range(repeats):
            r, wall = timed(lambda: llm.chat(GEN_MESSAGES, max_tokens=GEN_TOKENS, **kw))
            runs.append((r.eval_count, r.eval_duration / 1e6, r.prompt_eval_duration / 1e6, wall))
        own, walled, tokens = _speeds(runs)
        out |= {f"{prefix}generation_tok_s": own, f"{prefix}generation_wall_tok_s": walled,
                f"{prefix}generated_tokens": tokens}
    return out


def measure_raw(repeats):
    """llama.cpp's own speed on the same GGUF, threads and build: its server with its default parameters (only the
    context, threads and quiet logs set) and plain requests (no schema, logprobs, seed or prompt cache flag), called
    directly, without the ollama client or the engine's API in between."""
    from lab import engine
    native.activate()
    import xllamacpp
    server = xllamacpp.Server(llm.engine_params(xllamacpp, engine.ensure_gguf(), lab=False))
    call = lambda body: server.handle_chat_completions({**body, "temperature": 0.0})
    call({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4})  # warm up as measure() does
    runs, reading = [], []
    for r in range(repeats):
        out, wall = timed(lambda: call({"messages": GEN_MESSAGES, "max_tokens": GEN_TOKENS}))
        t = out["timings"]
        runs.append((t["predicted_n"], t["predicted_ms"], t["prompt_ms"], wall))
        salt = f"{time.time_ns()}-{r}"
        t = call({"messages": [{"role": "user", "content": reading_prompt(salt)}], "max_tokens": 1})["timings"]
        reading.append(t["prompt_n"] / (t["prompt_ms"] / 1e3))
    own, walled, tokens = _speeds(runs)
    return {"generation_tok_s": own, "generation_wall_tok_s": walled, "generated_tokens": tokens,
            "prompt_tok_s": statistics.median(reading), "build": native.choose()}


ROWS = [("prompt reading tokens/s (~1,050-token prompt)", "prompt_tok_s", ".1f"),
        ("generation tokens/s", "generation_tok_s", ".1f"),
        ("generation tokens/s as the caller waits", "generation_wall_tok_s", ".1f"),
        ("generation tokens/s, JSON schema", "schema_generation_tok_s", ".1f"),
        ("generation tokens/s, logprobs (FLARE)", "logprobs_generation_tok_s", ".1f"),
        ("cited answer + its verification, s", "answer_verified_s", ".2f"),
        ("judge verdict, new system prompt (cold) s", "judge_cold_s", ".2f"),
        ("judge verdict, same system prompt (warm) s", "judge_warm_s", ".2f"),
        ("judge verdict after another prompt s", "judge_after_other_prompt_s", ".2f"),
        ("cited answer, first time s", "answer_first_s", ".2f"),
        ("cited answer, same prompt again s", "answer_repeat_s", ".2f")]
RAW = ("prompt_tok_s", "generation_tok_s", "generation_wall_tok_s")  # what llama.cpp's own server is timed on
VS_RAW = {"prompt_tok_s": "prompt_tok_s", "generation_tok_s": "generation_tok_s",  # engine figure -> raw figure
          "generation_wall_tok_s": "generation_wall_tok_s", "schema_generation_tok_s": "generation_tok_s",
          "logprobs_generation_tok_s": "generation_tok_s"}


def child(build, repeats, raw=False):
    """measure() (or measure_raw()) in a fresh process on one llama.cpp build, with empty caches."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = {**os.environ, "RAG_ENGINE_BUILD": build, "RAG_LLM": "embedded", "RAG_INDEX_DIR": tmp}
        run = subprocess.run([sys.executable, "-m", "experiments.bench_llm", "--raw" if raw else "--child",
                              "--repeats", str(repeats), "--json", str(out)], env=env, cwd=ROOT, capture_output=True,
                             text=True)
        if run.returncode:
            sys.exit(f"bench_llm: the {build} build failed: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
        return json.loads(out.read_text())


def summary(runs, raws):
    """Each build's medians; beside them llama.cpp's own and the ratios engine/raw (ratio_engine_raw)."""
    res = {b: {**{k: statistics.median([r[k] for r in rs]) for _, k, _ in ROWS},
               "answers_identical": all(r["answers_identical"] for r in rs), "runs": rs} for b, rs in runs.items()}
    for b, rs in raws.items():
        res[b]["raw"] = {**{k: statistics.median([r[k] for r in rs]) for k in RAW}, "runs": rs}
        res[b]["ratio_engine_raw"] = {k: res[b][k] / res[b]["raw"][v] for k, v in VS_RAW.items()}
    return res


def main():
    ap = argparse.ArgumentParser(description="Tokens/s, against llama.cpp's own on the same GGUF, threads and "
                                 "build; prompt-cache effect and determinism; both builds when `make native` made one.")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of each timing inside one run (median reported)")
    ap.add_argument("--rounds", type=int, default=2, help="runs per build, alternating wheel and native, each followed "
                    "by llama.cpp's own server on the same build (median)")
    ap.add_argument("--builds", help="comma list of wheel,native (default: both when native is built, else the one "
                    "in use)")
    ap.add_argument("--json", type=Path, default=ROOT / "results" / "bench_llm.json", help="where to write")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child or args.raw:
        args.json.write_text(json.dumps(measure_raw(args.repeats) if args.raw else measure(args.repeats)))
        return
    info = llm.engine_info()
    if info["engine"] != "embedded":  # an Ollama server: one build, this process, no raw llama.cpp to compare
        builds, runs, raws = [info["engine"]], {info["engine"]: [measure(args.repeats)]}, {}
    else:
        have = native.choose({"RAG_ENGINE_BUILD": "auto"}) == "native"
        builds = (args.builds or ("wheel,native" if have else info["build"])).split(",")
        print(f"engine=embedded model={info['model']} builds={builds} rounds={args.rounds} repeats={args.repeats}")
        from tqdm import tqdm
        runs, raws = {b: [] for b in builds}, {b: [] for b in builds}
        for _, b, raw in tqdm([(r, b, raw) for r in range(args.rounds) for b in builds for raw in (False, True)],
                              desc="bench_llm", unit="run", file=sys.stderr):
            (raws if raw else runs)[b].append(child(b, args.repeats, raw))
    res = {"builds": summary(runs, raws), "rounds": args.rounds, "repeats": args.repeats}
    answering = info.get("build") or info["engine"]
    if "ratio_engine_raw" in res["builds"].get(answering, {}):
        res["ratio_engine_raw"] = {"build": answering, **res["builds"][answering]["ratio_engine_raw"]}
    if {"wheel", "native"} <= set(res["builds"]):
        w, n = res["builds"]["wheel"], res["builds"]["native"]
        res["ratio_native_wheel"] = {k: n[k] / w[k] for _, k, _ in ROWS if w[k]}
    print(f"\n{'figure':48}" + "".join(f"{b:>10}" for b in builds)
          + ("  native/wheel" if "ratio_native_wheel" in res else ""))
    for name, key, fmt in ROWS:
        print(f"{name:48}" + "".join(f"{res['builds'][b][key]:>10{fmt}}" for b in builds)
              + (f"  {res['ratio_native_wheel'][key]:>12.2f}" if "ratio_native_wheel" in res else ""))
    if raws:
        print("\nllama.cpp's own server (defaults, plain requests)")
        for key in RAW:
            print(f"  {key:46}" + "".join(f"{res['builds'][b]['raw'][key]:>10.1f}" for b in builds))
        print("engine / llama.cpp's own")
        for key in VS_RAW:
            print(f"  {key:46}" + "".join(f"{res['builds'][b]['ratio_engine_raw'][key]:>10.2f}" for b in builds))
    print("answers repeat exactly: " + ", ".join(f"{b} {res['builds'][b]['answers_identical']}" for b in builds))
    print()
    cache.write_json(args.json, res)


if __name__ == "__main__":
    main()
