"""Replay tools: game logs re-simulated step by step, in the terminal or an HTML viewer.

The CLI (`cfarena replay | verify | export`) calls these functions:

    replay_terminal(log, seat=None, show_all=False, console=None, keys=None)
    write_html(log, path)                 # the self-contained viewer
    export_log(log, path, fmt=None, seat=None)
    log_line(log) -> str                  # one line of JSON: `export`'s, and JSON Lines'
    log_lines(logs) -> Iterator[str]      # many logs as JSON Lines (export --tournament)
    verify_logs(logs, expected_sha256=None) -> VerifyReport
    validate_log(log) -> list[str]        # form, with JSON paths
    load_log_file(path, validate=True, match_id=None) -> dict  # LogFileError if not one
    read_log_file(path, validate=True) -> Iterator[(name, dict | LogFileError)]

Frames (`build_frames`, `build_views`) are what both front ends draw; a
seat's frames come only from `observe` and `visible_events`.
"""

from __future__ import annotations

from cfarena.match.log_format import log_line
from cfarena.match.resimulation import LogError
from cfarena.server.replay.export import export_log, log_lines, replay_text
from cfarena.server.replay.frames import Frame, StepKind, build_frames, build_views
from cfarena.server.replay.html import build_viewer_data, render_html, write_html
from cfarena.server.replay.schema import (
    LogFileError,
    load_log_file,
    read_log_file,
    validate_log,
)
from cfarena.server.replay.simulate import simulate_log, simulate_record
from cfarena.server.replay.terminal import replay_terminal
from cfarena.server.replay.verify import LogVerdict, VerifyReport, log_sha256, verify_logs

__all__ = [
    "Frame",
    "LogError",
    "LogFileError",
    "LogVerdict",
    "StepKind",
    "VerifyReport",
    "build_frames",
    "build_viewer_data",
    "build_views",
    "export_log",
    "load_log_file",
    "log_line",
    "log_lines",
    "log_sha256",
    "read_log_file",
    "render_html",
    "replay_terminal",
    "replay_text",
    "simulate_log",
    "simulate_record",
    "validate_log",
    "verify_logs",
    "write_html",
]
