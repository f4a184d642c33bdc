"""What every config model shares: the base model (hyphenated keys, frozen,
unknown keys refused), the problem list a check across keys raises, and the
small value types. Apart from models.py so that a section in a module of its
own (discovery.py, network.py) builds on them without importing models.py,
which imports those sections.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

RelPath = tuple[str | int, ...]

NonEmptyStr = Annotated[str, Field(min_length=1)]
Millis = Annotated[int, Field(gt=0)]


class ConfigIssues(ValueError):
    """One or more problems, each at a key path relative to the model or field
    being validated."""

    def __init__(self, issues: list[tuple[RelPath, str]]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(f"{'.'.join(map(str, p))}: {m}" if p else m for p, m in self.issues))


def raise_issues(issues: list[tuple[RelPath, str]]) -> None:
    """Raise them as one ConfigIssues, if there are any."""
    if issues:
        raise ConfigIssues(issues)


def parse_host_port(value: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` -> (host, port); ValueError if not."""
    host, sep, port_text = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or ":" in host and not value.startswith("["):
        raise ValueError(f"expected host:port, got {value!r}")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"expected host:port with a port from 1 to 65535, got {value!r}")
    return host, int(port_text)


def camel(name: str) -> str:
    """A Python attribute's Java spelling: ``create_durable_queue`` -> ``createDurableQueue``."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def kebab(name: str) -> str:
    """A Python attribute's YAML key: ``max_hops`` -> ``max-hops``."""
    return name.replace("_", "-")


class ConfigModel(BaseModel):
    """Frozen, unknown keys refused, keys hyphenated (broker.xml's names), and a
    null value taking the default (the conventions in models.py's docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, alias_generator=kebab)

    # Keys whose null value means [] rather than "use the default".
    _null_is_empty_list: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        by_key = {}
        for name, info in cls.model_fields.items():
            by_key[name] = name
            by_key[info.alias or name] = name
        result = {}
        for key, value in data.items():
            name = by_key.get(key) if isinstance(key, str) else None
            if value is None and name is not None:
                if name in cls._null_is_empty_list:
                    value = []
                elif cls.model_fields[name].default is not None or cls.model_fields[name].default_factory:
                    continue
            result[key] = value
        return result
