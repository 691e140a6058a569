// A switchboard server alone in its own process, for benchmarks that measure the process itself
// (bench/session-memory.ts): the benchmark's clients live in another process and do not count.
//
// Started as `node --expose-gc` on its bundle (bundle-entry.ts; node itself, so the child's pid
// is the server's) with BENCH_SERVER_DATABASE_URL, BENCH_SERVER_SCHEMA and
// BENCH_SERVER_DIR; BENCH_SERVER_WEBHOOK_SECRET (optional) turns the GitHub webhook endpoint on,
// and BENCH_SERVER_LOG_LEVEL (default silent) sends the server's log to stderr. It speaks in JSON lines on stdout: `{"url", "adminToken", "pid"}` once
// listening; `{"memory": …, "cpu": …}` after each `gc` line on stdin (CPU time used so far, then
// the heap after a full collection). SIGTERM
// closes the server, and the process then exits by itself: anything still holding it open is a
// leak the benchmark reports.
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { readCredentialsFile } from '../../src/platform/config/credentials-file.js';
import { createPinoLogger, silentLogger } from '../../src/platform/logger.js';
import { startBenchServer } from './start-bench-server.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const reply = (message: unknown) => process.stdout.write(`${JSON.stringify(message)}\n`);

async function main(): Promise<void> {
  const dir = required('BENCH_SERVER_DIR');
  const credentialsFile = join(dir, 'credentials.json');
  const logLevel = process.env.BENCH_SERVER_LOG_LEVEL || 'silent';
  const unverifiedBodyMb = Number(process.env.BENCH_SERVER_UNVERIFIED_BODY_MB) || undefined;
  const server = await startBenchServer({
    url: required('BENCH_SERVER_DATABASE_URL'),
    schema: required('BENCH_SERVER_SCHEMA'),
    dir,
    credentialsFile,
    webhookSecret: process.env.BENCH_SERVER_WEBHOOK_SECRET || undefined,
    log: logLevel === 'silent' ? silentLogger : await createPinoLogger(logLevel),
    unverifiedBodyBytes: unverifiedBodyMb && unverifiedBodyMb * 1024 * 1024,
  });
  const { token } = (await readCredentialsFile(credentialsFile))!.servers[server.url]!;

  const commands = createInterface({ input: process.stdin });
  commands.on('line', (line) => {
    if (line.trim() !== 'gc') return;
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('run with --expose-gc');
    const cpu = process.cpuUsage();
    gc();
    gc();
    reply({ memory: process.memoryUsage(), cpu });
  });
  process.once('SIGTERM', () => {
    commands.close();
    process.stdin.destroy();
    server.close().catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
  });
  reply({ url: server.url, adminToken: token, pid: process.pid });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
