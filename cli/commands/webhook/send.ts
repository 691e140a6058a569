import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { sign } from '@octokit/webhooks-methods';
import { sendRequest } from '../../../src/client/send-request.js';
import { CommandError, EXIT } from '../../command-error.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class WebhookSend extends SwitchboardCommand {
  static override summary = 'Sign a webhook payload and deliver it, as GitHub would';
  static override description =
    "Like `probot receive`, but over HTTP to a running server: signs the file's exact bytes with the webhook secret (X-Hub-Signature-256) and POSTs them with GitHub's headers. For local testing and demos.\n\n--url is the server, as for every other command, and the delivery goes to its /api/github/webhooks; a URL with a path of its own (a source's /api/sources/NAME/webhooks, another receiver) is used as it is.\n\nExit codes: 0 when the server took the delivery (2xx); 3 when it refused it: any 4xx (a bad signature, a payload GitHub would never send), or 503 from a server whose webhooks are off (no WEBHOOK_SECRET); 4 when the server cannot be reached or its database is not answering (503: nothing was stored, send it again later); 1 on any other answer (a redirect, a server failure): nothing was recorded; 2 for a usage error (no secret, no file).";
  static override examples = [
    '<%= config.bin %> webhook send issue.json --event issues --secret "$WEBHOOK_SECRET"',
    '<%= config.bin %> webhook send pr.json --event pull_request --url https://switchboard.example.com',
    '<%= config.bin %> webhook send pr.json --event pull_request --delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958',
  ];
  static override enableJsonFlag = true;
  static override args = {
    file: Args.string({ required: true, description: 'the JSON payload, as GitHub sends it' }),
  };
  static override flags = {
    event: Flags.string({ required: true, description: 'X-GitHub-Event: issues, pull_request, …' }),
    url: Flags.string({
      description:
        "the server (its /api/github/webhooks is added), or a URL with a path, used as it is (default: the CLI's server)",
    }),
    secret: Flags.string({ description: 'the webhook secret', env: 'WEBHOOK_SECRET' }),
    delivery: Flags.string({
      description: 'X-GitHub-Delivery, to replay one (default: a new UUID)',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(WebhookSend);
    if (!flags.secret) {
      throw new CommandError('no webhook secret — pass --secret or set WEBHOOK_SECRET', EXIT.usage);
    }
    let bytes: Buffer;
    try {
      bytes = await readFile(args.file);
    } catch (error) {
      throw new CommandError(
        `cannot read ${args.file} (${(error as NodeJS.ErrnoException).code})`,
        EXIT.usage,
      );
    }
    // sign() takes a string and HMACs its UTF-8: that is the file's exact bytes only if they are UTF-8.
    const payload = bytes.toString('utf8');
    if (!Buffer.from(payload, 'utf8').equals(bytes)) {
      throw new CommandError(`${args.file} is not UTF-8 text; GitHub payloads are`, EXIT.usage);
    }
    if (!payload) throw new CommandError(`${args.file} is empty`, EXIT.usage);
    const url = deliveryUrl(flags.url ?? (await this.credentials()).url);
    const delivery = flags.delivery ?? randomUUID();
    const response = await sendRequest(new URL(url), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'GitHub-Hookshot/switchboard-cli',
        'x-github-event': flags.event,
        'x-github-delivery': delivery,
        'x-hub-signature-256': await sign(flags.secret, payload),
      },
      body: bytes,
    });
    // A redirect's body is a page for a browser; where it points says more.
    const moved = response.status >= 300 && response.status < 400;
    const answer = moved
      ? `${response.status}, a redirect to ${response.headers.location ?? 'nowhere'} — ${url} takes no webhooks: --url is the server, or its webhook URL`
      : `${response.status} ${statusText(response.body)}`.trim();
    if (response.status < 200 || response.status > 299) {
      const exitCode = exitCodeFor(response.status, codeOf(response.body));
      const outcome = exitCode === EXIT.refused ? 'refused' : 'not recorded';
      throw new CommandError(`delivery ${delivery} ${outcome}: HTTP ${answer}`, exitCode);
    }
    this.log(`delivered ${delivery} (${flags.event}) to ${url}: HTTP ${answer}`);
    return { url, event: flags.event, delivery, status: response.status, body: response.body };
  }
}

/**
 * Where the delivery goes: a server's URL (no path, as every command's --url) gets GitHub's
 * webhook path; a URL with a path of its own is a webhook URL already.
 */
function deliveryUrl(given: string): string {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    url = new URL('invalid:');
  }
  if (!/^https?:$/.test(url.protocol) || !url.host) {
    throw new CommandError(
      `--url must be an http(s) URL, not ${JSON.stringify(given)}`,
      EXIT.usage,
    );
  }
  if (url.pathname === '/' && !url.search) url.pathname = '/api/github/webhooks';
  return url.toString();
}

/**
 * What a refused delivery means, as --help says. A refusal is the server's answer about this
 * delivery or its own settings (a 4xx; webhooks off), and sending it again will not help; a 503
 * otherwise means it could not record it now (its database is not answering): send it later.
 */
function exitCodeFor(status: number, code: string | undefined) {
  if (status < 400) return EXIT.unexpected;
  if (status < 500 || code === 'webhooks_disabled') return EXIT.refused;
  if (status === 503) return EXIT.unreachable;
  return EXIT.unexpected;
}

function codeOf(body: string): string | undefined {
  try {
    const { code } = JSON.parse(body) as { code?: unknown };
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** The server's own words, when it answered with `{error}` or a short text. */
function statusText(body: string): string {
  try {
    const json = JSON.parse(body) as { error?: unknown };
    if (typeof json.error === 'string') return `— ${json.error}`;
  } catch {
    // not JSON
  }
  return body.length <= 120 ? body.trim() : '';
}
