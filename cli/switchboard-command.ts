import { Command } from '@oclif/core/command';
import * as Flags from '@oclif/core/flags';
import type { Input, ParserOutput } from '@oclif/core/interfaces';
import { createApiClient, type ApiClient, type Credentials } from '../src/client/api-client.js';
import { ApiError } from '../src/client/client-errors.js';
import { resolveCredentials } from '../src/client/resolve-credentials.js';
import { CommandError, EXIT } from './command-error.js';
import { describeParseError } from './describe-parse-error.js';

const SERVER_FLAG = {
  url: Flags.string({
    description:
      "the server to use, by its URL: its entry in the credentials file (default: SWITCHBOARD_URL, else the file's current server)",
    helpGroup: 'GLOBAL',
  }),
};

/** What every switchboard command shares: credentials, the API client, and error reporting. */
export abstract class SwitchboardCommand extends Command {
  /**
   * Which server to talk to, for one command: the credentials file keeps a token per server.
   * A command whose own `--url` means something else (`login`, `webhook send`) replaces it, and
   * one that talks to no server (`up`, `migrate`) drops it.
   */
  static override baseFlags: Partial<typeof SERVER_FLAG> = SERVER_FLAG;

  private resolved: Credentials | undefined;
  private serverUrl: string | undefined;
  private tokenFromEnv = false;

  /** Keeps `--url` when it is the base flag (the server), for credentials(). */
  protected override async parse<
    F extends Record<string, unknown>,
    B extends Record<string, unknown>,
    A extends Record<string, unknown>,
  >(options?: Input<F, B, A>, argv?: string[]): Promise<ParserOutput<F, B, A>> {
    const parsed = await super.parse(options, argv);
    const own = (this.constructor as typeof SwitchboardCommand).flags?.url;
    const url: unknown = (parsed.flags as Record<string, unknown>).url;
    if (!own && typeof url === 'string') {
      if (!/^https?:\/\/[^/]/i.test(url)) {
        throw new CommandError(
          `--url must be an http(s) URL, not ${JSON.stringify(url)}`,
          EXIT.usage,
        );
      }
      this.serverUrl = url;
    }
    return parsed;
  }

  /** SWITCHBOARD_TOKEN with SWITCHBOARD_URL, else the credentials file's entry for --url / SWITCHBOARD_URL / its current server. */
  protected async credentials(): Promise<Credentials> {
    this.resolved ??= await resolveCredentials(process.env, { url: this.serverUrl });
    // resolveCredentials takes SWITCHBOARD_TOKEN whenever it is set (or refuses to go on).
    this.tokenFromEnv = Boolean(process.env.SWITCHBOARD_TOKEN);
    return this.resolved;
  }

  protected async client(): Promise<ApiClient> {
    return createApiClient(await this.credentials());
  }

  /** --json output: plain JSON, as oclif's colouring tokenizer costs ~15 ms of every run. */
  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }

  /**
   * Errors go on to cli/main.ts, which prints one line on stderr and exits with the documented
   * code — with --json too, where oclif would print them as JSON on stdout and exit 1.
   *
   * Every run() parses first, so an error before parsing succeeded is a usage error (exit 2),
   * said in switchboard's voice with what to type: oclif's parse errors, and an argument's
   * failed conversion (`todo show abc`), which oclif throws as a plain Error.
   */
  override catch(error: Error): Promise<never> {
    if (error instanceof ApiError && error.status === 401 && this.tokenFromEnv) {
      // 'switchboard login' cannot help: the variable overrides the credentials file.
      return Promise.reject(
        new CommandError(
          `${error.message} — it comes from SWITCHBOARD_TOKEN, which overrides the credentials file: set it to a valid token, or unset it`,
          EXIT.unreachable,
        ),
      );
    }
    if (this.parsed || error instanceof CommandError) return Promise.reject(error);
    const ctor = this.constructor as typeof SwitchboardCommand;
    const name = (this.id ?? '').split(':').join(' ');
    const described = describeParseError(error, {
      name,
      bin: this.config.bin,
      flags: {
        ...ctor.baseFlags,
        ...ctor.flags,
        ...(ctor.enableJsonFlag ? { json: { description: 'print JSON' } } : {}),
      },
      examples: ctor.examples ?? [],
    });
    // An argument's own message may already say what to type (`— did you mean "reviewer"?`).
    const own = error.message.replace(/See more help with --help/g, '').trim();
    const message =
      described ?? (own.includes(' — ') ? own : `${own} — see '${this.config.bin} ${name} --help'`);
    return Promise.reject(new CommandError(message, EXIT.usage));
  }
}
