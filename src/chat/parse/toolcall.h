/* toolcall.h - incremental tool-call parsers for model output.
 *
 * The server feeds the decoded content text of each generated token (after
 * the reasoning parser: tool calls are looked for in content only) and gets
 * back, per push, an ordered list of events in OpenAI's streaming shape:
 *   TOOLCALL_EV_CONTENT  text outside calls (delta.content);
 *   TOOLCALL_EV_START    a new call: index, id, name (the server sends
 *                        {index, id, type:"function", function:{name,
 *                        arguments:""}});
 *   TOOLCALL_EV_ARGS     a fragment of that call's arguments (function.
 *                        arguments); the fragments of one call concatenate
 *                        to exactly its final arguments string.
 * After toolcall_finish() the whole result is available: the calls (id,
 * name, arguments) and the content (concatenation of the CONTENT events).
 * The non-streamed result is by construction the streamed one: the parser
 * is a byte-wise state machine, so its output does not depend on how the
 * text was split into pieces (token by token, two halves, byte by byte).
 *
 * Formats (names as vLLM's --tool-call-parser; toolcall_format_desc()
 * describes each one's markup, for grammars and docs; the table is in
 * toolcall_formats.c). One file per family, behind one interface
 * (toolcall_impl.h):
 *   JSON objects {"name": N, "arguments": {...}} (toolcall_json.c):
 *   hermes       <tool_call>{"name": N, "arguments": {...}}</tool_call>, any
 *                number of them, text around them is content. A block
 *                that is not a valid call is content, its "</tool_call>"
 *                included (malformed output is returned, not dropped); any
 *                other stray "</tool_call>" is dropped. A missing "</tool_call>" after a complete object
 *                is tolerated (generation often stops there). Several
 *                objects inside one block (separated by whitespace) are
 *                several calls.
 *   llama3_json  the whole message is the call(s): optional leading
 *                whitespace and "<|python_tag|>", then {"name": N,
 *                "parameters": {...}} objects separated by whitespace or ';'.
 *                Only the keys name, parameters/arguments and type are
 *                allowed in the object (so a JSON answer to the user such as
 *                {"name": "Ann", "age": 3} is content); the arguments key is
 *                required. Text after the calls is content; a message that
 *                does not start (after whitespace) with "<|python_tag|>" or
 *                "{" is all content.
 *   mistral      [TOOL_CALLS][{"name": N, "arguments": {...}}, ...] (a bare
 *                object after [TOOL_CALLS] is accepted too), and the v11
 *                tokenizer form [TOOL_CALLS]N[ARGS]{...} (N made of
 *                [A-Za-z0-9_.-], an optional [CALL_ID]ID before [ARGS], one
 *                call per [TOOL_CALLS]); text before and after is content.
 *   granite      <|tool_call|>[{"name": N, "arguments": {...}}, ...] (Granite
 *                3.x; "<tool_call>" accepted as the marker too), the list
 *                starting the message; anything else is content.
 *   phi4_mini_json  functools[{"name": N, "arguments": {...}}, ...] (Phi-4-
 *                mini, firefunction v2), anywhere in the message.
 *   nemotron_json  <TOOLCALL>[{"name": N, "arguments": {...}}, ...]</TOOLCALL>
 *                (Nemotron Nano 2).
 *   cohere_command3  <|START_ACTION|>[{"tool_call_id": "0", "tool_name": N,
 *                "parameters": {...}}, ...]<|END_ACTION|> (Command R7B,
 *                Command A, Cohere2).
 *   apriel       <tool_calls>[{"name": N, "arguments": {...}}, ...]</tool_calls>
 *   minimax      <tool_calls>\n{"name": N, "arguments": {...}}\n...</tool_calls>
 *                (MiniMax-M1: one object per line).
 *   gigachat3 / gigachat31  one {"name": N, "arguments": {...}} after
 *                "<|message_sep|>\n\nfunction call<|role_sep|>\n" (3) or
 *                <|function_call|> (3.1); <|message_sep|> is dropped.
 *   apertus      <|tools_prefix|>[{"N": {...}}, ...]<|tools_suffix|>: the
 *                name is the object's key.
 *   In these section formats a list or one or more objects may follow the
 *   opening marker; the closing marker is dropped (returned as content with
 *   a block that was not a call).
 *   Name, then a JSON arguments object (toolcall_tagged.c):
 *   deepseek_v3  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N
 *                ```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
 *                (DeepSeek V3, R1)
 *   deepseek_v31 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}
 *                <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
 *   kimi_k2      <|tool_calls_section_begin|><|tool_call_begin|>functions.N:I
 *                <|tool_call_argument_begin|>{...}<|tool_call_end|>...
 *                <|tool_calls_section_end|>; the call's id is the model's
 *                own "functions.N:I" (as vLLM), N is between "." and ":".
 *   solar_open   <|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>N
 *                <|tool_call:args|>{...}<|tool_call:end|>...<|calls|>; the
 *                call's id is the model's ID when it is one word.
 *   functionary_v31  <function=N>{...}</function>
 *   functionary_v32  >>>N\n{...} (the prompt ends with ">>>"; ">>>all\n"
 *                starts text, which is content).
 *   gemma4       <|tool_call>call:N{key:<|"|>text<|"|>,n:1,...}<tool_call|>:
 *                Gemma's syntax (bare keys, strings between <|"|>, never
 *                escaped) turned into JSON as it streams (toolcall_gemma.c).
 *   Name, then key/value parameters typed by the function's schema
 *   (toolcall_xml.c, toolcall_params.c):
 *   qwen3_coder  <tool_call><function=N><parameter=K>V</parameter>...
 *                </function></tool_call> (Qwen3-Coder, Qwen3.5, Nemotron 3)
 *   seed_oss     the same inside <seed:tool_call> ... </seed:tool_call>
 *   glm45        <tool_call>N<arg_key>K</arg_key><arg_value>V</arg_value>...
 *                </tool_call>, whitespace between the parts allowed
 *   minimax_m2   <minimax:tool_call><invoke name="N"><parameter name="K">V
 *                </parameter>...</invoke>...</minimax:tool_call>
 *   deepseek_v32 <｜DSML｜function_calls><｜DSML｜invoke name="N"><｜DSML｜parameter
 *                name="K" string="true|false">V</｜DSML｜parameter>...
 *                </｜DSML｜invoke>...</｜DSML｜function_calls> (V3.2; deepseek_v4:
 *                the block is <｜DSML｜tool_calls>); string="true": V is the
 *                string, "false": V is JSON (else typed by the schema).
 *   kimi_k3      <|open|>tools<|sep|><|open|>call tool="N" index="1"<|sep|>
 *                <|open|>argument key="K" type="T"<|sep|>V<|close|>argument
 *                <|sep|>...<|close|>call<|sep|>...<|close|>tools<|sep|>;
 *                type "string": V as is, other types: JSON; or the arguments
 *                as one <|open|>json type="object"<|sep|>{...}<|close|>json
 *                <|sep|>; attribute values decode &quot; and &amp;.
 *   minimax_m3   ]<]minimax[>[<tool_call> ]<]minimax[>[<invoke name="N">
 *                ]<]minimax[>[<K>V]<]minimax[>[</K>... ]<]minimax[>[</invoke>
 *                ]<]minimax[>[</tool_call>: objects are nested elements,
 *                arrays <item> elements, leaves typed by the schema.
 *   hy_v3        <tool_calls:opensource><tool_call:opensource>N<tool_sep:
 *                opensource><arg_key:opensource>K</arg_key:opensource>
 *                <arg_value:opensource>V</arg_value:opensource>...
 *                </tool_call:opensource></tool_calls:opensource>
 *   minicpm5     <function name="N"><param name="K">V</param>...</function>,
 *                V may be <![CDATA[...]]>.
 *   muse_glimmer <atem:function_calls><atem:invoke name="N"><atem:parameter
 *                name="K">V</atem:parameter>...</atem:invoke>
 *                </atem:function_calls>: the bodies of Muse Glimmer's
 *                messages to a tool, which its reasoning parser (reasoning.h)
 *                passes on without their headers; one call per message.
 *                A value is raw text: one leading and one trailing newline
 *                are removed; then it becomes the JSON type its parameter has
 *                in the request's tools (string: as is; integer / number /
 *                boolean / null: parsed; object, array and anything else:
 *                JSON or a Python literal; "null" is null for non-strings);
 *                a parameter or function the schema does not know is a
 *                string. Arguments stream one parameter at a time.
 *   pythonic     [f(a=1, b="x"), g()] (Llama 3.2 / Llama 4, LFM2) at the
 *                start of the message, or anywhere after <|python_start|>
 *                (... <|python_end|>), <|tool_call_start|> (... <|tool_call_
 *                end|>, LFM2) or <|python_tag|>;
 *                values are Python literals (str, int, float, True, False,
 *                None, lists, dicts, tuples) turned into JSON
 *                (toolcall_pythonic.c).
 *   gpt-oss      harmony messages addressed to=functions.N (harmony.h),
 *                whose body is the JSON arguments; other messages' bodies are
 *                content (toolcall_harmony.c).
 *   In the JSON-object formats the arguments key may be "arguments" or
 *   "parameters", its value must be a JSON object, or a JSON string whose
 *   text is an object (some fine-tunes write "arguments": "{\"a\": 1}"; the
 *   object inside is used, and that call is announced when the string
 *   closes); other keys are ignored (not llama3_json), and a missing
 *   arguments key is "{}" (not llama3_json).
 *
 * Arguments string: the model's own JSON text of the arguments object with
 * the whitespace outside strings removed (compact), validated with json-c
 * when the object closes. It is not re-serialised by json-c, because
 * re-serialising rewrites escapes and numbers and the streamed fragments
 * (which must be sent before the object is complete) could then not add up
 * to it. JSON strings are tracked with their escapes, so "</tool_call>" or
 * "]" inside a string never ends a call.
 *
 * When is text a call (commit point): in the JSON-object formats a call is
 * announced (START) once its name is complete and its arguments object has
 * begun (or, for an object without arguments, when the object closes); in
 * the other formats once its name is complete. Before that, everything since
 * the opening markup is held back; if it turns out not to be a call (not
 * JSON, no name, a name that is not a string, arguments that are not an
 * object, an unknown key for llama3_json, end of output) the held text is
 * released verbatim as content, markup included, and parsing goes on after
 * it. After the commit the call stays a call: if its JSON breaks later (or
 * the output ends inside the arguments) the call keeps the arguments sent so
 * far and is marked incomplete (complete == false), and the text after the
 * break is content.
 *
 * Whitespace: whitespace right before a call's markup and right after a
 * call is dropped, so an answer made only of calls has no content (NULL);
 * other whitespace is kept, but trailing whitespace of content is held back
 * until the next non-space byte or finish decides it.
 *
 * Ids: "call_" + 24 characters of [A-Za-z0-9]; for mistral, 9 characters
 * of [A-Za-z0-9] and no prefix, because Mistral's chat templates raise
 * "Tool call IDs should be alphanumeric strings with length 9!" when the
 * call comes back in the next request (vLLM does the same); for kimi_k2 and
 * solar_open the model's own id (its template refers to it). Drawn from the
 * caller's rng callback when given (one draw per character), else from an
 * internal splitmix64 seeded with cfg.seed (a seeded request gives
 * reproducible ids).
 *
 * Typical use (one choice): text -> reasoning_push (reasoning.h) -> its
 * content segments -> toolcall_push -> events to SSE chunks; at the end
 * reasoning_finish, toolcall_push of its content, toolcall_finish. When
 * toolcall_count() > 0 the choice's finish_reason is "tool_calls" (unless
 * the server decides "length"); message.content is toolcall_content()
 * (JSON null when NULL).
 *
 * Ownership and threads: one toolcall_t per choice of one request; not
 * thread-safe. Event texts, ids and names point into the parser and are
 * valid until the next push/finish/free; so are the call views of
 * toolcall_get (after finish: until free). Memory grows with the output
 * (content and arguments are kept for the result, text before a commit is
 * held), so it is bounded by the request's max_tokens.
 */
#ifndef LF_TOOLCALL_H
#define LF_TOOLCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

struct json_object;

typedef enum {
    TOOLCALL_FORMAT_NONE = 0, /* no parsing: everything is content */
    TOOLCALL_FORMAT_HERMES,
    TOOLCALL_FORMAT_LLAMA3_JSON,
    TOOLCALL_FORMAT_MISTRAL,
    TOOLCALL_FORMAT_GRANITE,
    TOOLCALL_FORMAT_PHI4_MINI_JSON,
    TOOLCALL_FORMAT_DEEPSEEK_V3,
    TOOLCALL_FORMAT_DEEPSEEK_V31,
    TOOLCALL_FORMAT_KIMI_K2,
    TOOLCALL_FORMAT_QWEN3_CODER,
    TOOLCALL_FORMAT_SEED_OSS,
    TOOLCALL_FORMAT_GLM45,
    TOOLCALL_FORMAT_MINIMAX_M2,
    TOOLCALL_FORMAT_PYTHONIC,
    TOOLCALL_FORMAT_GPT_OSS,
    TOOLCALL_FORMAT_DEEPSEEK_V32,
    TOOLCALL_FORMAT_DEEPSEEK_V4,
    TOOLCALL_FORMAT_GEMMA4,
    TOOLCALL_FORMAT_NEMOTRON,
    TOOLCALL_FORMAT_KIMI_K3,
    TOOLCALL_FORMAT_COHERE,
    TOOLCALL_FORMAT_APRIEL,
    TOOLCALL_FORMAT_MINIMAX,
    TOOLCALL_FORMAT_GIGACHAT3,
    TOOLCALL_FORMAT_GIGACHAT31,
    TOOLCALL_FORMAT_APERTUS,
    TOOLCALL_FORMAT_MINIMAX_M3,
    TOOLCALL_FORMAT_HY_V3,
    TOOLCALL_FORMAT_SOLAR_OPEN,
    TOOLCALL_FORMAT_MINICPM5,
    TOOLCALL_FORMAT_FUNCTIONARY_V31,
    TOOLCALL_FORMAT_FUNCTIONARY_V32,
    TOOLCALL_FORMAT_MUSE_GLIMMER,
    TOOLCALL_FORMAT_COUNT
} toolcall_format_t;

/* How a call is laid out (the family of a format). */
typedef enum {
    TOOLCALL_LAYOUT_NONE = 0,
    TOOLCALL_LAYOUT_JSON_OBJECT,  /* {"name": N, "arguments": {...}} (name_key,
                                   * args_key when they differ) */
    TOOLCALL_LAYOUT_JSON_NAMED,   /* {"N": {...}}: the function name is the key */
    TOOLCALL_LAYOUT_NAME_JSON,    /* name_prefix N name_close [args_open] {...} [args_close] */
    TOOLCALL_LAYOUT_NAME_PARAMS,  /* name_prefix N name_close, then per parameter
                                   * key_open K key_close [value_open] V value_close */
    TOOLCALL_LAYOUT_PYTHONIC,     /* [N(K=V, ...), ...] */
    TOOLCALL_LAYOUT_HARMONY       /* harmony message to=functions.N, body {...} */
} toolcall_layout_t;

/* A format's markup, exact canonical strings (what the model is trained to
 * write; the parsers accept the documented leniencies on top). A call is
 *   [section_open] (call_open CALL call_close [call_sep])+ [section_close]
 * where CALL follows the layout; NULL fields are absent. For grammars
 * (structured outputs / forced tool calls), documentation and tests. */
typedef struct {
    toolcall_format_t format;
    const char *name;            /* the --tool-call-parser name */
    toolcall_layout_t layout;
    const char *section_open;    /* opens the calls (one or several) */
    const char *section_close;
    const char *call_open;       /* opens one call */
    const char *call_close;
    const char *call_sep;        /* between calls inside a section ("," in JSON lists) */
    bool whole_message;          /* the calls must start the output (after whitespace) */
    const char *name_key;        /* JSON_OBJECT: the name's key (NULL: "name") */
    const char *args_key;        /* JSON_OBJECT: the arguments' key (NULL: "arguments") */
    const char *id_close;        /* NAME_JSON: the call header is the call's id (the
                                  * model's own, used as the call's id), id_close, then
                                  * the name (solar_open); NULL: no id */
    const char *name_prefix;     /* NAME_*: before the function name */
    const char *name_close;      /* NAME_*: ends the name (NULL: NAME_PARAMS: the first
                                  * key_open or call_close does, glm45; NAME_JSON: the
                                  * arguments object follows the name directly, gemma4) */
    const char *name_attr;       /* NAME_PARAMS: written after name_close: an attribute
                                  * whose value is the call's number (1, 2, ...) and a
                                  * closing '"' (kimi_k3: " index=\""); NULL: none */
    const char *name_end;        /* NAME_PARAMS: ends the call header after name_close
                                  * [name_attr N"] (NULL: name_close ends it) */
    const char *args_open;       /* NAME_JSON: around the arguments object; NAME_PARAMS:
                                  * the arguments as one JSON object instead of
                                  * parameters, inside args_open / args_close (kimi_k3) */
    const char *args_close;
    const char *string_delim;    /* NAME_JSON: the arguments are Gemma's object syntax
                                  * {key:value,...}: keys bare, strings between
                                  * string_delim, numbers / true / false / null / {} /
                                  * [] as JSON (gemma4); NULL: JSON */
    const char *key_open;        /* NAME_PARAMS: a parameter's name ... */
    const char *key_close;
    const char *value_attr;      /* NAME_PARAMS: written after key_close: an attribute
                                  * typing the value (" string=\"", " type=\""), its value,
                                  * '"'; NULL: the value is typed by the schema */
    const char *value_attr_string; /* its value before a raw string ("true", "string") */
    const char *value_attr_json;   /* ... before a JSON value ("false"; NULL: the value's
                                    * JSON type: number, boolean, null, object, array) */
    const char *key_end;         /* NAME_PARAMS: ends the parameter header after key_close
                                  * [value_attr ...] (NULL: key_close ends it) */
    const char *value_open;      /* ... and value */
    const char *value_close;     /* NULL with key_open: the value is an XML element,
                                  * closed by key_open "/" KEY key_close; objects and
                                  * arrays nest as elements, array items as item_tag
                                  * (minimax_m3) */
    const char *item_tag;        /* NAME_PARAMS element values: the tag of array items */
    bool prompt_opens;           /* the generation prompt ends with call_open: the
                                  * output starts with a call header (functionary_v32) */
    const char *content_recipient; /* a call header naming this introduces content, not
                                    * a call ("all", functionary_v32) */
    const char *const *tokens;   /* texts of the control tokens the parser must see
                                  * (the detokenizer renders them), NULL-terminated */
    const char *example;         /* get_weather({"city": "Paris"}) in this format */
} toolcall_format_desc_t;

/* The description of a format; NULL for NONE and unknown values. */
const toolcall_format_desc_t *toolcall_format_desc(toolcall_format_t fmt);

/* Whether a control token's text is markup the format's parser needs. */
bool toolcall_format_is_marker(toolcall_format_t fmt, const char *text);

typedef struct {
    toolcall_format_t format;
    /* Random source for call ids: returns 64 random bits. NULL: internal
     * splitmix64 seeded with seed. */
    uint64_t (*rng)(void *ctx);
    void *rng_ctx;
    uint64_t seed;
    /* The request's tools array (borrowed, may be NULL): the parameter
     * types of NAME_PARAMS formats. Must outlive the parser. */
    struct json_object *tools;
} toolcall_config_t;

typedef enum {
    TOOLCALL_EV_CONTENT = 0,
    TOOLCALL_EV_START,
    TOOLCALL_EV_ARGS
} toolcall_ev_kind_t;

typedef struct {
    toolcall_ev_kind_t kind;
    int32_t index;    /* START/ARGS: call index (0, 1, ...); CONTENT: -1 */
    const char *text; /* CONTENT: text; ARGS: fragment; START: NULL */
    size_t len;
    const char *id;   /* START: NUL-terminated id (see "Ids"); else NULL */
    const char *name; /* START: NUL-terminated function name; else NULL */
} toolcall_event_t;

typedef struct {
    const toolcall_event_t *events; /* in output order; valid until next call */
    size_t n;
} toolcall_out_t;

typedef struct {
    const char *id;        /* NUL-terminated, see "Ids" */
    const char *name;      /* decoded function name (JSON escapes applied) */
    const char *arguments; /* compact JSON text, NUL-terminated */
    size_t arguments_len;
    bool complete;         /* arguments object closed and valid JSON */
} toolcall_call_t;

typedef struct toolcall toolcall_t;

#define TOOLCALL_ID_LEN 29         /* strlen("call_") + 24 */
#define TOOLCALL_ID_LEN_MISTRAL 9  /* mistral ids: 9 alphanumerics */

/* Creates a parser. NULL + err: LF_ERR_INVALID (unknown format),
 * LF_ERR_NOMEM. */
toolcall_t *toolcall_create(const toolcall_config_t *cfg, lf_err_t *err);
void toolcall_free(toolcall_t *tc); /* accepts NULL */

/* Feeds len bytes (0 is fine); *out receives the events decided now.
 * LF_ERR_NOMEM when a buffer cannot grow (out is then empty and the parser
 * is unusable except for free). After finish, pushed text is content. */
lf_code_t toolcall_push(toolcall_t *tc, const char *piece, size_t len,
                        toolcall_out_t *out, lf_err_t *err);

/* End of output: releases what is held (see "commit point") and closes an
 * open call. Errors as push. */
lf_code_t toolcall_finish(toolcall_t *tc, toolcall_out_t *out, lf_err_t *err);

/* Calls announced so far (all of them after finish; arguments and
 * complete are final only after finish). */
size_t toolcall_count(const toolcall_t *tc);
/* Fills *call for call i < toolcall_count(); returns false otherwise. */
bool toolcall_get(const toolcall_t *tc, size_t i, toolcall_call_t *call);

/* All content released so far (NUL-terminated, *len set when len != NULL),
 * or NULL when no content byte was released. */
const char *toolcall_content(const toolcall_t *tc, size_t *len);

/* Non-streaming convenience: create, push the whole text, finish. Returns
 * the finished parser (caller frees) or NULL + err. */
toolcall_t *toolcall_parse(const toolcall_config_t *cfg, const char *text, size_t len,
                           lf_err_t *err);

/* Format for a chat template text (the source, with what it renders for a
 * probe conversation with a call appended: some templates build their
 * markup from variables, e.g. DeepSeek V3.2's dsml_token, Hy3's
 * '<tool_call{}>'.format(...)), documented rules, first match wins:
 *   "<|channel|>" (harmony)                    -> GPT_OSS
 *   "<｜DSML｜tool_calls>"                        -> DEEPSEEK_V4
 *   "<｜DSML｜function_calls>"                    -> DEEPSEEK_V32
 *   "DSML", "dsml_token", "function_calls"     -> DEEPSEEK_V32 (source only;
 *                                                with "tool_calls": V4)
 *   "<|tool_call>call:"                        -> GEMMA4
 *   "<TOOLCALL>"                               -> NEMOTRON
 *   "<|open|>", "<|close|>" and "<|sep|>"      -> KIMI_K3
 *   "<｜tool▁calls▁begin｜>" and "```json"        -> DEEPSEEK_V3 (V3, R1)
 *   "<｜tool▁calls▁begin｜>"                      -> DEEPSEEK_V31
 *   "<|tool_calls_section_begin|>"             -> KIMI_K2
 *   "]<]minimax[>[" and "<invoke name="        -> MINIMAX_M3
 *   "<minimax:tool_call>"                      -> MINIMAX_M2
 *   "<|START_ACTION|>"                         -> COHERE
 *   "<|tools_prefix|>"                         -> APERTUS
 *   "<tool_sep" and "<arg_key"                 -> HY_V3
 *   "<|tool_call:begin|>"                      -> SOLAR_OPEN
 *   "<seed:tool_call>"                         -> SEED_OSS
 *   "<arg_key>"                                -> GLM45
 *   "<function name=\"" and "<param name=\""   -> MINICPM5
 *   "<atem:function_calls>"                    -> MUSE_GLIMMER
 *   "<function=" and "<parameter="             -> QWEN3_CODER
 *   "<tool_calls>["                            -> APRIEL
 *   "<tool_calls>"                             -> MINIMAX (M1)
 *   "<tool_call>"                              -> HERMES (Hermes, Qwen2.5/3)
 *   "[TOOL_CALLS]"                             -> MISTRAL
 *   "<|tool_call|>"                            -> GRANITE
 *   "functools"                                -> PHI4_MINI_JSON (Phi-4-mini,
 *                                                firefunction v2)
 *   "<|function_call|>"                        -> GIGACHAT31
 *   "function call" and "<|role_sep|>"         -> GIGACHAT3
 *   "<|python_start|>", "<|tool_call_start|>",
 *   "[func_name1(", "<|tool_list_start|>" or
 *   "List of tools: ["                         -> PYTHONIC (Llama 4, LFM2,
 *                                                LFM2.5, Llama 3.2)
 *   ">>>all" or ">>>${recipient}"              -> FUNCTIONARY_V32
 *   "<function="                               -> FUNCTIONARY_V31
 *   "<|python_tag|>"                           -> LLAMA3_JSON
 *   "<|start_header_id|>" and "parameters"     -> LLAMA3_JSON (Llama 3.1+
 *                                                JSON tool prompt)
 *   otherwise                                  -> NONE */
toolcall_format_t toolcall_format_detect(const char *tmpl, size_t len);

/* Names <-> formats ("none", "hermes", "llama3_json", "mistral", "granite",
 * "phi4_mini_json", "deepseek_v3", "deepseek_v31", "kimi_k2",
 * "qwen3_coder", "seed_oss", "glm45", "minimax_m2", "pythonic", "gpt-oss",
 * "deepseek_v32", "deepseek_v4", "gemma4", "nemotron_json", "kimi_k3",
 * "cohere_command3", "apriel", "minimax", "gigachat3", "gigachat31",
 * "apertus", "minimax_m3", "hy_v3", "solar_open", "minicpm5",
 * "functionary_v31", "functionary_v32", "muse_glimmer"; vLLM's other names are accepted
 * too: "openai", "cohere_command4", "lfm2", "llama4_pythonic", "qwen3_xml",
 * "glm47", "granite4", "llama4_json", "nemotron"). from_name returns LF_ERR_INVALID
 * (message lists the names) for anything else. */
lf_code_t toolcall_format_from_name(const char *name, toolcall_format_t *fmt, lf_err_t *err);
const char *toolcall_format_name(toolcall_format_t fmt);

/* Whether the XML-style formats' parameter of this schema is read as a
 * raw string (its text, one newline at each end dropped, becomes a JSON
 * string) rather than a typed value: string types, enums, or no type (NULL
 * schema included). The grammar of forced calls writes such a value as
 * raw text, any other as JSON (toolcall_layout.h). */
bool toolcall_param_raw_string(const struct json_object *schema);

/* A parameter's schema with its local $ref ("#/$defs/X", a JSON pointer
 * into the function's parameters, as pydantic writes nested models)
 * followed, up to 8 hops; the schema itself when it has none or the target
 * is missing. The parsers type values by this schema, and so does the
 * grammar that forces a call. */
const struct json_object *toolcall_param_deref(const struct json_object *params, const struct json_object *schema);

#endif
