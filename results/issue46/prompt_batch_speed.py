import sys, time, json, os, random, statistics
sys.path.insert(0, "/work/main")
import llm
from lab import engine, native
native.activate()
import xllamacpp
docs = sorted(os.listdir("/work/main/corpus"))
res = {}
for rnd in range(3):
  for nb in (0, 160):
    p = llm.engine_params(xllamacpp, engine.ensure_gguf())
    if nb: p.n_batch = nb
    s = xllamacpp.Server(p)
    for i in range(3):
        text = " ".join(open("/work/main/corpus/" + docs[i * 11 + rnd * 5 + j]).read()[:1700] for j in range(3))
        req = {"messages": [{"role": "user", "content": f"{nb} {rnd} Passage: {text}\n\nWhat is this about? One sentence."}],
               "max_tokens": 1, "temperature": 0, "seed": 42, "cache_prompt": False}
        r = s.handle_chat_completions(req)
        res.setdefault(nb, []).append((r["timings"]["prompt_n"], r["timings"]["prompt_per_second"]))
    del s
for nb, v in res.items():
    print(nb, "median tok/s", round(statistics.median(x[1] for x in v), 1), "n tokens", [x[0] for x in v])
