/**
 * A connection's temporary queue (JMS TemporaryQueue, docs/protocol.md §6.7).
 *
 * `Session.createTemporaryQueue()` (or the connection's) makes one: an anycast
 * queue on an address of its own name (a UUID) that lives until `delete()` or
 * until the connection closes. Anyone may send to it by its name (what a
 * reply-to usually names); any session of this connection, no other, may
 * consume from it.
 *
 * * It is made on the node of a session the connection keeps for its
 *   temporary queues (its *anchor*), opened with the first one and closed with
 *   the connection: a router deletes a connection's temporary queues when the
 *   connection's last session on that node ends.
 * * A session of the connection on another node that consumes it first asks
 *   its own node for it under the same name (`create_temporary_queue`,
 *   answered `existed` where it is there already).
 * * After a failover each session that held it asks its new node for it again
 *   before its producers and consumers are made there. It is not stored: what
 *   waited in it on a failed node is gone.
 *
 * The Python SDK's meshmq/client/temporary_queue.py is the reference.
 */
import type { Session } from "./session";
import type { Connection } from "./connection";

export class TemporaryQueue {
  /** @internal the sessions that asked their node for it: each keeps it there while it is open. */
  readonly holders = new Set<Session>();
  /** Whether `delete()` ran. */
  deleted = false;

  /** @internal use Session.createTemporaryQueue or Connection.createTemporaryQueue */
  constructor(readonly name: string, private readonly connection: Connection) {}

  /** Its name: what a producer or a reply-to names. */
  toString(): string {
    return this.name;
  }

  /**
   * Deletes it on every node the connection holds it on, with what it holds
   * (JMS TemporaryQueue.delete). Throws QueueInUseError while one of the
   * connection's consumers is on it; deleting it twice does nothing.
   */
  async delete(): Promise<void> {
    if (this.deleted) return;
    const holders = [...this.holders].filter((s) => s.holdsOpen()).sort((a, b) => a.nodeId.localeCompare(b.nodeId));
    for (const s of holders) s.refuseIfConsumed(this.name);
    const doneOn = new Set<string>();
    for (const s of holders) {
      if (doneOn.has(s.nodeId)) continue;
      await s.deleteTemporaryQueue(this.name);
      doneOn.add(s.nodeId);
    }
    this.deleted = true;
    for (const s of this.holders) s.forgetTemporaryQueue(this.name);
    this.holders.clear();
    this.connection.forgetTemporaryQueue(this.name);
  }
}
