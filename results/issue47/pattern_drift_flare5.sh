# FLARE rows made on the wheel build (ivan's draw, --eval 5) against the same made on native, drift.py's verdict per row.
#   bash results/issue47/pattern_drift_flare5.sh   (after honest_handins.sh: its /tmp/h47 folders)
# run from a checkout
PY=$(pwd)/.venv/bin/python
echo "commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ)"
t=$(date +%s)
RAG_INDEX_DIR=/tmp/h47/ivan/rag RAG_ENGINE_BUILD=wheel RAG_STUDENT=ivan $PY flare.py --eval 5 --json /tmp/h47/ivan/results/flare5.json > /tmp/h47/ivan/flare5.log 2>&1
echo "ivan wheel flare --eval 5: exit $?, $(( $(date +%s) - t )) s"; t=$(date +%s)
RAG_INDEX_DIR=/tmp/h47/ref-rag RAG_ENGINE_BUILD=native RAG_STUDENT=ivan $PY flare.py --eval 5 --json /tmp/h47/ref/ivan.flare5.json > /tmp/h47/ref/flare5.log 2>&1
echo "reference native flare --eval 5: exit $?, $(( $(date +%s) - t )) s"
RAG_INDEX_DIR=/tmp/h47/ref-rag $PY results/issue47/pattern_drift.py /tmp/h47/ivan/results/flare5.json /tmp/h47/ref/ivan.flare5.json --json /tmp/h47/pattern_drift_flare5.json
echo done
