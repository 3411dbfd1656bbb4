#!/bin/sh
# gen-man.sh - writes the llm-fcgi(1) manual page to stdout, generated from
# the binary's own help (`llm-fcgi help` and `llm-fcgi COMMAND --help` for
# every command it lists), so the page and the program cannot drift apart.
#
#   scripts/gen-man.sh ./llm-fcgi VERSION > llm-fcgi.1
#
# The date is $SOURCE_DATE_EPOCH's (reproducible builds), else today's.
# Help text conventions it relies on: a "usage: " line (continued by more
# indented lines), option lines starting with spaces and '-' whose
# description follows after two or more spaces (continued on deeper-indented
# lines), section lines ending in ':' at column 0, paragraphs between.
set -e
bin=$1
version=${2:-$("$bin" --version | sed 's/^llm-fcgi //')}
if [ -n "$SOURCE_DATE_EPOCH" ]; then
    date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
    date=$(date -u +%Y-%m-%d)
fi
commands=$("$bin" help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | grep -v '^help$')

# help text on stdin -> man(7) markup
to_roff() {
    awk '
    function esc(s) {
        gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
        if (s ~ /^[.\047]/) s = "\\&" s
        return s
    }
    function flush_opt() {
        if (opt != "") { print ".TP"; print "\\fB" esc(opt) "\\fR"; if (desc != "") print esc(desc) }
        opt = ""; desc = ""
    }
    BEGIN { mode = "text" }
    /^usage: / {
        flush_opt(); sub(/^usage: /, ""); print ".PP"; print ".nf"; print esc($0); mode = "usage"; next
    }
    mode == "usage" && /^      / { sub(/^ +/, "       "); print esc($0); next }
    mode == "usage" { print ".fi"; mode = "text" }
    /^$/ { flush_opt(); print ".PP"; mode = "text"; next }
    /^ +-/ {
        flush_opt()
        line = $0; sub(/^ +/, "", line)
        if (match(line, /  +/)) { opt = substr(line, 1, RSTART - 1); desc = substr(line, RSTART + RLENGTH) }
        else { opt = line; desc = "" }
        mode = "opt"; next
    }
    mode == "opt" && /^      / { line = $0; sub(/^ +/, "", line); desc = desc " " line; next }
    /^[A-Za-z][^:]*:$/ { flush_opt(); print ".PP"; print "\\fB" esc($0) "\\fR"; mode = "text"; next }
    { flush_opt(); line = $0; sub(/^ +/, "", line); print esc(line); mode = "text" }
    END { flush_opt(); if (mode == "usage") print ".fi" }
    '
}

cat <<EOF
.TH LLM\\-FCGI 1 "$date" "llm-fcgi $version" "User Commands"
.SH NAME
llm\\-fcgi \\- OpenAI\\-compatible LLM inference server for nginx (FastCGI)
.SH SYNOPSIS
.B llm\\-fcgi
.I COMMAND
.RI [ OPTIONS ]
.br
.B llm\\-fcgi help
.br
.B llm\\-fcgi
.I COMMAND
.B \\-\\-help
.SH DESCRIPTION
.B llm\\-fcgi
loads a GGUF model (the llama.cpp file format), runs it on the CPU with its
own inference engine and answers the OpenAI API (chat completions,
completions, models, tokenize) over FastCGI behind nginx or lighttpd, which
do TLS, routing and body limits. It also downloads models from a Hugging
Face\\-style hub, and inspects, tokenizes, generates with and benchmarks
models on the command line.
.PP
Installed as a Debian package, it runs as the systemd service
.B llm\\-fcgi.service
started by
.BR llm\\-fcgi.socket ,
which owns the FastCGI socket; nginx serves the API and a chat page through
.IR /etc/nginx/snippets/llm\\-fcgi.conf .
.SH COMMANDS
Each command is described by its own help, reproduced here.
EOF
for c in $commands; do
    summary=$("$bin" help | sed -n "s/^  $c  *//p")
    printf '.SS "llm\\-fcgi %s"\n' "$(echo "$c" | sed 's/-/\\-/g')"
    printf '%s\n' "$summary" | to_roff
    "$bin" "$c" --help | to_roff
done
cat <<'EOF'
.SH ENVIRONMENT
Every option of
.B serve
can be given as the
.B LLM_*
variable shown in brackets after it; a flag wins. Others:
.TP
.B LLM_MODELS_DIR
where
.B pull
(and
.B serve \-m OWNER/NAME:QUANT\fR)
keep models; default
.IR ~/.cache/llm\-fcgi ,
.I /var/lib/llm\-fcgi/models
for the service.
.TP
.B HF_ENDPOINT
the hub (default https://huggingface.co), e.g. a mirror.
.TP
.B HF_TOKEN
a token for private or gated repositories, sent to the hub only.
.TP
.B LLM_FCGI_ISA
selects the SIMD level of the engine's kernels instead of the best one the
CPU has:
.BR scalar ,
.BR avx2 ,
.B avxvnni
(AVX2 with AVX-VNNI)
or
.BR avx512 .
A level the CPU cannot run is refused at start, naming the CPU features it
lacks.
.TP
.B LLM_FCGI_CPU_DISABLE
comma-separated CPU features the kernels must not use (e.g.
.BR avx512f,avxvnni ),
as if the CPU lacked them:
.BR avx ,
.BR fma ,
.BR f16c ,
.BR avx2 ,
.BR os-ymm-state ,
.BR avxvnni ,
.BR avx512f ,
.BR avx512dq ,
.BR avx512bw ,
.BR avx512vl ,
.BR avx512vnni ,
.BR os-zmm-state .
.TP
.BR LISTEN_FDS ", " LISTEN_PID
systemd socket activation: with neither
.B \-\-socket
nor
.BR \-\-listen ,
.B serve
takes the listening socket systemd passed (fd 3), else a listening socket on
fd 0 (spawn\-fcgi, or systemd's StandardInput=socket).
.SH FILES
.TP
.I /etc/llm\-fcgi/llm\-fcgi.env
the service's settings (LLM_MODEL, keys, threads...); an instance
.B llm\-fcgi@NAME
reads
.IR /etc/llm\-fcgi/NAME.env .
.TP
.IR /lib/systemd/system/llm\-fcgi.socket ", " llm\-fcgi.service ", " llm\-fcgi@.socket ", " llm\-fcgi@.service
the units; the socket is
.I /run/llm\-fcgi/llm\-fcgi.sock
(instances:
.IR /run/llm\-fcgi/NAME.sock ),
mode 0660, group www\-data.
.TP
.IR /etc/nginx/snippets/llm\-fcgi.conf ", " /etc/nginx/conf.d/llm\-fcgi.conf
the API locations and chat page for a server block, and the upstream (with
the optional nginx\-side key check).
.TP
.I /usr/share/llm\-fcgi/
the chat page (www/), the production nginx site and the lighttpd example
(nginx/), unit templates (systemd/).
.TP
.I /var/lib/llm\-fcgi/models
models pulled by the service.
.SH EXIT STATUS
0 on success (for
.BR serve ,
a clean stop), 1 on a runtime failure (a model that cannot be loaded or
downloaded, a socket that cannot be opened), 2 on a usage error.
.SH EXAMPLES
.nf
llm\-fcgi pull HuggingFaceTB/SmolLM2\-135M\-Instruct\-GGUF:Q8_0
llm\-fcgi serve \-m HuggingFaceTB/SmolLM2\-135M\-Instruct\-GGUF:Q8_0 \e
    \-\-socket /tmp/llm.sock \-\-parallel 8
llm\-fcgi info ~/.cache/llm\-fcgi/HuggingFaceTB/SmolLM2\-135M\-Instruct\-GGUF/*.gguf
sudoedit /etc/llm\-fcgi/llm\-fcgi.env && sudo systemctl restart llm\-fcgi
.fi
.SH SEE ALSO
.BR nginx (8),
.BR systemd.socket (5),
.BR systemd.exec (5),
.BR spawn\-fcgi (1),
.BR lighttpd (8)
EOF
