import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../command-error.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Up extends SwitchboardCommand {
  static override summary = 'Start the switchboard server';
  static override description = `Serves the JSON API, webhooks, health and metrics on http://127.0.0.1:3000 (PORT, HOST). Without DATABASE_URL it runs an embedded PostgreSQL in the data directory. On first start it creates an admin and writes the CLI's credentials file, so the CLI works on this machine at once.

SIGINT or SIGTERM stops it gracefully: no new requests, those in flight finish, then the database closes; a second signal stops it at once.`;
  static override examples = [
    '<%= config.bin %> up',
    '<%= config.bin %> up --port 8080 --data-dir ./data',
    'DATABASE_URL=postgres://user:pass@db:5432/switchboard <%= config.bin %> up',
  ];
  static override flags = {
    port: Flags.integer({
      min: 0,
      max: 65_535,
      description: 'port to listen on (default: PORT, else 3000)',
    }),
    'data-dir': Flags.string({
      description:
        'where the embedded PostgreSQL lives (default: SWITCHBOARD_DATA_DIR, else $XDG_DATA_HOME/switchboard)',
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Up);
    // The server's modules (express, Probot, postgres) load only for this command.
    const [{ loadServerConfig }, { createPinoLogger }, { startServer }] = await Promise.all([
      import('../../src/config/server-config.js'),
      import('../../src/logger.js'),
      import('../../src/server/start-server.js'),
    ]);
    let config: ReturnType<typeof loadServerConfig>;
    try {
      config = loadServerConfig(process.env, { port: flags.port, dataDir: flags['data-dir'] });
    } catch (error) {
      throw new CommandError((error as Error).message, EXIT.usage);
    }
    const log = await createPinoLogger(config.logLevel);

    // Listen before starting, so that a signal during start-up also stops gracefully once started.
    let signalled = false;
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      const onSignal = (signal: NodeJS.Signals) => {
        if (signalled) {
          log.warn({ signal }, 'second signal: stopping at once');
          process.exit(EXIT.unexpected);
        }
        signalled = true;
        resolve(signal);
      };
      process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    });

    const server = await startServer({ config, log, handleSignals: false }).catch(
      (error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        throw new CommandError(
          `port ${config.port} on ${config.host} is in use — pass --port or set PORT`,
          EXIT.unexpected,
        );
      },
    );
    this.log(`switchboard is listening on ${server.url} — Ctrl-C stops it`);
    const { consoleLinkForCli } = await import('../../src/web/console-link-for-cli.js');
    const link = await consoleLinkForCli(server).catch(() => undefined);
    if (link) this.log(`web console (this link signs you in once, within 5 minutes): ${link}`);
    const signal = await stopped;
    log.info({ signal }, 'stopping: finishing the requests in flight');
    try {
      await server.close();
      log.info({}, 'stopped');
    } catch (error) {
      // Ctrl-C in a terminal signals the whole process group, so the embedded PostgreSQL (our
      // child) gets SIGINT too and shuts down by itself while we close: we are stopping anyway.
      log.warn({ err: error }, 'stopped; the database had gone away while closing');
    }
  }
}
