import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, startCli, type CliHome, type RunningCli } from '../cli/support/run-cli.js';
import { readAdminToken } from '../support/server-process.js';
import { launchBrowser, type TestBrowser } from '../web/support/browser.js';
import { card, waitLive } from '../web/support/console.js';

let home: CliHome;
let up: RunningCli | undefined;
let browser: TestBrowser;

beforeAll(async () => {
  home = await createCliHome();
  // As root, the embedded PostgreSQL runs as `postgres`, which must be able to enter the folder.
  await chmod(home.dir, 0o755);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  if (up && up.child.exitCode === null) {
    up.child.kill('SIGTERM');
    await up.done;
  }
  await home?.remove();
});

// What a newcomer does: `npm start` on a fresh machine (an embedded PostgreSQL, a first admin),
// opens the link it prints, and answers approvals in the browser with no other set-up.
test(
  'up prints a sign-in link; in the browser its human sees, allows and denies',
  { timeout: 120_000 },
  async () => {
    up = startCli(['up', '--port', '0'], {
      ...home.env,
      SWITCHBOARD_DATA_DIR: join(home.dir, 'data'),
    });
    const printed = /web console \(this link signs you in once, within 5 minutes\): (http:\S+)/;
    await up.waitFor(printed, 90_000);
    const link = printed.exec(up.stdout)![1]!;
    const url = /listening on (http:\S+)/.exec(up.stdout)![1]!;
    const token = await readAdminToken(home.env.XDG_CONFIG_HOME!);
    expect(link.startsWith(`${url}/sign-in/sbl_`)).toBe(true);
    const ask = async (question: string) => {
      const response = await fetch(`${url}/api/v1/approvals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ question }),
      });
      return ((await response.json()) as { todo: { id: number } }).todo.id;
    };

    const w = await browser.newPage();
    await w.page.goto(link);
    await waitLive(w.page);
    const first = await ask('May I merge PR #482?');
    const second = await ask('May I delete the release branch?');
    await card(w.page, first).getByRole('button', { name: 'Allow', exact: true }).click();
    await card(w.page, second).getByRole('button', { name: 'Deny', exact: true }).click();
    await expect
      .poll(() => card(w.page, first).locator('.outcome').textContent())
      .toMatch(/allowed\s+by/);
    await expect
      .poll(() => card(w.page, second).locator('.outcome').textContent())
      .toMatch(/denied\s+by/);
    expect(w.refusals()).toEqual([]);
    // The link is nowhere in the server's log.
    expect(up.child.exitCode).toBe(null);
    up.child.kill('SIGTERM');
    const result = await up.done;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain(link.split('/sign-in/')[1]!);
  },
);
