/** Polls `probe` every 100 ms until it gives a value; fails after `tries` polls, naming `what`. */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, tries = 150): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
