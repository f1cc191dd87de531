const args: string[] = process.argv.slice(2);
const options: Record<string, string | boolean> = {};
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg.startsWith('--')) {
    const next = args[i + 1];
    options[arg.slice(2)] = next && !next.startsWith('--') ? (i++, next) : true;
  }
}
console.log(options);
