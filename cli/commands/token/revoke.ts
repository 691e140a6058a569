import * as Args from '@oclif/core/args';
import { SwitchboardCommand } from '../../switchboard-command.js';

/** A token's id as `token list` prints it: digits. */
const tokenId = Args.custom<number>({
  parse: (input) => {
    const id = /^[1-9][0-9]{0,14}$/.test(input) ? Number(input) : NaN;
    if (Number.isNaN(id))
      return Promise.reject(
        new Error(
          `${JSON.stringify(input)} is not a token id (the ID 'switchboard token list' prints)`,
        ),
      );
    return Promise.resolve(id);
  },
});

export default class TokenRevoke extends SwitchboardCommand {
  static override summary = "Revoke a token at once: yours, your agents' (an admin: anyone's)";
  static override description = `The token stops working at once, in every server process, and the streams it opened end. A sign-in's token (KIND login or oauth) ends its whole sign-in: its refresh token too. IDs are the ones 'switchboard token list' prints.`;
  static override examples = [
    '<%= config.bin %> token revoke 12',
    '<%= config.bin %> token revoke 12 --json',
  ];
  static override enableJsonFlag = true;
  static override args = { id: tokenId({ required: true, description: 'the token id' }) };

  async run() {
    const { args } = await this.parse(TokenRevoke);
    const client = await this.client();
    const { token } = await client.revokeToken(args.id);
    this.log(
      `revoked token #${token.id} (${token.kind ?? 'unrecorded'}) of ${token.principal}: it no longer works` +
        (token.grant_id === null ? '' : `, nor does the rest of its sign-in of ${token.client}`),
    );
    return { token };
  }
}
