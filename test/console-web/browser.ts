// A real headless Chromium for the console's tests: the executable scripts/chromium.mjs made sure
// of (Debian's package, or ARBITRA_CHROMIUM), driven by puppeteer-core, which downloads nothing.
// Every page it opens records what the browser complained about (script errors, CSP violations,
// failed loads), so a test can assert that nothing was refused or thrown.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { packageRoot } from '../../src/paths.js';

/** Where each page's screenshot goes, for a reviewer to look at (git-ignored). */
export const SCREENSHOTS = path.join(packageRoot(), 'screenshots', 'console');

export function chromiumPath(): string | null {
  if (process.env.ARBITRA_CHROMIUM) return process.env.ARBITRA_CHROMIUM;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
    } catch {
      // not this one
    }
  }
  return null;
}

export async function launch(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error('no Chromium: npm test installs it (scripts/chromium.mjs), or set ARBITRA_CHROMIUM');
  return puppeteer.launch({
    executablePath,
    headless: true,
    // The suite runs as root in CI, where Chromium's sandbox cannot start; /dev/shm is small in containers.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--lang=en-US'],
  });
}

export interface WatchedPage {
  page: Page;
  /** Console errors, uncaught exceptions and CSP reports seen so far. */
  complaints: string[];
}

export async function openPage(browser: Browser, viewport = { width: 1280, height: 860 }): Promise<WatchedPage> {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  const complaints: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') complaints.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (err) => complaints.push(`uncaught: ${err instanceof Error ? err.message : String(err)}`));
  return { page, complaints };
}

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) as `${string}.png`, fullPage: true });
}
