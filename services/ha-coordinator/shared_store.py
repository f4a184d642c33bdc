"""Shared store on SQL: who of a live/backup group may serve its store.

The live and its backups share one PostgreSQL store. One lease row in it
(``meshmq_ha_lease``, Artemis's JDBC lock and ActiveMQ's JDBC master/slave
mutex) says who is active: the holder renews it every
``journal.jdbc-lock-renew-period``; a backup polls at the same period and
takes the store once the lease has gone ``journal.jdbc-lock-expiration``
without renewal. Times are the database's own clock (``clock_timestamp()``),
so the nodes' clocks never matter.

The lease only decides who *should* serve. What makes two nodes serving the
same data impossible is the journal's epoch: the new holder activates the
store at a newer epoch before it loads anything, and from then on the store
refuses every write stamped with an older one (services/journal/store.py). A
live that was frozen past its lease and resumes cannot commit a row or
confirm a message; it finds its renewal refused and halts.

States of the row (column ``state``):

* ``free``: nobody holds it (never held, or the holder stopped with
  failover-on-shutdown): anyone may take it.
* ``live``: ``holder`` serves until ``expires_at``; after that anyone may
  take it (the holder died or was cut off).
* ``paused``: the live stopped normally without failover-on-shutdown: only
  a master (the live) takes it back; backups wait.
* ``failback``: an active backup gave the store back to the master that
  asked (``failback_by``); reserved for that master until ``expires_at``.

Every acquisition clears the failback request: a master that asked and is
still there asks the new holder again at its next look, and one that died
asking is forgotten (else the backup would fail back to it over and over).

`decide` is the whole policy as a pure function; `SharedStoreLease` runs it
against the row under ``SELECT ... FOR UPDATE``, so two nodes never both win.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import Enum

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from meshmq.activation import FAILED_BACK, LEASE_LOST, EpochGrant, granted_from
from meshmq.config.models import BrokerConfig
from meshmq.pg_sessions import stuck_transaction_options

log = logging.getLogger("meshmq.ha")

MASTER = "master"
SLAVE = "slave"
LEASE = "live"  # the one row of a store: one live/backup group per store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meshmq_ha_lease (
    name TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    holder TEXT,
    holder_name TEXT,
    holder_role TEXT,
    expires_at TIMESTAMPTZ,
    failback_by TEXT,
    failback_name TEXT,
    epoch BIGINT NOT NULL DEFAULT 0,
    holder_connector TEXT
);
CREATE TABLE IF NOT EXISTS meshmq_ha_backups (
    instance TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    connector TEXT NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL
)"""


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


class Action(Enum):
    ACQUIRE = "acquire"
    RENEW = "renew"
    WAIT = "wait"
    REQUEST_FAILBACK = "request-failback"


@dataclass(frozen=True)
class LeaseRow:
    state: str
    holder: str | None
    holder_role: str | None
    valid: bool  # expires_at is still ahead (database clock)
    failback_by: str | None


def decide(row: LeaseRow, me: str, role: str) -> Action:
    """What the node `me` (role master or slave) does about the lease now."""
    if row.state == "live":
        if row.holder == me:
            return Action.RENEW
        if not row.valid:
            return Action.ACQUIRE  # the holder died or was cut off
        if role == MASTER and row.holder_role == SLAVE and row.failback_by != me:
            return Action.REQUEST_FAILBACK
        return Action.WAIT
    if row.state == "failback":
        return Action.ACQUIRE if row.failback_by == me or not row.valid else Action.WAIT
    if row.state == "paused":
        return Action.ACQUIRE if role == MASTER else Action.WAIT
    return Action.ACQUIRE  # free


class SharedStoreLease:
    """This node's side of the lease (the `meshmq.activation.Activation` of a
    shared-store node). All SQL runs in a worker thread, never on the loop."""

    def __init__(self, config: BrokerConfig) -> None:
        assert config.ha_policy.shared_store is not None and config.journal.url is not None
        policy = config.ha_policy.shared_store.own()
        self.role = MASTER if policy.master is not None else SLAVE
        self.passive_start = policy.slave is not None or not policy.master.wait_for_activation
        self.allow_failback = policy.slave.allow_failback if policy.slave is not None else False
        self.name = config.name
        # A new id each run: a restarted node is a new holder, never mistaken for the old one.
        self.me = f"{config.name}/{uuid.uuid4()}"
        self.renew_period = config.journal.jdbc_lock_renew_period / 1000
        self.expiration = config.journal.jdbc_lock_expiration / 1000
        url = make_url(config.journal.url)
        self.description = f"shared store {url.render_as_string(hide_password=True)}"
        # A renewal's UPDATE sent and its COMMIT not (a node frozen or cut off
        # between them) would keep every backup's look at the lease row waiting:
        # the session ends after Journal.stuck_transaction_timeout.
        stuck = stuck_transaction_options(config.journal.stuck_transaction_timeout)
        self._engine = create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=1,
                                     connect_args={"connect_timeout": max(1, int(self.expiration / 2)), **stuck})
        self.epoch_floor = 0
        self._ready = False
        self._keeper: asyncio.Task | None = None  # renews from activation to release
        self._outcome: asyncio.Future[str] | None = None  # why the node must stop serving
        self._failback_name = ""
        self._live = ""  # the holder's connector, as the last look at the lease saw it
        self._connector: str | None = None  # where this node listens (passive or active)
        self._backup_seen = ""  # while active: the backup named to clients
        self._backup_changed = asyncio.Event()

    # ------------------------------------------------------------ SQL (worker thread)

    def _ensure_row(self) -> None:
        """The table and its row, created by whichever node comes first."""
        for attempt in range(3):
            try:
                with self._engine.begin() as conn:
                    for statement in _SCHEMA.split(";"):
                        conn.execute(text(statement))
                    conn.execute(text("INSERT INTO meshmq_ha_lease (name, state) VALUES (:n, 'free') "
                                      "ON CONFLICT DO NOTHING"), {"n": LEASE})
                self._ready = True
                return
            except IntegrityError:  # two nodes created the table at once: it exists now
                if attempt == 2:
                    raise

    def _step(self) -> tuple[Action, int | None]:
        """One look at the row, and what was done: (action, epoch after an acquire)."""
        if not self._ready:
            self._ensure_row()
        with self._engine.begin() as conn:
            r = conn.execute(text(
                "SELECT state, holder, holder_role, expires_at > clock_timestamp() AS valid, failback_by, epoch, "
                "holder_connector FROM meshmq_ha_lease WHERE name = :n FOR UPDATE"), {"n": LEASE}).one()
            self._live = (r.holder_connector or "") if r.state == "live" and r.valid else ""
            row = LeaseRow(r.state, r.holder, r.holder_role, bool(r.valid), r.failback_by)
            action = decide(row, self.me, self.role)
            if action is not Action.ACQUIRE and self._connector is not None:
                # Still waiting: seen, as a backup the live may name to its clients.
                conn.execute(text(
                    "INSERT INTO meshmq_ha_backups (instance, name, connector, seen_at) "
                    "VALUES (:me, :name, :c, clock_timestamp()) ON CONFLICT (instance) DO UPDATE "
                    "SET connector = EXCLUDED.connector, seen_at = EXCLUDED.seen_at"),
                    {"me": self.me, "name": self.name, "c": self._connector})
            if action is Action.ACQUIRE:
                conn.execute(text("DELETE FROM meshmq_ha_backups WHERE instance = :me"), {"me": self.me})
                epoch = r.epoch + 1
                conn.execute(text(
                    "UPDATE meshmq_ha_lease SET state = 'live', holder = :me, holder_name = :name, holder_role = :role, "
                    "holder_connector = NULL, "
                    "expires_at = clock_timestamp() + make_interval(secs => :exp), epoch = :epoch, "
                    "failback_by = NULL, failback_name = NULL WHERE name = :n"),
                    {"me": self.me, "name": self.name, "role": self.role, "exp": self.expiration, "epoch": epoch,
                     "n": LEASE})
                return action, epoch
            if action is Action.REQUEST_FAILBACK:
                conn.execute(text("UPDATE meshmq_ha_lease SET failback_by = :me, failback_name = :name WHERE name = :n"),
                             {"me": self.me, "name": self.name, "n": LEASE})
            return action, None

    def _renew(self) -> str | None:
        """Renew our lease. None: held; LEASE_LOST: someone else has it; FAILED_BACK: a master asks for it back."""
        with self._engine.begin() as conn:
            r = conn.execute(text(
                "UPDATE meshmq_ha_lease SET expires_at = clock_timestamp() + make_interval(secs => :exp), "
                "holder_connector = :connector "
                "WHERE name = :n AND state = 'live' AND holder = :me RETURNING failback_by, failback_name"),
                {"exp": self.expiration, "n": LEASE, "me": self.me, "connector": self._connector}).one_or_none()
        if r is None:
            return LEASE_LOST
        with self._engine.begin() as conn:
            b = conn.execute(text(
                "SELECT connector FROM meshmq_ha_backups WHERE instance <> :me "
                "AND seen_at > clock_timestamp() - make_interval(secs => :exp) ORDER BY name, instance LIMIT 1"),
                {"me": self.me, "exp": self.expiration}).one_or_none()
        self._backup_seen = b.connector if b is not None else ""
        if r.failback_by is not None and self.role == SLAVE and self.allow_failback:
            self._failback_name = r.failback_name
            return FAILED_BACK
        return None

    def _release(self, state: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(text(
                "UPDATE meshmq_ha_lease SET state = :state, holder = NULL, holder_name = NULL, holder_role = NULL, "
                "holder_connector = NULL, "
                "expires_at = CASE WHEN :state = 'failback' THEN clock_timestamp() + make_interval(secs => :exp) "
                "ELSE NULL END WHERE name = :n AND holder = :me"),
                {"state": state, "exp": self.expiration, "n": LEASE, "me": self.me})

    # ------------------------------------------------------------ the Activation protocol

    async def acquire(self) -> EpochGrant:
        """Wait until this node holds the lease; grants an epoch no lower than the
        lease's activation sequence."""
        said = None
        while True:
            try:
                action, epoch = await asyncio.to_thread(self._step)
            except SQLAlchemyError as exc:
                action, epoch = Action.WAIT, None
                if said != "error":
                    log.warning("%s: cannot reach the lease (%s); retrying every %.1f s", self.description,
                                _first_line(exc), self.renew_period)
                said = "error"
            if epoch is not None or action is Action.RENEW:
                self.epoch_floor = epoch or self.epoch_floor
                log.info("%s: this node (%s) holds the lease; activating", self.description, self.role)
                self._outcome = asyncio.get_running_loop().create_future()
                self._keeper = asyncio.create_task(self._keep())
                return granted_from(self.epoch_floor)
            if action.value != said:
                if action is Action.REQUEST_FAILBACK:
                    log.info("%s: a backup serves this store; asked it to fail back", self.description)
                elif action is Action.WAIT:
                    log.info("%s: another node holds the lease; waiting as %s", self.description,
                             "backup" if self.role == SLAVE else "live")
                said = action.value
            await asyncio.sleep(self.renew_period)

    def live(self) -> str:
        return self._live

    def listening_at(self, endpoint: str) -> None:
        """Written at the next look at the lease: in the backups' registry while
        waiting, as the holder's connector once active."""
        self._connector = endpoint

    async def backups(self) -> AsyncIterator[str]:
        """The backup the live names (a waiting node seen within jdbc-lock-expiration), at every change."""
        told = None
        while True:
            if self._backup_seen != told:
                told = self._backup_seen
                yield told
            self._backup_changed.clear()
            await self._backup_changed.wait()

    async def held(self) -> str:
        """While this node serves; returns why it must stop: LEASE_LOST, or
        FAILED_BACK (an active backup whose live is back). The lease is renewed
        on until `release`, so that a node stopping for a failback still holds
        the store while its last writes commit."""
        assert self._outcome is not None, "held() before acquire()"
        return await asyncio.shield(self._outcome)

    async def _keep(self) -> None:
        """Renew every jdbc-lock-renew-period from activation to release."""
        # Counted from before each renewal is sent: the database set its expiry
        # no earlier, so this node never thinks it holds a lease the database
        # already let lapse.
        last_renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.renew_period)
            sent = time.monotonic()
            try:
                outcome = await asyncio.to_thread(self._renew)
            except Exception as exc:  # unreachable database, or anything else: the lease is not renewed
                overdue = time.monotonic() - last_renewed
                log.warning("%s: renewing the lease failed (%s)", self.description, _first_line(exc))
                if overdue >= self.expiration:
                    log.error("%s: the lease was not renewed for %.1f s (jdbc-lock-expiration): a backup may hold "
                              "it now; stopping", self.description, overdue)
                    self._settle(LEASE_LOST)
                    return
                continue
            if outcome == LEASE_LOST:
                log.error("%s: another node holds the lease now; stopping", self.description)
                self._settle(LEASE_LOST)
                return
            last_renewed = sent
            self._backup_changed.set()
            if outcome == FAILED_BACK and not self._outcome.done():
                log.info("%s asks for its store back (allow-failback): this backup stops serving",
                         self._failback_name)
                self._settle(FAILED_BACK)  # and renews on until release()

    def _settle(self, outcome: str) -> None:
        if self._outcome is not None and not self._outcome.done():
            self._outcome.set_result(outcome)

    async def release(self, *, failover: bool, failback: bool = False) -> None:
        """Give the lease up at a normal stop: free for a backup (failover-on-shutdown,
        or after a failback, reserved for the master that asked), else paused."""
        state = "failback" if failback else "free" if failover else "paused"
        await self._stop_keeping()
        try:
            await asyncio.to_thread(self._release, state)
            log.info("%s: lease released (%s)", self.description, state)
        except SQLAlchemyError as exc:
            log.warning("%s: releasing the lease failed (%s); it lapses after jdbc-lock-expiration",
                        self.description, _first_line(exc))

    async def _stop_keeping(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            try:
                await self._keeper
            except (asyncio.CancelledError, Exception):
                pass
            self._keeper = None

    async def close(self) -> None:
        await self._stop_keeping()
        await asyncio.to_thread(self._engine.dispose)
