async function retry<T>(fn: () => Promise<T>, times: number): Promise<T> {
  let last: unknown;
  for (let i = 0; i < times; i++) {
    try { return await fn(); } catch (e) { last = e; }
  }
  throw last;
}
let calls = 0;
retry(async () => { if (++calls < 3) throw new Error("flaky"); return calls; }, 5)
  .then((n) => console.log("succeeded after", n));
