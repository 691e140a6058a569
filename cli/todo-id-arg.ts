import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';

/**
 * A todo id as people write it: 42, or #42 as the CLI prints it (quoted in a shell, where `#`
 * starts a comment). Digits only, as the API takes them.
 */
export function parseTodoId(input: string): number {
  const digits = /^#?([1-9][0-9]*)$/.exec(input.trim())?.[1];
  const id = digits === undefined ? NaN : Number(digits);
  if (!Number.isSafeInteger(id)) {
    throw new Error(`${JSON.stringify(input)} is not a todo id (42, or '#42')`);
  }
  return id;
}

const parse = (input: string) => Promise.resolve(parseTodoId(input));
const todoId = Args.custom<number>({ parse });

/** The ID argument of the todo commands: 42 or '#42'. */
export const todoIdArg = todoId({ required: true, description: "the todo id: 42 or '#42'" });

/** An ID argument that may be left out. */
export const optionalTodoIdArg = (description: string) => todoId({ description });

/** A flag naming a todo (e.g. --about), taking 42 or '#42'. */
export const todoIdFlag = Flags.custom<number>({ parse, helpValue: 'TODO_ID' });
