for (let i = 1; i <= 20; i++) {
  const out = (i % 3 === 0 ? "Fizz" : "") + (i % 5 === 0 ? "Buzz" : "");
  console.log(out || String(i));
}
