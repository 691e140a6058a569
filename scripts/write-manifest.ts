// Writes oclif.manifest.json (the build runs it): with the manifest, oclif finds a command
// without importing every command file first, which matters to agents calling the CLI in loops.
//
// Written with @oclif/core's own Plugin loader, as `oclif manifest` does, so that building does
// not need the `oclif` package and its AWS SDK.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core';

const root = fileURLToPath(new URL('..', import.meta.url));
const plugin = new Plugin({
  root,
  type: 'core',
  isRoot: true,
  ignoreManifest: true,
  errorOnManifestCreate: true,
});
await plugin.load();
await writeFile(`${root}oclif.manifest.json`, JSON.stringify(plugin.manifest, null, 2) + '\n');
console.log(`oclif.manifest.json: ${Object.keys(plugin.manifest.commands).length} commands`);
