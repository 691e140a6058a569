import type { Hook } from '@oclif/core/hooks';
import { closestWord } from '../closest-word.js';
import { CommandError, EXIT } from '../command-error.js';

type Config = Parameters<Hook<'command_not_found'>>[0]['config'];

/**
 * oclif names an unknown command by its internal id, `todo:list:extra-arg`, although people type
 * `todo list extra-arg`: say it as they typed it, and what they most likely meant (`todo lsit` →
 * `todo list`), else where the commands are listed.
 */
const commandNotFound: Hook<'command_not_found'> = function ({ id, config }) {
  return Promise.reject(new CommandError(describe(id.split(':'), config), EXIT.usage));
};

function describe(words: string[], config: Config) {
  const bin = config.bin;
  for (let length = words.length - 1; length > 0; length--) {
    const known = words.slice(0, length).join(':');
    const typed = words.slice(0, length).join(' ');
    if (config.findCommand(known)) {
      const rest = words.slice(length).join(' ');
      return `${bin} ${typed}: unexpected argument ${JSON.stringify(rest)} — see '${bin} ${typed} --help'`;
    }
    if (config.findTopic(known)) {
      const meant = correction(words, length, config);
      if (meant)
        return `'${bin} ${words.join(' ')}' is not a command — did you mean '${bin} ${meant}'?`;
      return `'${bin} ${words.join(' ')}' is not a command — '${bin} ${typed} --help' lists the ${typed} commands`;
    }
  }
  const meant = correction(words, 0, config);
  if (meant)
    return `'${bin} ${words.join(' ')}' is not a command — did you mean '${bin} ${meant}'?`;
  return `'${bin} ${words.join(' ')}' is not a command — '${bin} --help' lists them`;
}

/**
 * The command meant when the word after the first `known` ones is a typo: that word replaced by
 * the nearest command or topic name there, provided the words then name a command or a topic.
 */
function correction(words: string[], known: number, config: Config): string | undefined {
  const prefix = words.slice(0, known);
  const names = new Set<string>();
  for (const id of [...config.commandIDs, ...config.topics.map((topic) => topic.name)]) {
    const parts = id.split(':');
    if (parts.length > known && prefix.every((word, index) => parts[index] === word)) {
      names.add(parts[known]!);
    }
  }
  const word = closestWord(words[known]!, names);
  if (!word) return undefined;
  const meant = [...prefix, word, ...words.slice(known + 1)];
  // The longest run of words that names a command; the words after it are its arguments.
  for (let length = meant.length; length > known; length--) {
    const id = meant.slice(0, length).join(':');
    if (config.findCommand(id) || (length === meant.length && config.findTopic(id))) {
      return meant.join(' ');
    }
  }
  return undefined;
}

export default commandNotFound;
