/* toolcall_layout.c - the call layout of each tool-call format (see
 * toolcall_layout.h). The texts are the canonical forms the parsers in
 * toolcall.c read and the chat templates show the model. */
#include "chat/parse/toolcall_layout.h"

#include <stddef.h>

static const struct {
    toolcall_format_t fmt;
    toolcall_force_layout_t l;
} layouts[] = {
    /* <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call> */
    {TOOLCALL_FORMAT_HERMES,
     {.open_text = "", .call_marker = "<tool_call>", .call_prefix = "\n{\"name\": \"",
      .name_suffix = "\", \"arguments\": ", .call_suffix = "}\n", .call_end_marker = "</tool_call>",
      .call_sep = "\n", .close_text = "", .auto_trigger = "<tool_call>"}},
    /* {"name": "f", "parameters": {...}} (Llama 3.1 JSON tool calls) */
    {TOOLCALL_FORMAT_LLAMA3_JSON,
     {.open_text = "", .call_prefix = "{\"name\": \"", .name_suffix = "\", \"parameters\": ", .call_suffix = "}",
      .call_sep = "; ", .close_text = "", .auto_trigger = "<|python_tag|>"}},
    /* [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...] */
    {TOOLCALL_FORMAT_MISTRAL,
     {.open_marker = "[TOOL_CALLS]", .open_text = "[", .call_prefix = "{\"name\": \"",
      .name_suffix = "\", \"arguments\": ", .call_suffix = "}", .call_sep = ", ", .close_text = "]",
      .auto_trigger = "[TOOL_CALLS]"}},
};

bool toolcall_force_layout(toolcall_format_t fmt, toolcall_force_layout_t *out)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].fmt == fmt) {
            *out = layouts[i].l;
            return true;
        }
    return false;
}
