function poll(): never {
  let tick = 0;
  for (;;) {
    tick++;
  }
}
poll();
