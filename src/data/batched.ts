import type postgres from 'postgres';
import type { Db } from '../platform/db/open-database.js';

/** The most callers one statement serves. */
const BATCH_MAX = 64;

interface Waiter<O> {
  resolve(output: O): void;
  reject(error: unknown): void;
}

interface Lane<I, O> {
  inputs: I[];
  waiters: Waiter<O>[];
  running: boolean;
}

/**
 * One statement for callers that would each send their own at the same moment: while a batch of
 * one key is in flight on a pool, callers with that key queue up, and the next batch takes them
 * all. With nobody else there a caller runs at once, alone; under load, each commit serves many.
 * `run` answers each input, in order. Inside a caller's transaction nothing is batched: the
 * statement runs alone on that transaction, as part of it.
 */
export function batched<I, O>(
  run: (sql: Db, key: string, inputs: I[]) => Promise<O[]>,
): (db: Db, key: string, input: I) => Promise<O> {
  const pools = new WeakMap<postgres.Sql, Map<string, Lane<I, O>>>();

  const drain = async (sql: postgres.Sql, lanes: Map<string, Lane<I, O>>, key: string) => {
    const lane = lanes.get(key)!;
    lane.running = true;
    while (lane.inputs.length > 0) {
      const inputs = lane.inputs.splice(0, BATCH_MAX);
      const waiters = lane.waiters.splice(0, BATCH_MAX);
      try {
        const outputs = await run(sql, key, inputs);
        waiters.forEach((waiter, index) => waiter.resolve(outputs[index]!));
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    lane.running = false;
    lanes.delete(key);
  };

  return (db, key, input) => {
    if (isTransaction(db)) return run(db, key, [input]).then((outputs) => outputs[0]!);
    let lanes = pools.get(db);
    if (!lanes) pools.set(db, (lanes = new Map<string, Lane<I, O>>()));
    let lane = lanes.get(key);
    if (!lane) lanes.set(key, (lane = { inputs: [], waiters: [], running: false }));
    const answer = new Promise<O>((resolve, reject) => lane.waiters.push({ resolve, reject }));
    lane.inputs.push(input);
    if (!lane.running) void drain(db, lanes, key);
    return answer;
  };
}

/** Whether `db` is a caller's transaction rather than the pool. */
export function isTransaction(db: Db): db is postgres.TransactionSql {
  return typeof (db as Partial<postgres.TransactionSql>).savepoint === 'function';
}

/** Runs `work` in a transaction: `db`'s own if it is one, else a new one. */
export function inTransaction<T>(
  db: Db,
  work: (tx: postgres.TransactionSql) => Promise<T>,
): Promise<T> {
  if (isTransaction(db)) return work(db);
  return db.begin(work) as Promise<T>;
}
