#!/usr/bin/env bash
# On the GPU machine: the GLUE sweep (docs/results.md) in N processes sharing the GPU, started in its own session so that it
# outlives this call while the machine stays warm; waits up to WAIT seconds, then packs every finished run (no
# weights) into $OUT/runs.tgz. Call it again within the machine's 30 s warm window to keep waiting; a run whose
# metrics came back in an earlier call is skipped when runs/ is carried back (the sweep resumes per run).
#     bash experiments/device/sweep.sh "--tasks cola,rte --variants baseline_default,sgnet_default --seeds 1,2,3" 8 560
# carry [".device/model", ".device/sweepdata"] (+ "runs/glue_sweep_gpu" to resume).
ARGS=$1; N=${2:-8}; WAIT=${3:-540}
source experiments/device/setup.sh
[ -f /tmp/parses.jsonl ] || xz -dc .device/sweepdata/parses.jsonl.xz > /tmp/parses.jsonl
if ! pgrep -f sgnet_glue.py > /dev/null; then
    for i in $(seq 0 $((N - 1))); do
        SYNTAXFORMER_DATA=.device/sweepdata SYNTAXFORMER_CACHE=/tmp/sfc OMP_NUM_THREADS=1 setsid nohup python3 \
            experiments/sgnet_glue.py run --preset gpu --parser jsonl:/tmp/parses.jsonl --out runs/glue_sweep_gpu \
            --shard $i/$N $ARGS > /tmp/sweep$i.log 2>&1 &
    done
fi
end=$((SECONDS + WAIT))
while pgrep -f sgnet_glue.py > /dev/null && [ $SECONDS -lt $end ]; do sleep 10; done
grep -h '"variant"' /tmp/sweep*.log | tee "$OUT/finished.jsonl" | wc -l
tail -n 3 /tmp/sweep*.log | tail -c 3000
tar czf "$OUT/runs.tgz" --exclude='*.safetensors' --exclude='checkpoint-*' runs/glue_sweep_gpu
