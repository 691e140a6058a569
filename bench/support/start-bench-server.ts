import { join } from 'node:path';
import { silentLogger, type Logger } from '../../src/platform/logger.js';
import {
  startServer,
  type RunningServer,
  type StartServerOptions,
} from '../../src/server/start-server.js';

export interface BenchServerOptions extends Pick<
  StartServerOptions,
  'handleSignals' | 'deliveryTiming'
> {
  /** The benchmark's database. */
  url: string;
  schema: string;
  /** Where the server keeps its files (the credentials file, by default). */
  dir: string;
  credentialsFile?: string;
  webhookSecret?: string;
  /** The budget of webhook bodies held before verification (the default, 64 MB, unless given). */
  unverifiedBodyBytes?: number | undefined;
  /** SWITCHBOARD_SECRET_KEY: sources need one on a database of the bench's own. */
  secretKey?: string;
  log?: Logger;
}

/**
 * A switchboard server for a benchmark: 127.0.0.1 on a free port, on the benchmark's database in
 * a schema of its own, no GitHub App (nothing calls GitHub), nothing logged unless asked.
 */
export function startBenchServer({
  url,
  schema,
  dir,
  credentialsFile = join(dir, 'credentials.json'),
  webhookSecret,
  unverifiedBodyBytes,
  secretKey,
  log = silentLogger,
  ...options
}: BenchServerOptions): Promise<RunningServer> {
  return startServer({
    config: {
      host: '127.0.0.1',
      port: 0,
      databaseUrl: url,
      dataDir: dir,
      credentialsFile,
      logLevel: 'silent',
      webhookSecret,
      secretKey,
      github: undefined,
      // The memory benchmark attaches BENCH_SESSIONS consumers as five agents: more than one
      // principal may hold by default. The caps are not what it measures.
      limits: { mcpSessions: 1_000_000, streams: 1_000_000, unverifiedBodyBytes },
    },
    log,
    schema,
    ...options,
  });
}
