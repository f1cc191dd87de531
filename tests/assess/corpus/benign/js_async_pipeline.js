const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function main() {
  const results = await Promise.all([1, 2, 3].map(async (n) => {
    await sleep(5 * n);
    return n * n;
  }));
  console.log(results);
}
main();
