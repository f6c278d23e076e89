#!/usr/bin/env python3
"""Wall time, CPU time and peak RSS of one process and its children, from wait4(2).

The one timer of the benchmark scripts: the shell scripts run it as a command, ab.py and the
Python drivers import it. wait4 gives CPU times in microseconds; GNU time's %U and %S truncate
each to 10 ms, which under-counted a short run by a noticeable fraction.

As a command:

    python3 scripts/lib/timer.py [--pidfile FILE] OUT COMMAND [ARG...]

runs COMMAND (stdin, stdout and stderr inherited), writes its pid to FILE if given (so a
script can signal or watch the process), then one line "wall_s user_s sys_s max_rss_kb" to
OUT, and exits as COMMAND did (128 + N if signal N ended it).

As a module: `run(argv)` or `start(argv)` then `wait(child)` give a `Usage`.
"""

import os
import sys
import time
from typing import NamedTuple


class Usage(NamedTuple):
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    # As a shell reports it: the exit code, or 128 + N after signal N.
    exit_code: int

    @property
    def cpu_s(self):
        return self.user_s + self.sys_s

    def line(self):
        return "%.3f %.6f %.6f %d" % (self.wall_s, self.user_s, self.sys_s, self.max_rss_kb)


class Child(NamedTuple):
    pid: int
    started: float


def start(argv, stdout=None):
    """Forks and execs argv (searched on PATH); stdout=None inherits it, else a file
    descriptor or a path (opened for writing, e.g. os.devnull)."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            if stdout is not None:
                fd = os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if isinstance(stdout, str) else stdout
                os.dup2(fd, 1)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    return Child(pid, started)


def wait(child):
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - child.started
    code = os.waitstatus_to_exitcode(status)
    return Usage(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, code if code >= 0 else 128 - code)


def run(argv, stdout=None):
    return wait(start(argv, stdout))


def main(args):
    pidfile = None
    if args[:1] == ["--pidfile"]:
        pidfile, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    out, argv = args[0], args[1:]
    child = start(argv)
    if pidfile:
        with open(pidfile, "w") as f:
            f.write("%d\n" % child.pid)
    usage = wait(child)
    with open(out, "w") as f:
        f.write(usage.line() + "\n")
    sys.exit(usage.exit_code)


if __name__ == "__main__":
    main(sys.argv[1:])
