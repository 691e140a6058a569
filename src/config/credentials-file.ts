import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';

export const Credentials = z.object({
  url: z.url(),
  token: z.string().startsWith('sbk_'),
});
export type Credentials = z.infer<typeof Credentials>;

/** Writes the CLI's credentials readable by their owner only (0600), replacing any earlier file whole. */
export async function writeCredentialsFile(file: string, credentials: Credentials): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  await rename(temporary, file);
}

/** The credentials in `file`, or undefined when there is no such file. A malformed file is an error. */
export async function readCredentialsFile(file: string): Promise<Credentials | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not valid JSON`);
  }
  const parsed = Credentials.safeParse(json);
  if (!parsed.success) throw new Error(`${file} is not a switchboard credentials file`);
  return parsed.data;
}
