/* test_status.c - the project error type formats and prefixes messages. */
#include "common/status.h"
#include "tap.h"

#include <string.h>

int main(void)
{
    lf_err_t e;
    tap_ok(lf_err_set(&e, LF_ERR_IO, "cannot open %s", "x.gguf") == LF_ERR_IO, "set returns code");
    tap_ok(!strcmp(e.msg, "cannot open x.gguf"), "set formats message");
    lf_err_prefix(&e, "model %d", 3);
    tap_ok(!strcmp(e.msg, "model 3: cannot open x.gguf"), "prefix prepends context");
    tap_ok(lf_err_set(NULL, LF_ERR_INVALID, "ignored") == LF_ERR_INVALID, "NULL err is allowed");
    tap_ok(!strcmp(lf_code_name(LF_ERR_OVERLOAD), "overload"), "code names");
    tap_ok(!strcmp(lf_code_name((lf_code_t)99), "unknown"), "unknown code name");
    return tap_done();
}
