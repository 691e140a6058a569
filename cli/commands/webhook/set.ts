import * as Args from '@oclif/core/args';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class WebhookSet extends SwitchboardCommand {
  static override summary =
    'Register your outbound webhook: rung when none of your sessions can be';
  static override description =
    'switchboard POSTs the doorbell to URL, signed per the Standard Webhooks spec (webhook-id, webhook-timestamp, webhook-signature) with a new whsec_ secret, printed this once: verify with it. https to a public address; an address that is not public (127.0.0.1, 10.x, …), over http or https, only where SWITCHBOARD_OUTBOUND_ALLOW on the server allows it (for local development: 127.0.0.1/32). Setting it again replaces the URL and the secret.';
  static override examples = [
    '<%= config.bin %> webhook set https://hooks.example.com/switchboard',
    '<%= config.bin %> webhook set http://127.0.0.1:8080/hook --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    url: Args.string({ required: true, description: 'where to POST your doorbells' }),
  };

  async run() {
    const { args } = await this.parse(WebhookSet);
    const client = await this.client();
    const { url, secret } = await client.setWebhook(args.url);
    this.log(`webhook set: ${url}`);
    this.log(`\nsigning secret (shown once — keep it): ${secret}`);
    return { url, secret };
  }
}
