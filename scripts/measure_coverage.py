#!/usr/bin/env python3
"""Measure the tests' coverage, subprocesses included, and print the report.

Run: `python scripts/measure_coverage.py [PYTEST ARGS]` (needs the `dev` extra: coverage),
for example `python scripts/measure_coverage.py tests/cli tests/referee`. It erases old
data, runs `coverage run -m pytest ARGS`, combines the per-process data files
and prints `coverage report`, first of the pytest process alone (what plain
in-process coverage measures), then of every process; the exit code is pytest's. `coverage html`
afterwards writes htmlcov/.

pyproject.toml's [tool.coverage.run] has `patch = ["subprocess"]`: coverage hands
its configuration, in the COVERAGE_PROCESS_CONFIG environment variable, to every
Python process started with the test's environment (the `cfarena` CLI, the bots
that tests start themselves). A bot that the CLI starts gets an environment built
from an allow-list, so that variable never reaches it; for those processes this
script installs, while the tests run, a .pth file in this interpreter's
site-packages that starts coverage (`coverage.process_startup()`) when a marker
file of this run exists and the data directory is writable. A sandboxed bot
sees neither (its filesystem is read-only, its /tmp private) and is not
measured; the sandbox is not changed for coverage.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = ROOT / ".coverage-bots"  # this run's pid and coverage config, while it runs
HOOK_NAME = "zz_cfarena_coverage_bots.pth"  # after coverage's own a1_coverage.pth

# One line of a .pth file (site runs lines that start with "import"). It does
# nothing when coverage's own .pth already applies (the variables are set), when
# there is no marker, when the run that wrote the marker is gone, or when the data
# directory cannot be written.
HOOK = "import os; exec({code!r})\n"
HOOK_CODE = """\
def _cfarena_coverage_bots(marker):
    if os.environ.get('COVERAGE_PROCESS_CONFIG') or os.environ.get('COVERAGE_PROCESS_START'):
        return
    try:
        with open(marker) as f:
            pid, data_dir, config = f.read().split('\\n', 2)
        os.kill(int(pid), 0)
    except (OSError, ValueError):
        return
    if not os.access(data_dir, os.W_OK):
        return
    os.environ['COVERAGE_PROCESS_CONFIG'] = config
    try:
        import coverage
    except ImportError:
        return
    coverage.process_startup()
_cfarena_coverage_bots({marker!r})
del _cfarena_coverage_bots
"""


@contextmanager
def bot_hook() -> Iterator[None]:
    """The .pth hook and its marker, for the duration of the block."""
    import coverage

    config = coverage.Coverage(config_file=str(ROOT / "pyproject.toml")).config
    data_file = Path(config.data_file).resolve()
    hook = Path(sysconfig.get_paths()["purelib"]) / HOOK_NAME
    MARKER.write_text(f"{os.getpid()}\n{data_file.parent}\n{config.serialize()}")
    hook.write_text(HOOK.format(code=HOOK_CODE.format(marker=str(MARKER))))
    try:
        yield
    finally:
        hook.unlink(missing_ok=True)
        MARKER.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    os.chdir(ROOT)  # [tool.coverage.run]'s paths, and the data files, are relative to it
    cov = [sys.executable, "-m", "coverage"]
    subprocess.run([*cov, "erase"], check=True)
    with bot_hook():
        # -n 0: the tests in the pytest process itself, not on xdist workers (its own
        # data file below is then what in-process coverage measures)
        tests = subprocess.Popen([*cov, "run", "-m", "pytest", "-n", "0", *argv])
        code = tests.wait()
    # The pytest process's own data file alone: what in-process coverage would say.
    own = sorted(ROOT.glob(f".coverage.*.pid{tests.pid}.*"))
    if own:
        print(f"\nIn the pytest process alone ({own[0].name}):", flush=True)
        subprocess.run([*cov, "report", f"--data-file={own[0]}"], check=True)
    subprocess.run([*cov, "combine", "--quiet"], check=True)
    print("\nAll processes combined:", flush=True)
    subprocess.run([*cov, "report"], check=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
