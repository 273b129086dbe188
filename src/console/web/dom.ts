/**
 * A tiny typed element builder: enough for this page without a framework. Every text it puts on the page
 * (children and attribute values such as a hover title) goes through visibleText: ledger data is shown,
 * never obeyed as formatting.
 */
import { visibleText } from './visible.js';

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

function append(parent: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(parent, c);
    else parent.appendChild(typeof c === 'object' ? c : document.createTextNode(visibleText(String(c))));
  }
}

/** Attributes the browser shows as text (other attributes carry values the page uses as they are). */
const SHOWN_ATTRIBUTES = new Set(['title', 'aria-label', 'placeholder']);

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else el.setAttribute(name, value === true ? '' : SHOWN_ATTRIBUTES.has(name) ? visibleText(String(value)) : String(value));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Replaces every child of `el`. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/**
 * A record's time exactly as the ledger holds it (RFC 3339 UTC): what an auditor compares with an export
 * or a log, character for character. The browser's local time is on hover.
 */
export function timeEl(ts: unknown): HTMLElement {
  const text = String(ts);
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return h('span', { class: 'time' }, text);
  const local = date.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'short',
  });
  return h('time', { class: 'time', datetime: text, title: local }, text);
}

/** A long digest shortened for reading (the whole value on hover), or in full where it is compared. */
export function digest(value: unknown, options: { full?: boolean } = {}): HTMLElement {
  const text = String(value ?? '');
  if (options.full) return h('code', { class: 'digest digest-full' }, text);
  // The scheme (`sha256:`, `writ-bind/1:sha256:`) whole, then the first 12 and last 6 hex digits.
  const cut = text.lastIndexOf(':') + 1;
  const hex = text.slice(cut);
  const short = hex.length > 24 ? `${text.slice(0, cut)}${hex.slice(0, 12)}…${hex.slice(-6)}` : text;
  return h('code', { class: 'digest', title: text }, short);
}

export function uidText(value: unknown): string {
  const u = value as { type?: unknown; id?: unknown } | null | undefined;
  return u && typeof u === 'object' && typeof u.type === 'string' && typeof u.id === 'string' ? `${u.type}::${JSON.stringify(u.id)}` : '';
}
