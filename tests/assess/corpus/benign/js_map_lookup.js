const prices = { apple: 1.2, pear: 0.8, plum: 2.5 };
const basket = ["apple", "plum", "plum"];
let total = 0;
for (const item of basket) total += prices[item];
const labels = { en: "Total", de: "Summe" };
const lang = "de";
console.log(`${labels[lang]}: ${total.toFixed(2)}`);
