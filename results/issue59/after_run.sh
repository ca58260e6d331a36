#!/usr/bin/env bash
# issue 59: the "after" figures (today's lab at full strength), then the ablation, on the same question sets as the
# "before" run (results/issue59/before_*.json at b956d1f). Each step resumes from .rag/cache, so a session that stops
# part-way loses nothing: run it again.   nohup bash results/issue59/after_run.sh > ../after_run.log 2>&1 &
set -euxo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
for c in corpus catalogue/docs debian/docs; do $py vector_index.py --corpus $c; done
out=results/issue59
$py benchmark.py --patterns single,smart --split test --limit 0 --json $out/after_golden_test.json
$py benchmark.py --patterns smart --split test --limit 0 --corpus catalogue/docs --golden catalogue/golden.json \
    --json $out/after_catalogue_test.json
$py benchmark.py --patterns single,smart --limit 0 --corpus debian/docs --golden debian/golden.json \
    --json $out/after_debian_all.json
# the dev rows the answer check is refitted on (one calibration for every folder; debian/ stays unseen):
#   python -m experiments.calibrate_pooled results/issue59/after_golden_dev.json:golden.json \
#       results/issue59/after_catalogue_dev.json:catalogue/golden.json --write
$py benchmark.py --patterns single,smart --split dev --limit 0 --json $out/after_golden_dev.json
$py benchmark.py --patterns smart --split dev --limit 0 --corpus catalogue/docs --golden catalogue/golden.json \
    --json $out/after_catalogue_dev.json
$py benchmark.py --patterns single,smart --split test --limit 0 --ablation --json $out/ablation_golden_test.json
$py benchmark.py --patterns smart --split test --limit 0 --corpus catalogue/docs --golden catalogue/golden.json \
    --ablation --json $out/ablation_catalogue_test.json
$py benchmark.py --patterns single,smart --limit 0 --corpus debian/docs --golden debian/golden.json \
    --ablation --json $out/ablation_debian_all.json
echo ALLDONE
