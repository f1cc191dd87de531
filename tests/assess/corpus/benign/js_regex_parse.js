const log = `2026-01-01 ERROR disk full
2026-01-02 INFO ok
2026-01-03 ERROR net down`;
const errors = [...log.matchAll(/^(\S+) ERROR (.*)$/gm)].map((m) => ({ day: m[1], msg: m[2] }));
console.log(errors);
