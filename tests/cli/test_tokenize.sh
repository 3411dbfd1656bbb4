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
