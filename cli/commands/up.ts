import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../command-error.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Up extends SwitchboardCommand {
  static override summary = 'Start the switchboard server';
  static override description = `Serves the JSON API, webhooks, health and metrics on http://127.0.0.1:3000 (PORT, HOST). Without DATABASE_URL it runs an embedded PostgreSQL in the data directory. On first start it creates an admin and saves a token for it as this server's entry in the CLI's credentials file, so the CLI works on this machine at once; a later start adds the entry when the file has none for this server (see login).

A data directory has one owner: while another switchboard process runs on it, up refuses with one line naming that process (pid and URL) and changes nothing.

SIGINT, SIGTERM or SIGHUP (the terminal hung up) stops it gracefully: no new requests, those in flight finish, then the database closes; a second signal stops it at once. A signal during start-up stops it after the step under way.`;
  static override examples = [
    '<%= config.bin %> up',
    '<%= config.bin %> up --port 8080 --data-dir ./data',
    'DATABASE_URL=postgres://user:pass@db:5432/switchboard <%= config.bin %> up',
  ];
  // Talks to no server: no --url.
  static override baseFlags = {};
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
      import('../../src/platform/config/server-config.js'),
      import('../../src/platform/logger.js'),
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
    let signalled: NodeJS.Signals | undefined;
    let listening = false;
    // Aborted by the first signal: start-up gives up at its next step rather than finish first.
    const startUp = new AbortController();
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      const onSignal = (signal: NodeJS.Signals) => {
        // A hang-up may come more than once (the kernel's, the shell's): nobody asking to hurry.
        if (signalled && signal === 'SIGHUP') return;
        if (signal === 'SIGHUP') detachFromTerminal(log);
        if (signalled) {
          log.warn({ signal }, 'second signal: stopping at once');
          process.exit(EXIT.unexpected);
        }
        signalled = signal;
        if (!listening) {
          log.info({ signal }, 'stopping once the start-up step under way ends (again: at once)');
        }
        startUp.abort();
        resolve(signal);
      };
      // SIGHUP: the terminal hung up (its window closed, the SSH connection dropped). Left to its
      // default, it ends this process at once and PostgreSQL, which takes it for a reload, runs on.
      process.on('SIGINT', onSignal).on('SIGTERM', onSignal).on('SIGHUP', onSignal);
    });

    const server = await startServer({
      config,
      log,
      handleSignals: false,
      signal: startUp.signal,
    }).catch((error: unknown) => {
      // Ctrl-C reaches the whole process group: initdb or PostgreSQL stop with us, and the
      // start-up step they were in fails. That is the stop asked for, not an error.
      if (signalled) return undefined;
      const { code } = error as NodeJS.ErrnoException;
      if (
        code === 'data_dir_in_use' ||
        code === 'data_dir_unusable' ||
        code === 'database_unusable'
      ) {
        throw new CommandError((error as Error).message, EXIT.unexpected);
      }
      const taking = `port ${config.port} on ${config.host}`;
      if (code === 'EADDRINUSE') {
        throw new CommandError(`${taking} is in use — pass --port or set PORT`, EXIT.unexpected);
      }
      if (code === 'EACCES') {
        throw new CommandError(
          `${taking} needs privileges this user lacks — pass --port 1024 or above`,
          EXIT.unexpected,
        );
      }
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
        throw new CommandError(
          `HOST ${config.host} is not an address of this machine — set HOST to one (127.0.0.1, 0.0.0.0 for every interface)`,
          EXIT.usage,
        );
      }
      throw error;
    });
    if (!server) {
      log.info(
        { signal: signalled },
        `start-up interrupted by ${signalled}: stopped before serving; the next start carries on from here`,
      );
      if (signalled === 'SIGHUP') endAsHungUp();
      return;
    }
    listening = true;
    // What is bound, as it is: every interface is said in words, with how this machine reaches it.
    this.log(
      server.boundUrl === server.url
        ? `switchboard is listening on ${server.url} — Ctrl-C stops it`
        : `switchboard is listening on ${server.boundUrl} (every network interface; this machine: ${server.url}) — Ctrl-C stops it`,
    );
    const { consoleLinkForCli } = await import('../../src/server/console-link-for-cli.js');
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
      // The message only: a stack trace is no use to whoever pressed Ctrl-C.
      log.warn(
        { error: error instanceof Error ? error.message : String(error) },
        'stopped; the database had gone away while closing',
      );
    }
    if (signal === 'SIGHUP') endAsHungUp();
  }
}

/**
 * Once stopped, ends as a hang-up ends a process: by the signal itself, its default action now.
 * Node 20's own exit restores the terminal's modes, and aborts (a core dump, a native stack
 * trace) when the terminal is gone; a signal's default action runs no exit handler.
 */
function endAsHungUp(): void {
  process.removeAllListeners('SIGHUP');
  process.kill(process.pid, 'SIGHUP');
}

/**
 * After a hang-up the terminal is gone, and every write to it fails (EIO): a failed write must
 * not end the process before it has stopped its PostgreSQL. oclif's handler of stdout's errors
 * throws every one but EPIPE, so it gives way to one that drops them. Logs written to the
 * terminal go nowhere now; logs written elsewhere (a file, a journal) go on.
 */
function detachFromTerminal(log: { level: string }): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.removeAllListeners('error').on('error', () => {});
  }
  if (process.stderr.isTTY) log.level = 'silent';
}
