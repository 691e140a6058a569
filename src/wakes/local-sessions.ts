import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { Doorbell } from '../contract/doorbell.js';
import type { Principal } from '../data/index.js';
import {
  beatProcess,
  removeDeadProcesses,
  removeProcess,
} from '../data/wakes/consumer-processes.js';
import {
  addConsumerSession,
  removeConsumerSession,
  removeProcessSessions,
} from '../data/wakes/consumer-sessions.js';
import type { SessionPath } from './take-ring.js';

/** A consumer attached to this process: it says how to push to it; false means it could not. */
export interface ConsumerSpec {
  principal: Principal;
  path: SessionPath;
  /** Only these queues (null: every queue the principal may work). */
  queues?: string[] | null;
  push(doorbell: Doorbell): Promise<boolean> | boolean;
}

export interface LocalConsumer extends ConsumerSpec {
  id: string;
}

export interface LocalSessions {
  /** Registers a consumer as a session of this process, which rings may now pick. */
  attach(spec: ConsumerSpec): Promise<LocalConsumer>;
  get(id: string): LocalConsumer | undefined;
  /** The sessions of one principal in this process. */
  of(principal: string): LocalConsumer[];
  ids(): string[];
  /** Pushes to a consumer; one that cannot take it is gone (forgotten). */
  push(consumer: LocalConsumer, doorbell: Doorbell): Promise<boolean>;
  /** A consumer left (or cannot be reached): it is no longer rung, and what it asked is moot. */
  forget(consumer: LocalConsumer): Promise<void>;
  /** A session a ring picked that had left this process meanwhile: its row goes too. */
  removeGone(id: string): Promise<void>;
  /** This process is alive; so are its sessions. Those of processes that died are removed. */
  heartbeat(): Promise<void>;
  /** The process says it is alive (on start, before its first heartbeat). */
  beat(): Promise<unknown>;
  /**
   * How many server processes were alive at the last beat, this one included (at least one):
   * limits held in each process's memory divide by it (README, Limits).
   */
  liveProcesses(): number;
  /** Every session of this process, and the process itself, are gone. */
  close(): Promise<void>;
}

/**
 * The consumer sessions of one server process: kept in memory (how to push to each) and in the
 * database (which rings, from any process, may pick them), and kept alive by a heartbeat. A
 * process that stops beating is dead; its sessions go, with the approvals its channels asked.
 */
export function localSessions({
  sql,
  processId,
  sessionTtlMs,
  cancelSessionApprovals,
}: {
  sql: postgres.Sql;
  processId: string;
  /** Sessions not refreshed for this long belong to a dead process. */
  sessionTtlMs: number;
  /** Cancels the approvals these sessions asked (the todo service's). */
  cancelSessionApprovals: (sessionIds: string[]) => Promise<unknown>;
}): LocalSessions {
  const local = new Map<string, LocalConsumer>();

  const forget = async (consumer: LocalConsumer) => {
    local.delete(consumer.id);
    await removeConsumerSession(sql, consumer.id);
    if (consumer.path === 'channel') await cancelSessionApprovals([consumer.id]);
  };

  let live = 1;
  const beat = async () => {
    live = await beatProcess(sql, processId, sessionTtlMs);
  };

  return {
    async attach(spec) {
      const consumer: LocalConsumer = { ...spec, id: randomUUID() };
      await addConsumerSession(sql, {
        id: consumer.id,
        principal: spec.principal.name,
        processId,
        path: spec.path,
        queues: spec.queues ?? null,
      });
      local.set(consumer.id, consumer);
      return consumer;
    },
    get: (id) => local.get(id),
    of: (principal) => [...local.values()].filter((c) => c.principal.name === principal),
    ids: () => [...local.keys()],
    async push(consumer, doorbell) {
      let delivered: boolean;
      try {
        delivered = await consumer.push(doorbell);
      } catch {
        delivered = false;
      }
      if (!delivered) await forget(consumer);
      return delivered;
    },
    async forget(consumer) {
      if (local.has(consumer.id)) await forget(consumer);
    },
    async removeGone(id) {
      await removeConsumerSession(sql, id);
    },
    beat,
    liveProcesses: () => live,
    async heartbeat() {
      await beat();
      // Sessions of processes that died: gone, with the approvals their channels were waiting on.
      const dead = await removeDeadProcesses(sql, sessionTtlMs);
      await cancelSessionApprovals(
        dead.filter((row) => row.path === 'channel').map((row) => row.id),
      );
    },
    async close() {
      await removeProcessSessions(sql, processId).catch(() => {});
      await removeProcess(sql, processId).catch(() => {});
      local.clear();
    },
  };
}
