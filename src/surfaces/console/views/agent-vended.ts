import type { Principal } from '../../../data/index.js';
import { html, type Html } from '../../../kit/pages/html.js';

/** The page after vending an agent: its token and a ready .mcp.json, shown this once. */
export function agentVendedBody(agent: Principal, token: string, url: string): Html {
  // The same two entries `switchboard agent add` prints (cli/commands/agent/add.ts).
  const mcpJson = {
    mcpServers: {
      switchboard: {
        command: 'npx',
        args: ['switchboard', 'channel'],
        env: { SWITCHBOARD_URL: url, SWITCHBOARD_TOKEN: token },
      },
      'switchboard-http': {
        type: 'http',
        url: `${url}/mcp`,
        headers: { Authorization: `Bearer ${token}` },
      },
    },
  };
  return html`<p>
      Added <strong>${agent.name}</strong>, working ${(agent.queues ?? []).join(', ')}, owned by
      ${agent.owner}.
    </p>
    <h2>Its token — shown this once, keep it</h2>
    <pre class="secret" tabindex="0" aria-label="Token of ${agent.name}">${token}</pre>
    <h2>.mcp.json for Claude Code</h2>
    <p>
      Keep the entry you use: <code>switchboard</code> (the channel: wakes a live session; start
      Claude Code with <code>--dangerously-load-development-channels=server:switchboard</code>) or
      <code>switchboard-http</code> (MCP over HTTP).
    </p>
    <pre tabindex="0" aria-label=".mcp.json">${JSON.stringify(mcpJson, null, 2)}</pre>
    <p><a href="/agents">Back to agents</a></p>`;
}
