import type { Principal } from '../../../data/index.js';
import { html, type Html } from '../../../kit/pages/html.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/**
 * The agents page's humans, for an admin: each with a Deactivate button (their access and their
 * agents' end at once, their approvals go to their backup or the admins) or, once deactivated,
 * a Reactivate button (a new token, shown once). The first start's admin cannot go while they
 * are the last admin: the ledger refuses it.
 */
export function humansTable(humans: Principal[], csrf: string): Html {
  return html`<section class="humans" aria-labelledby="humans-title">
    <h2 id="humans-title">Humans</h2>
    <table class="agents">
      <caption class="sr-only">
        Humans
      </caption>
      <thead>
        <tr>
          <th scope="col">Human</th>
          <th scope="col">Admin</th>
          <th scope="col">Added</th>
          <th scope="col">Status</th>
        </tr>
      </thead>
      <tbody>
        ${humans.map((human) => humanRow(human, csrf))}
      </tbody>
    </table>
  </section>`;
}

function humanRow(human: Principal, csrf: string): Html {
  const [action, label, style] = human.revoked_at
    ? ['reactivate', 'Reactivate', '']
    : ['deactivate', 'Deactivate', 'deny'];
  return html`<tr id="human-${human.name}">
    <td>${human.name}</td>
    <td>${human.is_admin ? 'yes' : 'no'}</td>
    <td>${timeTag(human.created_at)}</td>
    <td>
      ${human.revoked_at ? html`deactivated ${timeTag(human.revoked_at)}` : 'active'}
      <form method="post" action="/agents/humans/${human.name}/${action}">
        <input type="hidden" name="_csrf" value="${csrf}" />
        <button type="submit" class="${style}" aria-label="${label} ${human.name}">${label}</button>
      </form>
    </td>
  </tr>`;
}

/** The page after reactivating a human: their new token, shown this once. */
export function humanReactivatedBody(human: Principal, token: string, url: string): Html {
  return html`<p>
      Reactivated <strong>${human.name}</strong>. What deactivating them ended stays ended: their
      old tokens, sign-ins and agents.
    </p>
    <h2>Their new token — shown this once, hand it over</h2>
    <pre class="secret" tabindex="0" aria-label="Token of ${human.name}">${token}</pre>
    <p>They sign in with <code>switchboard login --url ${url} --token …</code> (this token).</p>
    <p><a href="/agents">Back to agents</a></p>`;
}
