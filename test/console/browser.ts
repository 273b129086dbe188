/** Finding and launching Debian's Chromium for the console tests (no browser download: the network is closed). */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** $CHROMIUM_PATH, else `chromium` / `chromium-browser` on $PATH. */
export function findChromium(): string | undefined {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit && existsSync(explicit)) return explicit;
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue;
    for (const name of ['chromium', 'chromium-browser']) {
      const candidate = join(dir, name);
      if (existsSync(candidate)) return candidate;
    }
  }
  return undefined;
}

export const NO_CHROMIUM =
  'Chromium not found (install it: apt-get update && apt-get install -y chromium, or set CHROMIUM_PATH); the browser tests of the auditor console did not run';

export function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    // --no-sandbox: tests run as root; the rest keeps a closed-network machine from waiting on Google services.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Collects every URL a page requests and every error it logs (console errors and uncaught exceptions) into the given arrays. */
export function watchPage(page: Page, requests: string[], errors: string[]): void {
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
}
