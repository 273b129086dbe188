// Placeholder until the bind command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ bind: not implemented yet\n');
  return 2;
}
