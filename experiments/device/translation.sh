#!/usr/bin/env bash
# On the GPU machine: the 100% runs of the translation study (experiments/translation.py: arms baseline, syntax,
# shuffled_tags, random_tags; seeds 1-3, then 4-5), STEPS updates each, the same for every arm, a validation (loss,
# checkpoint choice, a point of the dev-BLEU curve) every EVAL_STEPS updates; fp32, one CPU thread per process.
# WORKERS processes share the GPU and take one run at a time from a queue (seed-major, so that a stopped queue
# leaves whole seeds) that leaves out every run the archive of the checkout already holds
# (docs/results/runs/translation_steps<STEPS>/f1/, committed or not: untracked files travel with a call). Each
# process translates with the parses packed by pack_translation.sh (`--parser jsonl:FILE`; the machine has no spaCy).
# A finished run is archived at once (`translation.py archive`: hypotheses, metrics.json, dev_bleu.json). The
# workers run in their own sessions, so they outlive the call while the machine stays warm; the call waits until
# every run is done or LIMIT seconds after its start are close, then copies what is archived into
# $OUT/translation_steps<STEPS>/ and reports progress (the dev-BLEU curve so far of each unfinished run too). Calling
# it again while the machine is warm only waits and copies; on a fresh machine the queue starts again from the archive.
#     bash experiments/device/translation.sh [STEPS] [WORKERS] [LIMIT]      (default 3000 updates, 12 workers, 560 s)
# carry [".device/trdata", ".device/wheels"] (made here by experiments/device/pack_translation.sh).
# Environment: SEEDS ("1 2 3 4 5"), ARMS, EVAL_STEPS (200), FRACTION (1.0; 0.1 for a check on the CPU), STOP=1
# (end the workers before returning; a next call on the same machine queues again what is not archived, an
# interrupted run going on from its checkpoint), TR_ROOT (the machine's working folder, /tmp/translation_device),
# PY (python3).
STEPS=${1:-3000}; N=${2:-12}; LIMIT=${3:-560}
: "${OUT:?set OUT, the folder whose files come back (the device machine sets it)}"
source experiments/device/setup.sh
export PY=${PY:-python3} STEPS EVAL=${EVAL_STEPS:-200} FRACTION=${FRACTION:-1.0}
export ROOT=${TR_ROOT:-/tmp/translation_device}
NAME=translation$([ "$STEPS" = 400 ] || echo "_steps$STEPS")
F=f$(printf %g "$FRACTION")  # translation.py's folder name of the fraction
export RUNS=$ROOT/runs/$NAME ARCHIVE=$ROOT/archive/$NAME Q=$ROOT/queue/$NAME.$F
export SYNTAXFORMER_DATA=$ROOT/data SYNTAXFORMER_CACHE=$ROOT/cache OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
if [ ! -f $Q/jobs ]; then
    mkdir -p $Q $SYNTAXFORMER_DATA "$OUT"
    tar xJf .device/trdata/data.tar.xz -C $SYNTAXFORMER_DATA
    xz -dc .device/trdata/parses.jsonl.xz > $ROOT/parses.jsonl
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
      $PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    } | tee "$OUT/device.txt"
    for seed in ${SEEDS:-1 2 3 4 5}; do
        for arm in ${ARMS:-baseline syntax shuffled_tags random_tags}; do
            rec=$F/$arm/seed$seed/metrics.json
            [ -f docs/results/runs/$NAME/$rec ] || [ -f $ARCHIVE/$rec ] || echo "$arm $seed"
        done
    done > $Q/jobs
    echo 0 > $Q/next
    cat > $Q/worker.sh <<'EOF'
# one worker: take the next run of the queue (under a lock) until none is left; archive each finished run
while true; do
    n=$(flock $Q/lock bash -c "n=\$(cat $Q/next); echo \$((n + 1)) > $Q/next; echo \$n")
    job=$(sed -n "$((n + 1))p" $Q/jobs)
    [ -z "$job" ] && break
    set -- $job
    echo "start $1 seed$2 $(date -u +%T)"
    $PY experiments/translation.py run --fractions $FRACTION --arms $1 --seeds $2 --max-steps $STEPS \
        --eval-steps $EVAL --mixed-precision no --parser jsonl:$ROOT/parses.jsonl --out $RUNS --no-progress \
        || echo "FAILED $1 seed$2"
    flock $Q/lock $PY experiments/translation.py archive --out $RUNS --to $ARCHIVE
done
EOF
    jobs=$(wc -l < $Q/jobs)
    echo "$jobs runs queued ($STEPS updates, validation every $EVAL) for $N workers"
    # the first run learns the BPE vocabularies the arms share (runs/.../tokenizers); the others start once it has
    # written them, so that no run reads them half-written
    for i in $(seq 1 $((N < jobs ? N : jobs))); do
        setsid nohup bash $Q/worker.sh > $ROOT/worker$i.log 2>&1 &
        echo $! >> $Q/pids
        while [ "$i" = 1 ] && [ "$jobs" -gt 1 ] && ! ls $RUNS/$F/*/seed*/target_tokenizer/tokenizer.json \
            >/dev/null 2>&1 && pgrep -f "$Q/worker.sh" >/dev/null && [ $SECONDS -lt $((LIMIT - 30)) ]; do sleep 2; done
    done
fi
while pgrep -f "$Q/worker.sh" >/dev/null && [ $SECONDS -lt $((LIMIT - 25)) ]; do sleep 5; done
queued=$(wc -l < $Q/jobs)
if [ "${STOP:-0}" = 1 ] && [ -f $Q/pids ]; then  # each worker leads its own session: end its process group
    while read -r pid; do kill -- -"$pid" 2>/dev/null; done < $Q/pids
    mv $Q/jobs $Q/jobs.stopped && rm $Q/pids  # a next call queues again what is not archived (resuming checkpoints)
fi
mkdir -p "$OUT"
[ -d $ARCHIVE ] && cp -r $ARCHIVE "$OUT/"
{
    echo "$(date -u +%T) queue position $(cat $Q/next) of $queued; workers running: $(pgrep -fc "$Q/worker.sh")"
    for run in $RUNS/$F/*/seed*; do
        [ -d "$run" ] || continue
        state=running; [ -f $run/metrics.json ] && state=finished
        echo "$state ${run#$RUNS/} $(tail -c 40 $run/dev_bleu.json 2>/dev/null | tr -d ' \n')"
        if [ $state = running ] && [ -f $run/dev_bleu.json ]; then
            mkdir -p "$OUT/partial/${run#$RUNS/}" && cp $run/dev_bleu.json "$OUT/partial/${run#$RUNS/}/"
        fi
    done
} | tee "$OUT/progress.txt"
grep -h '"fraction"\|FAILED\|Error' $ROOT/worker*.log > "$OUT/finished.txt"
grep -h "FAILED\|Error" "$OUT/finished.txt" | head
tail -n 3 $ROOT/worker1.log | tail -c 1500
