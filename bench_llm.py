"""Model speed, measured: tokens/s, what the prompt cache saves, and whether answers repeat exactly.

    python bench_llm.py                 # writes results/bench_llm.json; both builds once `make native` made one
    python bench_llm.py --repeats 5 --rounds 3
    python bench_llm.py --builds wheel  # one build only

Expected output (~1-2 minutes on the embedded engine, 2 cores): one table, e.g.
    judge verdict, new system prompt (cold) s      3.1
    judge verdict, same system prompt (warm) s     0.9
What is timed: a `judge.supports()`-style verdict with the verdict cache bypassed, first on a system
prompt the engine has never seen, then on the same instructions with a different claim and source (only
the new tail is read), then again after another prompt used the engine (llama.cpp keeps evicted prompt
states in RAM, so the judge's prefix comes back); a 4-passage cited answer from `generate()` twice (identical
output expected, the second one served mostly from the prompt cache), then its verification
(citations.verify); prompt reading tokens/s on a ~1,050-token prompt never seen before; generation tokens/s
from the engine's counts.
With the embedded engine every figure comes from child processes, one per build and round, alternating
wheel and native (RAG_ENGINE_BUILD), each with empty caches (its own RAG_INDEX_DIR), so the two builds
share the machine's state alike; the table gives each build's median and the ratio native/wheel.
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

import cache
import llm
from generate import generate

HERE = Path(__file__).parent
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


def prompt_reading(salt, words=780):
    """Prompt tokens/s on a ~1,050-token prompt the engine has never seen (the salt comes first)."""
    text = " ".join(p["text"] for p in PASSAGES)
    body = (text + " ") * (words // len(text.split()) + 1)
    r = llm.chat([{"role": "user", "content": f"({salt}) {' '.join(body.split()[:words])}\nSay OK."}], max_tokens=1)
    return r.prompt_eval_count / (r.prompt_eval_duration / 1e9) if r.prompt_eval_duration else None


def measure(repeats):
    """Every figure on the engine this process uses -> dict."""
    import citations
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
    _, verify_s = timed(lambda: citations.verify(first))   # the typical answer's check (fresh judge cache in a child)
    gen = llm.chat([{"role": "user", "content": "List ten rivers of Europe, one per line."}], max_tokens=96)
    return {"engine": info, "judge_cold_s": statistics.median(cold), "judge_warm_s": statistics.median(warm),
            "judge_after_other_prompt_s": statistics.median(switched),
            "answer_first_s": c1["seconds"], "answer_repeat_s": c2["seconds"], "answers_identical": identical,
            "answer_verified_s": c1["seconds"] + verify_s, "prompt_tokens_per_answer": c1["prompt_tokens"],
            "prompt_tok_s": statistics.median(reading),
            "generation_tok_s": gen.eval_count / (gen.eval_duration / 1e9) if gen.eval_duration else None}


ROWS = [("prompt reading tokens/s (~1,050-token prompt)", "prompt_tok_s", ".1f"),
        ("generation tokens/s", "generation_tok_s", ".1f"),
        ("cited answer + its verification, s", "answer_verified_s", ".2f"),
        ("judge verdict, new system prompt (cold) s", "judge_cold_s", ".2f"),
        ("judge verdict, same system prompt (warm) s", "judge_warm_s", ".2f"),
        ("judge verdict after another prompt s", "judge_after_other_prompt_s", ".2f"),
        ("cited answer, first time s", "answer_first_s", ".2f"),
        ("cited answer, same prompt again s", "answer_repeat_s", ".2f")]


def child(build, repeats):
    """measure() in a fresh process on one llama.cpp build, with empty caches."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = {**os.environ, "RAG_ENGINE_BUILD": build, "RAG_LLM": "embedded", "RAG_INDEX_DIR": tmp}
        run = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--repeats", str(repeats),
                              "--json", str(out)], env=env, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"bench_llm: the {build} build failed: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
        return json.loads(out.read_text())


def main():
    ap = argparse.ArgumentParser(description="Tokens/s, prompt-cache effect and determinism; both llama.cpp builds "
                                 "when `make native` made one.")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of each timing inside one run (median reported)")
    ap.add_argument("--rounds", type=int, default=2, help="runs per build, alternating wheel and native (median)")
    ap.add_argument("--builds", help="comma list of wheel,native (default: both when native is built, else the one "
                    "in use)")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "bench_llm.json", help="where to write")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.json.write_text(json.dumps(measure(args.repeats)))
        return
    info = llm.engine_info()
    if info["engine"] != "embedded":  # an Ollama server: one build, this process
        builds, runs = [info["engine"]], {info["engine"]: [measure(args.repeats)]}
    else:
        import native
        have = native.choose({"RAG_ENGINE_BUILD": "auto"}) == "native"
        builds = (args.builds or ("wheel,native" if have else info["build"])).split(",")
        print(f"engine=embedded model={info['model']} builds={builds} rounds={args.rounds} repeats={args.repeats}")
        from tqdm import tqdm
        runs = {b: [] for b in builds}
        for _, b in tqdm([(r, b) for r in range(args.rounds) for b in builds], desc="bench_llm", unit="run",
                         file=sys.stderr):
            runs[b].append(child(b, args.repeats))
    res = {"builds": {b: {**{k: statistics.median([r[k] for r in rs]) for _, k, _ in ROWS},
                          "answers_identical": all(r["answers_identical"] for r in rs), "runs": rs}
                      for b, rs in runs.items()},
           "rounds": args.rounds, "repeats": args.repeats}
    if {"wheel", "native"} <= set(res["builds"]):
        w, n = res["builds"]["wheel"], res["builds"]["native"]
        res["ratio_native_wheel"] = {k: n[k] / w[k] for _, k, _ in ROWS if w[k]}
    print(f"\n{'figure':48}" + "".join(f"{b:>10}" for b in builds)
          + ("  native/wheel" if "ratio_native_wheel" in res else ""))
    for name, key, fmt in ROWS:
        print(f"{name:48}" + "".join(f"{res['builds'][b][key]:>10{fmt}}" for b in builds)
              + (f"  {res['ratio_native_wheel'][key]:>12.2f}" if "ratio_native_wheel" in res else ""))
    print("answers repeat exactly: " + ", ".join(f"{b} {res['builds'][b]['answers_identical']}" for b in builds))
    print()
    cache.write_json(args.json, res)


if __name__ == "__main__":
    main()
