import { formatTable } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

export default class HumanList extends SwitchboardCommand {
  static override summary = 'List the humans (an admin sees all; others, themselves)';
  static override examples = [
    '<%= config.bin %> human list',
    '<%= config.bin %> human list --json',
  ];
  static override enableJsonFlag = true;

  async run() {
    await this.parse(HumanList);
    const client = await this.client();
    const { humans } = await client.listHumans();
    this.log(
      formatTable(
        ['NAME', 'ADMIN', 'GITHUB', 'CREATED', 'STATUS'],
        humans.map((human) => [
          human.name,
          human.is_admin ? 'yes' : 'no',
          human.github_login ?? '',
          human.created_at,
          human.revoked_at ? `deactivated ${human.revoked_at}` : 'active',
        ]),
      ),
    );
    return { humans };
  }
}
