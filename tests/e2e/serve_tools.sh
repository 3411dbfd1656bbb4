#!/bin/sh
# serve_tools.sh - chat templates, reasoning_content and tools end to end
# through nginx with the REAL engine on stories260K.gguf: llm-fcgi with
# --chat-template tests/e2e/tools_template.jinja (parsers detected from it)
# runs the SDK suite tools.test.mjs; then the model's own (missing) template:
# ChatML with a start-up warning, and tools without a tool-call parser are a
# 400. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=${LLM_MODELS_DIR:-$TOP_SRCDIR/../shared/models}/stories260K.gguf
need nginx node model binary openai

TMPL=$TOP_SRCDIR/tests/e2e/tools_template.jinja
if ! start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --api-key sk-tools \
        --parallel 2 --threads 1 --ctx-size 1024 --chat-template "$TMPL"; then
    ok 1 "llm-fcgi starts with --chat-template"
    e2e_done
    exit 1
fi
grep -q 'using the --chat-template file; reasoning parser qwen3 (detected); tool-call parser hermes (detected)' "$E2E_TMP/llm.log"
ok $? "start-up log: the template file, qwen3 and hermes detected from it"
BASE=$BASE API_KEY=sk-tools MODEL=stories run_node "$TOP_SRCDIR/tests/e2e/tools.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

# the model has no template: ChatML with a warning; no tool-call parser
start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name stories --threads 1 --ctx-size 1024
ok $? "llm-fcgi starts without --chat-template"
grep -q 'warning: the model has no chat template: using ChatML.*reasoning parser none (detected); tool-call parser none (detected)' "$E2E_TMP/llm.log"
ok $? "start-up log: warning, ChatML, no parsers"
r=$(c -H 'Content-Type: application/json' -d '{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"max_tokens":2}' \
    -w ' %{http_code}' "$BASE/v1/chat/completions")
case "$r" in *'parses no tool calls'*' 400') ok 0 "tools without a tool-call parser: 400";; *) ok 1 "tools without a tool-call parser: 400 ($r)";; esac
r=$(c -H 'Content-Type: application/json' -d '{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","max_tokens":2}' \
    -w ' %{http_code}' "$BASE/v1/chat/completions")
case "$r" in *' 200') ok 0 "tool_choice none: tools accepted, output not parsed";; *) ok 1 "tool_choice none ($r)";; esac
stop_server
"$LLM_FCGI" serve -m "$MODEL_FILE" --reasoning-parser nope >/dev/null 2>"$E2E_TMP/bad.log"
st=$?
ok $([ $st = 2 ] && grep -q 'deepseek_r1' "$E2E_TMP/bad.log"; echo $?) "--reasoning-parser nope: usage error (exit $st)"
"$LLM_FCGI" serve -m "$MODEL_FILE" --socket "$E2E_TMP/x.sock" --chat-template "$E2E_TMP/missing.jinja" >/dev/null 2>"$E2E_TMP/bad.log"
st=$?
ok $([ $st = 1 ] && grep -q 'cannot read --chat-template' "$E2E_TMP/bad.log"; echo $?) "--chat-template missing file: exit 1 (exit $st)"
e2e_done
