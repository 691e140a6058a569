import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'run.js');

const ChannelEvent = z.object({
  method: z.literal('notifications/claude/channel'),
  params: z.object({ content: z.string(), meta: z.record(z.string(), z.string()) }),
});

/**
 * A Claude Code stand-in on the real `switchboard channel` process (the built CLI): calls
 * `onEvent` with each channel event's meta as it arrives.
 */
export async function connectChannelConsumer(
  url: string,
  token: string,
  onEvent: (meta: Record<string, string>) => void,
): Promise<{ close(): Promise<void> }> {
  if (!existsSync(join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js'))) {
    throw new Error('the channel path needs the built CLI: run `npm run build` first');
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'channel'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      SWITCHBOARD_URL: url,
      SWITCHBOARD_TOKEN: token,
    },
    stderr: 'ignore',
  });
  const client = new Client(
    { name: 'claude-code', version: '2.1.81' },
    { capabilities: { roots: {}, elicitation: {} } },
  );
  client.setNotificationHandler(ChannelEvent, ({ params }) => onEvent(params.meta));
  await client.connect(transport);
  return { close: () => client.close() };
}
