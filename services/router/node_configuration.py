"""What a node's configuration says, as an operator asks it of the running
node (Management.GetAddressSettings and ListLinkConfigurations): the settings
in force for an address and which `match` gave each, and the parameters of
each cluster connection, network connector and the tree connector with the
ones that differ from their defaults marked.

Read from the config the node started with, which is what it runs with: a
router does not reload its configuration. Secrets never leave: a password
field or a password in a URI reads "***".
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.base import kebab
from meshmq.config.models import BrokerConfig
from meshmq.v1 import management_pb2 as mgpb

HIDDEN = "***"
_SECRET_KEY = re.compile(r"password|secret", re.IGNORECASE)
# password=… in a URI's query, and the password of user:password@ in its authority.
_URI_SECRETS = (re.compile(r"(?i)(password=)[^&)\s,]*"), re.compile(r"(//[^:/@\s]+:)[^@/\s]*(@)"))


def redacted(value: Any, key: str = "") -> Any:
    """`value` with every secret replaced by HIDDEN, at any depth."""
    if key and _SECRET_KEY.search(key) and value is not None:
        return HIDDEN
    if isinstance(value, dict):
        return {k: redacted(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(v) for v in value]
    if isinstance(value, str):
        value = _URI_SECRETS[0].sub(rf"\g<1>{HIDDEN}", value)
        return _URI_SECRETS[1].sub(rf"\g<1>{HIDDEN}\g<2>", value)
    return value


def _changed_keys(model: BaseModel) -> list[str]:
    """The keys whose value is not the field's default (a field without one counts as changed)."""
    changed = []
    for name, field in type(model).model_fields.items():
        default = PydanticUndefined if field.is_required() else field.get_default(call_default_factory=True)
        if default is PydanticUndefined or getattr(model, name) != default:
            changed.append(field.alias or name)
    return sorted(changed)


def _link(kind: str, name: str, model: BaseModel, connectors: dict[str, str] | None = None) -> mgpb.LinkConfiguration:
    parameters = redacted(model.model_dump(mode="json", by_alias=True))
    return mgpb.LinkConfiguration(kind=kind, name=name, parameters_json=json.dumps(parameters, sort_keys=True),
                                  changed_keys=_changed_keys(model),
                                  connectors={k: redacted(v) for k, v in (connectors or {}).items()})


class NodeConfiguration:
    """The running node's configuration, for the management calls that show it."""

    def __init__(self, config: BrokerConfig, address_settings: AddressSettingsResolver) -> None:
        self._config = config
        self._address_settings = address_settings

    def address_settings(self, address: str) -> mgpb.AddressSettingsInfo:
        explained = self._address_settings.explain(address)
        return mgpb.AddressSettingsInfo(
            address=address,
            matched=self._address_settings.matching(address),
            settings=[mgpb.EffectiveSetting(name=kebab(name), value_json=json.dumps(value), match=match)
                      for name, value, match in explained],
        )

    def links(self) -> mgpb.ListLinkConfigurationsResponse:
        config = self._config
        links = [_link("cluster", name, cc, {ref: config.connectors[ref] for ref in cc.static_connectors or ()
                                             if ref in config.connectors})
                 for name, cc in sorted(config.cluster_connections.items())]
        links += [_link("network", name, nc) for name, nc in sorted(config.network_connectors.items())]
        if config.tree_connector is not None:
            links.append(_link("tree", "tree", config.tree_connector))
        return mgpb.ListLinkConfigurationsResponse(links=links)
