/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "signal_names.h"

#include <signal.h>

#include "util.h"

static const char *const names[] = {
    [SIGHUP] = "HUP",       [SIGINT] = "INT",   [SIGQUIT] = "QUIT",   [SIGILL] = "ILL",   [SIGTRAP] = "TRAP",
    [SIGABRT] = "ABRT",     [SIGBUS] = "BUS",   [SIGFPE] = "FPE",     [SIGKILL] = "KILL", [SIGUSR1] = "USR1",
    [SIGSEGV] = "SEGV",     [SIGUSR2] = "USR2", [SIGPIPE] = "PIPE",   [SIGALRM] = "ALRM", [SIGTERM] = "TERM",
    [SIGSTKFLT] = "STKFLT", [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",   [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",
    [SIGTTIN] = "TTIN",     [SIGTTOU] = "TTOU", [SIGURG] = "URG",     [SIGXCPU] = "XCPU", [SIGXFSZ] = "XFSZ",
    [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH", [SIGPOLL] = "POLL", [SIGPWR] = "PWR",
    [SIGSYS] = "SYS",
};

const char *signal_abbrev(int sig) {
  return sig > 0 && (size_t)sig < ARRAY_SIZE(names) ? names[sig] : NULL;
}
