#!/usr/bin/env bash
# issue 60: the nine model tables that pages quote, re-made with the real model on the code that stays (after issue
# 59's ablation and layer removals). Two streams side by side, one llama.cpp thread each; every step resumes from
# .rag/cache, so a session that stops part-way loses nothing:
#   RAG_THREADS=1 nohup bash results/issue60/make_tables.sh bench  > ../tables_bench.log 2>&1 &
#   RAG_THREADS=1 nohup bash results/issue60/make_tables.sh others > ../tables_others.log 2>&1 &
# Then: python -m grading.replay --all --record --from .rag/cache && python -m grading.replay --snapshot
set -euxo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
case "${1:?bench or others}" in
bench)   # the benchmark, week 8's GraphRAG tables (each builds the graph it searches first: its setup), the catalogue
  $py -m grading.replay --make benchmark graphrag_eval graphrag_eval_titles benchmark_catalogue
  ;;
others)
  $py -m grading.replay --make citations_json_30 disputes_golden router_eval injection flare_eval self_rag_eval \
      crag_eval
  ;;
esac
echo ALLDONE
