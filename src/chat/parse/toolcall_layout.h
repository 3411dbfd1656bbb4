/* toolcall_layout.h - how each tool-call format writes its calls, as a
 * small description the grammar engine uses to FORCE a call (tool_choice
 * "required" or a named function) or to constrain the arguments of calls
 * the model starts on its own ("auto" with strict functions).
 *
 * A format writes (pieces left NULL are absent):
 *   [open_marker] open_text  CALL (call_sep CALL)*  close_text
 *   CALL = [call_marker] call_prefix NAME name_suffix ARGUMENTS call_suffix [call_end_marker]
 * NAME is the function name as JSON string content, ARGUMENTS the JSON
 * object of the function's parameters. Markers are the format's markup
 * that vocabularies often have as single (special) tokens: the engine
 * accepts the token or its text. auto_trigger is the marker whose
 * appearance starts the calls in "auto" mode (NULL: the format has no
 * unambiguous start, so "auto" cannot constrain it).
 *
 * Adding a format: add a row to the table in toolcall_layout.c whose text
 * matches what its parser (toolcall.c) reads and what the model's chat
 * template shows. Formats without a row cannot force calls (the server
 * answers 400 for tool_choice "required"/named then).
 */
#ifndef LF_TOOLCALL_LAYOUT_H
#define LF_TOOLCALL_LAYOUT_H

#include <stdbool.h>

#include "chat/parse/toolcall.h"

typedef struct {
    const char *open_marker, *open_text;
    const char *call_marker, *call_prefix, *name_suffix, *call_suffix, *call_end_marker;
    const char *call_sep, *close_text;
    const char *auto_trigger;
} toolcall_force_layout_t;

/* The layout of fmt; false when the format has none. */
bool toolcall_force_layout(toolcall_format_t fmt, toolcall_force_layout_t *out);

#endif
