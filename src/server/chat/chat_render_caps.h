/* chat_render_caps.h - what a chat template expects of the messages it is
 * given, found once at start-up, and the template's view of a request
 * built from it.
 *
 * OpenAI clients send an assistant's earlier tool calls with `arguments` as
 * a JSON string; Hugging Face templates mostly iterate or `tojson` it as an
 * object, while some (DeepSeek-R1, functionary) concatenate it as a string
 * and fail on an object. chat_caps_probe renders a probe conversation with
 * one tool call twice, arguments as an object and as the JSON string, and
 * looks for the argument's name in the output the way a model would have
 * seen it (JSON `"argument_needle":`, XML `<parameter=argument_needle>`,
 * `name="argument_needle"`, ...; a string that was re-escaped or a Python
 * repr does not count). Arguments go as strings when only the string form
 * shows, otherwise as objects (transformers' documented form, what vLLM
 * passes). llama.cpp probes its templates the same way.
 *
 * chat_caps_view then shapes a request's messages for the template as vLLM
 * does:
 *   - tool call arguments: parsed into objects, or kept as the client's
 *     JSON string, per the probe (a string that is not a JSON object stays
 *     a string);
 *   - content null becomes "" (unless the template needs null, above);
 *   - content given as text parts is joined with "\n" into a string unless
 *     the template loops over message content itself;
 *   - an assistant's reasoning, sent as `reasoning_content` (OpenAI SDKs,
 *     this server's replies) or `reasoning` (vLLM), is given under both
 *     names, and as `thinking` when the template reads that (gpt-oss,
 *     LFM2.5);
 *   - `developer` becomes `system` when the template never mentions the
 *     developer role;
 *   - the request's reasoning_effort becomes the template variable
 *     `reasoning_effort` when the template reads it (chat_template_kwargs
 *     win);
 *   - image parts: {"type": "image"} items for a template that iterates
 *     content and writes something for them (caps.image_marker), else the
 *     message becomes a string with CHAT_MEDIA_MARKER where the images go
 *     (text parts joined with "\n", not next to an image: llama-server's
 *     rule);
 *   - `functions`, `datetime` and `date_string` are given to templates that
 *     read them, as llama.cpp gives them (firefunction v2 needs the first
 *     two).
 *
 * All functions are pure over their inputs; caps are plain data.
 */
#ifndef LF_CHAT_RENDER_CAPS_H
#define LF_CHAT_RENDER_CAPS_H

#include <stdbool.h>
#include <time.h>

#include <json-c/json.h>

#include "chat/template/chat_template.h"
#include "server/request/request.h"

typedef struct chat_caps {
    bool args_as_string;   /* tool call arguments as the JSON string */
    bool null_content;     /* a null content stays null (else it becomes "") */
    bool content_parts;    /* the template iterates message content */
    bool knows_developer;  /* the template mentions the developer role */
    bool reads_thinking;   /* the template reads message.thinking */
    bool reads_effort;     /* the template reads reasoning_effort */
    bool reads_functions;  /* the template reads `functions` (firefunction v2) */
    bool reads_datetime;   /* ... `datetime` */
    bool reads_date_string;/* ... `date_string` */
    /* images (issue 29): what the template writes for a {"type": "image"}
     * content part (its own marker, e.g. "<start_of_image>"), "" when it
     * writes nothing for one (then an image goes in the text as
     * CHAT_MEDIA_MARKER, as llama-server does) */
    char image_marker[64];
} chat_caps_t;

/* Reads the template source and probes the compiled template (bos/eos may
 * be NULL). Never fails: a probe that cannot render counts as "not shown". */
void chat_caps_probe(const chat_template_t *t, const char *src, const char *bos, const char *eos, chat_caps_t *caps);

/* What the template renders for the probe conversation (a call, its
 * result, the generation prompt; the first form that renders): the markup
 * a model of this template writes, for parser detection when the template
 * builds it from variables. malloc'd, NULL when no form renders. */
char *chat_caps_probe_text(const chat_template_t *t, const char *bos, const char *eos);

/* The template's view of request req (its raw JSON and ext): an object
 * with messages, tools, documents, chat_template_kwargs and
 * add_generation_prompt, for chat_template_context. The variables llama.cpp
 * gives templates that read them join chat_template_kwargs (which win):
 * `functions` (the request's tools as json.dumps(tools, indent=2), "" with
 * none), `datetime` ("%b %d %Y %H:%M:%S GMT") and `date_string`
 * ("%d %b %Y"), both in UTC at `now` (0: the current time). New object
 * (caller puts it), NULL when out of memory. */
json_object *chat_caps_view(const chat_caps_t *caps, const chat_req_t *req, bool add_generation_prompt, time_t now);

#endif
