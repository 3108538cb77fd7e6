"""Bot processes in a bubblewrap sandbox, with limits, captured output and a watchdog.

A sandbox is `bwrap` (bubblewrap, Debian package `bubblewrap`) with its own PID,
network, IPC, UTS and mount namespaces, showing the bot read-only only what it
needs to run (system directories, the Python it runs on, the paths named on its
command line and the organiser's extra binds), a private size-capped `/tmp`
that vanishes with it, and the referee's Unix socket at `/run/cfarena/arena.sock`
(there is no network: the loopback of an empty network namespace only). Inside,
the bot runs as an unprivileged user: as root, a fresh random uid per sandbox
(`setpriv`, no capabilities, no new privileges); otherwise uid 65534 of a user
namespace. Its environment is built from an allow-list, never copied from the
referee's.

Limits: memory, processes and CPU seconds (per sandbox: a cgroup per sandbox
where the machine has them, counting kernel memory and every short-lived child;
else the resident sets and CPU times /proc shows, with RLIMIT_NPROC, RLIMIT_CPU
and a generous RLIMIT_AS as backstops between the watchdog's polls), open
descriptors (RLIMIT_NOFILE, per process), bytes of output and of `/tmp`. A limit
breached stops the whole sandbox and is reported as one line, e.g. "memory
limit 512 MiB exceeded". The sandbox dies with its match: `stop()` SIGKILLs
bwrap's process group, and bwrap's `--die-with-parent` takes the PID namespace
(and so every process in it) along; then its cgroups are removed.

Its modules: `bubblewrap` (the command line, seccomp, limits), `shown_paths`
(what a sandbox shows, and the check that no secret is among it),
`bot_process` (`BotProcess`: starting, reading and stopping one), `output`
(captured output, exit summaries), `failure_lines` (the lines of an output that
explain a failure, and the hint for a missing path), `cgroups` (the kernel's count of a
sandbox; `cgroups.available()` and `cgroups.defences()` say what holds on this
machine), `keeper` (a process that outlives the referee to kill what is left in
its sandboxes' cgroups) and `limit_watch` (the watchdog).
"""

from __future__ import annotations

from cfarena.server.sandbox.bot_process import BotProcess, MatchProcess, pdeathsig_prefix
from cfarena.server.sandbox.bubblewrap import (
    INSTALL_HINT,
    SOCKET_IN_SANDBOX,
    SandboxLimits,
    SandboxUnavailable,
    random_uid,
    sandbox_problem,
    seccomp_program,
)
from cfarena.server.sandbox.limit_watch import LimitWatch
from cfarena.server.sandbox.output import CapturedOutput, exit_summary
from cfarena.server.sandbox.shown_paths import command_paths, exposed, python_paths, shown_roots

__all__ = [
    "INSTALL_HINT",
    "SOCKET_IN_SANDBOX",
    "BotProcess",
    "CapturedOutput",
    "LimitWatch",
    "MatchProcess",
    "SandboxLimits",
    "SandboxUnavailable",
    "command_paths",
    "exit_summary",
    "exposed",
    "pdeathsig_prefix",
    "python_paths",
    "random_uid",
    "sandbox_problem",
    "seccomp_program",
    "shown_roots",
]
