import nock from 'nock';
import { GITHUB_API, INSTALLATION_TOKEN } from '../github/github-app.js';

/**
 * How GitHub treats one kind of request: answers as it should, answers only with errors and
 * rate limits, or does not answer at all (the client's timeout is all that ends it).
 */
export type Behaviour = 'up' | 'failing' | 'hang';

/** The three kinds of request switchboard makes, which fail independently in a real outage. */
export interface Behaviours {
  /** POST /app/installations/:id/access_tokens: the App's installation tokens. */
  tokens: Behaviour;
  /** GETs: `.github/switchboard.yml` (answered 404 when up: no file, the defaults apply). */
  reads: Behaviour;
  /** POSTs: reactions and comments, the write-backs. */
  writes: Behaviour;
}

type Answer = [number, nock.Body, Record<string, string>];

interface Hung {
  kind: keyof Behaviours;
  /** A late answer: a write gets the gateway's timeout, anything else what GitHub now says. */
  answer(timedOut: Answer): void;
}

export interface FakeGitHub {
  /** Every write GitHub took (answered 2xx), as `POST <path> <json body>`, in order. */
  taken: string[];
  /** How many error or rate-limit answers it gave. */
  failures(): number;
  /**
   * Changes how GitHub behaves from now on. Requests left hanging are answered as if they were
   * answered late: a token or a read as the new behaviour says; a write with 504, because a
   * gateway timed it out before GitHub saw it (so it counts as never sent).
   */
  set(behaviour: Behaviour | Partial<Behaviours>): void;
  /** Puts fetch back as it was (call before nock.cleanAll). */
  restore(): void;
}

const TOKEN_PATH = /^\/app\/installations\/\d+\/access_tokens$/;

/**
 * api.github.com with the network off (call isolateFromGitHub first): one persistent nock
 * interceptor for every GET and POST, whose answers follow the current behaviours. Failing
 * answers rotate through 500, 502, 503, a primary rate limit (403, `x-ratelimit-remaining: 0`)
 * and a secondary one (429, `retry-after`), with the headers GitHub sends.
 */
export function fakeGitHub(initial: Behaviour = 'up'): FakeGitHub {
  let behaviours: Behaviours = { tokens: initial, reads: initial, writes: initial };
  let failures = 0;
  const hung: Hung[] = [];
  const taken: string[] = [];

  const failure = (): Answer => {
    const reset = String(Math.ceil(Date.now() / 1000) + 1);
    const answers: Answer[] = [
      [500, { message: 'Server Error' }, {}],
      [502, { message: 'Server Error' }, {}],
      [503, { message: 'Service Unavailable' }, {}],
      [
        403,
        {
          message: 'API rate limit exceeded for installation ID 1.',
          documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api',
        },
        {
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-used': '5000',
          'x-ratelimit-resource': 'core',
          'x-ratelimit-reset': reset,
        },
      ],
      [
        429,
        { message: 'You have exceeded a secondary rate limit. Please wait before you try again.' },
        { 'retry-after': '1' },
      ],
    ];
    return answers[failures++ % answers.length]!;
  };

  const success = (
    kind: keyof Behaviours,
    method: string,
    path: string,
    body: nock.Body,
  ): Answer => {
    if (kind === 'tokens') {
      return [
        201,
        {
          token: INSTALLATION_TOKEN,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          permissions: { issues: 'write' },
          repository_selection: 'all',
        },
        {},
      ];
    }
    if (kind === 'reads') return [404, { message: 'Not Found' }, {}];
    taken.push(`${method} ${path} ${JSON.stringify(body)}`);
    return [201, { id: taken.length }, {}];
  };

  function reply(
    this: nock.ReplyFnContext,
    path: string,
    body: nock.Body,
    callback: (error: NodeJS.ErrnoException | null, response: Answer) => void,
  ) {
    const { method } = this.req;
    const kind: keyof Behaviours =
      method === 'POST' && TOKEN_PATH.test(path) ? 'tokens' : method === 'GET' ? 'reads' : 'writes';
    const answerNow = (behaviour: Behaviour) =>
      callback(null, behaviour === 'failing' ? failure() : success(kind, method, path, body));
    if (behaviours[kind] !== 'hang') return answerNow(behaviours[kind]);
    hung.push({
      kind,
      answer: (timedOut) =>
        kind === 'writes' ? callback(null, timedOut) : answerNow(behaviours[kind]),
    });
  }
  // Node's fetch rejects a request whose signal was aborted before the call and sends nothing;
  // nock's interception rejects it too, but still runs the reply afterwards — which would count
  // a write that never left the process. Here, such a request is refused before nock sees it.
  const nockedFetch = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    init?.signal?.throwIfAborted();
    return nockedFetch(input, init);
  };

  nock(GITHUB_API)
    .persist()
    .get(() => true)
    .reply(reply);
  nock(GITHUB_API)
    .persist()
    .post(() => true)
    .reply(reply);

  return {
    taken,
    failures: () => failures,
    set(next) {
      behaviours =
        typeof next === 'string'
          ? { tokens: next, reads: next, writes: next }
          : { ...behaviours, ...next };
      for (const request of hung.splice(0)) {
        if (behaviours[request.kind] === 'hang') hung.push(request);
        else request.answer([504, { message: 'Gateway Timeout' }, {}]);
      }
    },
    restore() {
      globalThis.fetch = nockedFetch;
    },
  };
}
