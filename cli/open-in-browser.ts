import { spawn } from 'node:child_process';

/** The desktop's own opener for a URL, where there is a desktop (none in an SSH session). */
function opener(url: string): string[] | undefined {
  if (process.platform === 'darwin') return ['open', url];
  if (process.platform === 'win32') return ['cmd', '/c', 'start', '""', url];
  return process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? ['xdg-open', url] : undefined;
}

/** Whether a browser can be opened on this machine. */
export function canOpenBrowser(): boolean {
  return opener('about:blank') !== undefined;
}

/** Opens the URL with the desktop's own opener, where a desktop exists; says whether it tried. */
export function openInBrowser(url: string): boolean {
  const command = opener(url);
  if (!command) return false;
  const child = spawn(command[0]!, command.slice(1), { stdio: 'ignore', detached: true });
  child.on('error', () => {});
  child.unref();
  return true;
}
