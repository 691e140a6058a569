import type { GrantListing } from '../../../data/index.js';
import { html, type Html } from '../../../kit/pages/html.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/**
 * The agents page's sign-ins: every OAuth grant acting as the human or one of their agents — an
 * MCP client working as an agent, or the CLI signed in as the human — with its client, last use
 * and a Revoke button that ends it (and its live MCP sessions) at once.
 */
export function signInsTable(grants: GrantListing[], csrf: string): Html {
  return html`<section class="sign-ins" aria-labelledby="sign-ins-title">
    <h2 id="sign-ins-title">Sign-ins</h2>
    ${
      grants.length === 0
        ? html`<p class="summary">
            No client is signed in. An MCP client that knows only this server’s
            <code>/mcp</code> URL signs in through a consent page here; so does
            <code>switchboard login</code>.
          </p>`
        : html`<table class="agents">
            <caption class="sr-only">
              Sign-ins
            </caption>
            <thead>
              <tr>
                <th scope="col">Client</th>
                <th scope="col">Acts as</th>
                <th scope="col">Signed in</th>
                <th scope="col">Last used</th>
                <th scope="col"></th>
              </tr>
            </thead>
            <tbody>
              ${grants.map(
                (grant) =>
                  html`<tr id="sign-in-${grant.id}">
                    <td>${grant.client_name}</td>
                    <td>${grant.principal_name}</td>
                    <td>${timeTag(grant.created_at)}</td>
                    <td>${timeTag(grant.last_used_at)}</td>
                    <td>
                      <form method="post" action="/agents/sign-ins/${grant.id}/revoke">
                        <input type="hidden" name="_csrf" value="${csrf}" />
                        <button
                          type="submit"
                          class="deny"
                          aria-label="Revoke ${grant.client_name} as ${grant.principal_name}"
                        >
                          Revoke
                        </button>
                      </form>
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}
