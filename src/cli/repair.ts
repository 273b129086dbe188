// Placeholder until the repair command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ repair: not implemented yet\n');
  return 2;
}
