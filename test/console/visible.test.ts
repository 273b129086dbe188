/** The console shows invisible and formatting characters as escapes (src/console/web/visible.ts), in Node. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { visibleText } from '../../src/console/web/visible.js';

test('bidi overrides, isolates, zero-width and control characters are shown as \\uXXXX escapes', () => {
  assert.equal(visibleText('Doc::"\u202Egnp.exe\u202C"'), 'Doc::"\\u202Egnp.exe\\u202C"');
  assert.equal(visibleText('a\u200Bb\u2066c\u2069\uFEFF\u0007\u061C\u00AD'), 'a\\u200Bb\\u2066c\\u2069\\uFEFF\\u0007\\u061C\\u00AD');
  assert.equal(visibleText('tag\u{E0041}'), 'tag\\uDB40\\uDC41');
});

test('ordinary text, accents, scripts, emoji, newlines and tabs are left as they are', () => {
  const plain = 'Zoë Ærøskøbing — 東京 مرحبا 🎉\n\tend';
  assert.equal(visibleText(plain), plain);
});

test('the console builds every text node and shown attribute through visibleText', () => {
  const dom = readFileSync(new URL('../../../src/console/web/dom.ts', import.meta.url), 'utf8');
  assert.match(dom, /document\.createTextNode\(visibleText\(String\(c\)\)\)/);
  assert.match(dom, /SHOWN_ATTRIBUTES\.has\(name\) \? visibleText/);
  // No other place in the console writes text into the page.
  const app = readFileSync(new URL('../../../src/console/web/app.ts', import.meta.url), 'utf8');
  assert.doesNotMatch(app, /textContent|innerHTML|innerText|createTextNode/);
});
