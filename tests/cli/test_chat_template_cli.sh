#!/bin/sh
# test_chat_template_cli.sh - `llm-fcgi chat-template` end to end (TAP).
bin=${LLM_FCGI:-./llm-fcgi}
models=${LLM_MODELS_DIR:-../shared/models}
golden=${LLM_GOLDEN_DIR:-../shared/golden}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
check() { # check NAME CONDITION-EXIT-STATUS
    n=$((n + 1))
    if [ "$2" -eq 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; fail=1; fi
}
req='{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"},{"role":"user","content":"Bye"}]}'

echo "$req" | "$bin" chat-template --template "$golden/templates/google-gemma-2-2b-it.jinja" \
    --bos '<bos>' --eos '<eos>' > "$tmp/out"
printf '<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n' > "$tmp/want"
cmp -s "$tmp/out" "$tmp/want"; check "gemma template from a file" $?

printf '{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ flag }}' > "$tmp/t.jinja"
echo '{"messages":[],"add_generation_prompt":false,"chat_template_kwargs":{"flag":7}}' |
    "$bin" chat-template -m "$models/stories260K.gguf" --template "$tmp/t.jinja" > "$tmp/out"
printf '<s>|</s>|False|7' > "$tmp/want"
cmp -s "$tmp/out" "$tmp/want"; check "bos/eos text from the GGUF vocabulary, kwargs merged" $?

echo "$req" | "$bin" chat-template -m "$models/stories260K.gguf" > "$tmp/out"
printf '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n' > "$tmp/want"
cmp -s "$tmp/out" "$tmp/want"; check "ChatML fallback without tokenizer.chat_template" $?

echo '{"messages":[{"role":"system","content":"x"}]}' |
    "$bin" chat-template --template "$golden/templates/google-gemma-2-2b-it.jinja" > /dev/null 2> "$tmp/err"
st=$?
[ $st -eq 1 ] && grep -q 'System role not supported' "$tmp/err"; check "raise_exception fails with the template's message" $?

echo 'not json' | "$bin" chat-template --template "$tmp/t.jinja" > /dev/null 2>&1
[ $? -eq 1 ]; check "bad JSON on stdin fails" $?

"$bin" chat-template < /dev/null > /dev/null 2>&1
[ $? -eq 2 ]; check "no template source is a usage error" $?

# the OpenAI wire form of an earlier call: arguments as a JSON string, content null
call='{"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call0Ab12","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},{"role":"tool","tool_call_id":"call0Ab12","content":"sunny"}]}'
echo "$call" | "$bin" chat-template --template "$golden/templates/Qwen3-Coder.jinja" > /dev/null 2> "$tmp/err"
[ $? -eq 1 ]; check "strict: Qwen3-Coder fails on string arguments, as transformers does" $?
echo "$call" | "$bin" chat-template --server --template "$golden/templates/Qwen3-Coder.jinja" > "$tmp/out" 2> "$tmp/err"
[ $? -eq 0 ] && grep -q 'arguments as objects' "$tmp/err" && grep -q '<parameter=city>' "$tmp/out" &&
    grep -q 'Paris' "$tmp/out"; check "--server: the string arguments rendered as the template needs" $?
echo "$call" | "$bin" chat-template --server --template "$golden/templates/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja" \
    > "$tmp/out" 2> "$tmp/err"
[ $? -eq 0 ] && grep -q 'arguments as JSON strings' "$tmp/err" && grep -q '{"city": "Paris"}' "$tmp/out"
check "--server: DeepSeek-R1 gets the JSON string" $?
echo "$call" | "$bin" chat-template --template "$golden/templates/Kimi-K2-Instruct.jinja" > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] && grep -q append "$tmp/err"; check "strict: Kimi K2's list.append fails, as in transformers" $?
echo "$call" | "$bin" chat-template --server --template "$golden/templates/Kimi-K2-Instruct.jinja" > "$tmp/out" 2>/dev/null
[ $? -eq 0 ] && grep -q 'tool_calls_section_begin' "$tmp/out"; check "--server: Kimi K2 renders (list.append allowed)" $?

echo "1..$n"
exit $fail
