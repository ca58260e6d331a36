#!/usr/bin/env bash
# issue 59: the "after" figures (today's lab at full strength), the dev rows of the answer check's refit, then the
# ablation, on the same question sets as the "before" run (results/issue59/before_*.json at b956d1f). Two streams
# that can run side by side, one llama.cpp thread each (RAG_THREADS=1: two engines on the two cores, none waiting
# on the other's threads). Each step resumes from .rag/cache, so a session that stops part-way loses nothing.
#   RAG_THREADS=1 nohup bash results/issue59/after_run.sh golden > ../after_golden.log 2>&1 &
#   RAG_THREADS=1 nohup bash results/issue59/after_run.sh others > ../after_others.log 2>&1 &
# The refit, when both have made their dev rows:
#   python -m experiments.calibrate_pooled results/issue59/after_golden_dev.json:golden.json \
#       results/issue59/after_catalogue_dev.json:catalogue/golden.json --write
set -euxo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
out=results/issue59
cat=(--corpus catalogue/docs --golden catalogue/golden.json)
deb=(--corpus debian/docs --golden debian/golden.json)
case "${1:?golden or others}" in
golden)
  $py vector_index.py --corpus corpus
  $py benchmark.py --patterns single,smart --split test --limit 0 --json $out/after_golden_test.json
  $py benchmark.py --patterns single,smart --split dev --limit 0 --json $out/after_golden_dev.json
  $py benchmark.py --patterns single,smart --split test --limit 0 --ablation --json $out/ablation_golden_test.json
  ;;
others)
  $py vector_index.py --corpus catalogue/docs
  $py vector_index.py --corpus debian/docs
  $py benchmark.py --patterns smart --split test --limit 0 "${cat[@]}" --json $out/after_catalogue_test.json
  $py benchmark.py --patterns single,smart --limit 0 "${deb[@]}" --json $out/after_debian_all.json
  $py benchmark.py --patterns smart --split dev --limit 0 "${cat[@]}" --json $out/after_catalogue_dev.json
  $py benchmark.py --patterns smart --split test --limit 0 "${cat[@]}" --ablation --json $out/ablation_catalogue_test.json
  $py benchmark.py --patterns single,smart --limit 0 "${deb[@]}" --ablation --json $out/ablation_debian_all.json
  # the quarantine and disputes layers' gains are on attacked and misinformed text, not on clean questions
  $py -m experiments.injection --patterns json --limit 0 --json $out/injection_json.json
  $py -m experiments.counterfactual --split test --ratio 1:1 --out .rag/cf/test-1to1
  $py -m experiments.disputes_eval --counterfactual .rag/cf/test-1to1 --limit 40 --json $out/disputes_cf_test_1to1_40.json
  ;;
esac
echo ALLDONE
