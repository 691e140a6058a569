// A bare reference server (bench/support/bare-mcp-server.ts or bare-probot-app.ts) alone in a
// process of its own, as switchboard's server is in the same benchmark: the clients' CPU is not
// its CPU. Started by spawnBareProcess with BARE_KIND (`mcp`, `probot`, or either's same-rows
// reference, bare-mcp-server-same-rows.ts and bare-probot-app-same-rows.ts), BARE_DATABASE_URL,
// BARE_SCHEMA (its tables already made) and, for Probot, BARE_SECRET (and BARE_WRITE_BACK=1 for
// the same rows with their write-back). Says `{"url"}` on stdout once listening; SIGTERM closes it.
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';
import { startBareMcpServer, type BareServer } from './bare-mcp-server.js';
import { startSameRowsMcpServer } from './bare-mcp-server-same-rows.js';
import { startBareProbotApp } from './bare-probot-app.js';
import { startSameRowsProbotApp } from './bare-probot-app-same-rows.js';
import type { BareKind } from './spawn-bare-process.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const kind = required('BARE_KIND') as BareKind;
  const schema = required('BARE_SCHEMA');
  // The same pool size as switchboard's server.
  const sql = connect(required('BARE_DATABASE_URL'), { schema, max: 10, log: silentLogger });
  const starts: Record<BareKind, () => Promise<BareServer>> = {
    mcp: () => startBareMcpServer(sql, schema),
    'mcp-same-rows': () => startSameRowsMcpServer(sql, schema),
    probot: () => startBareProbotApp(sql, schema, required('BARE_SECRET')),
    'probot-same-rows': () =>
      startSameRowsProbotApp(sql, schema, required('BARE_SECRET'), {
        writeBack: process.env.BARE_WRITE_BACK === '1',
      }),
  };
  const server = await starts[kind]();
  process.once('SIGTERM', () => {
    void server
      .close()
      .then(() => sql.end({ timeout: 5 }))
      .catch((error: unknown) => {
        console.error(error);
        process.exitCode = 1;
      });
  });
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
