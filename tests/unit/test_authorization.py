"""Authorization (Artemis security-settings): the Authorizer decider and its config keys."""

from __future__ import annotations

import textwrap

import grpc
import pytest

from meshmq.config.loader import ConfigError, effective_config_yaml, load_config_text
from meshmq.config.models import SecuritySetting
from meshmq.errors import STATUS_FOR_REASON, BrokerError, PermissionDeniedError, Reason, error_for
from meshmq.security.authorization import Authorizer, Permission


def denial(authorizer: Authorizer, user: str, permission: Permission, address: str) -> str:
    """The refusal message; fails the test if the action is allowed."""
    assert not authorizer.allowed(user, permission, address)
    with pytest.raises(BrokerError) as info:
        authorizer.check(user, permission, address)
    assert info.value.reason == Reason.PERMISSION_DENIED
    return info.value.message


# --- one test per permission type --------------------------------------------

ACTIONS = {
    Permission.SEND: "send to address",
    Permission.CONSUME: "consume from address",
    Permission.CREATE_ADDRESS: "create address",
    Permission.DELETE_ADDRESS: "delete address",
    Permission.CREATE_DURABLE_QUEUE: "create a durable queue on address",
    Permission.DELETE_DURABLE_QUEUE: "delete a durable queue on address",
    Permission.CREATE_NON_DURABLE_QUEUE: "create a non-durable queue on address",
    Permission.DELETE_NON_DURABLE_QUEUE: "delete a non-durable queue on address",
    Permission.MANAGE: "manage address",
    Permission.BROWSE: "browse queues on address",
    Permission.VIEW: "view address",
}


@pytest.mark.parametrize("permission", list(Permission), ids=lambda p: p.value)
def test_each_permission_needs_its_role(permission: Permission) -> None:
    authorizer = Authorizer(
        {"orders.#": {permission: frozenset({"granted"})}},
        {"alice": frozenset({"granted"}), "bob": frozenset({"other"})},
    )
    assert authorizer.allowed("alice", permission, "orders.eu")
    authorizer.check("alice", permission, "orders.eu")
    assert denial(authorizer, "bob", permission, "orders.eu") == (
        f"user 'bob' may not {ACTIONS[permission]} 'orders.eu' "
        f"(permission {permission.value}; roles allowed by security-settings 'orders.#': granted)"
    )
    implied = {Permission.MANAGE: {Permission.VIEW}}.get(permission, set())
    others = [p for p in Permission if p is not permission and p not in implied]
    assert not any(authorizer.allowed("alice", p, "orders.eu") for p in others)


def test_manage_implies_view_but_view_grants_nothing_else() -> None:
    authorizer = Authorizer(
        {"activemq.management": {Permission.MANAGE: frozenset({"ops"}), Permission.VIEW: frozenset({"watchers"})}},
        {"ops": frozenset({"ops"}), "watcher": frozenset({"watchers"})},
    )
    assert authorizer.allowed("ops", Permission.VIEW, "activemq.management")
    assert authorizer.allowed("watcher", Permission.VIEW, "activemq.management")
    assert not authorizer.allowed("watcher", Permission.MANAGE, "activemq.management")
    assert denial(authorizer, "watcher", Permission.MANAGE, "activemq.management").endswith(
        "roles allowed by security-settings 'activemq.management': ops)"
    )


def test_every_permission_is_a_security_setting_key() -> None:
    aliases = [field.alias for field in SecuritySetting.model_fields.values()]
    assert aliases == [p.value for p in Permission]


# --- which setting applies -----------------------------------------------------

PRECEDENCE = Authorizer(
    {
        "#": {Permission.SEND: frozenset({"x"}), Permission.CONSUME: frozenset({"x"})},
        "orders.#": {Permission.SEND: frozenset({"y"})},
        "orders.*": {Permission.SEND: frozenset({"z"})},
        "orders.eu": {Permission.CONSUME: frozenset({"x"})},
    },
    {"x": frozenset({"x"}), "y": frozenset({"y"}), "z": frozenset({"z"})},
)


def test_the_exact_match_wins_entirely() -> None:
    # "#" grants x send, but "orders.eu" applies alone and grants x only consume.
    assert PRECEDENCE.allowed("x", Permission.CONSUME, "orders.eu")
    assert denial(PRECEDENCE, "x", Permission.SEND, "orders.eu") == (
        "user 'x' may not send to address 'orders.eu' (permission send; roles allowed by security-settings "
        "'orders.eu': none)"
    )
    assert not PRECEDENCE.allowed("y", Permission.SEND, "orders.eu")
    assert not PRECEDENCE.allowed("z", Permission.SEND, "orders.eu")


def test_a_single_word_wildcard_beats_a_hash() -> None:
    assert PRECEDENCE.allowed("z", Permission.SEND, "orders.us")
    assert "security-settings 'orders.*': z)" in denial(PRECEDENCE, "y", Permission.SEND, "orders.us")
    assert not PRECEDENCE.allowed("x", Permission.CONSUME, "orders.us")


def test_a_longer_hash_beats_the_catch_all() -> None:
    for address in ("orders", "orders.us.east"):
        assert PRECEDENCE.allowed("y", Permission.SEND, address)
        assert not PRECEDENCE.allowed("z", Permission.SEND, address)
        assert not PRECEDENCE.allowed("x", Permission.SEND, address)
    assert PRECEDENCE.allowed("x", Permission.SEND, "news.sport")
    assert PRECEDENCE.allowed("x", Permission.CONSUME, "news")


def test_an_address_no_setting_matches_is_closed() -> None:
    authorizer = Authorizer({"orders.#": {Permission.SEND: frozenset({"p"})}}, {"ann": frozenset({"p"})})
    assert denial(authorizer, "ann", Permission.SEND, "news") == (
        "user 'ann' may not send to address 'news' (permission send; no security-settings match 'news')"
    )


def test_answers_stay_right_beyond_the_cache() -> None:
    authorizer = Authorizer(
        {"a.#": {Permission.SEND: frozenset({"r"})}, "b.#": {Permission.CONSUME: frozenset({"r"})}},
        {"u": frozenset({"r"})},
        cache_size=1,
    )
    for _ in range(3):
        assert authorizer.allowed("u", Permission.SEND, "a.1") and not authorizer.allowed("u", Permission.SEND, "b.1")
        assert authorizer.allowed("u", Permission.CONSUME, "b.1")


def test_a_bad_match_string_is_refused_with_its_key() -> None:
    with pytest.raises(ValueError, match=r"security-settings 'orders\.#\.eu': '#' may only be the last word"):
        Authorizer({"orders.#.eu": {}}, {})


# --- users and roles -----------------------------------------------------------


def test_a_user_with_several_roles_has_the_permissions_of_each() -> None:
    authorizer = Authorizer(
        {"#": {Permission.SEND: frozenset({"producers"}), Permission.CONSUME: frozenset({"consumers", "admins"})}},
        {"carol": frozenset({"producers", "consumers"}), "dave": frozenset({"producers"})},
    )
    assert authorizer.allowed("carol", Permission.SEND, "q") and authorizer.allowed("carol", Permission.CONSUME, "q")
    assert "roles allowed by security-settings '#': admins, consumers)" in denial(
        authorizer, "dave", Permission.CONSUME, "q"
    )
    assert not authorizer.allowed("carol", Permission.MANAGE, "q")


def test_an_unknown_user_has_no_roles() -> None:
    authorizer = Authorizer({"#": {Permission.SEND: frozenset({"producers"})}}, {"carol": frozenset({"producers"})})
    assert denial(authorizer, "mallory", Permission.SEND, "q").startswith("user 'mallory' may not send to address 'q'")


# --- nothing to check ----------------------------------------------------------


def test_security_off_allows_everything() -> None:
    authorizer = Authorizer({"#": {}}, {}, enabled=False)
    for permission in Permission:
        assert authorizer.allowed("", permission, "any.address")
        authorizer.check("", permission, "any.address")


def test_security_on_without_settings_allows_every_user_everything() -> None:
    authorizer = Authorizer({}, {"carol": frozenset()})
    assert authorizer.enabled
    for user in ("carol", "unlisted"):
        for permission in Permission:
            authorizer.check(user, permission, "orders.eu")


# --- from the config file ------------------------------------------------------

SECURED = """\
security-enabled: true
users:
  - {username: alice, password: a, roles: [producers, consumers]}
  - {username: bob, password: b, roles: [consumers]}
  - {username: root, password: r}
security-settings:
  "#":
    manage: [admins]
  "orders.#":
    send: [producers]
    consume: [consumers]
    createDurableQueue: [producers]
    delete-durable-queue:
"""


def test_security_settings_and_roles_load_from_yaml() -> None:
    cfg = load_config_text(SECURED)
    assert [u.roles for u in cfg.users] == [("producers", "consumers"), ("consumers",), ()]
    orders = cfg.security_settings["orders.#"]
    assert (orders.send, orders.consume) == (("producers",), ("consumers",))
    assert orders.create_durable_queue == ("producers",)
    assert orders.delete_durable_queue == () and orders.browse == ()
    assert cfg.security_settings["#"].manage == ("admins",)
    assert load_config_text("").security_settings == {}


def test_the_effective_config_prints_kebab_case_and_reloads_equal() -> None:
    cfg = load_config_text(SECURED)
    text = effective_config_yaml(cfg, show_secrets=True)
    assert "create-durable-queue:\n    - producers" in text and "createDurableQueue" not in text
    assert load_config_text(text) == cfg


def test_authorizer_from_config() -> None:
    authorizer = Authorizer.from_config(load_config_text(SECURED))
    assert authorizer.allowed("alice", Permission.SEND, "orders.eu")
    assert authorizer.allowed("alice", Permission.CREATE_DURABLE_QUEUE, "orders.eu")
    assert authorizer.allowed("bob", Permission.CONSUME, "orders.eu")
    assert not authorizer.allowed("bob", Permission.SEND, "orders.eu")
    assert not authorizer.allowed("root", Permission.MANAGE, "orders.eu")  # no role, and "orders.#" applies alone
    assert not authorizer.allowed("alice", Permission.DELETE_DURABLE_QUEUE, "orders.eu")
    assert Authorizer.from_config(load_config_text("")).allowed("", Permission.DELETE_ADDRESS, "x")


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config_text(textwrap.dedent(text), source="node.yaml")
    return str(info.value).splitlines()


BAD_SECURITY = [
    pytest.param(
        'security-settings:\n  "orders.#.eu":\n    send: [p]\n',
        "node.yaml:2: security-settings.\"orders.#.eu\": invalid key: '#' may only be the last word of a match "
        "string (as in Artemis)",
        id="hash-not-last",
    ),
    pytest.param(
        'security-settings:\n  "orders.eu*": {}\n',
        "node.yaml:2: security-settings.\"orders.eu*\": invalid key: wildcard 'eu*' must be a whole word "
        "('*' or '#' between dots)",
        id="partial-word-wildcard",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    send: [p]\n    purge: [p]\n',
        'node.yaml:4: security-settings."#".purge: unknown key (expected one of: send, consume, create-address, '
        "delete-address, create-durable-queue, delete-durable-queue, create-non-durable-queue, "
        "delete-non-durable-queue, manage, browse, view)",
        id="unknown-permission",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    create_address: [p]\n',
        'node.yaml:3: security-settings."#".create_address: unknown key (did you mean \'create-address\'?)',
        id="snake-case-permission",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    send: "producers,admins"\n',
        'node.yaml:3: security-settings."#".send: expected a list of role names: [producers, admins], not a string',
        id="comma-separated-roles",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    consume: 3\n',
        'node.yaml:3: security-settings."#".consume: expected a list of role names, e.g. [admins, producers]',
        id="roles-not-a-list",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    consume: [""]\n',
        'node.yaml:3: security-settings."#".consume[0]: String should have at least 1 character',
        id="empty-role-name",
    ),
    pytest.param(
        'security-settings:\n  "#":\n    create-durable-queue: [a]\n    createDurableQueue: [b]\n',
        'node.yaml:4: security-settings."#".createDurableQueue: the same permission as create-durable-queue; '
        "give one of the two",
        id="both-spellings",
    ),
    pytest.param(
        "users:\n  - username: a\n    password: b\n    roles: admins\n",
        "node.yaml:4: users[0].roles: expected a list of role names: [admins], not a string",
        id="user-roles-not-a-list",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_SECURITY)
def test_bad_security_config_names_line_and_key(text: str, expected: str) -> None:
    assert errors_of(text) == [expected]


# --- the error on the wire -------------------------------------------------------


def test_a_refusal_is_a_permission_denied_status_and_a_typed_client_error() -> None:
    assert STATUS_FOR_REASON[Reason.PERMISSION_DENIED] == grpc.StatusCode.PERMISSION_DENIED
    assert isinstance(error_for("PERMISSION_DENIED", "no"), PermissionDeniedError)
