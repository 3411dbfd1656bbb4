#!/bin/sh
# serve_spec.sh - speculative decoding end to end (issue 27) through nginx
# with the REAL engine on stories260K.gguf: references from a server with
# --spec none, then the same requests with predictions (and n-gram drafts)
# on a server with --spec ngram must give the same answers; the usage
# fields of Predicted Outputs checked against the references (a fixed
# --spec-row-cost: the counts do not depend on this machine's timings);
# the same on the hybrid tinyqwen35-f32.
# Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary openai
REFS=$E2E_TMP/spec-refs.json

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-spec \
        --parallel 4 --threads 1 --ctx-size 1024 --spec none; then
    ok 1 "llm-fcgi starts with --spec none"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (--spec none: the references)"
BASE=$BASE API_KEY=sk-spec MODEL=stories PHASE=record REFS=$REFS run_node "$TOP_SRCDIR/tests/e2e/spec.test.mjs"
stop_server

if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-spec \
        --parallel 4 --threads 1 --ctx-size 1024 --spec ngram --spec-row-cost 0.05; then
    ok 1 "llm-fcgi starts with --spec ngram"
    e2e_done
    exit 1
fi
ok 0 "nginx + llm-fcgi start (--spec ngram)"
BASE=$BASE API_KEY=sk-spec MODEL=stories PHASE=check REFS=$REFS run_node "$TOP_SRCDIR/tests/e2e/spec.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

# a draft model (the Q4_0 quantization of the same model) drafts for the
# requests: the same answers again
DRAFT=$(dirname "$MODEL_FILE")/stories260K-q4_0.gguf
if start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-spec \
        --parallel 4 --threads 1 --ctx-size 1024 --model-draft "$DRAFT" --spec-row-cost 0.05; then
    ok 0 "nginx + llm-fcgi start with --model-draft"
    BASE=$BASE API_KEY=sk-spec MODEL=stories PHASE=check REFS=$REFS DRAFT_MODEL=1 run_node "$TOP_SRCDIR/tests/e2e/spec.test.mjs"
    stop_server
else
    ok 1 "llm-fcgi starts with --model-draft"
fi
# a hybrid (Gated DeltaNet layers with a recurrent state, rolled back to a
# checkpoint when drafts are rejected): the same answers with speculation,
# n-grams or its own MTP block drafting
HYBRID=$(dirname "$MODEL_FILE")/tinyqwen35-f32.gguf
for spec in none ngram mtp; do
    phase=check
    [ $spec = none ] && phase=record
    if start_server "$LLM_FCGI" serve -m "$HYBRID" --served-model-name tinyqwen35 --api-key sk-spec \
            --parallel 4 --threads 1 --ctx-size 1024 --spec $spec --spec-row-cost 0.05; then
        ok 0 "nginx + llm-fcgi start with tinyqwen35 (--spec $spec)"
        BASE=$BASE API_KEY=sk-spec MODEL=tinyqwen35 PHASE=$phase REFS=$E2E_TMP/spec-refs-hybrid.json NO_NGRAM=1 \
            run_node "$TOP_SRCDIR/tests/e2e/spec.test.mjs"
        stop_server
    else
        ok 1 "llm-fcgi starts with tinyqwen35 (--spec $spec)"
    fi
done

"$LLM_FCGI" serve -m "$MODEL_FILE" --model-draft "$(dirname "$MODEL_FILE")/tinyqwen2-q8_0.gguf" --socket "$E2E_TMP/x.sock" \
    >/dev/null 2>"$E2E_TMP/draft.err"
st=$?
ok $([ $st = 1 ] && grep -q 'cannot draft for this model: the draft model.s tokenizer is gpt2' "$E2E_TMP/draft.err"; echo $?) \
    "a draft model with another vocabulary: refused at start, naming the difference (exit $st)"
"$LLM_FCGI" serve -m "$MODEL_FILE" --spec always >/dev/null 2>"$E2E_TMP/spec.err"
ok $([ $? = 2 ] && grep -q 'expected ngram, mtp or none' "$E2E_TMP/spec.err"; echo $?) "--spec with an unknown source: usage error"
e2e_done
