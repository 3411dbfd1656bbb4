#!/bin/sh
# test_man_page.sh - llm-fcgi(1), generated from the binary's help at build
# time (scripts/gen-man.sh), documents every command `llm-fcgi help` lists
# and every option any `llm-fcgi COMMAND --help` mentions, and is clean man
# markup (groff warnings, which lintian also reports). Emits TAP.
n=0; failed=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
bin=${LLM_FCGI:?}
page=$(dirname "$bin")/llm-fcgi.1
[ -f "$page" ]; ok $? "llm-fcgi.1 was built next to the binary"
[ -f "$page" ] || { echo "1..$n"; exit 1; }
text=$(mktemp)
trap 'rm -f "$text"' EXIT
MANWIDTH=200 MAN_KEEP_FORMATTING= man -l "$page" 2>/dev/null | col -b >"$text"
grep -q '^NAME' "$text" && grep -q 'llm-fcgi - OpenAI-compatible' "$text"; ok $? "renders with man, NAME section"
warn=$(groff -man -ww -z "$page" 2>&1)
ok $([ -z "$warn" ]; echo $?) "no groff warnings${warn:+: $warn}"
grep -q "^\.TH LLM\\\\-FCGI 1 .*\"llm-fcgi $("$bin" --version | sed 's/^llm-fcgi //')\"" "$page"
ok $? "the title line carries this build's version"
commands=$("$bin" help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | grep -v '^help$')
for c in $commands; do
    grep -q "^   llm-fcgi $c\$" "$text"; ok $? "a section for llm-fcgi $c"
    missing=
    for o in $("$bin" "$c" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
        sed -n "/^   llm-fcgi $c\$/,/^   llm-fcgi /p" "$text" | grep -q -- "$o" || missing="$missing $o"
    done
    ok $([ -z "$missing" ]; echo $?) "llm-fcgi $c: every option of its --help is in the page${missing:+ (missing:$missing)}"
done
for s in ENVIRONMENT FILES 'EXIT STATUS' 'SEE ALSO'; do
    grep -q "^$s" "$text"; ok $? "section $s"
done
grep -q 'LLM_MODELS_DIR' "$text" && grep -q 'HF_ENDPOINT' "$text" && grep -q '/etc/llm-fcgi/llm-fcgi.env' "$text"
ok $? "documents LLM_MODELS_DIR, HF_ENDPOINT and the service's settings file"
echo "1..$n"
[ "$failed" -eq 0 ]
