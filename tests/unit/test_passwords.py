"""Users' passwords at rest (meshmq/security/passwords.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshmq.security.passwords import PasswordChecker, check_stored, hash_password, is_hashed, verify_password


def test_a_hash_verifies_its_password_only():
    stored = hash_password("s3cret")
    assert is_hashed(stored) and "s3cret" not in stored
    assert verify_password(stored, "s3cret")
    assert not verify_password(stored, "s3cret ") and not verify_password(stored, "")


def test_the_same_password_hashes_differently_each_time():
    first, second = hash_password("same").split("$"), hash_password("same").split("$")
    assert first[:4] == second[:4] == ["scrypt", "16384", "8", "1"]
    assert first[4] != second[4] and first[5] != second[5]  # another salt, so another hash


def test_plain_text_is_still_compared():
    assert verify_password("plain", "plain") and not is_hashed("plain")
    assert not verify_password("plain", "Plain") and not verify_password("plain", "plain-but-longer")


@pytest.mark.parametrize("bad, why", [
    ("scrypt$16384$8$1$c2FsdA==", "has 5 parts"),
    ("scrypt$16384$eight$1$c2FsdA==$AAAA", "must be integers"),
    ("scrypt$16384$8$1$!!!$AAAA", "its salt is not base64"),
    ("scrypt$16384$8$1$c2FsdA==$AA", "its hash is not base64"),
    ("scrypt$1000$8$1$c2FsdA==$" + "A" * 44, "power of 2"),
    ("scrypt$16384$8$1$c2FsdA==$AAAA", "not 32"),
])
def test_a_malformed_hash_is_an_error_naming_the_problem(bad, why):
    with pytest.raises(ValueError, match=why):
        check_stored(bad)
    with pytest.raises(ValueError, match=why):  # never a silent refusal
        verify_password(bad, "anything")


def test_the_checker_verifies_a_presentation_once():
    checker = PasswordChecker({"app": hash_password("pw")})
    assert all(checker.check("app", "pw") for _ in range(5))
    assert checker.full_checks == 1
    assert not checker.check("app", "wrong") and not checker.check("app", "wrong")
    assert checker.full_checks == 3  # failures are checked in full every time
    assert not checker.check("nobody", "pw")


def test_the_checker_remembers_a_bounded_number_of_presentations():
    checker = PasswordChecker({"a": "pa", "b": "pb", "c": "pc"}, remembered=2)
    for user in ("a", "b", "a", "c"):  # c pushes out the least recently used, b
        assert checker.check(user, "p" + user)
    assert checker.full_checks == 3
    assert checker.check("a", "pa") and checker.check("c", "pc") and checker.full_checks == 3
    assert checker.check("b", "pb") and checker.full_checks == 4


@settings(max_examples=10, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_password_round_trips(password):
    stored = hash_password(password)
    assert verify_password(stored, password) and not verify_password(stored, password + "x")


def test_an_unknown_user_costs_a_full_scrypt_like_a_wrong_password():
    # Timing is measured end to end in tests/integration/test_login_throttle.py; here, the work done.
    checker = PasswordChecker({"app": hash_password("pw")})
    assert checker._dummy.split("$")[:4] == ["scrypt", "16384", "8", "1"]
    assert not checker.check("nobody", "pw") and checker.full_checks == 1


def test_the_dummy_follows_the_users_hash_parameters_or_plain_text():
    light = "scrypt$1024$8$1$" + hash_password("x").split("$", 4)[4]  # any N: the parameters are read
    assert PasswordChecker({"a": light, "b": light, "c": hash_password("y")})._dummy.startswith("scrypt$1024$8$1$")
    assert not is_hashed(PasswordChecker({"a": "plain"})._dummy)
