/** The decisions-per-minute chart: stacked SVG bars by outcome, drawn by hand (no chart library). */
import { svg, h } from './dom.js';
import type { LedgerRecord } from './api.js';

export const OUTCOMES = ['allow', 'deny', 'approval_required'] as const;
type Outcome = (typeof OUTCOMES)[number];

interface Bucket {
  minute: number;
  counts: Record<Outcome, number>;
  /** Only part of this minute's decisions were fetched: it held at least these. */
  partial?: boolean;
}

const MINUTE = 60_000;
const MAX_BUCKETS = 60;
/** A burst of one minute still gets a time axis around it. */
const MIN_BUCKETS = 15;

/**
 * Decision records grouped by minute, the last hour of activity ending at the newest decision.
 * `truncated`: the records are the newest N of more (the API's page limit), so their earliest minute may
 * hold only part of its decisions: it is left out, and so is everything before it, rather than drawn short
 * — unless it is the only minute they cover (more than N decisions a minute): then it is drawn, marked
 * partial, since an empty chart would say there were none.
 */
export function bucketsOf(records: LedgerRecord[], truncated = false): Bucket[] {
  let minutes = records
    .filter((r) => r.kind === 'decision' && (OUTCOMES as readonly string[]).includes(String(r.decision)))
    .map((r) => ({ minute: Math.floor(Date.parse(r.ts) / MINUTE), outcome: r.decision as Outcome }))
    .filter((d) => Number.isFinite(d.minute));
  // The earliest minute that may be drawn: with a truncated page, none before its first whole minute
  // (not even as an empty one of the axis: it was not empty, it was not fetched).
  let earliest = -Infinity;
  let partial = false;
  if (truncated && minutes.length > 0) {
    const oldest = Math.min(...minutes.map((d) => d.minute));
    const whole = minutes.filter((d) => d.minute > oldest);
    if (whole.length > 0) {
      earliest = oldest + 1;
      minutes = whole;
    } else {
      earliest = oldest;
      partial = true;
    }
  }
  if (minutes.length === 0) return [];
  const last = Math.max(...minutes.map((d) => d.minute));
  const first = Math.max(Math.min(Math.max(Math.min(...minutes.map((d) => d.minute)), last - MAX_BUCKETS + 1), last - MIN_BUCKETS + 1), earliest);
  const buckets: Bucket[] = [];
  for (let m = first; m <= last; m++) buckets.push({ minute: m, counts: { allow: 0, deny: 0, approval_required: 0 } });
  for (const d of minutes) if (d.minute >= first) buckets[d.minute - first]!.counts[d.outcome]++;
  if (partial) buckets[buckets.length - 1]!.partial = true;
  return buckets;
}

/** 1, 2 or 5 times a power of ten, at least `raw` (whole numbers: these are counts). */
function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/** HH:MM in UTC, 24-hour: the time the timeline shows (records' `ts` are UTC), whatever the browser's locale. */
function clock(minute: number): string {
  return new Date(minute * MINUTE).toISOString().slice(11, 16);
}

export function decisionsChart(records: LedgerRecord[], truncated = false): HTMLElement {
  const buckets = bucketsOf(records, truncated);
  const width = 1000;
  const height = 210;
  const pad = { left: 40, right: 12, top: 12, bottom: 30 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const tallest = Math.max(1, ...buckets.map((b) => OUTCOMES.reduce((n, o) => n + b.counts[o], 0)));
  const step = niceStep(tallest / 4);
  const max = Math.ceil(tallest / step) * step;
  const total = (o: Outcome) => buckets.reduce((n, b) => n + b.counts[o], 0);
  const summary = buckets.length
    ? `Decisions by outcome, each minute from ${clock(buckets[0]!.minute)} to ${clock(buckets[buckets.length - 1]!.minute)} UTC: ` +
      OUTCOMES.map((o) => `${total(o)} ${o}`).join(', ')
    : 'No decisions in these records';

  const slot = plotW / Math.max(buckets.length, 1);
  const barW = Math.max(2, Math.min(36, slot * 0.7));
  const y = (n: number) => pad.top + plotH - (n / max) * plotH;
  const bars = buckets.flatMap((b, i) => {
    let base = 0;
    const x = pad.left + i * slot + (slot - barW) / 2;
    return OUTCOMES.filter((o) => b.counts[o] > 0).map((o) => {
      const rect = svg(
        'rect',
        {
          class: `bar bar-${o}`,
          x: x.toFixed(1),
          y: y(base + b.counts[o]).toFixed(1),
          width: barW.toFixed(1),
          height: ((b.counts[o] / max) * plotH).toFixed(1),
        },
        svg('title', {}, `${clock(b.minute)}: ${b.partial ? 'at least ' : ''}${b.counts[o]} ${o}`),
      );
      base += b.counts[o];
      return rect;
    });
  });
  const ticks: number[] = [];
  for (let v = 0; v <= max; v += step) ticks.push(v);
  const labelEvery = Math.max(1, Math.ceil(buckets.length / 8));
  const chart = svg(
    'svg',
    { class: 'chart', role: 'img', 'aria-label': 'Decisions per minute', viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'xMidYMid meet' },
    // The name is the aria-label alone: the visible caption is the one element whose text it is.
    svg('desc', {}, summary),
    ticks.map((t) => [
      svg('line', { class: 'grid', x1: pad.left, x2: width - pad.right, y1: y(t), y2: y(t) }),
      svg('text', { class: 'axis', x: pad.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, t),
    ]),
    bars,
    buckets.map((b, i) =>
      i % labelEvery === 0 || i === buckets.length - 1
        ? svg('text', { class: 'axis', x: pad.left + i * slot + slot / 2, y: height - pad.bottom + 16, 'text-anchor': 'middle' }, clock(b.minute))
        : null,
    ),
    buckets.length === 0 ? svg('text', { class: 'axis', x: width / 2, y: height / 2, 'text-anchor': 'middle' }, 'no decisions yet') : null,
    buckets.length > 0 ? svg('text', { class: 'axis', x: width - pad.right, y: height - 2, 'text-anchor': 'end' }, 'UTC') : null,
  );
  const legend = h(
    'ul',
    { class: 'legend' },
    OUTCOMES.map((o) => h('li', {}, h('span', { class: `swatch bar-${o}` }), `${o} (${total(o)})`)),
  );
  const partial = buckets.some((b) => b.partial);
  const note = partial
    ? h(
        'p',
        { class: 'hint' },
        `The newest ${records.length.toLocaleString('en-US')} decisions all fall in one minute: its bar counts those, and that minute held at least as many.`,
      )
    : truncated
      ? h('p', { class: 'hint' }, `Counted from the newest ${records.length.toLocaleString('en-US')} decisions: only the minutes they cover in full are drawn.`)
      : null;
  return h('figure', { class: 'chart-box' }, h('figcaption', {}, 'Decisions per minute'), chart, legend, note);
}
