import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SourceRotate extends SwitchboardCommand {
  static override summary = 'Give a source a new secret; the old one keeps working for a while';
  static override description =
    'The old secret is still accepted for --grace seconds (a day by default), so the provider can be given the new one with no delivery refused in between. Prints the new secret once when switchboard made it.';
  static override examples = [
    '<%= config.bin %> source rotate code',
    '<%= config.bin %> source rotate tracker --secret "$NEW_LINEAR_SECRET" --grace 3600',
  ];
  static override enableJsonFlag = true;
  static override args = { name: Args.string({ required: true, description: 'the source' }) };
  static override flags = {
    secret: Flags.string({ description: 'the new secret (default: switchboard makes one)' }),
    grace: Flags.integer({
      min: 0,
      max: 30 * 86_400,
      default: 86_400,
      description: 'seconds the old secret keeps working (0: not at all)',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(SourceRotate);
    const client = await this.client();
    const { source, secret } = await client.rotateSource(args.name, {
      secret: flags.secret,
      grace_seconds: flags.grace,
    });
    this.log(
      `rotated ${source.name}: the old secret works until ${source.previous_secret_expires_at ?? 'now'}`,
    );
    if (secret) this.log(`\nnew secret (shown once): ${secret}`);
    return { source: { name: source.name, kind: source.kind, url: source.url }, secret };
  }
}
