// Placeholder until the proxy command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ proxy: not implemented yet\n');
  return 2;
}
