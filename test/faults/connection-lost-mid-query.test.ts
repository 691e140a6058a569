import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs `body` in a Node process of its own, with `sql` (postgres.js, one connection), `kill`
 * (ends another session's backend, as a restart or failover does) on the run's database, and
 * `endsWithin`; the process prints what `body` returns. A defect that ends the process ends only that one.
 */
function run(body: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = `
    import postgres from 'postgres';
    const sql = postgres(process.env.URL, { max: 1, onnotice: () => {} });
    const killer = postgres(process.env.URL, { max: 1, onnotice: () => {} });
    const kill = (pid) => killer\`select pg_terminate_backend(\${pid})\`;
    // Whether sql.end(), with no timeout, returns within ms (it returns once every connection has closed).
    const endsWithin = async (ms) => {
      let timer;
      const ended = await Promise.race([
        sql.end().then(() => 'ended'),
        new Promise((resolve) => (timer = setTimeout(resolve, ms, 'still waiting'))),
      ]);
      clearTimeout(timer);
      return ended;
    };
    const result = await (async () => { ${body} })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    console.log(JSON.stringify(result));
    await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', URL: inject('databaseUrl') },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// postgres.js 3.4.9, mended by patches/postgres+3.4.9.patch (patch-package, postinstall); see patches/README.md.
describe.concurrent(
  'a connection lost in the middle of a query (PostgreSQL restarted, failed over, backend killed)',
  () => {
    test('inside a transaction: the process survives (postgres.js sent ROLLBACK on the closed socket from a timer)', async () => {
      const result = await run(`
      let pid;
      // Handled from the start: the transaction may fail before the kill's own answer arrives.
      const tx = sql.begin(async (t) => {
        [{ pid }] = await t\`select pg_backend_pid() as pid\`;
        await t\`select pg_sleep(5)\`;
      }).then(() => 'committed', (error) => error.code);
      while (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      await kill(pid);
      return { transaction: await tx };`);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ transaction: 'CONNECTION_CLOSED' });
    });

    test('the next query, on a new connection, does not fail with the error that ended the old one', async () => {
      const result = await run(`
      const [{ pid }] = await sql\`select pg_backend_pid() as pid\`;
      const sleeping = sql\`select pg_sleep(5)\`.then(() => 'finished', (error) => error.code);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await kill(pid);
      const lost = await sleeping;
      const next = await sql\`select 1 as one\`.then(([row]) => row.one, (error) => error.code);
      return { lost, next };`);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ next: 1 });
    });

    test('while a new connection reads the array types: no unhandled rejection ends the process', async () => {
      // The first statement of every connection is postgres.js's own (fetch_types); a statement
      // timeout of 1 ms cancels it, as a lost connection fails it.
      const result = await run(`
      const impatient = postgres(process.env.URL, { max: 1, connection: { statement_timeout: 1 } });
      const answer = await impatient\`select 1 as one\`.then(([row]) => row.one, (error) => error.code);
      await impatient.end({ timeout: 1 });
      return { answer };`);
      expect(result.code, result.stderr).toBe(0);
    });

    test('regression: sql.end() waited for a query that its lost connection had already failed', async () => {
      // An idle server stopped by Ctrl-C took 5 s: PostgreSQL got the SIGINT too and ended the
      // session of a last query, and end() waited out its whole timeout for that query.
      const result = await run(`
      const [{ pid }] = await sql\`select pg_backend_pid() as pid\`;
      const sleeping = sql\`select pg_sleep(5)\`.then(() => 'finished', (error) => error.code);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await kill(pid);
      const lost = await sleeping;
      return { lost, ended: await endsWithin(10_000) };`);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ lost: expect.any(String), ended: 'ended' });
    });

    test('regression: sql.end() waited out its whole timeout after a transaction lost its connection waiting for a lock', async () => {
      // The transaction's ROLLBACK, sent on the closed connection, failed — and stayed the
      // connection's query, which end() waited for. A server stopped just after PostgreSQL
      // restarted under such a transaction took its pools' whole timeouts to exit.
      const key = Math.floor(Math.random() * 1e9);
      const result = await run(`
      const holder = postgres(process.env.URL, { max: 1, onnotice: () => {} });
      const held = await holder.reserve();
      await held\`begin\`;
      await held\`select pg_advisory_xact_lock(${key})\`;
      let pid;
      const tx = sql.begin(async (t) => {
        [{ pid }] = await t\`select pg_backend_pid() as pid\`;
        await t\`select pg_advisory_xact_lock(${key})\`;
      }).then(() => 'committed', (error) => error.code);
      while (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await kill(pid);
      const lost = await tx;
      await held\`rollback\`;
      held.release();
      await holder.end({ timeout: 1 });
      return { lost, ended: await endsWithin(10_000) };`);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ lost: 'CONNECTION_CLOSED', ended: 'ended' });
    });

    test("regression: a query sent between its connection's socket error and its close was never answered", async () => {
      // A socket fails (reset by PostgreSQL going away) in two steps: its error, then, once the
      // handle has closed, its close. A query that reached the connection in between became its
      // query and was dropped at the close, neither run nor failed: its caller waited for ever
      // (\`switchboard up\` never exited after a Ctrl-C that stopped PostgreSQL with it).
      const result = await run(`
      const { Socket } = await import('node:net');
      const sockets = [];
      const connect = Socket.prototype.connect;
      Socket.prototype.connect = function (...args) { sockets.push(this); return connect.apply(this, args); };
      await sql\`select 1\`;
      const socket = sockets.at(-1);
      let late;
      // After postgres.js's own error handler: the connection has failed what it had, not yet closed.
      socket.on('error', () => {
        late = sql\`select 1 as one\`.then(([row]) => row.one, (error) => error.code);
      });
      socket.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
      while (late === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
      let timer;
      const outcome = await Promise.race([
        late,
        new Promise((resolve) => (timer = setTimeout(resolve, 5000, 'never answered'))),
      ]);
      clearTimeout(timer);
      return { outcome };`);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).outcome).not.toBe('never answered');
    });
  },
);
