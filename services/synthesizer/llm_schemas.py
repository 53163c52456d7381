"""The JSON shapes the synthesizer asks its LLM for, validated leniently.

Their JSON schemas drive constrained decoding; validation is lax so near misses are coerced
(``"3"`` → ``3``, a lone date → a list). A list entry that still does not fit is dropped and counted,
so one bad fact never costs the whole batch.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

FIRST_NUMBER = re.compile(r"\d+")
# Limits the schema advertises, so constrained decoding stays inside the token budget; validation
# does not enforce them, since a backend that ignores the schema may still give a useful entry.
MAX_TEXT_CHARS = 240
MAX_DETAILS = 3
MAX_ENTRIES = 8
Detail = Annotated[str, Field(json_schema_extra={"maxLength": 80})]


def keep_valid(items: list[Any], model: type[BaseModel]) -> tuple[list[Any], int]:
    """The entries that validate as ``model``, and how many did not."""
    valid = []
    for item in items:
        try:
            model.model_validate(item)
        except ValidationError:
            continue
        valid.append(item)
    return valid, len(items) - len(valid)


def number_in(value: Any) -> Any:
    """``"P3"`` or ``"passage 3"`` to ``3``: small models decorate the ids they were given."""
    if isinstance(value, str) and (match := FIRST_NUMBER.search(value)):
        return int(match.group(0))
    return value


def as_list(value: Any) -> Any:
    if value is None:
        return []
    return [value] if isinstance(value, str | int) else value


class SkippingReply(BaseModel):
    """A reply whose list of entries (``entries_field`` of ``entry_model``) drops the malformed ones."""

    entries_field: ClassVar[str]
    entry_model: ClassVar[type[BaseModel]]
    _skipped: int = PrivateAttr(default=0)

    @model_validator(mode="wrap")
    @classmethod
    def _drop_malformed_entries(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        items = data.get(cls.entries_field) if isinstance(data, dict) else None
        if not isinstance(items, list):
            return handler(data)
        valid, skipped = keep_valid(items, cls.entry_model)
        reply = handler({**data, cls.entries_field: valid})
        reply._skipped = skipped
        return reply

    @property
    def skipped(self) -> int:
        """Entries dropped because they did not fit even after coercion."""
        return self._skipped


class FactDraft(BaseModel):
    passage: int
    quote: str = Field(min_length=1, json_schema_extra={"maxLength": MAX_TEXT_CHARS})
    fact: str = Field(min_length=1, json_schema_extra={"maxLength": MAX_TEXT_CHARS})
    dates: list[Detail] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_DETAILS})
    code: list[Detail] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_DETAILS})

    @field_validator("passage", mode="before")
    @classmethod
    def _passage_number(cls, value: Any) -> Any:
        return number_in(value)

    @field_validator("dates", "code", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return as_list(value)


class MapReply(SkippingReply):
    entries_field = "facts"
    entry_model = FactDraft
    facts: list[FactDraft] = Field(json_schema_extra={"maxItems": MAX_ENTRIES})


class NarratorSentence(BaseModel):
    text: str = Field(min_length=1)
    citations: list[int] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_DETAILS})

    @field_validator("citations", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        return [number_in(n) for n in as_list(value)]


class NarratorReply(SkippingReply):
    entries_field = "sentences"
    entry_model = NarratorSentence
    sentences: list[NarratorSentence] = Field(
        default_factory=list, json_schema_extra={"maxItems": MAX_ENTRIES}
    )


class Judgement(BaseModel):
    supported: bool


class Rewrite(BaseModel):
    text: str = Field(min_length=1)
