"""Model speed, measured: tokens/s, what the prompt cache saves, and whether answers repeat exactly.

    python bench_llm.py                 # writes results/bench_llm.json
    python bench_llm.py --repeats 5

Expected output (~1-2 minutes on the embedded engine, 2 cores): one table, e.g.
    judge verdict, new system prompt (cold) s      3.1
    judge verdict, same system prompt (warm) s     0.9
What is timed: a `judge.supports()`-style verdict with the verdict cache bypassed, first on a system
prompt the engine has never seen, then on the same instructions with a different claim and source (only
the new tail is read), then again after another prompt used the engine (llama.cpp keeps evicted prompt
states in RAM, so the judge's prefix comes back); a 4-passage cited answer from `generate()` twice (identical output expected, the second one
served mostly from the prompt cache); and prompt/generation tokens per second from the engine's counts.
"""
import argparse
import json
import statistics
import time
from pathlib import Path

import llm
from generate import generate

HERE = Path(__file__).parent
PASSAGES = [{"id": f"S{i}", "chunk_id": f"bench#{i}", "doc": "bench", "title": t, "text": x} for i, (t, x) in enumerate([
    ("Ashford Bridge", "Ashford Bridge is a stone arch bridge over the River Lente in the town of Corran. It was designed "
                       "by the engineer Tomas Vell and opened in 1872."),
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


def main():
    ap = argparse.ArgumentParser(description="Tokens/s, prompt-cache effect and determinism of the model in use.")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of each timing (median reported)")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "bench_llm.json", help="where to write")
    args = ap.parse_args()
    info = llm.engine_info()
    print(f"engine={info['engine']} model={info['model']} repeats={args.repeats}")
    llm.complete("Say OK.", max_tokens=4)  # load the model outside the timings
    cold, warm, switched = [], [], []
    for r in range(args.repeats):
        salt = f"{time.time_ns()}-{r}"
        cold.append(timed(lambda: judge_call("Medra has about 300 residents.", PASSAGES[3]["text"], salt))[1])
        warm.append(timed(lambda: judge_call("Tomas Vell was born in Hartmoor.", PASSAGES[1]["text"], salt))[1])
        llm.complete(f"({salt}) Name three colours.", max_tokens=8)  # another prompt takes the engine's slot
        switched.append(timed(lambda: judge_call("Medra has no cars.", PASSAGES[3]["text"], salt))[1])
    with llm.counting() as c1:
        first = generate("Where was the designer of Ashford Bridge born?", passages=PASSAGES)
    with llm.counting() as c2:
        second = generate("Where was the designer of Ashford Bridge born?", passages=PASSAGES)
    identical = (first["answer"], first["sentences"]) == (second["answer"], second["sentences"])
    gen = llm.chat([{"role": "user", "content": "List ten rivers of Europe, one per line."}], max_tokens=96)
    res = {"engine": info, "judge_cold_s": statistics.median(cold), "judge_warm_s": statistics.median(warm),
           "judge_after_other_prompt_s": statistics.median(switched),
           "answer_first_s": c1["seconds"], "answer_repeat_s": c2["seconds"], "answers_identical": identical,
           "prompt_tokens_per_answer": c1["prompt_tokens"],
           "generation_tok_s": gen.eval_count / (gen.eval_duration / 1e9) if gen.eval_duration else None}
    rows = [("judge verdict, new system prompt (cold) s", f"{res['judge_cold_s']:.2f}"),
            ("judge verdict, same system prompt (warm) s", f"{res['judge_warm_s']:.2f}"),
            ("judge verdict after another prompt s", f"{res['judge_after_other_prompt_s']:.2f}"),
            ("cited answer, first time s", f"{res['answer_first_s']:.2f}"),
            ("cited answer, same prompt again s", f"{res['answer_repeat_s']:.2f}"),
            ("the two answers identical", str(identical)),
            ("generation tokens/s", f"{res['generation_tok_s'] or 0:.1f}")]
    print(f"\n{'figure':44} value")
    for name, value in rows:
        print(f"{name:44} {value}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
