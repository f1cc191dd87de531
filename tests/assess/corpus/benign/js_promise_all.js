function delay(ms, value) {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

async function main() {
  const results = await Promise.all([delay(10, 'a'), delay(5, 'b'), delay(1, 'c')]);
  console.log(results.join(''));
}
main();
