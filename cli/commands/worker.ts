import * as Flags from '@oclif/core/flags';
import { createApiClient } from '../../src/client/api-client.js';
import { openWakeStream } from '../../src/client/open-wake-stream.js';
import { runWorker } from '../../src/client/run-worker.js';
import { CommandError, EXIT } from '../command-error.js';
import { leaseFlag } from '../lease-flag.js';
import { SwitchboardCommand } from '../switchboard-command.js';
import { queueFlag } from '../name-flags.js';

export default class Worker extends SwitchboardCommand {
  static override summary = 'Work a queue: claim todos and run a command for each';
  static override description = `Claims todos from --queue (woken by the server's event stream, not by polling) and runs COMMAND for each, --concurrency at a time. The command gets the todo as JSON on stdin and as environment variables: SWITCHBOARD_TODO_ID, SWITCHBOARD_TODO_QUEUE, SWITCHBOARD_TODO_KIND, SWITCHBOARD_TODO_TITLE, SWITCHBOARD_TODO_URL, SWITCHBOARD_TODO_ATTEMPT, SWITCHBOARD_LEASE_TOKEN, and SWITCHBOARD_URL/SWITCHBOARD_TOKEN to call switchboard itself.

While it runs, the lease is renewed every third of --lease. Exit 0 completes the todo with the command's stdout as summary; any other exit fails it with the end of its stderr (retried later while attempts are left). If the lease is lost meanwhile, the command is killed and nothing is reported.

A server that cannot be reached (not started yet, restarting) is waited for, at the start too, saying so once on stderr; a token it refuses ends the worker with exit 4. A result the server cannot take when the command ends is sent again until the lease ends; then it is given up with one line on stderr, and the worker goes on.

SIGINT or SIGTERM stops the worker: it claims nothing more, stops the running commands (SIGTERM, SIGKILL 5 s later), releases their todos and exits 0.`;
  static override usage = [
    'worker --queue QUEUE [--concurrency N] [--lease SECONDS] -- COMMAND [ARGS…]',
  ];
  static override examples = [
    '<%= config.bin %> worker --queue reviews -- ./review.sh',
    '<%= config.bin %> worker --queue ci --concurrency 4 --lease 900 -- node triage.js --verbose',
  ];
  // The command and its arguments follow `--`.
  static override strict = false;
  static override flags = {
    queue: queueFlag({ required: true, description: 'the queue to work' }),
    concurrency: Flags.integer({
      min: 1,
      max: 64,
      default: 1,
      description: 'commands running at once',
    }),
    lease: leaseFlag,
  };

  async run(): Promise<void> {
    const { flags, argv } = await this.parse(Worker);
    const command = argv as string[];
    if (command.length === 0) {
      throw new CommandError(
        'no command to run — put it after --, e.g. worker --queue Q -- ./work.sh',
        EXIT.usage,
      );
    }
    const credentials = await this.credentials();
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    // Under a supervisor the worker may well start before its server: wait for it, saying so once.
    const wakes = openWakeStream(credentials, flags.queue, {
      onWaiting: (problem) =>
        process.stderr.write(
          `waiting for switchboard at ${credentials.url} — ${problem.message}; the worker starts when it answers\n`,
        ),
    });
    try {
      if (!(await wakes.waitReady({ deadline: Infinity, signal: stop.signal }))) {
        this.log('stopped');
        return;
      }
      this.log(
        `working ${flags.queue} with ${command.join(' ')} (${flags.concurrency} at a time)` +
          (wakes.polling ? ' — the server has no event stream, so polling' : ''),
      );
      await runWorker({
        client: createApiClient(credentials),
        credentials,
        wakes,
        queue: flags.queue,
        concurrency: flags.concurrency,
        // The server's default, named here because the heartbeat interval is a third of it.
        leaseSeconds: flags.lease ?? 300,
        command,
        signal: stop.signal,
        report: (line) => this.log(line),
        warn: (line) => process.stderr.write(`${line}\n`),
      });
      this.log('stopped');
    } finally {
      wakes.close();
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    }
  }
}
