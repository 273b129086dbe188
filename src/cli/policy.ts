// Placeholder until the policy command lands; replaced by its owner.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('writ policy: not implemented yet\n');
  return 2;
}
