import type { Hook } from '@oclif/core/hooks';
import { CommandError, EXIT } from '../command-error.js';

/**
 * oclif names an unknown command by its internal id, `todo:list:extra-arg`, although people type
 * `todo list extra-arg`: say it as they typed it, and what the nearest command or topic is.
 */
const commandNotFound: Hook<'command_not_found'> = function ({ id, config }) {
  return Promise.reject(new CommandError(describe(id.split(':'), config), EXIT.usage));
};

function describe(words: string[], config: Parameters<typeof commandNotFound>[0]['config']) {
  const bin = config.bin;
  for (let length = words.length - 1; length > 0; length--) {
    const known = words.slice(0, length).join(':');
    const typed = words.slice(0, length).join(' ');
    if (config.findCommand(known)) {
      const rest = words.slice(length).join(' ');
      return `${bin} ${typed}: unexpected argument ${JSON.stringify(rest)} — see '${bin} ${typed} --help'`;
    }
    if (config.findTopic(known)) {
      return `'${bin} ${words.join(' ')}' is not a command — '${bin} ${typed} --help' lists the ${typed} commands`;
    }
  }
  return `'${bin} ${words.join(' ')}' is not a command — '${bin} --help' lists them`;
}

export default commandNotFound;
