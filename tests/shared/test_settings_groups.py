"""The settings groups: flat names route to their group, the table in docs/ is current and complete."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared import settings_table
from shared.settings import GROUP_OF, GROUPS, RetrievalSettings, Settings


def test_docs_settings_table_is_what_the_generator_makes_today() -> None:
    """CI's check that no setting was added, renamed or re-described without regenerating the table."""
    assert settings_table.TABLE_PATH.read_text(encoding="utf-8") == settings_table.render(), (
        "docs/settings.md is stale: run python -m shared.settings_table"
    )


def test_every_setting_has_a_description_and_a_row_in_the_table() -> None:
    table = settings_table.render()
    assert settings_table.undocumented() == []
    shared = [name for name in Settings.model_fields if name not in GROUPS]
    for name in [*shared, *GROUP_OF]:
        assert f"| `HINDSIGHT_{name.upper()}` |" in table


def test_field_names_are_unique_across_the_groups_and_the_shared_fields() -> None:
    names = [name for cls in GROUPS.values() for name in cls.model_fields]
    shared = [name for name in Settings.model_fields if name not in GROUPS]
    assert len(names) == len(set(names)) == len(GROUP_OF)
    assert not set(shared) & set(names)
    assert not set(GROUPS) & set(names), "a group's name would shadow a flat field name"


def test_an_unknown_flat_name_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError, match="unknown settings: pool_precize"):
        Settings(pool_precize=20)


def test_a_flat_name_reaches_its_group_and_the_environment_fills_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HINDSIGHT_POOL_PRECISE", "90")
    monkeypatch.setenv("HINDSIGHT_POOL_EXACT", "7")
    settings = Settings(pool_precise=120)
    assert (settings.retrieval.pool_precise, settings.retrieval.pool_exact) == (120, 7)
    assert settings.retrieval.dense_lead_bonus == 0.25
    assert Settings().retrieval.pool_precise == 90


def test_replace_checks_the_rules_that_model_copy_would_skip() -> None:
    settings = Settings()
    assert settings.replace(pool_precise=40, data_dir="/tmp/elsewhere").retrieval.pool_precise == 40
    with pytest.raises(ValidationError, match="RERANK_INPUTS_PRECISE"):
        settings.replace(pool_precise=10)
    with pytest.raises(ValidationError, match="unknown settings: nope"):
        settings.replace(nope=1)


def test_replace_keeps_every_other_value_of_the_copied_settings() -> None:
    settings = Settings(pool_exact=9, gateway_port=8123)
    moved = settings.replace(chunk_tokens=300)
    assert (moved.retrieval.pool_exact, moved.gateway.gateway_port, moved.indexing.chunk_tokens) == (
        9,
        8123,
        300,
    )


def test_a_group_replace_refuses_a_name_of_another_group() -> None:
    with pytest.raises(ValueError, match="RetrievalSettings has no setting chunk_tokens"):
        RetrievalSettings().replace(chunk_tokens=10)


def test_settings_survive_a_json_round_trip_for_a_subprocess() -> None:
    settings = Settings(pool_exact=9, roots=["/a", "/b"], allowed_hosts="x.example, y.example")
    again = Settings.model_validate_json(settings.model_dump_json())
    assert again == settings
    assert again.gateway.allowed_hosts == ["x.example", "y.example"]
