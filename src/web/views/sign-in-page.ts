import { html, type Html } from '../html.js';

/** The sign-in page: how to get a link, and GitHub's button when the App's OAuth client is set. */
export function signInBody({ github, problem }: { github: boolean; problem?: string }): Html {
  return html`<div class="sign-in">
    ${problem ? html`<p class="flash" role="alert">${problem}</p>` : ''}
    <p>
      On the machine where switchboard runs, run <code>switchboard open</code>: it prints a one-time
      sign-in link (valid for five minutes) and opens it in your browser.
      <code>switchboard up</code>
      prints one when it starts.
    </p>
    ${
      github
        ? html`<p><a class="button" href="/auth/github">Sign in with GitHub</a></p>
            <p class="quiet">
              GitHub sign-in works for the humans an admin added with their GitHub login.
            </p>`
        : ''
    }
  </div>`;
}

/** A refusal, said plainly, with the way back. */
export function problemBody(message: string, back = '/'): Html {
  return html`<p>${message}</p>
    <p><a href="${back}">Back</a></p>`;
}
