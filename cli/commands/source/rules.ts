import { readFile } from 'node:fs/promises';
import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SourceRules extends SwitchboardCommand {
  static override summary =
    'Check a rules file, show what it would do to the last 50 deliveries, save it';
  static override description =
    "FILE is YAML in the shape of .github/switchboard.yml: trust (logins, bots) and rules (each with enabled, queue, assignee and its own keys), naming only what changes from the kind's defaults. It is checked strictly — a misspelt key or a queue the source was not given is an error — then run on the source's last 50 deliveries as a dry run, printed, and saved (with --dry-run, only printed).";
  static override examples = [
    '<%= config.bin %> source rules code rules.yml',
    '<%= config.bin %> source rules tracker linear.yml --dry-run --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: Args.string({ required: true, description: 'the source' }),
    file: Args.string({ required: true, description: 'the rules file (YAML)' }),
  };
  static override flags = {
    'dry-run': Flags.boolean({ description: 'show what the rules would do; save nothing' }),
  };

  async run() {
    const { args, flags } = await this.parse(SourceRules);
    let text: string;
    try {
      text = await readFile(args.file, 'utf8');
    } catch (error) {
      throw new CommandError(
        `cannot read ${args.file}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`,
        EXIT.usage,
      );
    }
    const client = await this.client();
    const result = await client.setSourceRules(args.name, text, flags['dry-run']);
    this.log(
      result.dry_run.length
        ? formatTable(
            ['DELIVERY', 'EVENT', 'WAS', 'WOULD BE', 'QUEUE', 'TITLE'],
            result.dry_run.map((row) => [
              String(row.id),
              [row.event, row.action].filter(Boolean).join('.'),
              row.was.disposition,
              row.would.disposition,
              row.would.queue ?? '',
              row.would.title ?? row.would.note ?? '',
            ]),
          )
        : `no deliveries from ${args.name} yet to try the rules on`,
    );
    this.log(
      result.saved
        ? `\nsaved the rules of ${args.name}`
        : `\n--dry-run: the rules of ${args.name} are unchanged`,
    );
    return result;
  }
}
