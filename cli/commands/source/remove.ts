import * as Args from '@oclif/core/args';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SourceRemove extends SwitchboardCommand {
  static override summary = 'Remove a source: its URL stops accepting deliveries at once';
  static override description = 'Its deliveries stay on record under its name; its todos stay.';
  static override examples = ['<%= config.bin %> source remove code'];
  static override enableJsonFlag = true;
  static override args = { name: Args.string({ required: true, description: 'the source' }) };

  async run() {
    const { args } = await this.parse(SourceRemove);
    const client = await this.client();
    const { removed } = await client.removeSource(args.name);
    this.log(`removed source ${removed}`);
    return { removed };
  }
}
