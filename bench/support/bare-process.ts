// A bare reference server (bench/support/bare-mcp-server.ts or bare-probot-app.ts) alone in a
// process of its own, as switchboard's server is in the same benchmark: the clients' CPU is not
// its CPU. Started by spawnBareProcess with BARE_KIND (`mcp` or `probot`), BARE_DATABASE_URL,
// BARE_SCHEMA (its tables already made) and, for Probot, BARE_SECRET. Says `{"url"}` on stdout
// once listening; SIGTERM closes it.
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';
import { startBareMcpServer } from './bare-mcp-server.js';
import { startBareProbotApp } from './bare-probot-app.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function main(): Promise<void> {
  const kind = required('BARE_KIND');
  const schema = required('BARE_SCHEMA');
  // The same pool size as switchboard's server.
  const sql = connect(required('BARE_DATABASE_URL'), { schema, max: 10, log: silentLogger });
  const server =
    kind === 'mcp'
      ? await startBareMcpServer(sql, schema)
      : await startBareProbotApp(sql, schema, required('BARE_SECRET'));
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
