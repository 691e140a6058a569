import * as Args from '@oclif/core/args';

/** The ID argument of the todo commands: 42 for #42. */
export const todoIdArg = Args.integer({
  required: true,
  min: 1,
  description: 'the todo id (42 for #42)',
});
