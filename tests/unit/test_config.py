"""Node configuration: YAML -> BrokerConfig, defaults, and error messages."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pydantic
import pytest

from meshmq.config import defaults
from meshmq.config.address_settings import AddressSettingsResolver
from meshmq.config.loader import (
    ConfigError,
    default_dev_config_yaml,
    effective_config_yaml,
    format_key_path,
    load_config,
    load_config_text,
)
from meshmq.config.models import Acceptor, BrokerConfig, parse_host_port
from meshmq.config.yaml_source import YamlSourceError, load_yaml


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(directory: Path, text: str, name: str = "node.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def errors_of(directory: Path, text: str) -> list[str]:
    write(directory, text)
    with pytest.raises(ConfigError) as info:
        load_config("node.yaml")
    return str(info.value).splitlines()


# --- defaults ----------------------------------------------------------------


def test_empty_file_is_all_defaults(in_tmp: Path) -> None:
    write(in_tmp, "")
    cfg = load_config("node.yaml")
    assert cfg == BrokerConfig()
    assert cfg.name == defaults.NAME == "meshmq"
    assert cfg.persistence_enabled is True
    assert cfg.data_directory == in_tmp.resolve() / "data"
    assert cfg.id_cache_size == defaults.ID_CACHE_SIZE == 20000
    assert cfg.persist_id_cache is True
    assert cfg.message_expiry_scan_period == 30000
    assert cfg.security_enabled is False
    assert cfg.users == ()
    assert cfg.acceptors == (Acceptor(name="grpc", host="127.0.0.1", port=61616),)
    assert cfg.journal.url is None and cfg.journal.address is None
    assert cfg.journal.sync is True and cfg.journal.max_batch_records == 5000
    assert cfg.journal.event_log_enabled is True
    assert (cfg.journal.event_retention, cfg.journal.event_retention_scan_period) == (7 * 24 * 3600 * 1000, 60_000)
    assert (cfg.journal.listen.host, cfg.journal.listen.port) == ("127.0.0.1", 61626)
    assert cfg.addresses == {} and cfg.address_settings == {}
    assert cfg.journal_url() == f"sqlite:///{in_tmp.resolve()}/data/journal.db"


def test_comment_only_file_and_null_sections_are_defaults(in_tmp: Path) -> None:
    text = """\
        # nothing here yet
        journal:
        acceptors:
        addresses:
        address-settings:
        """
    assert load_config_text(textwrap.dedent(text)) == BrokerConfig()


def test_null_value_takes_the_default() -> None:
    cfg = load_config_text("acceptors:\n  - name: a\n    port:\n")
    assert cfg.acceptors[0].port == 61616


def test_empty_routing_type_means_the_address_has_it_without_queues() -> None:
    cfg = load_config_text("addresses:\n  news:\n    multicast:\n  DLQ:\n")
    assert cfg.addresses["news"].routing_types == {"MULTICAST"} and cfg.addresses["news"].multicast == ()
    assert cfg.addresses["DLQ"].routing_types == frozenset()


# --- a full example ----------------------------------------------------------

FULL_EXAMPLE = """\
name: node-a
persistence-enabled: true
data-directory: ./data
id-cache-size: 5000
persist-id-cache: false
message-expiry-scan-period: 10000
security-enabled: true
users:
  - {username: app, password: secret}
cluster-user: node-a.cluster
cluster-password: cluster-secret-a
acceptors:
  - name: grpc
    host: 0.0.0.0
    port: 0
    ssl-enabled: true
    cert-path: tls/server.pem
    key-path: tls/server.key
    trust-path: tls/ca.pem
    need-client-auth: true
journal:
  url: postgresql+psycopg://meshmq:pw@127.0.0.1:5432/meshmq
  address: journal-host:61626
  sync: false
  max-batch-records: 100
  listen: {host: 0.0.0.0, port: 61627}
  ssl-enabled: true
  trust-path: tls/ca.pem
addresses:
  DLQ:
    anycast:
      - {name: DLQ}
  orders:
    anycast:
      - name: orders
        durable: false
        filter: "priority > 4"
  news:
    multicast: []
address-settings:
  "#":
    dead-letter-address: DLQ
    expiry-address: ExpiryQueue
    expiry-delay: -1
    max-delivery-attempts: 10
    redelivery-delay: 0
    redistribution-delay: -1
    auto-create-queues: true
    auto-create-addresses: true
    auto-delete-queues: true
    auto-delete-addresses: true
    default-address-routing-type: anycast
    default-queue-routing-type: Multicast
    send-to-dla-on-no-route: false
    id-cache-size: null
  "orders.#":
    max-delivery-attempts: 3
    id-cache-size: 100
"""


@pytest.fixture
def full_config(tmp_path: Path) -> tuple[Path, BrokerConfig]:
    config_dir = tmp_path / "etc"
    (config_dir / "tls").mkdir(parents=True)
    for name in ("server.pem", "server.key", "ca.pem"):
        (config_dir / "tls" / name).write_text("PEM\n")
    path = write(config_dir, FULL_EXAMPLE)
    return config_dir, load_config(path)


def test_full_example(full_config: tuple[Path, BrokerConfig]) -> None:
    config_dir, cfg = full_config
    assert cfg.name == "node-a"
    assert cfg.data_directory == config_dir.resolve() / "data"  # relative to the file
    assert (cfg.id_cache_size, cfg.persist_id_cache, cfg.message_expiry_scan_period) == (5000, False, 10000)
    assert cfg.security_enabled and cfg.users[0].username == "app" and cfg.users[0].password == "secret"
    assert (cfg.cluster_user, cfg.cluster_password) == ("node-a.cluster", "cluster-secret-a")
    acceptor = cfg.acceptors[0]
    assert (acceptor.host, acceptor.port, acceptor.ssl_enabled, acceptor.need_client_auth) == ("0.0.0.0", 0, True, True)
    assert acceptor.cert_path == config_dir.resolve() / "tls" / "server.pem"
    assert acceptor.trust_path == config_dir.resolve() / "tls" / "ca.pem"
    assert cfg.journal.address == "journal-host:61626"
    assert cfg.journal_url() == "postgresql+psycopg://meshmq:pw@127.0.0.1:5432/meshmq"
    assert cfg.journal.listen.port == 61627 and cfg.journal.max_batch_records == 100
    orders = cfg.addresses["orders"].anycast[0]
    assert (orders.name, orders.durable, orders.filter) == ("orders", False, "priority > 4")
    assert cfg.addresses["orders"].routing_types == {"ANYCAST"}
    assert cfg.addresses["news"].routing_types == {"MULTICAST"} and cfg.addresses["news"].multicast == ()
    catch_all = cfg.address_settings["#"]
    assert catch_all.default_address_routing_type == "ANYCAST"
    assert catch_all.default_queue_routing_type == "MULTICAST"
    assert catch_all.id_cache_size is None
    resolved = AddressSettingsResolver.from_config(cfg).resolve("orders.eu")
    assert (resolved.max_delivery_attempts, resolved.id_cache_size, resolved.dead_letter_address) == (3, 100, "DLQ")
    assert AddressSettingsResolver.from_config(cfg).resolve("other").id_cache_size == 5000


def test_effective_config_reloads_to_an_equal_config(full_config: tuple[Path, BrokerConfig]) -> None:
    _, cfg = full_config
    text = effective_config_yaml(cfg, show_secrets=True)
    assert "max-delivery-attempts: 3" in text and "max_delivery_attempts" not in text
    assert load_config_text(text, base_dir="/somewhere/else") == cfg


def test_effective_config_of_defaults_reloads_equal(in_tmp: Path) -> None:
    cfg = load_config_text("")
    text = effective_config_yaml(cfg)
    assert "data-directory: " + str(in_tmp.resolve() / "data") in text
    assert "max-batch-records: 5000" in text and "need-client-auth: false" in text
    assert load_config_text(text) == cfg


def test_effective_config_masks_secrets_by_default(full_config: tuple[Path, BrokerConfig]) -> None:
    _, cfg = full_config
    text = effective_config_yaml(cfg)
    assert "secret" not in text and ":pw@" not in text
    assert "password: '********'" in text
    assert "cluster-password: '********'" in text and "cluster-user: node-a.cluster" in text
    assert "postgresql+psycopg://meshmq:***@127.0.0.1:5432/meshmq" in text


def test_effective_config_omits_unset_address_settings_and_routing_types() -> None:
    cfg = load_config_text('addresses: {news: {multicast: []}}\naddress-settings: {"#": {max-delivery-attempts: 5}}\n')
    text = effective_config_yaml(cfg)
    assert "anycast" not in text
    assert '"#":\n    max-delivery-attempts: 5\n' in text or "'#':\n    max-delivery-attempts: 5\n" in text


def test_models_take_python_names_but_yaml_takes_only_broker_xml_names(in_tmp: Path) -> None:
    assert Acceptor(ssl_enabled=False, need_client_auth=False).port == 61616
    assert errors_of(in_tmp, "persistence_enabled: false\n") == [
        "node.yaml:1: persistence_enabled: unknown key (did you mean 'persistence-enabled'?)"
    ]


def test_models_are_frozen() -> None:
    cfg = BrokerConfig()
    with pytest.raises(pydantic.ValidationError):
        cfg.name = "other"  # type: ignore[misc]


def test_relative_sqlite_url_is_made_absolute_against_the_config_directory(tmp_path: Path) -> None:
    path = write(tmp_path, "journal:\n  url: sqlite:///state/j.db\n")
    assert load_config(path).journal_url() == f"sqlite:///{tmp_path.resolve()}/state/j.db"
    assert load_config_text("journal: {url: 'sqlite://'}").journal_url() == "sqlite://"


def test_data_directory_moves_the_default_journal(tmp_path: Path) -> None:
    cfg = load_config_text(f"data-directory: {tmp_path}/d\n")
    assert cfg.journal_url() == f"sqlite:///{tmp_path}/d/journal.db"


def test_parse_host_port() -> None:
    assert parse_host_port("journal-host:61626") == ("journal-host", 61626)
    assert parse_host_port("[::1]:61626") == ("::1", 61626)
    for bad in ("foo", ":1", "host:", "host:0", "host:70000", "::1:5"):
        with pytest.raises(ValueError):
            parse_host_port(bad)


# --- bad input: one problem each, exact line and key --------------------------

BAD_INPUTS = [
    pytest.param(
        """\
        name: node-a
        acceptors:
          - name: grpc
            host: 127.0.0.1


            prot: 61616
        """,
        "node.yaml:7: acceptors[0].prot: unknown key (did you mean 'port'?)",
        id="unknown-key-suggestion",
    ),
    pytest.param(
        "name: a\nfoo-bar-baz: 1\n",
        "node.yaml:2: foo-bar-baz: unknown key (expected one of: name, persistence-enabled, data-directory, "
        "id-cache-size, persist-id-cache, id-cache-max-bytes, address-queue-scan-period, min-client-protocol-version, global-max-size, message-expiry-scan-period, max-disk-usage, "
        "disk-scan-period, security-enabled, users, "
        "security-settings, cluster-user, cluster-password, insecure-cluster, login-throttle, acceptors, rebalance-cluster-clients, journal, addresses, address-settings, wildcard-addresses, discovery-groups, broadcast-groups, "
        "discovery, connectors, cluster-connections, network-connectors, tree-connector, grouping-handler, ha-policy, ha-coordinator, gateway, metrics)",
        id="unknown-key-no-suggestion",
    ),
    pytest.param(
        """\
        name: node-a
        addresses:
          orders:
            anycast:
              - name: orders
        address-settings:
          "#":
            dead-letter-address: DLQ
          "news.#":
            redelivery-delay: 0
          "orders.#":
            max-delivery-attempts: ten
        """,
        'node.yaml:12: address-settings."orders.#".max-delivery-attempts: '
        "Input should be a valid integer, unable to parse string as an integer",
        id="wrong-type",
    ),
    pytest.param(
        "acceptors:\n  - name: grpc\n    port: 70000\n",
        "node.yaml:3: acceptors[0].port: Input should be less than or equal to 65535",
        id="port-too-big",
    ),
    pytest.param(
        "journal:\n  listen:\n    port: -1\n",
        "node.yaml:3: journal.listen.port: Input should be greater than or equal to 0",
        id="port-negative",
    ),
    pytest.param(
        "journal:\n  event-retention: 0\n",
        "node.yaml:2: journal.event-retention: 0 is not allowed; use -1 for keeping every event or a positive number",
        id="event-retention-zero",
    ),
    pytest.param(
        'address-settings:\n  "#":\n    default-queue-routing-type: broadcast\n',
        "node.yaml:3: address-settings.\"#\".default-queue-routing-type: Input should be 'ANYCAST' or 'MULTICAST'",
        id="routing-type",
    ),
    pytest.param(
        'address-settings:\n  "#":\n    max-delivery-attempts: 0\n',
        'node.yaml:3: address-settings."#".max-delivery-attempts: '
        "0 is not allowed; use -1 for infinite attempts or a positive number",
        id="max-delivery-attempts-zero",
    ),
    pytest.param(
        'address-settings:\n  "#":\n    max-delivery-attempts: -2\n',
        'node.yaml:3: address-settings."#".max-delivery-attempts: Input should be greater than or equal to -1',
        id="max-delivery-attempts-below-minus-one",
    ),
    pytest.param(
        "name: x\nid-cache-size: 0\n",
        "node.yaml:2: id-cache-size: Input should be greater than 0",
        id="id-cache-size-zero",
    ),
    pytest.param(
        'address-settings:\n  "a.#":\n    id-cache-size: 0\n',
        'node.yaml:3: address-settings."a.#".id-cache-size: Input should be greater than 0',
        id="per-address-id-cache-size-zero",
    ),
    pytest.param(
        "message-expiry-scan-period: 0\n",
        "node.yaml:1: message-expiry-scan-period: 0 is not allowed; use -1 for no scanning or a positive number",
        id="expiry-scan-zero",
    ),
    pytest.param(
        'addresses:\n  "":\n    anycast: []\n',
        'node.yaml:2: addresses."": invalid key: String should have at least 1 character',
        id="empty-address-name",
    ),
    pytest.param(
        "addresses:\n  orders:\n    anycast:\n      - durable: true\n",
        "node.yaml:4: addresses.orders.anycast[0].name: required key is missing",
        id="queue-without-name",
    ),
    pytest.param(
        """\
        addresses:
          orders:
            anycast:
              - name: work
          billing.eu:
            multicast:
              - name: audit
              - name: work
        """,
        'node.yaml:8: addresses."billing.eu".multicast[1].name: queue \'work\' is already defined at '
        "addresses.orders.anycast[0]; queue names are unique across all addresses",
        id="duplicate-queue-name",
    ),
    pytest.param(
        'address-settings:\n  "news.#.sport":\n    redelivery-delay: 5\n',
        'node.yaml:2: address-settings."news.#.sport": invalid key: '
        "'#' may only be the last word of a match string (as in Artemis)",
        id="hash-not-last",
    ),
    pytest.param(
        'address-settings:\n  "news.eur*": {}\n',
        "node.yaml:2: address-settings.\"news.eur*\": invalid key: wildcard 'eur*' must be a whole word "
        "('*' or '#' between dots)",
        id="partial-word-wildcard",
    ),
    pytest.param(
        "journal:\n  sync: true\n  url: 'not a url'\n",
        "node.yaml:3: journal.url: not a valid SQLAlchemy URL: Could not parse SQLAlchemy URL from given URL string",
        id="journal-url-unparsable",
    ),
    pytest.param(
        "journal:\n  url: mysql+pymysql://u@h/db\n",
        "node.yaml:2: journal.url: unsupported database 'mysql'; use sqlite:///path or postgresql+psycopg://...",
        id="journal-url-backend",
    ),
    pytest.param(
        "journal:\n  address: journal-host\n",
        "node.yaml:2: journal.address: expected host:port, got 'journal-host'",
        id="journal-address",
    ),
    pytest.param(
        "acceptors:\n  - name: grpc\n    ssl-enabled: true\n    cert-path: missing.pem\n    key-path: node.yaml\n",
        "node.yaml:4: acceptors[0].cert-path: file not found: {dir}/missing.pem",
        id="cert-file-missing",
    ),
    pytest.param(
        "security-enabled: true\n",
        "node.yaml:1: users: security-enabled is true but no users are configured",
        id="security-without-users",
    ),
    pytest.param(
        "users:\n  - {username: a, password: x}\n  - {username: a, password: y}\n",
        "node.yaml:3: users[1].username: duplicate username 'a' (also users[0])",
        id="duplicate-user",
    ),
    pytest.param(
        "users:\n  - {username: a, password: 'scrypt$16384$8$1$c2FsdA==$AAAA'}\n",
        "node.yaml:2: users[0].password: password hash has an empty salt or a hash of 3 bytes, not 32",
        id="malformed-password-hash",
    ),
    pytest.param(
        "acceptors:\n  - {name: a, port: 1000}\n  - {name: b, port: 1000}\n",
        "node.yaml:3: acceptors[1].port: 127.0.0.1:1000 is already used by acceptors[0]",
        id="acceptor-port-clash",
    ),
    pytest.param(
        "- just\n- a list\n",
        "node.yaml:1: the configuration must be a mapping of keys to values",
        id="top-level-list",
    ),
    pytest.param(
        "name: a\nacceptors:\n  - name: a\n    port: [1\n",
        "node.yaml:5: invalid YAML: while parsing a flow sequence, expected ',' or ']', but got '<stream end>' "
        "(started on line 4)",
        id="yaml-syntax",
    ),
    pytest.param(
        "name: a\nname: b\n",
        "node.yaml:2: name: duplicate key, first defined on line 1",
        id="duplicate-key",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUTS)
def test_bad_input_names_line_and_key(in_tmp: Path, text: str, expected: str) -> None:
    assert errors_of(in_tmp, textwrap.dedent(text)) == [expected.format(dir=in_tmp.resolve())]


def test_ssl_without_cert_and_key_names_both_keys(in_tmp: Path) -> None:
    text = """\
        acceptors:
          - name: grpc
            ssl-enabled: true
            need-client-auth: true
        """
    assert errors_of(in_tmp, text) == [
        "node.yaml:2: acceptors[0].cert-path: required when ssl-enabled is true",
        "node.yaml:2: acceptors[0].key-path: required when ssl-enabled is true",
        "node.yaml:2: acceptors[0].trust-path: required when need-client-auth is true "
        "(the CA that signs client certificates)",
    ]


def test_need_client_auth_requires_ssl(in_tmp: Path) -> None:
    (in_tmp / "ca.pem").write_text("PEM")
    text = "journal:\n  listen:\n    need-client-auth: true\n    trust-path: ca.pem\n"
    assert errors_of(in_tmp, text) == ["node.yaml:3: journal.listen.need-client-auth: requires ssl-enabled: true"]


def test_duplicate_keys_are_all_reported_with_both_lines(in_tmp: Path) -> None:
    text = """\
        address-settings:
          "#":
            max-delivery-attempts: 5
            redelivery-delay: 0
            max-delivery-attempts: 6
        acceptors:
          - name: a
            port: 1
            port: 2
        """
    assert errors_of(in_tmp, text) == [
        'node.yaml:5: address-settings."#".max-delivery-attempts: duplicate key, first defined on line 3',
        "node.yaml:9: acceptors[0].port: duplicate key, first defined on line 8",
    ]


def test_multiple_errors_are_reported_together_in_line_order(in_tmp: Path) -> None:
    text = """\
        name: ""
        acceptors:
          - name: grpc
            prot: 1
        journal:
          max-batch-records: 0
        addresses:
          orders:
            anycast:
              - name: orders
                durable: maybe
        address-settings:
          "#":
            default-address-routing-type: sideways
        """
    write(in_tmp, text)
    with pytest.raises(ConfigError) as info:
        load_config("node.yaml")
    assert str(info.value).splitlines() == [
        "node.yaml:1: name: String should have at least 1 character",
        "node.yaml:4: acceptors[0].prot: unknown key (did you mean 'port'?)",
        "node.yaml:6: journal.max-batch-records: Input should be greater than or equal to 1",
        "node.yaml:11: addresses.orders.anycast[0].durable: Input should be a valid boolean, unable to interpret input",
        "node.yaml:14: address-settings.\"#\".default-address-routing-type: Input should be 'ANYCAST' or 'MULTICAST'",
    ]
    assert [p.line for p in info.value.problems] == [1, 4, 6, 11, 14]
    assert info.value.problems[1].key == "acceptors[0].prot"
    assert isinstance(info.value, ValueError)


def test_load_config_text_uses_the_source_name() -> None:
    with pytest.raises(ConfigError, match=r"^<string>:1: id-cache-size: Input should be a valid integer"):
        load_config_text("id-cache-size: lots\n")
    with pytest.raises(ConfigError, match=r"^etc/a.yaml:1: "):
        load_config_text("id-cache-size: lots\n", source="etc/a.yaml")


def test_missing_file_is_a_config_error(in_tmp: Path) -> None:
    with pytest.raises(ConfigError, match=r"^nope.yaml: cannot read configuration"):
        load_config("nope.yaml")


def test_format_key_path() -> None:
    assert format_key_path(("address-settings", "orders.#", "max-delivery-attempts")) == (
        'address-settings."orders.#".max-delivery-attempts'
    )
    assert format_key_path(("acceptors", 0, "prot")) == "acceptors[0].prot"
    assert format_key_path(("addresses", "DLQ", "anycast", 1, "name")) == "addresses.DLQ.anycast[1].name"
    assert format_key_path(()) == ""


# --- YAML source -------------------------------------------------------------


def test_yaml_source_lines_and_plain_values() -> None:
    text = textwrap.dedent(
        """\
        a: 1
        b:
          - x
          -
            c: 2020-01-01
        base: &base
          k1: v1
          k2: v2
        merged:
          <<: *base
          k2: override
        """
    )
    doc = load_yaml(text)
    assert doc.data["b"] == ["x", {"c": "2020-01-01"}]  # timestamps stay text
    assert doc.data["merged"] == {"k1": "v1", "k2": "override"}
    assert doc.lines[("a",)] == 1
    assert doc.lines[("b", 0)] == 3
    assert doc.lines[("b", 1, "c")] == 5
    assert doc.lines[("merged", "k1")] == 7
    assert doc.lines[("merged", "k2")] == 11
    assert doc.line_for(("b", 1, "c", "deeper", 3)) == 5
    assert load_yaml("").data is None


def test_yaml_source_rejects_recursive_aliases() -> None:
    with pytest.raises(YamlSourceError, match="recursive alias"):
        load_yaml("a: &x\n  b: *x\n")


# --- development template ----------------------------------------------------


def test_dev_template_is_a_valid_config_like_artemis_create(in_tmp: Path) -> None:
    text = default_dev_config_yaml()
    assert text.startswith("#")
    cfg = load_config_text(text)
    assert (cfg.acceptors[0].host, cfg.acceptors[0].port) == ("127.0.0.1", 61616)
    assert cfg.journal_url() == f"sqlite:///{in_tmp.resolve()}/data/journal.db"
    assert cfg.addresses["DLQ"].anycast[0].name == "DLQ"
    assert cfg.addresses["ExpiryQueue"].anycast[0].name == "ExpiryQueue"
    resolved = AddressSettingsResolver.from_config(cfg).resolve("anything.at.all")
    assert (resolved.dead_letter_address, resolved.expiry_address) == ("DLQ", "ExpiryQueue")
    assert resolved.max_delivery_attempts == 10


def test_dev_template_options() -> None:
    cfg = load_config_text(default_dev_config_yaml(name="node-b", port=61617, data_directory="/tmp/b"))
    assert (cfg.name, cfg.acceptors[0].port, cfg.data_directory) == ("node-b", 61617, Path("/tmp/b"))
