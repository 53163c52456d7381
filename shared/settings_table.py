"""``docs/settings.md``: every setting's environment variable, type, default and description, per group.

``python -m shared.settings_table`` writes the file; ``python -m shared.settings_table --check`` exits 1
when the file differs from what the settings make today (``tests/shared/test_settings_groups.py``
checks the same, so CI fails on a setting added without regenerating the table).
"""

from __future__ import annotations

import argparse
import enum
import sys
import types
import typing
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from shared.settings import GROUPS, Settings

TABLE_PATH = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
PREFIX = "HINDSIGHT_"

HEADER = """# Settings

<!-- Generated from the descriptions in shared/settings.py by `python -m shared.settings_table`. -->

Every setting is an environment variable prefixed `HINDSIGHT_` (an `.env` file, `docker-compose*.yml`
and `deploy/` set them the same way). In code they are grouped by the service that reads them
(`shared/settings.py`): `Settings` holds the shared facts below and one group per service, and a
function receives only its group. Rules between settings are checked when a process starts, and a
broken one names the variables to change.
"""


def render_type(annotation: Any) -> str:
    """A field's type as a reader of the table needs it: the choices of a ``Literal``, ``list of …``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return render_type(args[0])
    if origin is Literal:
        return " / ".join(str(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        kinds = [render_type(arg) for arg in args if arg is not type(None)]
        return " / ".join(kinds) + (" (optional)" if type(None) in args else "")
    if origin is list:
        return f"list of {render_type(args[0])}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " / ".join(str(member.value) for member in annotation)
    if annotation is timedelta:
        return "duration"
    return getattr(annotation, "__name__", str(annotation))


def render_default(field: FieldInfo) -> str:
    """A field's default as it would be written in the environment; ``(unset)`` for none."""
    value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
    if value is None or value is PydanticUndefined:
        return "(unset)"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value) or "(empty)"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def group_table(title: str, doc: str, fields: dict[str, FieldInfo]) -> str:
    """One group's section: its title, what it configures, and a row per field."""
    rows = [
        f"| `{PREFIX}{name.upper()}` | {cell(render_type(field.annotation))} | {cell(render_default(field))} "
        f"| {cell(field.description or '')} |"
        for name, field in fields.items()
    ]
    head = ["| Variable | Type | Default | Description |", "|---|---|---|---|"]
    return "\n".join([f"## {title}", "", " ".join(doc.split()), "", *head, *rows]) + "\n"


def shared_fields() -> dict[str, FieldInfo]:
    """The fields of :class:`Settings` that are plain values, not groups."""
    return {name: field for name, field in Settings.model_fields.items() if name not in GROUPS}


def undocumented() -> list[str]:
    """The environment variables whose field has no description."""
    classes: list[type[BaseSettings]] = [Settings, *GROUPS.values()]
    fields = [
        (name, field) for cls in classes for name, field in cls.model_fields.items() if name not in GROUPS
    ]
    return [f"{PREFIX}{name.upper()}" for name, field in fields if not (field.description or "").strip()]


def render() -> str:
    """The whole of ``docs/settings.md`` as the settings make it today."""
    sections = [group_table(Settings.title, "Facts every service shares.", shared_fields())]
    sections += [group_table(cls.title, cls.__doc__ or "", dict(cls.model_fields)) for cls in GROUPS.values()]
    return HEADER + "\n" + "\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    """Write the table, or with ``--check`` say whether the file on disk is current (exit 1 if not)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if docs/settings.md is not current")
    args = parser.parse_args(argv)
    missing = undocumented()
    if missing:
        print("settings without a description: " + ", ".join(missing), file=sys.stderr)
        return 1
    table = render()
    if args.check:
        current = TABLE_PATH.read_text(encoding="utf-8") if TABLE_PATH.exists() else ""
        if current != table:
            print(f"{TABLE_PATH} is stale: run python -m shared.settings_table", file=sys.stderr)
            return 1
        return 0
    TABLE_PATH.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
