import * as Args from '@oclif/core/args';
import { SECRET_ID } from '../../../src/contract/secret.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

/** A secret id as a todo shows it: `k3j9x2m4q7ab`, or the whole `[secret:k3j9x2m4q7ab]`. */
const secretId = Args.custom<string>({
  parse: (input) => {
    const id = /^\[secret:([^\]]*)\]$/.exec(input.trim())?.[1] ?? input.trim();
    if (!SECRET_ID.test(id))
      throw new Error(
        `${JSON.stringify(input)} is not a secret id (the 12 characters of a [secret:ID] in a todo)`,
      );
    return Promise.resolve(id);
  },
});

export default class SecretShow extends SwitchboardCommand {
  static override summary = 'Print a credential withheld from a todo (the fetch is recorded)';
  static override description =
    'A credential found in the text a todo is made of reads [secret:ID] there. Whoever may read the todo may print its value; each fetch is recorded in the todo’s history (who, which secret, never the value). The value alone goes to stdout, for $(…).';
  static override examples = [
    '<%= config.bin %> secret show k3j9x2m4q7ab',
    "<%= config.bin %> secret show '[secret:k3j9x2m4q7ab]' --json",
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: secretId({ required: true, description: 'the secret id, from [secret:ID] in a todo' }),
  };

  async run() {
    const { args } = await this.parse(SecretShow);
    const client = await this.client();
    const { secret } = await client.showSecret(args.id);
    this.log(secret.value);
    return { secret };
  }
}
