import { formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class SourceList extends SwitchboardCommand {
  static override summary = 'List the sources: kind, queues, URL (never a secret)';
  static override examples = [
    '<%= config.bin %> source list',
    '<%= config.bin %> source list --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(SourceList);
    const client = await this.client();
    const { sources } = await client.listSources();
    this.log(
      sources.length
        ? formatTable(
            ['NAME', 'KIND', 'QUEUES', 'REPLIES', 'URL'],
            sources.map((source) => [
              source.name,
              source.kind,
              source.queues.join(','),
              source.has_api_token ? 'on' : 'off',
              source.url,
            ]),
          )
        : "no sources — 'switchboard source add KIND NAME' registers one",
    );
    return { sources };
  }
}
