#!/usr/bin/env bash
# On the GPU machine: the "where does syntax help?" runs of docs/results.md on the GPU's full-data preset (every
# training set whole, 3 epochs; fp32), in N worker processes that share the GPU and pull one run at a time from a
# queue (seed-major, so that a stopped queue leaves whole seeds):
#   1. syntactic generalisation: seven systems trained on all of CoLA, each scored on BLiMP (runs/gpu/cola_blimp);
#   2. learning curves: CoLA 100 / 1,000 and SST-2 100 / 1,000 / 10,000 training sentences for the plain encoder,
#      SG-Net and gated Syntax-BERT, the random-tree controls at 100 (runs/gpu/learning_curves; at least 200
#      optimisation steps, as on the CPU). CoLA's "all" point is step 1's runs.
# The workers run in their own session, so they outlive this call while the machine stays warm; the script waits up
# to WAIT seconds, then archives every finished run (metrics, dev predictions, suite report and compact per-pair
# records; no weights) into $OUT/study.tgz. Calling it again while the machine is warm only waits and archives.
#     bash experiments/device/study.sh [N] [WAIT]          (default 16 workers, 540 s)
# carry [".device/model", ".device/studydata"] (made here by experiments/device/pack_study.sh).
# Runs already in the committed archive (docs/results/runs/cola_blimp_gpu_preset/, learning_curves_gpu_preset/) are
# not queued. Extract study.tgz here and copy its folders into those two (cola_blimp_gpu -> cola_blimp_gpu_preset,
# learning_curves_gpu -> learning_curves_gpu_preset).
N=${1:-16}; WAIT=${2:-540}
source experiments/device/setup.sh
export SYNTAXFORMER_DATA=/tmp/studydata SYNTAXFORMER_CACHE=/tmp/sfc OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
Q=/tmp/study_queue
if [ ! -f $Q/jobs ]; then
    mkdir -p $Q $SYNTAXFORMER_DATA
    tar xJf .device/studydata/data.tar.xz -C $SYNTAXFORMER_DATA
    xz -dc .device/studydata/parses.jsonl.xz > /tmp/parses.jsonl
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/device.txt"
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
        | tee -a "$OUT/device.txt"
    bash experiments/device/study_jobs.sh all > $Q/jobs  # what the committed archive lacks, in order
    echo 0 > $Q/next
    cat > $Q/worker.sh <<'EOF'
# one worker: take the next line of the queue (under a lock) until none is left
while true; do
    n=$(flock $Q/lock bash -c "n=\$(cat $Q/next); echo \$((n + 1)) > $Q/next; echo \$n")
    job=$(sed -n "$((n + 1))p" $Q/jobs)
    [ -z "$job" ] && break
    python3 experiments/sgnet_glue.py run --preset gpu --mixed-precision no --parser jsonl:/tmp/parses.jsonl $job \
        || echo "FAILED job $n: $job"
done
EOF
    for i in $(seq 1 "$N"); do Q=$Q setsid nohup bash $Q/worker.sh > /tmp/study_worker$i.log 2>&1 & done
    echo "$(wc -l < $Q/jobs) runs queued for $N workers"
fi
end=$((SECONDS + WAIT))
while pgrep -f worker.sh > /dev/null && [ $SECONDS -lt $end ]; do
    sleep 15
    [ $((SECONDS % 120)) -lt 15 ] && nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
done
echo "queue position $(cat $Q/next) of $(wc -l < $Q/jobs); workers running: $(pgrep -fc worker.sh)"
grep -h '"variant"\|"suite_s"\|FAILED\|Error' /tmp/study_worker*.log > "$OUT/finished.txt"
grep -c '"variant"' "$OUT/finished.txt"; grep -c '"suite_s"' "$OUT/finished.txt"; grep -h "FAILED\|Error" "$OUT/finished.txt" | head
rm -rf /tmp/study_archive
for part in cola_blimp learning_curves; do
    [ -d runs/gpu/$part ] && python3 experiments/sgnet_glue.py archive --out runs/gpu/$part --to /tmp/study_archive/${part}_gpu \
        | tail -c 300
done
tar czf "$OUT/study.tgz" -C /tmp/study_archive . && ls -la "$OUT"
tail -n 2 /tmp/study_worker1.log | tail -c 1500
