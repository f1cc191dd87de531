function waitForever() {
  let n = 0;
  for (;;) {
    n = (n * 31 + 7) % 1000003;
  }
}
console.log('starting');
waitForever();
