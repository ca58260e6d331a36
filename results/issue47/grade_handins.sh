#!/bin/bash
# Grade the honest hand-ins of honest_handins.sh, fabricated and copied ones made from them, against the course's
# reference built on the grading machine (native): weeks 2 and 4, at --rerun 0 (and the honest ones at 3), timed.
#   bash results/issue47/grade_handins.sh OUT   (OUT as honest_handins.sh's; run from a checkout)
set -u
OUT=${1:-/tmp/h47}
PY=$(pwd)/.venv/bin/python
RUBRIC=results/issue47/rubric_weeks_2_4.json
echo "commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ); nproc $(nproc)"
ivan="$OUT/ivan/results"
for how in plain smarter stating; do
  mkdir -p "$OUT/fab-$how"
  $PY results/issue47/fabricate.py "$ivan/citations_json_30.json" "$OUT/fab-$how/citations_json_30.json" --how $how
  RAG_STUDENT=ivan $PY -m grading.handin "$ivan/retrieval.json" "$OUT/fab-$how/citations_json_30.json" --student ivan \
      --out "$OUT/others/$how/handin-ivan.tar.gz" > /dev/null 2>&1
done
mkdir -p "$OUT/others/copies"
cp "$OUT/subs/handin-ivan.tar.gz" "$OUT/others/copies/handin-erin.tar.gz"           # a classmate's, renamed
$PY -m grading.handin results/retrieval.json results/citations_json_30.json --student dave \
    --out "$OUT/others/copies/handin-dave.tar.gz" > /dev/null 2>&1                   # the committed results/
for rr in 0 3; do   # the fabricated and copied hand-ins at --rerun 0 (a re-run cannot clear them: it makes the
  # course's answer, which they do not hold); the honest ones at both
  for subs in "$OUT/subs" $([ $rr = 0 ] && echo "$OUT/others/plain $OUT/others/smarter $OUT/others/stating $OUT/others/copies"); do
    echo; echo "## $(basename $subs), --rerun $rr"
    t=$(date +%s.%N)
    RAG_ENGINE_BUILD=native RAG_INDEX_DIR="$OUT/ref-rag" $PY -m grading.grade "$subs" --rubric $RUBRIC \
        --reference "$OUT/ref" --rerun $rr --out "$OUT/graded-$(basename $subs)-$rr" \
        --json "$OUT/graded-$(basename $subs)-$rr.json" 2>/dev/null | grep -v "^wrote\|^|---"
    echo "time: $(echo "$(date +%s.%N) - $t" | bc) s"
  done
done
# the model on a server: the same weights behind the Ollama API (python llm.py --serve), the grader as its client
echo; echo "## subs, --rerun 3, the model on a server (python llm.py --serve)"
PORT=11497
RAG_ENGINE_BUILD=native $PY llm.py --serve --port $PORT > "$OUT/serve.log" 2>&1 &
SP=$!
for i in $(seq 60); do grep -q serving "$OUT/serve.log" && break; sleep 2; done
t=$(date +%s.%N)
OLLAMA_HOST=http://127.0.0.1:$PORT RAG_LLM=ollama RAG_MODEL=qwen2.5-coder:1.5b-instruct-q4_K_M RAG_INDEX_DIR="$OUT/ref-rag" \
    $PY -m grading.grade "$OUT/subs" --rubric $RUBRIC --reference "$OUT/ref" --rerun 3 --out "$OUT/graded-subs-server" \
    --json "$OUT/graded-subs-server.json" 2>/dev/null | grep -v "^wrote\|^|---"
echo "time: $(echo "$(date +%s.%N) - $t" | bc) s"
kill $SP
