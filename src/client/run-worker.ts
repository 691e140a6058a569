import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, ClaimedTodo, Credentials } from './api-client.js';
import { claimNextWaiting } from './claim-next-waiting.js';
import { ApiError } from './client-errors.js';
import { isServerOutage } from './is-server-outage.js';
import type { WakeStream } from './open-wake-stream.js';
import { retryDelay } from './retry-delay.js';

export interface WorkerOptions {
  client: ApiClient;
  /** Handed to the command, so that it can call switchboard as the same principal. */
  credentials: Credentials;
  wakes: WakeStream;
  queue: string;
  concurrency: number;
  leaseSeconds: number;
  /** The command and its arguments, run once per todo. */
  command: string[];
  /** Stops the worker: no more claims, running commands are killed and their todos released. */
  signal: AbortSignal;
  /** One line about what happened (claimed, done, failed, lease lost, released). */
  report(line: string): void;
  /** One line about a passing trouble (the server is unreachable, a heartbeat failed). */
  warn(line: string): void;
}

/** A summary or reason the API takes (its limit is 65,536 characters); the end is kept. */
const SUMMARY_MAX = 60_000;
const REASON_TAIL = 2000;
/** How long a command may take to exit after SIGTERM before it gets SIGKILL. */
const KILL_GRACE_MS = 5000;

/**
 * Claims todos from a queue and runs the command for each, `concurrency` at a time, until the
 * signal stops it. The command gets the todo as JSON on stdin and in SWITCHBOARD_TODO_*
 * variables; its lease is renewed while it runs; exit 0 completes the todo with its stdout as
 * summary, anything else fails it with the end of its stderr. A command whose lease is lost is
 * killed and nothing is reported for it: the todo is no longer its to finish.
 *
 * A server that is down or restarting is waited for (with a stream opened with `onWaiting`,
 * also at the start). Rejects on what retrying cannot mend (a refused claim, a revoked token, a
 * command that cannot be started), after stopping the other slots the same way as on the signal.
 */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const stop = new AbortController();
  const onStop = () => stop.abort();
  options.signal.addEventListener('abort', onStop, { once: true });
  if (options.signal.aborted) stop.abort();
  let fatal: Error | undefined;
  const slot = async () => {
    try {
      await workSlot({ ...options, signal: stop.signal });
    } catch (error) {
      fatal ??= error instanceof Error ? error : new Error(String(error));
      stop.abort();
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, slot));
  } finally {
    options.signal.removeEventListener('abort', onStop);
  }
  if (fatal) throw fatal;
}

async function workSlot(options: WorkerOptions): Promise<void> {
  const { client, queue, signal } = options;
  while (!signal.aborted) {
    // No deadline: a server that is down or restarting is waited for, and only a refusal
    // (a revoked token, a queue it may not work) comes out of here.
    const todo = await claimNextWaiting(client, options.wakes, queue, {
      leaseSeconds: options.leaseSeconds,
      deadline: Infinity,
      signal,
      onOutage: (problem) =>
        options.warn(
          `cannot claim from ${queue}: ${problem.message}; trying again when it answers`,
        ),
    });
    if (todo) await runOne(options, todo);
  }
}

async function runOne(options: WorkerOptions, todo: ClaimedTodo): Promise<void> {
  const { client, signal } = options;
  const report = (line: string) => options.report(line);
  const token = todo.lease_token;
  const label = `#${todo.id}`;
  if (signal.aborted) {
    // Claimed while stopping: give it straight back.
    await client.release(todo.id, token).catch(() => {});
    return;
  }
  report(`${label} claimed — ${todo.title}`);
  const started = Date.now();
  // The lease surely lasts this long: it was renewed at least `lease` seconds after the claim
  // request left (server clocks aside). Past it, no heartbeat or result would be accepted.
  let leaseEndsAt = started + options.leaseSeconds * 1000;
  const run = startCommand(options, todo);
  let lost = false;

  const loseLease = (why: string) => {
    if (lost) return;
    lost = true;
    report(`${label} lease lost (${why}) — stopped the command; its result is not reported`);
    run.kill();
  };
  // Renew well before the lease ends: three chances per lease.
  const every = Math.max(200, (options.leaseSeconds * 1000) / 3);
  let heartbeat: Promise<void> = Promise.resolve();
  const beat = setInterval(() => {
    heartbeat = heartbeat.then(async () => {
      if (lost || run.exited) return;
      const sentAt = Date.now();
      try {
        await client.heartbeat(todo.id, token, options.leaseSeconds);
        leaseEndsAt = sentAt + options.leaseSeconds * 1000;
      } catch (error) {
        if (error instanceof ApiError && ['lease_lost', 'not_found'].includes(error.code)) {
          loseLease(error.message);
        } else if (!run.exited) {
          options.warn(`${label} heartbeat failed: ${(error as Error).message}`);
        }
      }
      if (Date.now() >= leaseEndsAt) loseLease('no heartbeat got through in time');
    });
  }, every);
  const onStop = () => run.kill();
  signal.addEventListener('abort', onStop, { once: true });

  const outcome = await run.done;
  clearInterval(beat);
  signal.removeEventListener('abort', onStop);
  await heartbeat;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);

  if (lost) return;
  if (outcome.spawnError) {
    await client.release(todo.id, token).catch(() => {});
    throw new Error(`cannot run ${options.command[0]}: ${outcome.spawnError.message}`);
  }
  if (signal.aborted) {
    await client.release(todo.id, token).then(
      () => report(`${label} released — the worker is stopping`),
      (error: Error) => options.warn(`${label} could not be released: ${error.message}`),
    );
    return;
  }
  const how = outcome.code === null ? `killed by ${outcome.signal}` : `exit ${outcome.code}`;
  const result =
    outcome.code === 0
      ? {
          send: () => {
            const summary = tail(outcome.stdout.trim(), SUMMARY_MAX);
            return client.complete(todo.id, token, { summary: summary || undefined });
          },
          line: `${label} done (exit 0 in ${seconds} s)`,
        }
      : {
          send: () => {
            const stderr = tail(outcome.stderr.trim(), REASON_TAIL);
            return client.fail(todo.id, token, stderr ? `${how}: ${stderr}` : how);
          },
          line: `${label} failed (${how} in ${seconds} s)`,
        };
  if (await sendResult(options, label, result.send, leaseEndsAt)) report(result.line);
}

/**
 * Reports a finished command's result. A server that cannot take it now (down, restarting, its
 * database away) is tried again, with the same lease token, for as long as the lease surely
 * lasts; after that the ledger would refuse it anyway, so it is given up with one line and the
 * worker goes on (the ledger offers the todo again). A refusal (the lease lost meanwhile) is said
 * and not retried. True once the server took it.
 */
async function sendResult(
  options: WorkerOptions,
  label: string,
  send: () => Promise<unknown>,
  leaseEndsAt: number,
): Promise<boolean> {
  for (let failures = 0; ; failures++) {
    try {
      await send();
      return true;
    } catch (error) {
      if (!isServerOutage(error)) {
        if (!(error instanceof ApiError)) throw error;
        options.warn(`${label} result refused: ${error.message}`);
        return false;
      }
      const why = (error as Error).message;
      const left = leaseEndsAt - Date.now();
      if (left <= 0) {
        options.warn(
          `${label} not reported: its lease ended before the server could take it (${why}); it is offered again while attempts are left`,
        );
        return false;
      }
      if (options.signal.aborted) {
        options.warn(`${label} not reported: the worker stopped first (${why})`);
        return false;
      }
      if (failures === 0)
        options.warn(
          `${label} is finished but cannot be reported (${why}); trying again until its lease ends`,
        );
      await sleep(Math.min(retryDelay(failures, undefined, error), left), undefined, {
        signal: options.signal,
      }).catch(() => {});
    }
  }
}

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  spawnError?: Error;
}

/**
 * Runs the command for one todo in a process group of its own, so that stopping it also stops
 * whatever it started (a shell's children would otherwise keep running, and keep its output
 * open).
 */
function startCommand(options: WorkerOptions, todo: ClaimedTodo) {
  const [file, ...args] = options.command;
  const child = spawn(file!, args, {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      SWITCHBOARD_URL: options.credentials.url,
      SWITCHBOARD_TOKEN: options.credentials.token,
      SWITCHBOARD_TODO_ID: String(todo.id),
      SWITCHBOARD_TODO_QUEUE: todo.queue,
      SWITCHBOARD_TODO_KIND: todo.kind,
      SWITCHBOARD_TODO_TITLE: todo.title,
      SWITCHBOARD_TODO_URL: todo.url ?? '',
      SWITCHBOARD_TODO_ATTEMPT: String(todo.attempt),
      SWITCHBOARD_LEASE_TOKEN: todo.lease_token,
    },
  });
  let stdout = '';
  let stderr = '';
  // Only the ends are kept: a chatty command must not fill the worker's memory.
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout = tail(stdout + chunk, SUMMARY_MAX * 2);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = tail(stderr + chunk, REASON_TAIL * 2);
  });
  // A command that does not read its input closes it early; that is its right.
  child.stdin.on('error', () => {});
  child.stdin.end(JSON.stringify(todo) + '\n');

  let exited = false;
  let killTimer: NodeJS.Timeout | undefined;
  const done = new Promise<Outcome>((resolve) => {
    child.once('error', (error) => {
      exited = true;
      resolve({ code: null, signal: null, stdout, stderr, spawnError: error });
    });
    child.once('close', (code, signal) => {
      exited = true;
      clearTimeout(killTimer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  return {
    done,
    get exited() {
      return exited;
    },
    kill() {
      if (exited || killTimer) return;
      signalGroup('SIGTERM');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
    },
  };
}

function tail(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}
