const fs = require('fs');

const text = fs.readFileSync(process.argv[2] || 'data.csv', 'utf8');
const [header, ...rows] = text.trim().split('\n');
const columns = header.split(',');
const totals = {};
for (const row of rows) {
  const cells = row.split(',');
  columns.forEach((c, i) => { totals[c] = (totals[c] || 0) + Number(cells[i] || 0); });
}
console.log(totals);
