import type { AuthorizationRequest, Principal } from '../../data/index.js';
import { html, type Html } from '../../kit/pages/html.js';

export interface ConsentView {
  request: AuthorizationRequest;
  /** The human's live agents, any of which the client may work as. */
  agents: Principal[];
  /**
   * The new agent's fields as the page offers them: a name made from the client's (or what the
   * human typed, after a refusal), the queues typed, and which choice was made (`''`: new).
   */
  newAgent?: { name: string; queues: string; chosen?: string | undefined } | undefined;
  /** switchboard's own CLI: it asks to act as the human. */
  cli: boolean;
  human: string;
  csrf: string;
  problem?: string | undefined;
}

/**
 * The consent page: which client asks, where the browser goes after the answer, and what it is
 * to act as — one of the human's agents (or a new one with the queues they pick), or, for
 * switchboard's own CLI, the human themself. Buttons named Allow and Deny, as approvals have.
 */
export function consentBody(view: ConsentView): Html {
  const { request, agents, newAgent, cli, csrf } = view;
  const name = request.client_metadata.client_name ?? request.client_id;
  return html`<div class="consent">
    ${view.problem ? html`<p class="flash" role="alert">${view.problem}</p>` : ''}
    ${cli ? cliAsks(view) : clientAsks(view, name)}
    <form method="post" action="/oauth/consent/${request.id}">
      <input type="hidden" name="_csrf" value="${csrf}" />
      ${cli || !newAgent ? '' : workAs(agents, newAgent)}
      <p class="buttons">
        <button type="submit" name="decision" value="allow" class="allow">Allow</button>
        <button type="submit" name="decision" value="deny" class="deny">Deny</button>
      </p>
    </form>
  </div>`;
}

function cliAsks({ request, human }: ConsentView): Html {
  return html`<p>
      <strong>switchboard’s command line</strong> asks to act as you, <strong>${human}</strong>, on
      this server’s API: everything you can do from a terminal, until you sign it out (<code
        >switchboard logout</code
      >) or revoke it on the Agents page.
    </p>
    <p>
      Allow it only if you ran <code>switchboard login</code> yourself just
      now${request.flow === 'device' ? ' and typed the code it showed you' : ''}.
    </p>`;
}

function clientAsks({ request }: ConsentView, name: string): Html {
  const redirect = request.redirect_uri ? new URL(request.redirect_uri) : undefined;
  const where =
    redirect && (/^https?:$/.test(redirect.protocol) ? redirect.origin : redirect.protocol);
  return html`<p>
      <strong>${name}</strong> asks to work on switchboard as one of your agents: it will see and
      work that agent’s queues, and nothing else — never as you.
    </p>
    <dl class="facts">
      <dt>Client</dt>
      <dd>
        <code>${request.client_id}</code>
        ${
          request.client_source === 'document'
            ? html`(its address is its identity)`
            : html`(it registered itself: its name is its own claim)`
        }
      </dd>
      ${
        where
          ? html`<dt>After you answer</dt>
              <dd>your browser goes back to <code>${where}</code></dd>`
          : ''
      }
    </dl>`;
}

function workAs(agents: Principal[], newAgent: NonNullable<ConsentView['newAgent']>): Html {
  // The choice made before a refusal, else the first agent, else (none yet) a new one.
  const chosen = newAgent.chosen ?? agents[0]?.name ?? '';
  return html`<fieldset>
    <legend>Work as</legend>
    ${agents.map(
      (agent) =>
        html`<p>
          <input
            type="radio"
            name="agent"
            id="agent-${agent.name}"
            value="${agent.name}"
            ${agent.name === chosen ? html`checked` : ''}
          />
          <label for="agent-${agent.name}"
            >${agent.name} <span class="quiet">(${(agent.queues ?? []).join(', ')})</span></label
          >
        </p>`,
    )}
    <p>
      <input
        type="radio"
        name="agent"
        id="agent-new"
        value=""
        ${agents.some((agent) => agent.name === chosen) ? '' : html`checked`}
      />
      <label for="agent-new">A new agent</label>
    </p>
    <label for="new-name">New agent’s name</label>
    <input
      id="new-name"
      name="new_name"
      maxlength="64"
      autocomplete="off"
      value="${newAgent.name}"
      ${agents.length === 0 ? html`required` : ''}
    />
    <label for="new-queues">Its queues (separated by spaces or commas)</label>
    <input
      id="new-queues"
      name="new_queues"
      placeholder="reviews ci"
      value="${newAgent.queues}"
      ${agents.length === 0 ? html`required` : ''}
    />
  </fieldset>`;
}

/** The device page: where a human types the code `switchboard login` showed in a terminal. */
export function deviceBody({
  csrf,
  userCode,
  problem,
}: {
  csrf: string;
  userCode?: string | undefined;
  problem?: string;
}): Html {
  return html`<div class="consent">
    ${problem ? html`<p class="flash" role="alert">${problem}</p>` : ''}
    ${
      userCode && !problem
        ? html`<p>
            Check that this is the code <code>switchboard login</code> shows in your terminal, then
            continue. Only continue with a code from a terminal of your own, just now.
          </p>`
        : html`<p>
            Type the code <code>switchboard login</code> shows in your terminal. Only type a code
            you got from a terminal of your own, just now.
          </p>`
    }
    <form method="post" action="/device">
      <input type="hidden" name="_csrf" value="${csrf}" />
      <label for="user-code">Code</label>
      <input
        id="user-code"
        name="user_code"
        required
        maxlength="20"
        autocomplete="off"
        placeholder="BCDF-GHJK"
        value="${userCode ?? ''}"
      />
      <button type="submit">Continue</button>
    </form>
  </div>`;
}

/** What the page says once a device (the CLI in a terminal) was answered. */
export function deviceAnsweredBody(allowed: boolean): Html {
  return html`<p>
    ${
      allowed
        ? 'Done: your terminal is signed in. You can close this page.'
        : 'Denied: your terminal will say so. You can close this page.'
    }
  </p>`;
}
