import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import type { ApiClient, Todo } from '../../../src/client/api-client.js';
import { ApiError } from '../../../src/client/client-errors.js';
import { openWakeStream, type WakeStream } from '../../../src/client/open-wake-stream.js';
import { waitForVerdict, type ApprovalOutcome } from '../../../src/client/wait-for-verdict.js';
import { BODY_MAX, TITLE_MAX } from '../../../src/contract/neutralise-text.js';
import { TEXT_MAX, TITLE_REQUEST_MAX } from '../../../src/contract/text-limits.js';
import { checkTextLength } from '../../check-text-length.js';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoLine } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { todoIdFlag } from '../../todo-id-arg.js';

/** Why an approval whose asker stopped waiting is canceled: the human deciding reads it. */
const WITHDRAWN = 'nobody is waiting any more';

/** The server's default and largest time to live of an approval. */
const TTL_DEFAULT = 900;
const TTL_MAX = 7 * 86_400;

export default class ApprovalRequest extends SwitchboardCommand {
  static override summary = 'Ask a human to decide: an approval todo, and with --wait its verdict';
  static override description = `An agent's question goes to the human who owns it; a human's, to themself. The approval expires after --ttl seconds (default ${TTL_DEFAULT}, or --wait when that is longer; at most 7 days).

Without --wait it prints the approval and exits 0. With --wait it blocks up to that many seconds for the verdict, woken by the server's event stream, and exits:
  0  allowed
  3  denied or canceled (the note, or why, on stderr)
  5  no verdict in time, or the approval expired first
  130  stopped by Ctrl-C (143: by SIGTERM) before a verdict came
With no verdict in time, or the wait stopped, the approval is canceled ("nobody is waiting any more"), so that nobody decides a question no one waits for; --keep leaves it open until it expires, to be read later (\`todo show\`). A second Ctrl-C ends the command at once.
--json prints {"todo": …}, the approval with its verdict, in every case.`;
  static override examples = [
    '<%= config.bin %> approval request "Deploy build 4711 to production?" --wait 600',
    '<%= config.bin %> approval request "Merge PR #482?" --about 42 --body "all checks green" --ttl 3600',
    'if <%= config.bin %> approval request "Run the migration?" --wait 300; then ./migrate.sh; fi',
  ];
  static override enableJsonFlag = true;
  static override args = {
    question: Args.string({ required: true, description: 'what the human is asked, one line' }),
  };
  static override flags = {
    body: Flags.string({ description: 'more detail for the human', helpValue: 'TEXT' }),
    about: todoIdFlag({ description: 'the todo the question is about' }),
    ttl: Flags.integer({
      min: 1,
      max: TTL_MAX,
      description: `seconds until it expires (default ${TTL_DEFAULT}, or --wait if longer)`,
      helpValue: 'SECONDS',
    }),
    wait: Flags.integer({
      min: 0,
      max: TTL_MAX,
      description: 'wait up to this many seconds for the verdict',
      helpValue: 'SECONDS',
    }),
    keep: Flags.boolean({
      description: 'with --wait: leave the approval open when no verdict came in time',
      dependsOn: ['wait'],
    }),
  };

  async run(): Promise<{ todo: Todo }> {
    const { args, flags } = await this.parse(ApprovalRequest);
    checkTextLength(args.question, {
      name: 'the question',
      accepted: TITLE_REQUEST_MAX,
      kept: TITLE_MAX,
      advice: 'put the rest in --body',
    });
    checkTextLength(flags.body, {
      name: '--body',
      accepted: TEXT_MAX,
      kept: BODY_MAX,
      advice: 'shorten it',
    });
    const client = await this.client();
    const ttl = flags.ttl ?? (flags.wait && flags.wait > TTL_DEFAULT ? flags.wait : undefined);
    // Listening before asking costs nothing, and the first read after `ready` finds a verdict
    // that came before the stream did.
    const wakes =
      flags.wait === undefined ? undefined : openWakeStream(await this.credentials(), 'approvals');
    // With --wait, Ctrl-C (or SIGTERM) ends the wait as its deadline would, withdrawal included,
    // from before the question is asked: one that comes while it is asked withdraws it once it
    // is. A second signal ends the command at once.
    const stop = new AbortController();
    let stoppedBy: NodeJS.Signals | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      stoppedBy = signal;
      stop.abort();
    };
    if (wakes) process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
    try {
      const { todo: asked } = await client.requestApproval({
        question: args.question,
        body: flags.body,
        about_todo_id: flags.about,
        ttl_seconds: ttl,
      });
      if (!wakes) {
        this.log(`asked ${formatTodoLine(asked)}`);
        return { todo: asked };
      }
      this.log(`asked #${asked.id} — waiting for ${asked.assignee} to decide`);
      const deadline = Date.now() + flags.wait! * 1000;
      const waited = await waitForVerdict(client, wakes, asked.id, deadline, stop.signal);
      // Nobody is to decide a question no one waits for, unless --keep.
      const ended =
        waited.outcome === 'waiting' && !flags.keep
          ? await withdraw(client, wakes, waited.todo)
          : waited;
      // The wait is over: a signal from here on ends the command at once.
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      const { outcome, todo } = ended;
      if (outcome === 'decided' && todo.verdict === 'allow') {
        this.log(formatTodoLine(todo));
        return { todo };
      }
      // Not allowed: --json still prints the approval, then the exit code says how it ended.
      if (this.jsonEnabled()) this.logJson({ todo });
      throw refusal(outcome, todo, flags.wait!, stoppedBy);
    } finally {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      wakes?.close();
    }
  }
}

/**
 * Cancels the approval waiting gave up on. If a verdict, a cancel or the expiry came first (the
 * cancel is refused as a conflict), the approval is read once more and that is the outcome.
 */
async function withdraw(
  client: ApiClient,
  wakes: WakeStream,
  todo: Todo,
): Promise<{ outcome: ApprovalOutcome['outcome'] | 'withdrawn'; todo: Todo }> {
  try {
    const { todo: canceled } = await client.cancel(todo.id, WITHDRAWN);
    return { outcome: 'withdrawn', todo: canceled };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.code === 'conflict') return waitForVerdict(client, wakes, todo.id, Date.now());
    // A server from before askers could withdraw: the approval stays open, and the line says so.
    if (error.code === 'forbidden') return { outcome: 'waiting', todo };
    throw error;
  }
}

function refusal(
  outcome: string,
  todo: Todo,
  waited: number,
  stoppedBy: NodeJS.Signals | undefined,
): CommandError {
  const ref = `#${todo.id}`;
  if (stoppedBy && (outcome === 'withdrawn' || outcome === 'waiting')) {
    return new CommandError(
      `stopped waiting for a verdict on ${ref} (${stoppedBy === 'SIGINT' ? 'Ctrl-C' : stoppedBy}) — ` +
        (outcome === 'withdrawn'
          ? `canceled it (${WITHDRAWN}; --keep leaves it open)`
          : `it stays open until ${todo.expires_at}`),
      stoppedBy === 'SIGINT' ? EXIT.interrupted : EXIT.terminated,
    );
  }
  switch (outcome) {
    case 'decided':
      return new CommandError(formatTodoLine(todo), EXIT.refused);
    case 'canceled':
      return new CommandError(
        `${ref} was canceled${todo.summary ? `: ${todo.summary}` : ''}`,
        EXIT.refused,
      );
    case 'expired':
      return new CommandError(`${ref} expired without a verdict`, EXIT.noVerdict);
    case 'withdrawn':
      return new CommandError(
        `no verdict on ${ref} within ${waited} s — canceled it (${WITHDRAWN}; --keep leaves it open)`,
        EXIT.noVerdict,
      );
    default:
      return new CommandError(
        `no verdict on ${ref} within ${waited} s — it stays open until ${todo.expires_at}`,
        EXIT.noVerdict,
      );
  }
}
