async function fetchWithRetry(task, attempts = 3) {
  let lastError;
  while (true) {
    try {
      return await task();
    } catch (err) {
      lastError = err;
      if (--attempts <= 0) throw lastError;
    }
  }
}

let calls = 0;
fetchWithRetry(async () => { calls++; if (calls < 2) throw new Error('flaky'); return 'done'; })
  .then((v) => console.log(v, calls));
