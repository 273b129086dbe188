// Placeholder until the serve command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ serve: not implemented yet\n');
  return 2;
}
