import * as Flags from '@oclif/core/flags';
import { formatTable } from '../../format-todos.js';
import { principalFlag } from '../../name-flags.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class TokenList extends SwitchboardCommand {
  static override summary = "List tokens: yours and your agents' (an admin: everyone's)";
  static override description = `Every token, however it was vended — KIND is up (the first start's), admin_token, human_add, human_reactivate, agent_add, login (the CLI's sign-in through the browser) or oauth (an MCP client's sign-in); unrecorded for a human's token from before switchboard recorded it. Each with its principal, when it was created and last used (to the minute), never its secret. Only tokens that still work, unless --all. 'switchboard token revoke ID' ends one.`;
  static override examples = [
    '<%= config.bin %> token list',
    '<%= config.bin %> token list --human grace --all',
    '<%= config.bin %> token list --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    human: principalFlag('human')({
      description: "only this human's tokens and their agents' (admins)",
    }),
    all: Flags.boolean({ description: 'revoked and expired tokens too' }),
  };

  async run() {
    const { flags } = await this.parse(TokenList);
    const client = await this.client();
    const { tokens } = await client.listTokens({ human: flags.human, all: flags.all });
    this.log(
      tokens.length
        ? formatTable(
            ['ID', 'KIND', 'PRINCIPAL', 'CREATED', 'LAST USED', 'STATUS'],
            tokens.map((token) => [
              String(token.id),
              token.kind ?? 'unrecorded',
              token.principal_kind === 'agent'
                ? `${token.principal} (agent of ${token.human})`
                : token.principal,
              token.created_at,
              token.last_used_at ?? 'never',
              token.revoked_at
                ? `revoked ${token.revoked_at}`
                : token.expires_at && Date.parse(token.expires_at) <= Date.now()
                  ? `expired ${token.expires_at}`
                  : token.client
                    ? `sign-in of ${token.client}`
                    : 'works',
            ]),
          )
        : 'no tokens',
    );
    return { tokens };
  }
}
