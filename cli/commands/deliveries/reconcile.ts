import * as Flags from '@oclif/core/flags';
import { ApiError } from '../../../src/client/client-errors.js';
import type { ReconcileReport } from '../../../src/contract/deliveries.js';
import { CommandError, EXIT } from '../../command-error.js';
import { fitToTerminal, formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
/** GitHub keeps three days of deliveries. */
const MAX_SECONDS = 3 * 86_400;

/**
 * `90m`, `6h`, `1d12h`: whole numbers with a unit each. Written out rather than a library's:
 * the grammar is one regular expression, and a bare number (whose unit a reader would guess)
 * must be refused.
 */
function parseDuration(input: string): number {
  const text = input.trim();
  if (!/^(\d+[smhd])+$/.test(text)) {
    throw new Error(`${JSON.stringify(input)} is not a duration: write it as 90m, 6h, 2d or 1d12h`);
  }
  let seconds = 0;
  for (const [, count, unit] of text.matchAll(/(\d+)([smhd])/g)) {
    seconds += Number(count) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
  }
  if (seconds < 60 || seconds > MAX_SECONDS) {
    throw new Error(
      `--since is from 1m to 3d (GitHub keeps three days of deliveries), not ${input}`,
    );
  }
  return seconds;
}

const duration = Flags.custom<number>({
  parse: (input) => Promise.resolve(parseDuration(input)),
  helpValue: 'DURATION',
});

const OUTCOMES: Record<string, string> = {
  requested: 'asked again',
  refused: 'GitHub refused',
  waiting: 'asked before, on its way',
  given_up: 'given up',
  deferred: 'next pass',
};

export default class DeliveriesReconcile extends SwitchboardCommand {
  static override summary =
    "Compare GitHub's delivery log with what was recorded, and ask GitHub again for what is missing (admins)";
  static override description = `GitHub never retries a failed delivery: one sent while the server was down, or answered with an error, is gone unless someone asks for it again. Every server with GitHub App credentials does this by itself on start and every few minutes (SWITCHBOARD_RECONCILE_MINUTES, 5); this runs a pass now and says what it did.

It reads the App's delivery log back --since ago (default, and at most, GitHub's three days; never before this database was created), finds each event that switchboard has no record of, and asks GitHub to deliver it again — each once (again only if GitHub's log shows the redelivery failed too, at most three times), at most 50 a pass, a second apart. What GitHub redelivers carries the event's own X-GitHub-Delivery and arrives as an ordinary delivery moments later ('deliveries list'); one already recorded is a duplicate that makes nothing.

OUTCOME: asked again (GitHub took the request); GitHub refused (asked again next pass); asked before, on its way; given up (asked three times); next pass (over this pass's budget). Without App credentials on the server reconcile is off (exit 3).`;
  static override examples = [
    '<%= config.bin %> deliveries reconcile',
    '<%= config.bin %> deliveries reconcile --since 6h',
    '<%= config.bin %> deliveries reconcile --since 1d12h --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    since: duration({ description: 'how far back: 90m, 6h, 2d, 1d12h … (default and at most 3d)' }),
  };

  async run() {
    const { flags } = await this.parse(DeliveriesReconcile);
    const client = await this.client();
    let report: ReconcileReport;
    try {
      ({ reconcile: report } = await client.reconcileDeliveries(flags.since));
    } catch (error) {
      // Not a failure of the server: it has no App credentials (or no webhook secret) to do it with.
      if (error instanceof ApiError && error.code === 'reconcile_off')
        throw new CommandError(error.message, EXIT.refused);
      throw error;
    }
    this.log(
      `GitHub's delivery log since ${report.since}: ${report.listed} attempt${report.listed === 1 ? '' : 's'} of ${report.events} event${report.events === 1 ? '' : 's'}, ${report.recorded} recorded here, ${report.missing.length} missing`,
    );
    if (report.missing.length) {
      this.log(
        fitToTerminal(
          formatTable(
            ['GUID', 'EVENT', 'DELIVERED', 'STATUS', 'ASKED', 'OUTCOME'],
            report.missing.map((missing) => [
              missing.guid,
              [missing.event, missing.action].filter(Boolean).join('.'),
              missing.delivered_at,
              `${missing.status_code} ${missing.status}`.trim(),
              `${missing.requests}×`,
              missing.error
                ? `${OUTCOMES[missing.outcome]}: ${missing.error}`
                : OUTCOMES[missing.outcome]!,
            ]),
          ),
        ),
      );
      const asked = report.missing.filter((missing) => missing.outcome === 'requested').length;
      if (asked) {
        this.log(
          `asked GitHub to deliver ${asked} again: ${asked === 1 ? 'it arrives' : 'they arrive'} as ordinary deliveries ('switchboard deliveries list')`,
        );
      }
    }
    return { reconcile: report };
  }
}
