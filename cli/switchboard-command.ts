import { Command } from '@oclif/core/command';
import { createApiClient, type ApiClient, type Credentials } from '../src/client/api-client.js';
import { resolveCredentials } from '../src/client/resolve-credentials.js';
import { CommandError, EXIT } from './command-error.js';

/** What every switchboard command shares: credentials, the API client, and error reporting. */
export abstract class SwitchboardCommand extends Command {
  private resolved: Credentials | undefined;

  /** SWITCHBOARD_URL and SWITCHBOARD_TOKEN, else the credentials file. */
  protected async credentials(): Promise<Credentials> {
    return (this.resolved ??= await resolveCredentials());
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
   * Every run() parses first, so an error before parsing succeeded is a usage error (exit 2):
   * oclif gives its own parse errors that code (package.json's oclif.exitCodes), but not an
   * argument's failed conversion (`todo show abc`), which it throws as a plain Error.
   */
  override catch(error: Error): Promise<never> {
    if (this.parsed || error instanceof CommandError) return Promise.reject(error);
    const message = error.message.replace(/See more help with --help/g, '').trim();
    return Promise.reject(new CommandError(`${message} — see --help`, EXIT.usage));
  }
}
