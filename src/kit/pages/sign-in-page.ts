import { html, type Html } from './html.js';

export interface SignInView {
  /** The App's OAuth client is set: "Sign in with GitHub" works. */
  github: boolean;
  /** The console's address, for the command that signs a new CLI in. */
  url: string;
  problem?: string;
}

/**
 * The sign-in page, for whoever is signed out — often a teammate on a machine of their own, sent
 * here by a link (a terminal's code, an approval): GitHub's button when the App's OAuth client is
 * set, a one-time link from their own CLI, and, for someone with neither, what to ask an admin.
 */
export function signInBody({ github, url, problem }: SignInView): Html {
  return html`<div class="sign-in">
    ${problem ? html`<p class="flash" role="alert">${problem}</p>` : ''}
    ${
      github
        ? html`<p><a class="button" href="/auth/github">Sign in with GitHub</a></p>
            <p class="quiet">
              For the humans an admin added with their GitHub login. Not added yet? Ask an admin to
              run <code>switchboard human add NAME --github-login LOGIN</code>.
            </p>`
        : ''
    }
    <p>
      ${github ? 'Or sign in with a one-time link' : 'Sign in with a one-time link'}:
      <code>switchboard open</code>, run where your command line is signed in as you, prints one
      (valid for five minutes) and opens it in your browser. On the machine where switchboard runs,
      <code>switchboard up</code> prints one when it starts.
    </p>
    <p>
      No command line of your own here yet? Ask an admin to add you:
      <code>switchboard human add NAME</code> prints your token; then
      <code>switchboard login --url ${url} --token TOKEN</code> and <code>switchboard open</code>.
    </p>
  </div>`;
}

/** A refusal, said plainly, with the way back. */
export function problemBody(message: string, back = '/'): Html {
  return html`<p>${message}</p>
    <p><a href="${back}">Back</a></p>`;
}
