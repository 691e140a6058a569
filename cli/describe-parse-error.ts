import { closestWord } from './closest-word.js';

/** What a parse error needs to know of the command it happened in. */
export interface ParsedCommand {
  /** As typed: `todo create`. */
  name: string;
  bin: string;
  flags: Record<string, { description?: string | undefined; min?: number; max?: number }>;
  examples: readonly (string | { command: string })[];
}

// oclif dims the reasons of a failed validation in a terminal.
// eslint-disable-next-line no-control-regex -- matching the terminal's escape sequences is the point
const COLOUR = /\u001b\[[0-9;]*m/g;

/**
 * One line in switchboard's voice for an error oclif's parser threw, saying what to type, or
 * undefined for an error that is not one of the parser's. oclif's own messages are several
 * lines in its voice (`The following error occurred: Missing required flag queue`), and its error
 * classes are not exported (nor named, once bundled): they are told apart by their fields and
 * their messages, which the CLI tests pin down.
 */
export function describeParseError(error: Error, command: ParsedCommand): string | undefined {
  const help = `see '${command.bin} ${command.name} --help'`;
  const { args, flags } = error as { args?: unknown; flags?: unknown };
  const message = error.message
    .replace(COLOUR, '')
    .replace(/\s*See more help with --help\s*$/, '')
    .trim();

  if (Array.isArray(args) && args.every((arg) => typeof arg === 'object' && arg && 'name' in arg)) {
    const missing = (args as { name: string; description?: string }[]).map(
      (arg) => `${arg.name.toUpperCase()}${arg.description ? ` (${arg.description})` : ''}`,
    );
    return `missing ${missing.join(' and ')} — ${example(command, []) ?? help}`;
  }
  if (Array.isArray(args)) {
    const list = args.map((arg) => JSON.stringify(String(arg))).join(', ');
    return `${command.bin} ${command.name}: unexpected argument${args.length > 1 ? 's' : ''} ${list} — ${help}`;
  }
  if (Array.isArray(flags)) {
    return (flags as string[])
      .map((flag) => {
        const meant = closestWord(flag.replace(/^-+/, ''), Object.keys(command.flags));
        return meant
          ? `${command.bin} ${command.name} has no flag ${flag} — did you mean --${meant}?`
          : `${command.bin} ${command.name} has no flag ${flag} — ${help}`;
      })
      .join('; ');
  }

  const parsing = /^Parsing --(\S+)\s*\n\s*([\s\S]*)$/.exec(message);
  if (parsing) {
    const [, name, reason] = parsing as unknown as [string, string, string];
    const integer = /^Expected an integer.* but received: ([\s\S]*)$/.exec(reason);
    if (integer) {
      const { min, max } = command.flags[name] ?? {};
      const range =
        min !== undefined && max !== undefined
          ? ` from ${min} to ${max}`
          : min !== undefined
            ? ` of at least ${min}`
            : max !== undefined
              ? ` of at most ${max}`
              : '';
      return `--${name} must be a whole number${range}, not ${JSON.stringify(integer[1])} — ${help}`;
    }
    // The project's own flags say what is wrong in their own words, naming the flag or not.
    return reason.startsWith(`--${name}`) ? reason : `--${name}: ${reason}`;
  }

  const option = /^Expected --(\S+?)=([\s\S]*) to be one of: (.*)$/.exec(message);
  if (option) {
    return `--${option[1]} must be one of ${option[3]}, not ${JSON.stringify(option[2])}`;
  }
  const value = /^Flag --(\S+) expects a value/.exec(message);
  if (value) return `--${value[1]} needs a value — ${example(command, [value[1]!]) ?? help}`;
  const twice = /^Flag --(\S+) can only be specified once/.exec(message);
  if (twice) return `--${twice[1]} is given twice; give it once`;

  if (/^The following errors? occurred:/.test(message)) {
    const reasons = message
      .split('\n')
      .slice(1)
      .map((line) => line.trim())
      .filter(Boolean);
    const missing = reasons.flatMap(
      (reason) => /^Missing required flag (\S+)$/.exec(reason)?.[1] ?? [],
    );
    const others = reasons
      .filter((reason) => !/^Missing required flag /.test(reason))
      .map((reason) => {
        const needs = /^All of the following must be provided when using --(\S+): (.+)$/.exec(
          reason,
        );
        return needs ? `--${needs[1]} needs ${needs[2]} too` : reason;
      });
    const said = [
      ...(missing.length
        ? [`missing ${missing.map((name) => flagWithMeaning(command, name)).join(' and ')}`]
        : []),
      ...others,
    ];
    // An example using every flag named: `--wait needs --queue too` shows both.
    const named = [...said.join(' ').matchAll(/--([a-z][a-z-]*)/g)].map((match) => match[1]!);
    return `${said.join('; ')} — ${example(command, named) ?? example(command, missing) ?? help}`;
  }
  return undefined;
}

function flagWithMeaning(command: ParsedCommand, name: string): string {
  const description = command.flags[name]?.description;
  return description ? `--${name} (${description})` : `--${name}`;
}

/** `for example: switchboard todo create --queue reviews …`: the first example with these flags. */
function example(command: ParsedCommand, flags: string[]): string | undefined {
  const own = `${command.bin} ${command.name}`;
  const lines = command.examples
    .map((entry) => (typeof entry === 'string' ? entry : entry.command))
    .map((line) => line.replace(/<%=\s*config\.bin\s*%>/g, command.bin))
    .filter((line) => line === own || line.startsWith(`${own} `));
  const line = lines.find((candidate) =>
    flags.every((flag) => new RegExp(`(^|\\s)--${flag}(\\s|=|$)`).test(candidate)),
  );
  return line ? `for example: ${line}` : undefined;
}
