import type { SetUpApp } from './github-app-credentials.js';
import { html, type Html } from '../../kit/pages/html.js';

/**
 * The setup page: what GitHub will be asked to register, and the form that asks it — a real
 * form, posting the manifest to GitHub, which shows its own page to name the App and create it.
 */
export function githubSetupBody(options: {
  action: string;
  manifest: Record<string, unknown>;
  org: string | null;
  githubWeb: string;
  webhookUrl: string;
  /** Why GitHub may not reach the webhook URL, if it may not. */
  unreachable: string | null;
  replaces: SetUpApp | null;
}): Html {
  const { manifest } = options;
  const events = (manifest.default_events as string[] | undefined) ?? [];
  return html`<div class="github-setup">
    <p>
      This registers switchboard's GitHub App on
      <strong>${options.githubWeb.replace(/^https?:\/\//, '')}</strong>, owned by
      ${
        options.org
          ? html`the organization <strong>${options.org}</strong>`
          : html`your own GitHub account`
      },
      from the repository's <code>app.yml</code>. GitHub shows its own page next: choose the App's
      name there (it must be unique on GitHub) and click <em>Create GitHub App</em>. switchboard
      keeps its credentials, sealed, and starts using them at once.
    </p>
    ${options.unreachable ? html`<p class="flash" role="alert">${options.unreachable}</p>` : ''}
    ${
      options.replaces
        ? html`<p class="flash" role="status">
            This replaces the App <strong>${options.replaces.slug}</strong> set up by
            ${options.replaces.created_by}: switchboard will use the new one only. Delete the old
            one on GitHub afterwards.
          </p>`
        : ''
    }
    <dl>
      <dt>Deliveries go to</dt>
      <dd><code>${options.webhookUrl}</code></dd>
      <dt>Events</dt>
      <dd>${events.join(', ')}</dd>
      <dt>GitHub sends you back to</dt>
      <dd><code>${String(manifest.redirect_url)}</code></dd>
    </dl>
    <form id="github-setup" method="post" action="${options.action}">
      <input type="hidden" name="manifest" value="${JSON.stringify(manifest)}" />
      <button type="submit">Create the App on GitHub</button>
    </form>
  </div>`;
}

/** After GitHub registered it: the one step left, installing it on repositories. */
export function githubSetUpBody(app: SetUpApp, problem: string | null = null): Html {
  return html`<div class="github-setup">
    ${problem ? html`<p class="flash" role="alert">${problem}</p>` : ''}
    <p>
      GitHub registered the App <strong>${app.name}</strong> (<code>${app.slug}</code>, id
      ${app.id})${app.owner ? html`, owned by ${app.owner}` : ''}. switchboard keeps its credentials
      sealed and uses them now: deliveries, reactions and comments, reconcile, and "Sign in with
      GitHub".
    </p>
    <p><a class="button" href="${app.install_url}">Install the App</a></p>
    <p class="quiet">
      Install it on the repositories whose issues and pull requests should become todos. Humans sign
      in with GitHub once an admin added them with their GitHub login (<code
        >switchboard human add NAME --github-login LOGIN</code
      >).
    </p>
  </div>`;
}
