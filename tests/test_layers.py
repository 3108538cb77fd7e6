"""The rooms import one way, as docs/ARCHITECTURE.md lists them (lowest first): a
room of the server imports only rooms listed before it, the CLI and `serve_assembly`
excepted (they wire rooms together); the SDK distribution imports nothing of the
server; the sample bots only the SDK's. Every import counts, a lazy one inside a
function or a TYPE_CHECKING one too. The list is read from the document itself, so
that a new room is placed there or this test fails."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "server" / "cfarena" / "server"
WIRING = ("serve_assembly", "cli")  # they wire rooms together
SDK_PACKAGES = ("cfarena.v1", "cfarena.engine", "cfarena.match", "cfarena.sdk", "cfarena.bots")


def rooms() -> list[str]:
    """The server's rooms in the order of ARCHITECTURE.md's diagram."""
    diagram = (ROOT / "docs" / "ARCHITECTURE.md").read_text().split("```", 2)[1]
    server = diagram.split("server/cfarena/server/", 1)[1]
    return re.findall(r"^  (\w+)(?:/|\.py)\s", server, re.M)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every absolute import in `path`, `from M import N` as M.N too."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def sources(directory: Path) -> list[Path]:
    return [p for p in sorted(directory.rglob("*.py")) if "migrations" not in p.parts]


def test_every_room_of_the_server_is_in_the_diagram() -> None:
    listed = rooms()
    assert listed[-2:] == ["serve_assembly", "cli"], listed
    packages = {p.name for p in SERVER.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(listed), packages - set(listed)


def test_a_room_imports_only_rooms_below_it() -> None:
    order = {room: i for i, room in enumerate(rooms())}
    wrong = []
    for path in sources(SERVER):
        relative = path.relative_to(SERVER)
        room = relative.parts[0].removesuffix(".py")
        if room in WIRING:
            continue
        for line, name in imported(path):
            found = re.match(r"cfarena\.server\.(\w+)", name)
            other = found.group(1) if found else None
            if other is None or other == room or other not in order:
                continue
            # a module outside the rooms (a shared helper) imports none of them
            if room not in order or order[other] > order[room]:
                wrong.append(f"{relative}:{line} imports {name}")
    assert wrong == []


def test_the_sdk_and_the_bots_import_nothing_of_the_server() -> None:
    wrong = []
    for directory, allowed in ((ROOT / "client_sdk" / "cfarena", SDK_PACKAGES),
                               (ROOT / "bots" / "cfarena", SDK_PACKAGES)):
        for path in sources(directory):
            for line, name in imported(path):
                if name.startswith("cfarena") and not name.startswith(allowed):
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert wrong == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The scan finds a lazy import inside a function (what the rooms' rule is about)."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from cfarena.server.web import site\n")
    assert (2, "cfarena.server.web.site") in list(imported(module))
