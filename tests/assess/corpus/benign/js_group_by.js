const people = [
  { name: "ada", team: "core" },
  { name: "grace", team: "compilers" },
  { name: "linus", team: "core" },
];
const byTeam = people.reduce((acc, p) => {
  (acc[p.team] ||= []).push(p.name);
  return acc;
}, {});
console.log(JSON.stringify(byTeam, null, 2));
