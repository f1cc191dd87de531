const slug = (s: string): string => s.toLowerCase().trim().replace(/[^a-z0-9]+/g, "-");
const words = "Hello World From TypeScript".split(" ");
console.log(slug(words.join(" ")), words.map((w) => w[0]).join(""));
