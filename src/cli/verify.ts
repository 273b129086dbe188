// Placeholder until the verify command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ verify: not implemented yet\n');
  return 2;
}
