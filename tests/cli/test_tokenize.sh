#!/bin/sh
# test_tokenize.sh - the `llm-fcgi tokenize` subcommand: output formats,
# BOS handling, special-token parsing and exit codes (TAP).
bin=${LLM_FCGI:-./llm-fcgi}
models=${LLM_MODELS_DIR:-../shared/models}
n=0
failed=0
check() { # check NAME EXPECTED ACTUAL
    n=$((n + 1))
    if [ "$2" = "$3" ]; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        echo "# want: $2"
        echo "# got:  $3"
        failed=1
    fi
}
st="$models/stories260K.gguf"
check "json ids with BOS" "[1, 403, 407, 261, 378]" "$("$bin" tokenize -m "$st" --json "Once upon a time")"
check "--no-bos drops BOS" "[403, 407, 261, 378]" "$("$bin" tokenize -m "$st" --json --no-bos "Once upon a time")"
check "default output is id<TAB>piece" "$(printf '1\t<s>\n403\t Once')" "$("$bin" tokenize -m "$st" "Once")"
check "--parse-special makes </s> id 2" "[1, 261, 2]" "$("$bin" tokenize -m "$st" --json --parse-special "a</s>")"
check "TEXT from stdin with -" "[1, 403]" "$(printf 'Once' | "$bin" tokenize -m "$st" --json -)"
check "tinyqwen2 adds no BOS" "[15496]" "$("$bin" tokenize -m "$models/tinyqwen2-f16.gguf" --json "Hello")"
# vocabulary-only GGUFs of architectures the engine may not run
tok=${LLM_GOLDEN_DIR:-../shared/golden}/tokenizer
g4="$tok/ggml-vocab-gemma-4.gguf"
check "gemma-4 vocabulary adds BOS" "[2, 9259, 1902]" "$("$bin" tokenize -m "$g4" --json "Hello world")"
check "gemma-4 spaces and newlines" "[26352, 138, 12392, 108, 30986]" \
    "$("$bin" tokenize -m "$g4" --json --no-bos "$(printf ' Hello  world\n\nbye')")"
check "gemma-4 id<TAB>piece shows spaces" "$(printf '26352\t Hello')" "$("$bin" tokenize -m "$g4" --no-bos " Hello")"
q35="$tok/ggml-vocab-qwen35.gguf"
check "qwen35 decomposed accents" "[265, 53839, 31323, 53839]" \
    "$("$bin" tokenize -m "$q35" --json "$(printf 're\314\201sume\314\201')")"
"$bin" tokenize -m "$q35" --json x 2>"${TMPDIR:-/tmp}/tok_err.$$" >/dev/null
check "qwen35 loads without a pre-tokenizer warning" "" "$(cat "${TMPDIR:-/tmp}/tok_err.$$")"
rm -f "${TMPDIR:-/tmp}/tok_err.$$"
check "command-r adds its BOS" "[5, 28339, 3845]" "$("$bin" tokenize -m "$tok/ggml-vocab-command-r.gguf" --json "Hello world")"
check "qwen2 </s> is a control token with --parse-special" "[128247]" \
    "$("$bin" tokenize -m "$tok/ggml-vocab-qwen2.gguf" --json --parse-special "</s>")"
check "a model of another architecture (gpt-oss, MXFP4 experts) still tokenizes" "[1, 403, 407, 261, 378]" \
    "$("$bin" tokenize -m "$models/tinygptoss-mxfp4_moe.gguf" --json "Once upon a time")"
"$bin" tokenize -m "$st" >/dev/null 2>&1
check "missing TEXT exits 2" 2 $?
"$bin" tokenize --bogus -m "$st" x >/dev/null 2>&1
check "unknown option exits 2" 2 $?
"$bin" tokenize -m /nonexistent.gguf x >/dev/null 2>&1
check "missing model exits 1" 1 $?
"$bin" tokenize -m "$0" x >/dev/null 2>&1
check "non-GGUF model exits 1" 1 $?
echo "1..$n"
exit $failed
