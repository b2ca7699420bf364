#include "reentry.h"

__thread int memprof_in_runtime __attribute__((tls_model("initial-exec")));
