import { listGrants, listPrincipals, type Principal } from '../../../data/index.js';
import { html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import { humansTable } from './humans-table.js';
import { signInsTable } from './sign-ins-table.js';
import type { PageLoader } from '../../../kit/pages/page-view.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/**
 * `/agents`: the human's agents (an admin's: everyone's), a form to vend one, and revoke buttons;
 * for an admin, the humans too, to deactivate and reactivate.
 */
export const agentsPage: PageLoader = async ({ sql, web }) => {
  const agents = await listPrincipals(sql, web.actor, 'agent');
  const items = agents
    .reverse()
    .map((agent) => ({ key: `agent-${agent.id}`, listed: true, html: agentRow(agent, web.csrf) }));
  const intro = html`<form class="vend" method="post" action="/agents">
    <input type="hidden" name="_csrf" value="${web.csrf}" />
    <h2>Vend an agent</h2>
    <label for="agent-name">Name</label>
    <input id="agent-name" name="name" required maxlength="64" placeholder="reviewer" />
    <label for="agent-queues">Queues (separated by spaces or commas)</label>
    <input id="agent-queues" name="queues" required placeholder="reviews ci" />
    <button type="submit">Vend</button>
  </form>`;
  return {
    title: 'Agents',
    nav: 'agents',
    intro,
    outro: html`${signInsTable(await listGrants(sql, web.actor), web.csrf)}
    ${
      web.actor.principal.is_admin
        ? humansTable(await listPrincipals(sql, web.actor, 'human'), web.csrf)
        : ''
    }`,
    items,
    region: (items) =>
      items.length === 0
        ? html`<p class="summary">You have no agents yet.</p>`
        : html`<table class="agents">
            <caption class="sr-only">
              Agents
            </caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Owner</th>
                <th scope="col">Queues</th>
                <th scope="col">Added</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody id="live-list">
              ${items.map((item) => item.html)}
            </tbody>
          </table>`,
  };
};

function agentRow(agent: Principal, csrf: string) {
  return html`<tr ${liveAttrs(`agent-${agent.id}`)} data-item tabindex="-1">
    <td>${agent.name}</td>
    <td>${agent.owner}</td>
    <td>${(agent.queues ?? []).join(', ')}</td>
    <td>${timeTag(agent.created_at)}</td>
    <td>
      ${
        agent.revoked_at
          ? html`revoked ${timeTag(agent.revoked_at)}`
          : html`<form method="post" action="/agents/${agent.name}/revoke">
              <input type="hidden" name="_csrf" value="${csrf}" />
              <button type="submit" class="deny" aria-label="Revoke ${agent.name}">Revoke</button>
            </form>`
      }
    </td>
  </tr>`;
}
