let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const numbers = input.split(/\s+/).filter(Boolean).map(Number);
  console.log(numbers.reduce((a, b) => a + b, 0));
});
