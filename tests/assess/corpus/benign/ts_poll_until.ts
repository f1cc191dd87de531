function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitFor(check: () => boolean, limit = 50): Promise<boolean> {
  let tries = 0;
  while (true) {
    if (check()) return true;
    if (++tries > limit) return false;
    await sleep(1);
  }
}

let ready = false;
setTimeout(() => { ready = true; }, 5);
waitFor(() => ready).then((ok) => console.log('ready:', ok));
