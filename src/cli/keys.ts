// Placeholder until keygen / keys rotate land; replaced by its owner.
export async function keygenMain(_argv: string[]): Promise<number> {
  process.stderr.write('writ keygen: not implemented yet\n');
  return 2;
}
export async function keysMain(_argv: string[]): Promise<number> {
  process.stderr.write('writ keys: not implemented yet\n');
  return 2;
}
