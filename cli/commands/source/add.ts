import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { SwitchboardCommand } from '../../switchboard-command.js';

const KINDS = ['gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks'] as const;

export default class SourceAdd extends SwitchboardCommand {
  static override summary = 'Register a provider beyond GitHub, and print the URL it posts to';
  static override description =
    "Admins only. Prints the source's webhook URL (POST /api/sources/NAME/webhooks) and, when switchboard made the secret, that secret — shown this once. Linear makes its own signing secret: pass it with --secret. Its rules start as the kind's defaults, trusting nobody: set them with 'switchboard source rules NAME FILE'.";
  static override examples = [
    '<%= config.bin %> source add gitea code --queue issues --queue reviews',
    '<%= config.bin %> source add gitlab lab --api-url https://gitlab.example.com --api-token "$GITLAB_TOKEN"',
    '<%= config.bin %> source add linear tracker --secret "$LINEAR_WEBHOOK_SECRET" --json',
    '<%= config.bin %> source add standard-webhooks billing --queue billing',
  ];
  static override enableJsonFlag = true;
  static override args = {
    kind: Args.string({ required: true, options: [...KINDS], description: 'the provider' }),
    name: Args.string({ required: true, description: 'lowercase name, part of its URL' }),
  };
  static override flags = {
    secret: Flags.string({
      description: 'the webhook secret (default: switchboard makes one and prints it once)',
    }),
    queue: Flags.string({
      multiple: true,
      description:
        'a queue its rules may fill (repeat; the first takes what has no queue of its own)',
    }),
    'api-url': Flags.string({
      description: "the provider's base URL, for replies back (Linear: https://api.linear.app)",
    }),
    'api-token': Flags.string({ description: 'an API token to post replies and summaries with' }),
  };

  async run() {
    const { args, flags } = await this.parse(SourceAdd);
    const client = await this.client();
    const { source, secret } = await client.addSource({
      kind: args.kind,
      name: args.name,
      queues: flags.queue,
      secret: flags.secret,
      api_url: flags['api-url'],
      api_token: flags['api-token'],
    });
    this.log(`added ${source.kind} source ${source.name} (queues ${source.queues.join(', ')})`);
    this.log(`\nwebhook URL: ${source.url}`);
    if (secret) this.log(`\nsecret (shown once — give it to the provider and keep it): ${secret}`);
    this.log(
      `\nIt trusts nobody yet: 'switchboard source rules ${source.name} FILE' names who (trust.logins).`,
    );
    return { source: { name: source.name, kind: source.kind, url: source.url }, secret };
  }
}
