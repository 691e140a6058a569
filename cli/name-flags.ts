import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { kindProblem, nameProblem } from '../src/contract/name-rules.js';

/**
 * Flags and arguments that name a queue, a principal or a kind, checked by the rule the ledger
 * applies: a malformed one is a usage error (exit 2) said before anything is sent, not a refusal
 * from the server (exit 3). Where the lowercase spelling would do, it is offered.
 */
function checked(problem: (value: string) => string | null, spelled: (value: string) => string) {
  return (input: string) => {
    const found = problem(input);
    if (!found) return Promise.resolve(input);
    const lower = input.toLowerCase();
    const offer = lower !== input && !problem(lower) ? ` — did you mean ${spelled(lower)}?` : '';
    return Promise.reject(new Error(`${found}${offer}`));
  };
}

const flagChecked = (flag: string, problem: (value: string) => string | null) =>
  checked(problem, (value) => `${flag} ${value}`);

/** --queue: a queue's name. */
export const queueFlag = Flags.custom<string>({
  parse: flagChecked('--queue', (value) => nameProblem(value, '--queue')),
  helpValue: 'QUEUE',
});

/** A flag naming an agent or a human (--assignee). */
export const principalFlag = (flag: string) =>
  Flags.custom<string>({
    parse: flagChecked(`--${flag}`, (value) => nameProblem(value, `--${flag}`)),
    helpValue: 'NAME',
  });

/** --kind: dotted lowercase words. */
export const kindFlag = Flags.custom<string>({
  parse: flagChecked('--kind', (value) => kindProblem(value)?.replace(/^kind/, '--kind') ?? null),
  helpValue: 'KIND',
});

/** The NAME argument of `agent add` and `human add`. */
export const principalNameArg = Args.custom<string>({
  parse: checked(
    (value) => nameProblem(value, 'NAME'),
    (value) => JSON.stringify(value),
  ),
});

/** The QUEUE argument of `queue show` and `queue set`. */
export const queueArg = Args.custom<string>({
  parse: checked(
    (value) => nameProblem(value, 'QUEUE'),
    (value) => JSON.stringify(value),
  ),
});
