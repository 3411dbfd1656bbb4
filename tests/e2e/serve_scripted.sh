#!/bin/sh
# serve_scripted.sh - reasoning and tool calls that a model really emits,
# end to end through nginx with the official openai SDK: the REAL engine
# runs the scripted fixture model (tests/fixtures/scripted_model.h, written
# here by tests/fixtures/mk_scripted with tests/fixtures/scripted_template.
# jinja embedded), whose greedy output follows scripts chosen by trigger
# words: <think> reasoning, then <tool_call> markup split across tokens, an
# answer after a <tool_response>, two calls, or broken markup.
#  1. the model's own template (parsers detected from it): the full SDK
#     suite scripted.test.mjs;
#  2. --chat-template tests/e2e/tools_template.jinja (the override path):
#     the same scripts through the other template.
# Also `llm-fcgi generate` on the fixture. Emits TAP.
. "$(dirname "$0")/lib.sh"

MODEL_FILE=$E2E_TMP/scripted.gguf
need nginx node binary openai
scripted_model "$MODEL_FILE"
ok $? "mk_scripted writes the fixture model"
need model

# the engine alone: a raw ChatML prompt with the trigger, greedy
prompt=$(printf '<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\nX')
prompt=${prompt%X} # keep the final newline: the script starts after it
out=$("$LLM_FCGI" generate -m "$MODEL_FILE" --temp 0 -n 32 -t 1 --json "$prompt" 2>"$E2E_TMP/gen.log")
text=$(printf '%s' "$out" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{process.stdout.write(JSON.parse(s).text)}catch(e){process.stdout.write("bad json: "+s.slice(0,200))}})')
want='<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
[ "$text" = "$want" ]
ok $? "generate: the fixture emits the scripted call (got: $text)"

serve() {
    start_server "$LLM_FCGI" serve -m "$MODEL_FILE" --served-model-name scripted --api-key sk-scripted \
        --parallel 2 --threads 1 --ctx-size 2048 "$@"
}

if ! serve; then
    ok 1 "llm-fcgi starts on the fixture"
    e2e_done
    exit 1
fi
grep -q "using the model's chat template; reasoning parser qwen3 (detected); tool-call parser hermes (detected)" "$E2E_TMP/llm.log"
ok $? "start-up log: the model's template, qwen3 and hermes detected from it"
BASE=$BASE API_KEY=sk-scripted MODEL=scripted SUITE=model run_node "$TOP_SRCDIR/tests/e2e/scripted.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"

if ! serve --chat-template "$TOP_SRCDIR/tests/e2e/tools_template.jinja"; then
    ok 1 "llm-fcgi starts on the fixture with --chat-template"
    e2e_done
    exit 1
fi
grep -q 'using the --chat-template file; reasoning parser qwen3 (detected); tool-call parser hermes (detected)' "$E2E_TMP/llm.log"
ok $? "start-up log: the --chat-template file, qwen3 and hermes detected from it"
BASE=$BASE API_KEY=sk-scripted MODEL=scripted SUITE=override run_node "$TOP_SRCDIR/tests/e2e/scripted.test.mjs"
stop_server
ok $([ "$LLM_STATUS" = 0 ]; echo $?) "SIGTERM: exit 0 (got $LLM_STATUS)"
e2e_done
